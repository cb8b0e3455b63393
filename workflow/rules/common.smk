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


def requested_targets():
    """The targets of the `snakemake` command line. Snakemake parses this file before it hands
    the targets over (workflow.dag_settings comes later), so read them off the command line with
    Snakemake's own parser; none when it runs by its API or a job step, or the line fails to parse.
    """
    if "snakemake" not in sys.argv[0]:
        return []
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    try:
        from snakemake.cli import get_argument_parser

        args, _ = get_argument_parser().parse_known_args(argv[:cut])
    except (Exception, SystemExit):
        return []
    return [*args.targets, *argv[cut + 1 :]]


try:
    # validates the config (config/schema.yaml), every paper's settings and the manifest
    PLAN = Plan(config, Path(workflow.basedir))
    # the requested paths' papers, tables, systems, datasets and feature sets: a typo stops here,
    # naming the valid names, instead of inside an input function's traceback
    PLAN.check_targets(requested_targets())
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
