"""How long planning takes: a dry run of the full config and of the smoke config.

The DAG is planned from config and YAML alone: no torch import (about 3 s on its own). Every
dry run runs in a fresh process, as a user's would. Prints min/median/max wall seconds over
the repeats and whether torch was imported; the target is < 5 s for the full config.

    python benchmarks/bench_plan.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Snakemake in this process's interpreter; afterwards, say whether it imported torch.
PLAN = """
import runpy, sys
sys.argv = ["snakemake", *sys.argv[1:]]
try:
    runpy.run_module("snakemake", run_name="__main__")
except SystemExit as end:
    code = end.code
print("torch imported:", "torch" in sys.modules, file=sys.stderr)
sys.exit(code)
"""
TARGETS = {
    "full config": ["results/tables/all.tsv"],
    "smoke config": ["results/tables/all.tsv", "--configfile", "config/smoke.yaml"],
}


def plan(args: list[str]) -> tuple[float, bool]:
    started = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", PLAN, *args, "-n", "--quiet", "rules"], cwd=REPO,
                         capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if res.returncode != 0:
        sys.exit(f"dry run {' '.join(args)} failed:\n{res.stderr[-3000:]}")
    return seconds, "torch imported: True" in res.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"{'plan':14s} {'min':>6s} {'median':>7s} {'max':>6s}  torch imported")
    for label, targets in TARGETS.items():
        runs = [plan(targets) for _ in range(args.repeats)]
        secs = [s for s, _ in runs]
        print(f"{label:14s} {min(secs):6.2f} {statistics.median(secs):7.2f} {max(secs):6.2f}  "
              f"{any(t for _, t in runs)}")


if __name__ == "__main__":
    main()
