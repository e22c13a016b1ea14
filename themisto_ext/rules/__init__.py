"""The rules: what a cell shows, computed from the runtime state a step recorded.

One evaluator (``interpreter.py``, with ``flow.py`` for statements and ``operators.py`` for
plain Python) runs a cell over the snapshot's values: NumPy arrays (``arrays.py``) and
pandas objects (``frames.py``) rebuilt from the data the kernel captured
(``kernel/values.py``) or, for older steps, from their reprs; the display options the
notebook set (``display_options.py``); the names its imports bound (``names.py``);
matplotlib figures (``figures.py``). Predictors (``prediction/clients/baseline.py`` and
those built on it) ask it; it imports nothing above the shared records.
"""
