"""Result tables shaped like the papers' tables, and the generated ``docs/results.md``.

The long form of :mod:`mmt_repro.tables.build` has one row per system x pair x test set x
condition x metric. Here each paper table becomes one grid (a pandas pivot):

* rows: the systems, in the order of the config's table (``papers.<paper>.tables.<table>.systems``,
  then its ``unavailable`` systems), then in the order of ``config/published_results.tsv``, then
  the rest as the table lists them;
* columns: the metrics (and the pairs, test sets and conditions where the table has several;
  the ones it has only one of go into its caption), in the published file's order where known;
* cells: ``ours (paper, Δ)``, parts left out where empty: ``35.12 (36.5, -1.38)``, ``35.12``
  (no published value), ``(36.5)`` (not run here), ``35.12 (36.5)`` (no delta: not comparable);
  the paper's significance marks follow its value;
* a last column ``verdict`` (where the table has verdicts): the row's verdict, or the count of
  each verdict when its cells differ (``2 reproduced, 1 missed``).

:func:`render` writes the grids as text, Markdown or LaTeX; :func:`results_doc` writes
``docs/results.md`` (every table, its notes, and the checkpoints behind each system).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mmt_repro.config import load_yaml
from mmt_repro.io import DataError

from .build import COLUMNS, CONGRUENT, FLOAT_COLUMNS, KEY_COLUMNS

FORMATS = ("text", "markdown", "latex")
#: Column levels of a paper grid, outermost first.
LEVELS = ["pair", "test_set", "condition", "metric"]
#: Metrics in the order papers print them, after the published file's order for the table.
METRIC_ORDER = ["bleu", "meteor", "ter", "chrf3", "chrf3_prec", "chrf3_rec", "cider"]
METRIC_LABELS = {"bleu": "BLEU", "meteor": "METEOR", "ter": "TER", "chrf3": "chrF3", "cider": "CIDEr"}
VERDICT_ORDER = ["reproduced", "borderline", "within (differs)", "outside (differs)", "missed"]
LEGEND = "cells: ours (paper, Δ); ours is the mean over seeds, Δ = ours - paper"


@dataclass
class PaperTable:
    """One paper table as a grid: ``grid`` has the systems as index and one column per label."""

    paper: str
    table: str
    fixed: dict[str, str]  # the levels with one value in the whole table (pair, test set, ...)
    grid: pd.DataFrame
    notes: dict[str, list[str]] = field(default_factory=dict)  # note -> systems
    runs: dict[str, list[str]] = field(default_factory=dict)  # system -> checkpoints
    seeds: dict[str, int] = field(default_factory=dict)  # system -> most seeds of its rows

    @property
    def caption(self) -> str:
        extra = ", ".join(v for v in self.fixed.values() if v and v != CONGRUENT)
        return f"{self.paper} / {self.table}" + (f" ({extra})" if extra else "")


# --------------------------------------------------------------------------- reading


def read_results(path: str | Path) -> pd.DataFrame:
    """``all.tsv`` or one table's TSV, leniently: columns of an older version are filled empty."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "table does not exist", "run the workflow first (make smoke)")
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    missing = [c for c in KEY_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(path, f"not a results table: no column(s) {missing}", "give results/tables/all.tsv or a table's TSV")
    df = df.reindex(columns=COLUMNS, fill_value="")
    for c in FLOAT_COLUMNS:
        df[c] = pd.to_numeric(df[c].replace("", None), errors="coerce").astype(float)
    df["n_seeds"] = pd.to_numeric(df["n_seeds"].replace("", None), errors="coerce").fillna(0).astype(int)
    return df


def find_config_dir(table: str | Path) -> Path | None:
    """The ``config/`` folder that orders the systems: under the working directory, else under
    one of the table's parent folders (``results/tables/all.tsv`` -> the checkout's)."""
    table = Path(table).resolve()
    for base in (Path.cwd(), *table.parents):
        if (base / "config" / "config.yaml").is_file() or (base / "config" / "published_results.tsv").is_file():
            return base / "config"
    return None


def _published(config_dir: Path | None) -> pd.DataFrame:
    path = config_dir / "published_results.tsv" if config_dir else None
    if path is None or not path.is_file():
        return pd.DataFrame(columns=["paper", "table", "system", "pair", "test_set", "condition", "metric"])
    pub = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    if "condition" not in pub.columns:
        pub["condition"] = ""
    pub["condition"] = pub["condition"].replace("", CONGRUENT)
    return pub


def _config(config_dir: Path | None) -> dict:
    path = config_dir / "config.yaml" if config_dir else None
    return load_yaml(path) if path is not None and path.is_file() else {}


# --------------------------------------------------------------------------- the grid


def _order(*sequences: Sequence[str]) -> list[str]:
    """The values of the sequences, first appearance first."""
    return list(dict.fromkeys(v for seq in sequences for v in seq if v != ""))


def _published_value(value: float) -> str:
    """A published value as printed (at most two decimals, no invented zeros), as in build's tables."""
    text = f"{value:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _cell(r) -> str:
    has = lambda v: v is not None and not (isinstance(v, float) and math.isnan(v))  # noqa: E731
    inner = []
    if has(r.paper_value):
        inner.append(_published_value(r.paper_value) + r.paper_marks)
        if has(r.delta):
            inner.append(f"{r.delta:+.2f}")
    ours = f"{r.ours:.2f}" if has(r.ours) else ""
    paren = f"({', '.join(inner)})" if inner else ""
    return " ".join(x for x in (ours, paren) if x)


def _verdict(words: Sequence[str]) -> str:
    counts = pd.Series([w for w in words if w]).value_counts()
    if len(counts) == 0:
        return ""
    if len(counts) == 1:
        return str(counts.index[0])
    known = [w for w in VERDICT_ORDER if w in counts] + sorted(w for w in counts.index if w not in VERDICT_ORDER)
    return ", ".join(f"{counts[w]} {w}" for w in known)


def _label(key: tuple, varying: Sequence[str]) -> str:
    parts = [METRIC_LABELS.get(v, v) if level == "metric" else v for level, v in zip(LEVELS, key) if level in varying]
    return " / ".join(parts)


def paper_table(df: pd.DataFrame, config: Mapping | None = None, published: pd.DataFrame | None = None) -> PaperTable:
    """The grid of one paper table (``df``: its long-form rows, one paper and table)."""
    paper, table = str(df["paper"].iloc[0]), str(df["table"].iloc[0])
    spec = ((config or {}).get("papers", {}).get(paper, {}) or {}).get("tables", {}).get(table, {}) or {}
    pub = published if published is not None else pd.DataFrame(columns=KEY_COLUMNS)
    pub = pub[(pub["paper"] == paper) & (pub["table"] == table)]
    orders = {
        "system": _order(spec.get("systems") or [], list(spec.get("unavailable") or {}), pub["system"], df["system"]),
        "pair": _order(pub["pair"], df["pair"]),
        "test_set": _order(spec.get("test_sets") or [], pub["test_set"], df["test_set"]),
        "condition": _order([CONGRUENT] if (df["condition"] == CONGRUENT).any() else [], pub["condition"],
                            df["condition"]),
        "metric": _order(pub["metric"], [m for m in METRIC_ORDER if (df["metric"] == m).any()], df["metric"]),
    }
    dup = df[df.duplicated(KEY_COLUMNS, keep=False)]
    if len(dup):
        raise DataError(None, f"the same row appears twice: {dict(dup.iloc[0][KEY_COLUMNS])}", "gather each table once")
    df = df.assign(cell=[_cell(r) for r in df.itertuples(index=False)])
    varying = [lv for lv in LEVELS if df[lv].nunique() > 1 or lv == "metric"]  # the metric always heads a column
    fixed = {lv: str(df[lv].iloc[0]) for lv in LEVELS if lv not in varying}
    keys = sorted({tuple(k) for k in df[LEVELS].itertuples(index=False)},
                  key=lambda k: tuple(orders[lv].index(v) for lv, v in zip(LEVELS, k)))
    systems = [s for s in orders["system"] if (df["system"] == s).any()]
    grid = df.pivot(index="system", columns=LEVELS, values="cell").reindex(index=systems, columns=pd.MultiIndex.from_tuples(keys, names=LEVELS))
    grid.columns = [_label(k, varying) for k in keys]
    grid = grid.fillna("")
    verdicts = df.groupby("system", sort=False)["verdict"].agg(list)
    if (df["verdict"] != "").any():
        grid["verdict"] = [_verdict(verdicts.get(s, [])) for s in systems]
    grid.index.name = "system"
    notes: dict[str, list[str]] = {}
    for r in df.itertuples(index=False):
        for note in filter(None, (x.strip() for x in r.note.split("; "))):
            notes.setdefault(note, [])
            if r.system not in notes[note]:
                notes[note].append(r.system)
    runs = {s: sorted({p for v in df.loc[df["system"] == s, "runs"] for p in v.split()}) for s in systems}
    seeds = {s: int(df.loc[df["system"] == s, "n_seeds"].max()) for s in systems}
    return PaperTable(paper, table, fixed, grid, notes, {s: r for s, r in runs.items() if r}, seeds)


def paper_tables(df: pd.DataFrame, paper: str | None = None, config: Mapping | None = None,
                 published: pd.DataFrame | None = None) -> list[PaperTable]:
    """Every (paper, table) of ``df`` as a grid, papers in the config's order (then by name),
    tables in the config's order within a paper. ``paper``: only that paper's tables."""
    if paper:
        known = sorted(set(df["paper"]))
        if paper not in known:
            raise DataError(None, f"no rows of paper {paper!r} in the table", f"give one of: {', '.join(known) or '(none)'}")
        df = df[df["paper"] == paper]
    papers_cfg = (config or {}).get("papers", {}) or {}
    paper_order = _order(list(papers_cfg), sorted(set(df["paper"])))
    out = []
    for p in paper_order:
        sub = df[df["paper"] == p]
        table_order = _order(list((papers_cfg.get(p) or {}).get("tables", {}) or {}), sorted(set(sub["table"])))
        for t in table_order:
            rows = sub[sub["table"] == t]
            if len(rows):
                out.append(paper_table(rows.reset_index(drop=True), config, published))
    return out


# --------------------------------------------------------------------------- rendering


def latex_escape(text: str) -> str:
    """Text as LaTeX prints it literally (``_``, ``%``, ``&``, ``#``, ``$``, braces, ``~``, ``^``, ``\\``)."""
    repl = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
    return "".join(repl.get(ch, ch) for ch in text)


def _rows(t: PaperTable) -> tuple[list[str], list[list[str]]]:
    header = ["system", *map(str, t.grid.columns)]
    return header, [[str(s), *map(str, row)] for s, row in zip(t.grid.index, t.grid.itertuples(index=False))]


def to_markdown(t: PaperTable, heading: str = "###") -> str:
    header, rows = _rows(t)
    cell = lambda x: x.replace("|", "\\|")  # noqa: E731
    lines = [f"{heading} {t.caption}", "", "| " + " | ".join(map(cell, header)) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(cell, r)) + " |" for r in rows]
    return "\n".join(lines)


def to_latex(t: PaperTable) -> str:
    header, rows = _rows(t)
    esc = lambda cells: " & ".join(latex_escape(c) for c in cells) + r" \\"  # noqa: E731
    return "\n".join([
        r"\begin{table}[t]", r"\centering", r"\begin{tabular}{" + "l" * len(header) + "}", r"\hline",
        esc(header), r"\hline", *(esc(r) for r in rows), r"\hline", r"\end{tabular}",
        r"\caption{" + latex_escape(t.caption) + r": ours (paper, $\Delta$)}", r"\end{table}",
    ])


def to_text(t: PaperTable) -> str:
    header, rows = _rows(t)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [f"== {t.caption}"] + ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    return "\n".join(lines)


def render(tables: Sequence[PaperTable], fmt: str = "text") -> str:
    """All grids in one format (``text``, ``markdown``, ``latex``), separated by blank lines."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    if not tables:
        return "(no results)"
    one = {"text": to_text, "markdown": to_markdown, "latex": to_latex}[fmt]
    return "\n\n".join(one(t) for t in tables)


def show_paper(path: str | Path, paper: str | None = None, fmt: str = "text", config_dir: str | Path | None = None) -> str:
    """``python -m mmt_repro show --paper``: the paper-shaped view of a results TSV."""
    config_dir = Path(config_dir) if config_dir else find_config_dir(path)
    tables = paper_tables(read_results(path), paper, _config(config_dir), _published(config_dir))
    head = {"text": f"({LEGEND})", "markdown": f"_{LEGEND}_", "latex": f"% {LEGEND}"}[fmt] if fmt in FORMATS else ""
    return head + "\n\n" + render(tables, fmt)


# --------------------------------------------------------------------------- docs/results.md


def results_doc(path: str | Path, config_dir: str | Path | None = None, source: str | None = None) -> str:
    """``docs/results.md``: every paper table as a Markdown grid, its notes, and the run records
    behind each system (the checkpoints of the ``runs`` column; beside each, ``.job.json`` holds
    the resolved job). ``source``: how to name the TSV in the text (default: its path as given)."""
    config_dir = Path(config_dir) if config_dir else find_config_dir(path)
    tables = paper_tables(read_results(path), None, _config(config_dir), _published(config_dir))
    source = source or str(path)
    out = [
        "# Results",
        "",
        f"Generated from `{source}` by `python -m mmt_repro results-doc {source} --out docs/results.md`; "
        "do not edit by hand. Each table is laid out as the paper's: systems as rows, the paper's "
        f"metrics as columns; {LEGEND}. A published value without ours is a row not run in this "
        "configuration (see the notes); `verdict` compares Δ with the paper's spread "
        "(`mmt_repro.tables.build.verdict`). The long form, with standard deviations, seeds and "
        f"p-values: `python -m mmt_repro show {source}`.",
    ]
    return "\n".join(out + table_sections(tables)) + "\n"


def table_sections(tables: Sequence[PaperTable], heading: str = "##") -> list[str]:
    """The lines of a results page below its header: per paper a section (``heading``), per
    table its grid, its notes and the checkpoints behind each system."""
    out: list[str] = []
    papers = _order([t.paper for t in tables])
    for p in papers:
        out += ["", f"{heading} {p}"]
        for t in (t for t in tables if t.paper == p):
            out += ["", to_markdown(t, heading=heading + "#")]
            if t.notes:
                out += ["", "Notes:", ""]
                every = set(t.grid.index)
                for note, systems in t.notes.items():
                    who = "all rows" if set(systems) == every else ", ".join(systems)
                    out.append(f"- {who}: {note}")
            if t.runs:
                out += ["", "Runs (the checkpoint each seed decoded; `.job.json` beside it holds the job):", ""]
                for system, paths in t.runs.items():
                    n = t.seeds.get(system, len(paths))
                    out.append(f"- {system} ({n} seed{'s' if n != 1 else ''}): "
                               + ", ".join(f"`{x}`" for x in paths))
    return out
