"""Interim tables: a paper table built from the runs scored so far, while its other seeds train
(``python -m mmt_repro progress --scores``). A table job needs every seed of every system before
Snakemake builds it; a paper-setting run takes days on a CPU (docs/emb_pred.md), and the numbers
of its finished seeds should come from the table code, not be copied into docs by hand.

The interim table is :func:`~mmt_repro.tables.build.make_table` over the score files that exist,
with two changes, both said on the row: a row with fewer seeds than the table plans gets no
verdict (its ``note`` says ``interim: k of N seeds``; the delta stays, a mean of k seeds beside
the paper's), and a planned row with no score yet says ``not scored yet (0 of N seeds)`` instead
of "not run in this configuration". No p-values (the significance job runs over every seed).
It is written to ``results/interim/<paper>/<table>.tsv`` in the run folder, a path no rule makes,
in the format of a table (``python -m mmt_repro show --paper`` reads it)."""

from __future__ import annotations

import math
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from .build import CONGRUENT, NOT_RUN, make_table_from_files, write_table

INTERIM = "results/interim/{paper}/{table}.tsv"


def planned_seeds(plan, paper: str, table: str) -> Counter:
    """(system, test_set, condition) -> how many seeds the table averages (its config's)."""
    from ..plan.masking import masked_runs

    runs = plan.table_runs(paper, table) + masked_runs(plan, paper, table)  # + the masked-word probe's
    return Counter((system, test_set, condition) for system, test_set, _seed, condition in runs)


def interim_table(plan, paper: str, table: str, folder: Path) -> pd.DataFrame:
    """The table from the score files under ``folder`` (the run folder) that exist; see the module
    docstring. ``plan``: a :class:`mmt_repro.plan.Plan` (its ``table_job`` and ``table_runs``)."""
    folder = Path(folder)
    job = plan.table_jobs.job(SimpleNamespace(paper=paper, table=table))
    scored = [folder / f for f in job.inputs["scores"] if (folder / f).exists()]
    with tempfile.TemporaryDirectory() as tmp:
        df = make_table_from_files(
            score_jsons=scored, paper=paper, table=table, published=plan.repo_source(job.inputs["published"]),  # the repo's
            out_tsv=Path(tmp) / "table.tsv", unavailable_systems=dict(job.unavailable), note=job.note,
            not_comparable=dict(job.not_comparable), differences=dict(job.differences),
        )
    planned = planned_seeds(plan, paper, table)
    for i, r in df.iterrows():
        want = planned.get((r.system, r.test_set, r.condition or CONGRUENT), 0)
        if not want or r.n_seeds >= want:
            continue
        if r.n_seeds == 0:
            if r.note in ("", NOT_RUN):
                df.at[i, "note"] = f"not scored yet (0 of {want} seeds)"
            continue
        df.at[i, "verdict"] = ""
        df.at[i, "tolerance"] = math.nan
        # the declared differences stay; the verdict's reasoning goes with the verdict
        kept = [x for x in r.note.split("; ") if x and not x.startswith("verdict: ")]
        df.at[i, "note"] = "; ".join([f"interim: {r.n_seeds} of {want} seeds, no verdict", *kept])
    return df


def interim_tables(plan, tables, folder: Path) -> list[Path]:
    """Write the interim table of each ``(paper, table)`` of ``tables`` under ``folder`` (the
    translation tables among a plan's targets: :func:`mmt_repro.plan_tools.progress.target_tables`);
    return the files written."""
    written = []
    for paper, table in tables:
        out = Path(folder) / INTERIM.format(paper=paper, table=table)
        write_table(interim_table(plan, paper, table, folder), out)
        written.append(out)
    return written
