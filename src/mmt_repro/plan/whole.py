"""The ``Plan`` class: the plan's parts (runs, tables, targets, text, data, the papers' stages)
combined into the one object that the rule files and the tests call (see the package
docstring). The tools that read a plan (its cost, the preflight, code versions, progress,
listings) are functions of it in :mod:`mmt_repro.plan_tools`."""

from __future__ import annotations

from .base import PlanBase
from .data import DataPlan
from .papers import AlignmentPlan, BacktranslationPlan, MultitaskPlan, WordVectorPlan
from .runs import RunPlan
from .tables import TablePlan
from .targets import TargetPlan
from .text import TextPlan


class Plan(RunPlan, TablePlan, TargetPlan, TextPlan, DataPlan, MultitaskPlan, AlignmentPlan, WordVectorPlan,
           BacktranslationPlan, PlanBase):
    """The whole plan of one configuration (see the package docstring)."""


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
