"""Fixtures of the workflow tests: ``wf`` (a Snakemake runner and the reduced smoke
configuration), one reduced smoke run on this machine (the reference that the SLURM run must
equal byte for byte: the determinism check), and a single-node SLURM cluster
(tests/slurm_cluster.py) for the whole session.

Test modules reach the helpers through the ``wf`` fixture, not by importing this file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))  # tests/slurm_cluster.py is a helper, not a package module

from slurm_cluster import SlurmUnavailable, start_cluster  # noqa: E402

SNAKEMAKE = [sys.executable, "-m", "snakemake"]
SMOKE = REPO / "config" / "smoke.yaml"
SLURM_PROFILE = REPO / "tests" / "slurm_profile"
# The full smoke run (target all) takes SMOKE_IDLE_S on an idle 2-core machine of CI's type
# its timeout is twice that, so a busy machine at half speed still passes.
SMOKE_IDLE_S = 1300  # measured 1,078 s alone on 2 AVX2-only cores (2026-11-29; 1,278 s before the smoke's DA and
# region cuts); 1,662 s in a clean-clone `make test`, where the other worker's tests share the cores
SMOKE_TIMEOUT = 2 * SMOKE_IDLE_S
# Torch threads of the jobs: a local run gets --cores THREADS, a SLURM run --max-threads THREADS,
# so every rule runs with the same thread count either way (float sums depend on it).
THREADS = min(2, len(os.sched_getaffinity(0)))

# The smoke configuration cut down for the tests that run the whole DAG more than once: the
# grounded table only (NMT and NMT_SRC+IMG, 32 jobs), 300 training pairs, 2 epochs, a resumable
# checkpoint every 2 updates, and no METEOR (its JVM start costs ~6 s a job).
REDUCED = {  # config/smoke.yaml cut down for repeated DAG runs
    "datasets": {"grounded": {"sizes": {"train": 300, "val": 30, "test": 30}}},
    "papers": {"doubly_attentive": {"overrides": {
        "systems": {name: {"train": {"max_epochs": 2, "log_every": 2, "checkpoint_every": 2}}
                    for name in ("nmt", "nmt_src_img")},
        "scoring": {"metrics": ["bleu", "chrf3", "ter"]},  # no METEOR (its JVM start costs ~6 s a job)
    }}},
}
KEPT_TABLE = ("doubly_attentive", "grounded")  # the one table the reduced runs build


def reduced_config() -> str:
    """REDUCED plus ``enabled: false`` for every other table of the smoke configuration, so that
    the reduced runs stay one small table however many papers join the smoke run."""
    import yaml

    from mmt_repro.config import deep_update, load_yaml

    config = deep_update(load_yaml(REPO / "config" / "config.yaml"), load_yaml(SMOKE))
    off = {"papers": {paper: {"tables": {name: {"enabled": False} for name in block.get("tables") or {}
                                         if (paper, name) != KEPT_TABLE}}
                      for paper, block in config["papers"].items()}}
    header = "# Written by tests/workflow/conftest.py: config/smoke.yaml cut down for repeated DAG runs.\n"
    return header + yaml.safe_dump(deep_update(REDUCED, off), sort_keys=True)


def snakemake(*args, cwd=REPO, env=None, timeout=900) -> subprocess.CompletedProcess:
    """Run Snakemake on the repository's Snakefile; on timeout it is killed (SIGKILL), since
    Snakemake ignores SIGTERM while it waits for cluster jobs."""
    env = dict(env or os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([*SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def write_reduced_config(folder: Path) -> Path:
    path = Path(folder) / "reduced.yaml"
    path.write_text(reduced_config(), encoding="utf-8")
    return path


def reduced_args(workdir: Path, *targets: str) -> list[str]:
    """Arguments of a reduced smoke run of ``targets`` into ``workdir``: smoke.yaml, then the
    reduction (targets go first: --configfile takes every word up to the next option)."""
    return [*targets, "--directory", str(workdir), "--configfile", str(SMOKE), str(write_reduced_config(workdir))]


def failure_report(res: subprocess.CompletedProcess, workdir: Path) -> str:
    logs = "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-1500:]}"
                     for p in sorted((workdir / "results" / "logs").rglob("*.log")))
    return f"stdout:\n{res.stdout[-4000:]}\nstderr:\n{res.stderr[-6000:]}\n{logs[-6000:]}"


def run_reduced_locally(workdir: Path) -> float:
    """The reduced smoke run on this machine; returns its wall time in seconds."""
    started = time.monotonic()
    res = snakemake(*reduced_args(workdir, "results/tables/all.tsv"), "--cores", str(THREADS))
    if res.returncode != 0:
        pytest.fail(f"reduced smoke run in {workdir} failed:\n{failure_report(res, workdir)}")
    return time.monotonic() - started


def smoke_config() -> dict:
    """config.yaml with smoke.yaml merged in, as --configfile does."""
    from mmt_repro.config import deep_update, load_yaml

    return deep_update(load_yaml(REPO / "config" / "config.yaml"), load_yaml(SMOKE))


def expected_models(config: dict) -> set[str]:
    """``paper/system/dataset.pair.seedN`` of every model the config's enabled tables need:
    their systems (at their ``train_on`` run where they have one), the systems those start from
    (init_from), and the back-translation model."""
    from mmt_repro.settings import load_paper

    wanted = set()
    for paper, block in config["papers"].items():
        settings = load_paper(paper, REPO / block["settings"], block.get("overrides"))
        for table in block["tables"].values():
            if not table.get("enabled", True):
                continue
            todo = list(table["systems"])
            while todo:
                system = settings.system(todo.pop())
                name = next(k for k, v in settings.systems.items() if v is system)
                dataset, pair = table["dataset"], table["pair"]
                if system.reverse_of:  # decodes its forward system's checkpoint of the reversed pair
                    name, pair = system.reverse_of, "-".join(reversed(pair.split("-")))
                    system = settings.system(name)
                if system.decode_of:  # decodes that system's checkpoint with its own decoding settings
                    name = system.decode_of
                    system = settings.system(name)
                if system.train_on:  # one training run serves every table of the system
                    dataset, pair = system.train_on["dataset"], system.train_on["pair"]
                for seed in table["seeds"]:
                    wanted.add(f"{paper}/{name}/{dataset}.{pair}.seed{seed}")
                if system.init_from:
                    todo.append(system.init_from)
                if system.corpus == "backtranslated":
                    bt = settings.backtranslation
                    src, tgt = table["pair"].split("-")
                    wanted.add(f"{paper}/{bt.reverse_system}/{table['dataset']}.{tgt}-{src}.seed{bt.seed}")
    return wanted


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """The full smoke run (config/smoke.yaml, target ``all``: every paper's tables and figures),
    once per session: every paper's e2e checks read this one run. ``MMT_SMOKE_DIR=<folder>``
    reuses a finished smoke run there instead (iterating on the e2e checks; left in place)."""
    reuse = os.environ.get("MMT_SMOKE_DIR")
    if reuse:
        if not (Path(reuse) / "results" / "tables" / "all.tsv").exists():
            pytest.fail(f"MMT_SMOKE_DIR={reuse} holds no finished smoke run (results/tables/all.tsv); unset it")
        yield Path(reuse)
        return
    workdir = tmp_path_factory.mktemp("smoke")
    res = snakemake("--directory", str(workdir), "--configfile", str(SMOKE), "--cores", "2", "--scheduler", "greedy", "all",
                    timeout=SMOKE_TIMEOUT)
    if res.returncode != 0:
        logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in (workdir / "results" / "logs").rglob("*.log"))
        pytest.fail(f"smoke run failed:\n{res.stdout[-5000:]}\n{res.stderr[-5000:]}\n{logs[-8000:]}")
    yield workdir
    shutil.rmtree(workdir, ignore_errors=True)



@pytest.fixture(scope="session")
def wf():
    """The helpers and constants above, for the test modules."""
    return SimpleNamespace(
        REPO=REPO, SMOKE=SMOKE, SLURM_PROFILE=SLURM_PROFILE, THREADS=THREADS, SNAKEMAKE=SNAKEMAKE,
        snakemake=snakemake, reduced_args=reduced_args, write_reduced_config=write_reduced_config,
        failure_report=failure_report, run_reduced_locally=run_reduced_locally, smoke_config=smoke_config,
        expected_models=expected_models,
    )


@pytest.fixture(scope="session")
def reduced_local_run(tmp_path_factory):
    """One reduced smoke run on this machine (``--cores THREADS``): the reference for the SLURM
    run (byte for byte: the determinism check)."""
    workdir = tmp_path_factory.mktemp("reduced_local")
    seconds = run_reduced_locally(workdir)
    print(f"\nreduced smoke run, local, {THREADS} cores: {seconds:.0f} s")
    yield workdir
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_cluster():
    """A running single-node SLURM cluster (installed with apt-get when missing); skips only
    when the packages cannot be installed or started (not root)."""
    try:
        cluster = start_cluster()
    except SlurmUnavailable as err:
        pytest.skip(f"no SLURM test cluster: {err}")
    print(f"\nSLURM test cluster: packages installed in {cluster.install_seconds:.1f} s, daemons up and node "
          f"idle in {cluster.setup_seconds:.1f} s ({cluster.cpus} CPUs as {cluster.slots} slots, {cluster.memory_mb} MB, "
          f"SLURM_CONF={cluster.conf})")
    yield cluster
    cluster.stop()
