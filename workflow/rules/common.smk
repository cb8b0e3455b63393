# The plan of the whole workflow, made once from the config (mmt_repro.plan: torch-free,
# Snakemake-free, unit-tested in tests/unit/test_plan.py). Rules call PLAN's methods as their
# input and param functions, and the planning tools (mmt_repro.plan_tools: the preflight, code
# versions, train_model's resources) as functions of PLAN; nothing else lives here but the
# adapters Snakemake needs.

import re
import sys
from pathlib import Path

from mmt_repro.config import ConfigError
from mmt_repro.io import DataError
from mmt_repro.plan import PATHS, WILDCARDS, path
from mmt_repro.plan_tools.cost import store_mem_mb, store_runtime
from mmt_repro.plan_tools.cost import train_mem_mb, train_retries, train_runtime
from mmt_repro.plan_tools.packing import pack_mem_mb, pack_runtime, packs
from mmt_repro.plan_tools.preflight import preflight
from mmt_repro.plan_tools.version import code_param


def command_line():
    """The `snakemake` command line as Snakemake's own parser reads it (None when it runs by its
    API or the line fails to parse): Snakemake parses this file before it hands the targets
    over (workflow.dag_settings comes later)."""
    if "snakemake" not in sys.argv[0]:
        return None
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    try:
        from snakemake.cli import get_argument_parser

        args, _ = get_argument_parser().parse_known_args(argv[:cut])
    except (Exception, SystemExit):
        return None
    args.targets = [*args.targets, *argv[cut + 1 :]]
    return args


def requested_targets():
    """The targets of the `snakemake` command line; none when it runs by its API or a job step."""
    args = command_line()
    return [] if args is None else args.targets


# The preflight (mmt_repro.plan_tools.preflight, also `python -m mmt_repro check`): the config's
# schema, every paper's settings and overrides (types too, torch-free), every name in the tables and the
# requested targets, and every input those targets need that the mirror, the local copies or the
# config lack, all reported at once without a traceback. A dry run or a lint only warns of missing
# inputs (a static check needs none); a job step (--target-jobs) skips them (its inputs are in place).
_ARGS = command_line()
_JOB_STEP = "--target-jobs" in sys.argv
# (the working directory goes in by position: a line starting `workdir=` would be read as
# Snakemake's `workdir:` keyword)
PREFLIGHT = preflight(
    config,
    Path(workflow.basedir),
    requested_targets(),
    Path.cwd(),
    inputs=not _JOB_STEP,
)
if PREFLIGHT.problems:
    if (
        _ARGS is not None
        and (
            getattr(_ARGS, "dryrun", False) or getattr(_ARGS, "lint", None) is not None
        )
        and PREFLIGHT.problems == PREFLIGHT.missing_inputs
    ):
        print(
            PREFLIGHT.report("mmt-repro (dry run or lint; a real run stops here): "),
            file=sys.stderr,
        )
    else:
        sys.exit(PREFLIGHT.report())
PLAN = PREFLIGHT.plan

workflow.global_wildcard_constraints(**WILDCARDS)


# Checkpoints kept (config `keep_checkpoints`, default true). false (the rehearsal): every
# checkpoint is a temp output, deleted once the jobs that read it have run, and a finished
# training's resume state (.last.pt, .last.best.pt) goes with its job; a later run then retrains
# where a checkpoint is needed again.
KEEP_CHECKPOINTS = bool(config.get("keep_checkpoints", True))


def checkpoint_output(path):
    return path if KEEP_CHECKPOINTS else temp(path)


def resume_state_outputs():
    if KEEP_CHECKPOINTS:
        return {}
    stem = PATHS["model"]
    return {"last": temp(f"{stem}.last.pt"), "last_best": temp(f"{stem}.last.best.pt")}


# The one software environment of every rule (`--software-deployment-method conda`), and the
# container built from envs/mmt-repro.def where the config names one (`container:`, e.g.
# mmt-repro.sif; `--sdm apptainer`).
ENV = str(Path(workflow.basedir) / "envs" / "mmt-repro.yaml")
CONTAINER = config.get("container") or None


def code(stage, script):
    """The `code` param of a rule: the hash of the modules that decide its stage's outputs
    (mmt_repro.plan_tools.version.STAGES; comments and docstrings do not count), for a training,
    a decoding or an analysis its own model's too, and of the rule's script (workflow/scripts/).
    Snakemake re-runs a job whose `code` changed (a param change; `--rerun-triggers mtime input`
    leaves params, and so code versions, out). Snakemake's own `code` trigger, a script newer
    than the outputs, is off in the workflow profile (workflow/profiles/default): in a fresh
    checkout every script is newer than every output.
    """
    return code_param(
        PLAN, stage, Path(workflow.basedir) / "workflow" / "scripts" / script
    )


def onstart_check_models(log=None):
    """Real runs (not dry runs, not SLURM job steps): every system's model config against its
    model's dataclass, once, before any job starts (imports torch)."""
    from mmt_repro.model_configs import check_model_configs

    try:
        for settings in PLAN.settings.values():
            check_model_configs(settings)
    except ConfigError as err:
        sys.exit(f"mmt-repro: {err}")


# Packed trainings (config `packing`, off by default: mmt_repro.plan_tools.packing): the packs of
# the config, one rule each (workflow/rules/train.smk); none when packing is off.
PACKS = packs(PLAN)
# What a packed job takes from the profile's `set-resources` entry of train_model: where
# train_model goes (partition, account, gpu_model, ...), not what the pack sizes itself.
PACK_SIZED = {"mem_mb", "mem_mib", "mem", "runtime", "gpu", "_cores", "threads"}


def train_model_site_resources():
    """The profile's `set-resources` of train_model (a dict of plain values) minus PACK_SIZED:
    a packed job goes where a train_model job would."""
    given = workflow.resource_settings.overwrite_resources.get("train_model") or {}
    return {
        name: getattr(value, "raw", value)
        for name, value in given.items()
        if name not in PACK_SIZED
    }
