"""Analyses: numbers other than translation scores, computed per run from a trained system
(its attention dump, its translations or its checkpoint) by a function registered under
``<paper>.<analysis>``: :mod:`~mmt_repro.analyses.registry` holds the registry,
:mod:`~mmt_repro.analyses.run` runs one for a table of ``kind: analysis``, and one module per
paper holds that paper's analyses (and its other jobs on a checkpoint, e.g. Yang et al.'s
alignment-layer choice). They sit above the models and the checkpoint format and beside the
tables (``docs/architecture.md``): a model module registers no analysis.
"""
