"""Learning curves as tables and figures (BertGen's Figures 4-6): validation BLEU of several
systems over training, from the training curves (``<model>.curve.tsv``) the trainer writes.

A table of ``kind: curves`` names systems on one dataset and pair; each system's curve is the
column of its training curve that holds that task's validation BLEU (``val_bleu``, or
``val_bleu_<task>`` for a task of a multi-task run) against an x column (``epoch``, or
``passes_<task>``: passes over that task's training examples). :func:`make_curves` writes the
standard table (one row per system: ``best_val_bleu`` and ``last_val_bleu``, so that
``all.tsv`` gathers it like any table) and the figure.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from ..io import DataError, atomic_path
from .build import COLUMNS, CONGRUENT, _normalise, write_table

log = logging.getLogger(__name__)


def read_curve(path: Path, y: str, x: str) -> pd.DataFrame:
    """``(x, y)`` columns of a training curve TSV, rows where both are numbers."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "training curve does not exist", "train the system first (rule train_model)")
    df = pd.read_csv(path, sep="\t")
    missing = [c for c in (x, y) if c not in df.columns]
    if missing:
        raise DataError(path, f"training curve lacks column(s) {missing}; it has {list(df.columns)}",
                        "give the task `val: true` in the system's tasks (its validation curve) and re-train")
    out = df[[x, y]].apply(pd.to_numeric, errors="coerce").dropna()
    return out.rename(columns={x: "x", y: "y"})


def make_curves(curves: dict[str, dict], paper: str, table: str, pair: str, test_set: str, out_tsv: Path,
                out_png: Path, out_pdf: Path | None = None, note: str = "", x_label: str = "epochs") -> pd.DataFrame:
    """``curves``: ``{system: {"file", "y", "x"}}`` (a training curve and its columns). Writes
    the table (best and last validation BLEU per system) and the figure (one line per system)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, data = [], {}
    for system, spec in curves.items():
        df = read_curve(spec["file"], spec["y"], spec["x"])
        data[system] = df
        for metric, value in (("best_val_bleu", df["y"].max()), ("last_val_bleu", df["y"].iloc[-1])):
            rows.append({"paper": paper, "table": table, "system": system, "pair": pair, "test_set": test_set,
                         "condition": CONGRUENT, "metric": metric, "ours": round(float(value), 2), "n_seeds": 1,
                         "signature": f"training curve {spec['y']} against {spec['x']}", "note": note})
    table_df = _normalise(pd.DataFrame.from_records(rows, columns=COLUMNS))
    write_table(table_df, out_tsv)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for system, df in data.items():
        ax.plot(df["x"], df["y"], marker="o", markersize=3, label=system)
    ax.set_xlabel(x_label)
    ax.set_ylabel(f"validation BLEU ({test_set})")
    ax.set_title(f"{paper} {table} ({pair})")
    ax.legend()
    fig.tight_layout()
    for out in [out_png] + ([out_pdf] if out_pdf else []):
        with atomic_path(out) as tmp:
            fig.savefig(tmp, format=Path(out).suffix.lstrip("."))
    plt.close(fig)
    log.info("curves of %s/%s: %s", paper, table, {s: len(d) for s, d in data.items()})
    return table_df
