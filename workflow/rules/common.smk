# The plan of the whole workflow, made once from the config (mmt_repro.plan: torch-free,
# Snakemake-free, unit-tested in tests/unit/test_plan.py). Rules call PLAN's methods as their
# input and param functions; nothing else lives here but the adapters Snakemake needs.

import re
import sys
from pathlib import Path

from mmt_repro.config import ConfigError
from mmt_repro.io import DataError
from mmt_repro.plan import PATHS, WILDCARDS, Plan, path
from mmt_repro.plan.version import JOB_CODE

try:
    # validates the config (config/schema.yaml), every paper's settings and the manifest
    PLAN = Plan(config, Path(workflow.basedir))
except (ConfigError, DataError) as err:
    sys.exit(f"mmt-repro: {err}")

workflow.global_wildcard_constraints(**WILDCARDS)


def code(kind):
    """The `code` param of a rule: the package version and the hash of the package modules that
    its kind of job runs (mmt_repro.plan.version.JOB_CODE): a change there re-runs the job.
    """
    return PLAN.code_version(*JOB_CODE[kind])


def onstart_check_models(log=None):
    """Real runs (not dry runs, not SLURM job steps): every system's model config against its
    model's dataclass, once, before any job starts (imports torch)."""
    from mmt_repro.model_configs import check_model_configs

    try:
        for settings in PLAN.settings.values():
            check_model_configs(settings)
    except ConfigError as err:
        sys.exit(f"mmt-repro: {err}")
