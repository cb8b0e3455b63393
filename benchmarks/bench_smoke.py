"""Where the smoke run's time goes, paper by paper, against each paper's budget.

Reads the Snakemake benchmark files of a finished smoke run (results/benchmarks/<rule>/...,
one per job, column ``s`` = wall seconds) and sums them per paper: a job belongs to a paper
when its benchmark path is results/benchmarks/<rule>/<paper>/...; the others (data,
features, stats) are shared. Each paper's sum is compared with ``papers.<paper>.smoke_budget_s``
of config/smoke.yaml, so that the whole CI run stays under 30 minutes as papers join.

    make smoke && python benchmarks/bench_smoke.py [--workdir .] [--top 5]
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def job_seconds(workdir: Path) -> list[tuple[str, Path, float]]:
    """(rule, benchmark file, seconds) of every job of the run in ``workdir``."""
    root = workdir / "results" / "benchmarks"
    jobs = []
    for path in sorted(root.rglob("*.tsv")):
        with path.open(encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        if rows:
            jobs.append((path.relative_to(root).parts[0], path.relative_to(root), float(rows[-1]["s"])))
    return jobs


def paper_seconds(workdir: Path, papers: list[str]) -> dict[str, float]:
    """Job seconds per paper (its jobs: results/benchmarks/<rule>/<paper>/...); the rest under "shared"."""
    totals: dict[str, float] = defaultdict(float)
    for _rule, path, secs in job_seconds(workdir):
        owner = path.parts[1] if len(path.parts) > 2 and path.parts[1] in papers else "shared"
        totals[owner] += secs
    return dict(totals)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=REPO, help="folder of the smoke run (results/ inside)")
    ap.add_argument("--config", type=Path, default=REPO / "config" / "smoke.yaml")
    ap.add_argument("--top", type=int, default=5, help="slowest jobs shown per paper")
    args = ap.parse_args()
    papers = (yaml.safe_load(args.config.read_text(encoding="utf-8")).get("papers") or {})
    budgets = {p: b.get("smoke_budget_s") for p, b in papers.items()}
    jobs = job_seconds(args.workdir)
    if not jobs:
        raise SystemExit(f"no benchmark files under {args.workdir / 'results' / 'benchmarks'}: run the smoke first")
    by_paper: dict[str, list[tuple[str, Path, float]]] = defaultdict(list)
    for rule, path, secs in jobs:
        owner = path.parts[1] if len(path.parts) > 2 and path.parts[1] in budgets else "shared"
        by_paper[owner].append((rule, path, secs))
    print(f"{'part':20s} {'jobs':>5s} {'job s':>8s} {'budget s':>9s}")
    for owner, items in sorted(by_paper.items(), key=lambda kv: kv[0] == "shared"):
        total = sum(s for _, _, s in items)
        budget = budgets.get(owner)
        verdict = "" if budget is None else ("ok" if total <= budget else "OVER BUDGET")
        print(f"{owner:20s} {len(items):5d} {total:8.0f} {budget if budget is not None else '-':>9} {verdict}")
        for rule, path, secs in sorted(items, key=lambda x: -x[2])[: args.top]:
            print(f"    {secs:7.1f} s  {rule:24s} {path}")
    print(f"{'all jobs':20s} {len(jobs):5d} {sum(s for _, _, s in jobs):8.0f}")


if __name__ == "__main__":
    main()
