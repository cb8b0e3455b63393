"""run_step's thread setting: torch gets the rule's threads, and steps that never use torch
do not pay for importing it."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from mmt_repro.runtime import set_threads
set_threads(1)
print("torch imported:", "torch" in sys.modules)
import torch
print("threads after a later import:", torch.get_num_threads())
set_threads(2)
print("threads when already imported:", torch.get_num_threads())
"""


def test_threads_reach_torch_without_importing_it_for_every_step():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["torch imported: False", "threads after a later import: 1", "threads when already imported: 2"]


POLICY = """
import os
import mmt_repro
import torch
from mmt_repro.runtime import set_threads
set_threads(2)
print(os.environ["GOMP_SPINCOUNT"], torch.get_num_threads(), torch.get_num_interop_threads())
"""


def _policy(env_policy: str | None) -> list[str]:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_NUM_THREADS")}
    if env_policy:
        env["GOMP_SPINCOUNT"] = env_policy
    return subprocess.run([sys.executable, "-c", POLICY], capture_output=True, text=True, check=True,
                          env=env).stdout.split()


def test_openmp_threads_spin_briefly_and_jobs_use_exactly_their_threads():
    # the package sets a short OpenMP spin before torch loads libgomp (benchmarks/bench_load.py
    # measures why); two intra-op threads, one inter-op thread
    assert _policy(None) == ["1000", "2", "1"]
    assert _policy("300000")[0] == "300000"  # a value the user exported wins


JOB = """
import atexit, sys
from pathlib import Path
from mmt_repro.runtime import run_step

if sys.argv[1] == "workflow":  # what Snakemake's script preamble leaves in the main module
    class Snakemake:
        pass
    Snakemake.__module__ = "snakemake.script"
    snakemake = Snakemake()
atexit.register(lambda: print("interpreter exit ran", flush=True))

def step(out):
    Path(out).write_text("written", encoding="utf-8")
    print("step output")   # buffered: flushed before the process ends
    return 7

print("returned", run_step(sys.argv[2], 1, step, out=sys.argv[3]))
"""


def test_a_workflow_job_ends_its_process_after_its_step_and_a_call_elsewhere_returns(tmp_path):
    for mode in ("workflow", "library"):
        log, out = tmp_path / f"{mode}.log", tmp_path / f"{mode}.out"
        proc = subprocess.run([sys.executable, "-c", JOB, mode, str(log), str(out)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert out.read_text(encoding="utf-8") == "written"
        assert "done in" in log.read_text(encoding="utf-8")  # the log handler was flushed
        lines = proc.stdout.splitlines()
        if mode == "workflow":  # ended at once: nothing after the step, no interpreter exit
            assert lines == ["step output"]
        else:
            assert lines == ["step output", "returned 7", "interpreter exit ran"]
