"""The plan: every planning question of the workflow (which files a job reads, with which
settings, and what ``all`` builds), answered from the config, the papers' settings and the
manifest. No torch and no Snakemake import: the rule files call one ``Plan`` object, and the
tests call it directly (tests/unit/test_plan.py).

    plan = Plan(config, repo)                 # validates; ConfigError/DataError on bad input
    job = plan.train_job(wildcards)           # a frozen job object (mmt_repro.plan.jobs)
    job.files(), job.to_dict()                # the rule's inputs and its one `job` param
    plan.check_targets(targets)               # requested paths' names; UnknownNameError on a typo
"""

from __future__ import annotations

from .base import PlanBase, is_captioning, pattern
from .cost import CostPlan
from .data import DataPlan
from .jobs import (
    AlignJob,
    AlignmentModelJob,
    AnalyseJob,
    BacktranslationJob,
    CurvesJob,
    Job,
    ScoreJob,
    SignificanceJob,
    TableJob,
    TrainJob,
    TranslateJob,
    job_from_dict,
)
from .papers import AlignmentPlan, BacktranslationPlan, MultitaskPlan, WordVectorPlan
from .paths import PATHS, WILDCARDS, path, reversed_pair
from .runs import RunPlan
from .tables import TablePlan
from .targets import TargetPlan
from .text import TextPlan
from .version import code_version


class Plan(RunPlan, TablePlan, TargetPlan, TextPlan, DataPlan, MultitaskPlan, AlignmentPlan, WordVectorPlan,
           BacktranslationPlan, CostPlan, PlanBase):
    """The whole plan of one configuration (see the module docstring)."""

    def code_version(self, *entries: str) -> str:
        return code_version(*entries)


__all__ = ["Plan", "PATHS", "WILDCARDS", "path", "reversed_pair", "is_captioning", "pattern", "code_version",
           "Job", "TrainJob", "TranslateJob", "ScoreJob", "AnalyseJob", "TableJob", "SignificanceJob", "CurvesJob",
           "AlignmentModelJob", "AlignJob", "BacktranslationJob", "job_from_dict"]
