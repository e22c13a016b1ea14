"""Predicting what a notebook does next, in the order data flows through it.

``prompts`` (a trajectory as text) -> ``clients`` (models: remote APIs, the embedded
llama.cpp model, the baseline) -> ``run`` (one prediction, its record) -> ``metrics`` and
``scoring`` (the record against what really happened) -> ``live`` (the scheduler that
predicts as cells run). Each module imports only those before it.
"""
