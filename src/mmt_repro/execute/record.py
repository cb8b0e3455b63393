"""The job record of the plan's run-level jobs: each function takes one job object
(mmt_repro.plan.jobs), calls the one package function that does the work, and writes the job
record beside the output — the resolved job, the package version and code hash, the git commit
when there is one, and the hash of the resolved settings — so that every number in
``results/tables/all.tsv`` leads back to the run that made it (docs/adding_a_paper.md).

Imports of the heavy layers (torch, metrics) are inside the functions: a score job never
imports torch."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ..plan.jobs import Job
from ..plan_tools.version import JOB_STAGE, STAGES, code_version, package_version

# The code version the plan computed for this process's job (the rule's `code` param, the string
# Snakemake compares to decide a re-run), set by :func:`mmt_repro.execute.run_job`. Recomputing it
# here (an ast walk over the job's module closure) cost every job 0.6-0.8 s on a 2-core machine;
# outside Snakemake (None) it is computed.
_planned_code: str | None = None


def use_planned_code(version: str | None) -> None:
    """Record ``version`` (the plan's code version of this job) in the job's provenance instead of
    recomputing it; None computes it (:func:`provenance`)."""
    global _planned_code
    _planned_code = version


def git_commit(repo: Path | None = None) -> str | None:
    """The checkout's commit (with ``+dirty`` when tracked files differ), None outside git."""
    repo = repo or Path(__file__).resolve().parents[3]
    if not (repo / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head


def _trained_model(checkpoint: str | None) -> str | None:
    """The model a checkpoint holds, from the training's job record beside it (torch-free)."""
    if not checkpoint:
        return None
    stem = str(checkpoint).split(".best.")[0]
    try:
        return json.loads(Path(f"{stem}.job.json").read_text(encoding="utf-8"))["job"]["model"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _code_version(job: Job) -> str:
    """The code version the plan gives this job (the rule's `code` param: mmt_repro.plan_tools.version)."""
    stage = JOB_STAGE[job.kind]
    if not STAGES[stage].per_model:
        return code_version(stage)
    meta = getattr(job, "meta", None) or {}
    model = getattr(job, "model", None) or _trained_model(getattr(job, "checkpoint", None) or meta.get("checkpoint"))
    return code_version(stage, model, getattr(job, "paper", None) or meta.get("paper"))


def code_of(job: Job) -> str:
    """This process's job's code version: the plan's (a rule's `code` param) or computed."""
    return _planned_code or _code_version(job)


def provenance(job: Job) -> dict:
    """What produced an output: the job, the code and the settings, by hash."""
    return {
        "job": job.to_dict(),
        "settings_hash": job.settings_hash(),
        "code_version": code_of(job),
        "package_version": package_version(),
        "git_commit": git_commit(),
    }


def write_json(path: str | Path, data: dict) -> None:
    """Atomically: a reader never sees half a record."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)


def add_provenance(path: str | Path, job: Job) -> None:
    """The job's record inside an output JSON (translation stats, scores, analyses)."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["provenance"] = provenance(job)
    write_json(path, data)
