"""The tools that read a plan (:mod:`mmt_repro.plan`) without building its jobs, one module
each, in the layer above the planner (they import it; it never imports them). Torch-free and
Snakemake-free, like the planner:

- :mod:`~mmt_repro.plan_tools.cost`: the cost plan (``python -m mmt_repro plan``) and
  train_model's SLURM resources (``train_mem_mb(plan, wildcards)``, ``train_retries(plan)``);
- :mod:`~mmt_repro.plan_tools.preflight`: every problem of a config and its targets, before a
  run (``python -m mmt_repro check``; ``workflow/rules/common.smk``), with
  :mod:`~mmt_repro.plan_tools.typecheck` (the settings' types) and
  :mod:`~mmt_repro.plan_tools.needs` (the inputs the targets need);
- :mod:`~mmt_repro.plan_tools.version`: the code version of each stage (every rule's ``code``
  param: ``code_param(plan, stage)``);
- :mod:`~mmt_repro.plan_tools.progress`: where each training of a run folder stands;
- :mod:`~mmt_repro.plan_tools.listing`: what can be built (``python -m mmt_repro list``);
- :mod:`~mmt_repro.plan_tools.walk`: the training runs a set of targets needs (the DAG walk).

Importing the package imports none of its parts (a job's record reads only ``version``):
import the module a name lives in.
"""
