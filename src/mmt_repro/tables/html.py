"""Result tables and data reports as HTML for the Snakemake report (``--report``), which shows an
HTML item inline but offers a TSV only as a download.

:func:`table_html` renders one results table (``results/tables/<paper>/<table>.tsv``, or
``all.tsv``): one block per (paper, table, pair, test set) with ours ± std, the paper's value,
delta and verdict (coloured), seeds, p-value and note; the runs and signatures of the rows below
it. :func:`tsv_html` renders any other TSV (data statistics, vocabulary reports) as it is.
Self-contained pages: inline CSS, no script, no network.
"""

from __future__ import annotations

import html
import math
import os
from pathlib import Path

import pandas as pd

from ..io import DataError, atomic_write

STYLE = """
body { font-family: system-ui, sans-serif; font-size: 14px; margin: 1em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.05em; margin-top: 1.4em; }
table { border-collapse: collapse; margin: 0.4em 0 1em 0; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.reproduced { background: #d9f2d9; } td.missed { background: #f8d7d7; } td.borderline { background: #fff1c2; }
td.differs { background: #e6e6f5; } p.caption, td.note { color: #555; } code { font-size: 0.95em; }
"""

_VERDICT_CLASS = {"reproduced": "reproduced", "missed": "missed", "borderline": "borderline",
                  "within (differs)": "differs", "outside (differs)": "differs"}


def _num(value, fmt: str = "{:.2f}") -> str:
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return ""
    try:
        return fmt.format(float(value))
    except (TypeError, ValueError):
        return html.escape(str(value))


def _page(title: str, caption: str, body: list[str]) -> str:
    head = f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>" \
           f"<style>{STYLE}</style></head><body>\n<h1>{html.escape(title)}</h1>\n"
    if caption:
        head += f"<p class='caption'>{html.escape(caption)}</p>\n"
    return head + "\n".join(body) + "\n</body></html>\n"


def _read(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise DataError(path, "table does not exist", "re-run the rule that makes it")
    return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)


def table_html(table_tsv: str | os.PathLike, out_html: str | os.PathLike, title: str = "", caption: str = "") -> Path:
    """One results table as HTML (see the module docstring)."""
    path = Path(table_tsv)
    df = _read(path)
    need = {"paper", "table", "system", "pair", "test_set", "condition", "metric", "ours"}
    if not need <= set(df.columns):
        raise DataError(path, f"not a results table (lacks {sorted(need - set(df.columns))})",
                        "render a table written by make_table")
    body = _paper_shaped(path)
    if body:
        body.append("<h2>Every row</h2>")
    for (paper, table, pair, test_set), grp in df.groupby(["paper", "table", "pair", "test_set"], sort=True):
        body.append(f"<h2>{html.escape(paper)} / {html.escape(table)} / {html.escape(pair)} / "
                    f"{html.escape(test_set)}</h2>")
        # a note every produced row of the block carries (the run's caveat) is said once, above it
        produced = [str(n) for n, o in zip(grp.get("note", []), grp["ours"]) if o != ""]
        common = [part for part in (produced[0].split("; ") if produced else [])
                  if part and all(part in n.split("; ") for n in produced)]
        if common:
            body.append(f"<p class='caption'>Every row we produced: {html.escape('; '.join(common))}</p>")
        rows = ["<table><tr><th>system</th><th>condition</th><th>metric</th><th>ours</th><th>paper</th>"
                "<th>delta</th><th>verdict</th><th>seeds</th><th>p</th><th>note</th></tr>"]
        for r in grp.itertuples(index=False):
            note = "; ".join(part for part in str(getattr(r, "note", "")).split("; ")
                             if part and not (r.ours != "" and part in common))
            ours = _num(r.ours)
            std = _num(getattr(r, "ours_std", ""))
            if ours and std:
                ours += f" ± {std}"
            paper_value = _num(getattr(r, "paper_value", ""), "{:g}") + html.escape(getattr(r, "paper_marks", ""))
            delta = _num(getattr(r, "delta", ""), "{:+.2f}")
            verdict = getattr(r, "verdict", "")
            tol = _num(getattr(r, "tolerance", ""))
            shown = html.escape(verdict) + (f" (±{tol})" if verdict and tol else "")
            css = _VERDICT_CLASS.get(verdict, "")
            rows.append(
                f"<tr><td>{html.escape(r.system)}</td><td>{html.escape(r.condition)}</td><td>{html.escape(r.metric)}</td>"
                f"<td class='num'>{ours}</td><td class='num'>{paper_value}</td><td class='num'>{delta}</td>"
                f"<td class='{css}'>{shown}</td><td class='num'>{html.escape(str(getattr(r, 'n_seeds', '')))}</td>"
                f"<td class='num'>{_num(getattr(r, 'p_value', ''), '{:.3g}')}</td>"
                f"<td class='note'>{html.escape(note)}</td></tr>")
        rows.append("</table>")
        body.extend(rows)
        runs = sorted({run for v in grp.get("runs", pd.Series(dtype=str)) for run in str(v).split() if run})
        sigs = sorted({s for s in grp.get("signature", pd.Series(dtype=str)) if s})
        if runs or sigs:
            body.append("<details><summary>runs and metric signatures</summary><ul>"
                        + "".join(f"<li><code>{html.escape(x)}</code></li>" for x in runs + sigs) + "</ul></details>")
    with atomic_write(out_html) as fh:
        fh.write(_page(title or f"{path.parent.name} / {path.stem}", caption, body))
    return Path(out_html)


def _paper_shaped(path: Path) -> list[str]:
    """The tables as the papers lay them out (:mod:`mmt_repro.tables.paper_view`): systems as
    rows, the paper's metrics as columns, each cell ``ours (paper, Δ)``."""
    from .paper_view import paper_tables, read_results

    try:
        tables = paper_tables(read_results(path))
    except (KeyError, ValueError):  # a table without the columns the view needs: the rows alone
        return []
    out = []
    for t in tables:
        out.append(f"<h2>{html.escape(t.caption)}: as the paper lays it out</h2>")
        out.append("<p class='caption'>each cell: ours (paper, Δ); ours is the mean over seeds</p><table><tr><th>"
                   "system</th>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in t.grid.columns) + "</tr>")
        for system, row in zip(t.grid.index, t.grid.itertuples(index=False)):
            out.append(f"<tr><td>{html.escape(str(system))}</td>"
                       + "".join(f"<td class='num'>{html.escape(str(v))}</td>" for v in row) + "</tr>")
        out.append("</table>")
    return out


def tsv_html(tsv: str | os.PathLike, out_html: str | os.PathLike, title: str = "", caption: str = "") -> Path:
    """Any TSV (data statistics, vocabulary reports) as one HTML table, numbers right-aligned."""
    path = Path(tsv)
    df = _read(path)
    numeric = {c for c in df.columns if len(df) and pd.to_numeric(df[c], errors="coerce").notna().all()}
    rows = ["<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in df.columns) + "</tr>"]
    for r in df.itertuples(index=False):
        rows.append("<tr>" + "".join(f"<td class='{'num' if c in numeric else ''}'>{html.escape(str(v))}</td>"
                                     for c, v in zip(df.columns, r)) + "</tr>")
    rows.append("</table>")
    with atomic_write(out_html) as fh:
        fh.write(_page(title or path.stem, caption, rows))
    return Path(out_html)
