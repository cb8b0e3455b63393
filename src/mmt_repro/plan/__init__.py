"""The plan: every planning question of the workflow (which files a job reads, with which
settings, and what ``all`` builds), answered from the config, the papers' settings and the
manifest. No torch and no Snakemake import: the rule files call one ``Plan`` object, and the
tests call it directly (tests/unit/test_plan.py).

    plan = Plan(config, repo)                 # validates; ConfigError/DataError on bad input
    job = plan.train_jobs.job(wildcards)      # a frozen job object (mmt_repro.plan.jobs)
    job.files(), job.to_dict()                # the rule's inputs and its one `job` param
    plan.text.bpe_training_text(wildcards)    # a stage without a job object: its inputs
    plan.targets.check_targets(targets)       # requested paths' names; UnknownNameError on a typo

``Plan`` (plan/whole.py) is the look-ups over config, settings and manifest (plan/lookup.py)
with one job builder per kind of job (plan/build/<kind>.py, one-to-one with
mmt_repro/execute/<kind>.py) and the inputs of each stage without a job object (plan/data.py,
features.py, text.py, vectors.py, figures.py, targets.py).

The tools that read a plan without building its jobs (the cost plan, the preflight, code
versions, a run folder's progress, job listings, the DAG walk, the settings' type checks) are
functions of a ``Plan`` in the layer above, :mod:`mmt_repro.plan_tools`.

Importing the package imports none of its parts: a job that only rebuilds its job object
(``mmt_repro.plan.jobs``, stdlib only) does not pay for the config schema, the papers' settings
and the manifest (0.35 s of every job); a name below is imported on first use (PEP 562).
"""

from __future__ import annotations

from importlib import import_module

# exported name -> module of this package that defines it
_EXPORTS = {
    "Plan": "whole", "load_plan": "whole",
    "PATHS": "paths", "WILDCARDS": "paths", "path": "paths", "reversed_pair": "paths",
    "Lookup": "lookup", "is_captioning": "lookup", "pattern": "lookup",
    **{name: "jobs" for name in ("Job", "TrainJob", "TranslateJob", "ScoreJob", "AnalyseJob", "TableJob",
                                 "SignificanceJob", "ProtocolGridJob", "ProbeJob", "CurvesJob", "AlignmentModelJob", "AlignJob",
                                 "BacktranslationJob", "job_from_dict")},
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
