"""Where each training of a plan stands, read from its files in a run folder, torch-free
(``python -m mmt_repro progress``): finished (its job record is written), begun (a learning
curve or a ``.last.pt``: stopped by a signal, a time cap or a session's end, or running now) or
not started. For a run with a curve: its epochs, the best validation BLEU and its epoch, the
epochs since, and the latest epoch at which the stopping rule can end it (best epoch + patience,
at most ``max_epochs``) with the time that leaves at its median epoch so far. A long run that
resumes across sessions (docs/results/paper_multi30k_fr_en.md) reports from here."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

from ..settings import make_train_config
from ..plan.paths import path
from .walk import ALL_TABLES, training_runs


def _curve(file: Path) -> list[dict]:
    with file.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def run_progress(plan, wildcards, folder: Path) -> dict:
    """One training's row (see the module docstring); paths are read under ``folder``, the run
    folder (Snakemake's working directory)."""
    job = plan.train_jobs.job(wildcards)
    cfg = make_train_config(dict(job.train_config))
    row = {"paper": job.paper, "system": job.system, "dataset": job.dataset, "pair": job.pair, "seed": job.seed,
           "state": "not started", "epochs": 0, "best": None, "best_epoch": None, "since_best": None,
           "stop_by": None, "elapsed_s": None, "epoch_s": None, "left_s": None, "patience": cfg.patience}
    curve_file, last, record = (folder / job.curve, folder / job.last, folder / job.record)
    if record.exists():
        row["state"] = "finished"
    elif curve_file.exists() or last.exists():
        row["state"] = "begun"
    rows = _curve(curve_file) if curve_file.exists() else []
    if not rows:
        return row
    bleu = [float(r["val_bleu"]) for r in rows]
    epochs = [int(r["epoch"]) for r in rows]
    elapsed = [float(r["elapsed_s"]) for r in rows]
    best_i = bleu.index(max(bleu))  # the trainer keeps the first of equal scores (a strict >)
    per_epoch = [b - a for a, b in zip([0.0] + elapsed[:-1], elapsed)]
    row.update(epochs=epochs[-1], best=bleu[best_i], best_epoch=epochs[best_i], since_best=epochs[-1] - epochs[best_i],
               elapsed_s=elapsed[-1], epoch_s=statistics.median(per_epoch))
    if row["state"] == "begun":
        row["stop_by"] = min(epochs[best_i] + cfg.patience, cfg.max_epochs)
        left = max(row["stop_by"] - epochs[-1], 0) * row["epoch_s"]
        if cfg.time_budget_min:
            left = min(left, max(cfg.time_budget_min * 60 - elapsed[-1], 0.0))
        row["left_s"] = left
    return row


def progress(plan, targets, folder: Path) -> list[dict]:
    """A row per training run that ``targets`` need (:func:`run_progress`)."""
    runs, _ = training_runs(plan, targets)
    return [run_progress(plan, w, Path(folder)) for w in runs]


def target_tables(plan, targets, every_kind: bool = False) -> list[tuple[str, str]]:
    """(paper, table) of every enabled translation table among ``targets`` (``all.tsv``: all of
    them), in the plan's order: the tables ``progress --scores`` builds from the runs scored so
    far (:mod:`mmt_repro.tables.interim`); ``every_kind``: analyses and curves too."""
    wanted = {str(t) for t in targets}
    return [(p, t) for p, t, _ in plan.enabled
            if (ALL_TABLES in wanted or path("table", paper=p, table=t) in wanted)
            and (every_kind or plan.table_kind(p, t) == "translation")]


def _hours(seconds) -> str:
    return "" if seconds is None else f"{seconds / 3600:.2f} h"


def format_progress(rows: list[dict]) -> str:
    """A plain-text table of :func:`progress`, with a count of runs by state."""
    head = ["run", "state", "epochs", "best val BLEU (epoch)", "since best / patience", "stops by epoch",
            "time so far", "s / epoch", "left at most"]
    body = []
    for r in rows:
        best = "" if r["best"] is None else f"{r['best']:.2f} ({r['best_epoch']})"
        since = "" if r["since_best"] is None else f"{r['since_best']} / {r['patience']}"
        body.append([f"{r['paper']}/{r['system']}/{r['dataset']}.{r['pair']}.seed{r['seed']}", r["state"],
                     str(r["epochs"] or ""), best, since, "" if r["stop_by"] is None else str(r["stop_by"]),
                     _hours(r["elapsed_s"]), "" if r["epoch_s"] is None else f"{r['epoch_s']:.0f}",
                     _hours(r["left_s"])])
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip() for line in [head, *body]]
    counts = {s: sum(r["state"] == s for r in rows) for s in ("finished", "begun", "not started")}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items()) + f" of {len(rows)} trainings")
    return "\n".join(lines)
