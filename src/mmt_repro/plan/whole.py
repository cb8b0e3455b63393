"""The ``Plan`` class: the plan's parts (runs, tables, targets, text, data, the papers' stages,
cost) combined into the one object that the rule files and the tests call (see the package
docstring)."""

from __future__ import annotations

from .base import PlanBase
from .cost import CostPlan
from .data import DataPlan
from .papers import AlignmentPlan, BacktranslationPlan, MultitaskPlan, WordVectorPlan
from .runs import RunPlan
from .tables import TablePlan
from .targets import TargetPlan
from .text import TextPlan
from .version import STAGES, code_version


class Plan(RunPlan, TablePlan, TargetPlan, TextPlan, DataPlan, MultitaskPlan, AlignmentPlan, WordVectorPlan,
           BacktranslationPlan, CostPlan, PlanBase):
    """The whole plan of one configuration (see the package docstring)."""

    def code_param(self, stage: str):
        """The ``code`` param of a rule of ``stage`` (:mod:`mmt_repro.plan.version`): a string, or
        for a stage whose output its model decides (training, decoding, analyses) a function of
        the job's wildcards."""
        if not STAGES[stage].per_model:
            return code_version(stage)
        return lambda wildcards: self.job_code_version(stage, wildcards.paper, wildcards.system)

    def job_code_version(self, stage: str, paper: str, system: str) -> str:
        """The code version of a job of ``paper``'s ``system`` in ``stage``."""
        return code_version(stage, self.model_of(paper, system), paper)


def load_plan(repo, configfiles=()) -> Plan:
    """The plan of ``repo``'s ``config/config.yaml`` with ``configfiles`` merged on top in order,
    as Snakemake's ``--configfile`` does (each path as given, relative to the working directory)."""
    from pathlib import Path

    from ..config import deep_update, load_yaml

    repo = Path(repo)
    config = load_yaml(repo / "config" / "config.yaml")
    for f in configfiles:
        config = deep_update(config, load_yaml(Path(f)))
    return Plan(config, repo)
