"""The Themisto benchmark: sample targets, import JuNE logs, run predictors, report.

``sample`` picks the examples (the paper's filters and length strata), ``june`` turns
JuNE execution logs into trajectories, ``run`` evaluates predictors over the examples
(resumable), ``stats`` holds the bootstrap and McNemar tests and ``report`` turns the
results into tables and a figure. docs/benchmark.md describes the procedure and formats.
"""
