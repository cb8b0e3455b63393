"""Result tables: our scores next to the published ones.

Flow: every ``score`` job writes one score JSON (see :mod:`mmt_repro.metrics.mt`) per system,
seed and condition; :func:`make_table` averages them over seeds into one table per paper table
(``results/tables/<paper>/<table>.tsv``) and joins the published values from
``config/published_results.tsv``; :func:`gather_tables` concatenates those into
``results/tables/all.tsv``.

Table columns, in order (:data:`COLUMNS`):

``paper, table, system, pair, test_set, condition``
    what the row is about (``condition`` is e.g. ``congruent`` or ``shuffled`` images).
``metric``
    ``bleu``, ``meteor``, ``ter``, ``chrf3``, ``chrf3_prec``, ``chrf3_rec``, ...
``ours, ours_std, n_seeds``
    mean over seeds rounded to 2 decimals, sample standard deviation (empty for one seed),
    number of seeds. ``ours`` is empty for rows we did not produce, never a copy of the paper.
``paper_value, delta``
    published value (congruent condition unless the published row's optional ``condition``
    column says otherwise, e.g. ``shuffled``: a paper's incongruent-image probe) and
    ``ours - paper_value``; empty when either side is missing, or when the run differs from the
    paper's set-up (``not_comparable``).
``paper_marks``
    the paper's own significance marks on that value, as printed (e.g. ``†‡``; their meaning
    is in the published row's ``source``), from the optional ``marks`` column of
    ``published_results.tsv``.
``tolerance, verdict``
    written by :func:`verdict` for every row with a delta: ``reproduced`` when ``|delta|`` is
    within two of the paper's standard deviations (the published row's ``spread``; ±0.5 where
    the paper gives none), ``missed`` when it is not, ``borderline`` when it is only under the
    looser reading of a spread the paper calls a variance; ``within (differs)`` / ``outside
    (differs)`` when the run differs from the paper's setting in a declared way (``differences``:
    e.g. word vectors trained here), which is never "reproduced". ``tolerance`` is the bound used.
``p_value``
    from the ``significance`` argument of :func:`make_table`, if given.
``signature``
    sacreBLEU signature(s) the scores were computed with.
``runs``
    the runs behind ``ours``: the checkpoint each seed decoded (space-separated,
    ``results/models/<paper>/<system>/<dataset>.<pair>.seed<n>.best.pt``; a ``reverse_of`` or
    ``train_on`` system names the model it really decodes). Beside each checkpoint,
    ``.job.json`` holds the resolved job (docs/adding_a_paper.md: from a row to its equation).
``note``
    why ``ours`` is empty: the reason given in ``unavailable``, or "not run in this
    configuration" for published rows no score file covers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from mmt_repro.io import DataError, atomic_path, atomic_write
from mmt_repro.tables.masked import gain_rows

COLUMNS = [
    "paper",
    "table",
    "system",
    "pair",
    "test_set",
    "condition",
    "metric",
    "ours",
    "ours_std",
    "paper_value",
    "paper_marks",
    "delta",
    "tolerance",
    "verdict",
    "n_seeds",
    "p_value",
    "signature",
    "runs",
    "note",
]
KEY_COLUMNS = ["paper", "table", "system", "pair", "test_set", "condition", "metric"]
TEXT_COLUMNS = KEY_COLUMNS + ["paper_marks", "verdict", "signature", "runs", "note"]
FLOAT_COLUMNS = ["ours", "ours_std", "paper_value", "delta", "tolerance", "p_value"]
PUBLISHED_COLUMNS = ["paper", "table", "system", "pair", "test_set", "metric", "value", "source"]
# optional: ``marks``, the paper's significance marks on the value as printed (empty: none),
# ``condition`` (empty: congruent), the test condition the value was measured in, ``spread`` (the
# paper's ± on the value, as printed) and ``spread_kind`` (std | variance: what the paper calls it)
CONGRUENT = "congruent"
NOT_RUN = "not run in this configuration"
#: The verdict's bound where the paper gives no spread (points of the metric).
TOLERANCE_WITHOUT_SPREAD = 0.5
SPREAD_KINDS = ("", "std", "variance")


# --------------------------------------------------------------------------- published values


def read_published(path: Path) -> pd.DataFrame:
    """Read ``published_results.tsv``; checks columns, numeric values and duplicate keys."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "published results file does not exist", "point `published` at config/published_results.tsv")
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    missing = [c for c in PUBLISHED_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(path, f"missing columns {missing}", f"the header must be: {' '.join(PUBLISHED_COLUMNS)}")
    if "marks" not in df.columns:
        df["marks"] = ""
    if "condition" not in df.columns:
        df["condition"] = ""
    for c in ("spread", "spread_kind"):
        if c not in df.columns:
            df[c] = ""
    bad = sorted(set(df["spread_kind"]) - set(SPREAD_KINDS))
    if bad:
        raise DataError(path, f"spread_kind {bad[0]!r} is not one of std, variance", "write std or variance (or leave it empty)")
    try:
        df["spread"] = pd.to_numeric(df["spread"].replace("", None), errors="raise")
    except (ValueError, TypeError) as err:
        raise DataError(path, f"non-numeric spread ({err})", "write the paper's ± as a plain number, e.g. 0.37") from err
    df["condition"] = df["condition"].fillna("").replace("", CONGRUENT)
    try:
        df["value"] = df["value"].astype(float)
    except ValueError as err:
        raise DataError(path, f"non-numeric value ({err})", "write values as plain numbers, e.g. 36.5") from err
    key = ["paper", "table", "system", "pair", "test_set", "condition", "metric"]
    dup = df[df.duplicated(key, keep=False)]
    if len(dup):
        first = dup.iloc[0]
        raise DataError(path, f"duplicate published row for {dict(first[key])}", "keep one value per key")
    return df


# --------------------------------------------------------------------------- score JSONs


def _read_score_json(path: Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise DataError(path, "score file does not exist", "re-run the score rule that makes it")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataError(path, f"not valid JSON ({err})", "delete it and re-run the score rule") from err
    if not isinstance(data, dict) or "meta" not in data or "scores" not in data:
        raise DataError(path, "expected an object with 'meta' and 'scores'", "write it with mmt_repro.metrics.score_files.score_files")
    need = ["paper", "table", "system", "pair", "test_set", "seed", "condition"]
    missing = [k for k in need if k not in data["meta"]]
    if missing:
        raise DataError(path, f"meta lacks {missing}", "pass them as meta to score_files")
    return data


def _score_records(score_jsons: Sequence[Path], paper: str, table: str) -> pd.DataFrame:
    """One record per (score file, metric)."""
    records = []
    for p in score_jsons:
        data = _read_score_json(p)
        meta = data["meta"]
        # A score without a table (meta table "") can serve every table of its paper that
        # lists the same system, dataset and test set.
        if str(meta["paper"]) != paper or (str(meta["table"]) not in ("", table)):
            raise DataError(
                p,
                f"belongs to {meta['paper']}/{meta['table']}, not {paper}/{table}",
                "pass make_table only the score files of this paper table",
            )
        for metric, entry in data["scores"].items():
            if not isinstance(entry, Mapping) or "value" not in entry:
                raise DataError(p, f"score {metric!r} has no 'value'", "write it with score_files")
            records.append(
                {
                    "system": str(meta["system"]),
                    "pair": str(meta["pair"]),
                    "test_set": str(meta["test_set"]),
                    "condition": str(meta["condition"]),
                    "metric": str(metric),
                    "seed": str(meta["seed"]),
                    "value": float(entry["value"]),
                    "signature": str(entry.get("signature", "")),
                    "file": str(p),
                    "run": str(meta.get("checkpoint", "")),
                    "degenerate": str((data.get("degenerate") or {}).get("warning", "")),
                }
            )
    return pd.DataFrame.from_records(
        records,
        columns=["system", "pair", "test_set", "condition", "metric", "seed", "value", "signature", "file", "run",
                 "degenerate"],
    )


def _significance_lookup(significance: Mapping | None) -> dict[tuple, float]:
    """Normalise ``significance`` keys to (system, pair, test_set, condition, metric) tuples.

    Accepted keys: such 5-tuples, or the same five fields joined by ``|`` (JSON-friendly).
    """
    out: dict[tuple, float] = {}
    for key, value in (significance or {}).items():
        if isinstance(key, str):
            key = tuple(key.split("|"))
        key = tuple(str(k) for k in key)
        if len(key) != 5:
            raise ValueError(
                f"significance key {key!r} must be (system, pair, test_set, condition, metric) "
                "or 'system|pair|test_set|condition|metric'"
            )
        out[key] = None if value is None else float(value)
    return out


def _round2(x: float) -> float:
    return float(round(x, 2))


# --------------------------------------------------------------------------- tables


def not_the_papers_tool(signature: str) -> str:
    """Why a score is not computed the way the paper's tool computes it (then the table gives no
    delta), or "": METEOR without the language's official paraphrase table (``official:no``)."""
    if "meteor" in signature and "official:no" in signature:
        missing = "paraphrase:missing" in signature
        return ("METEOR without this language's official paraphrase table (paraphrase:missing), not the paper's "
                "Meteor 1.5; set tools.meteor_jar to the full release" if missing
                else "METEOR with settings other than the official ones for this language (official:no)")
    return ""


def verdict(delta: float | None, spread: float | None = None, spread_kind: str = "",
            differs: str = "") -> tuple[float | None, str, str]:
    """``(tolerance, verdict, why)`` of one row with ``delta = ours - paper``.

    The bound is two of the paper's standard deviations, ±0.5 points where it gives no spread.
    A spread the paper calls a *variance* (Hirasawa et al.: "the mean and variance") is read
    both ways, as a variance (sd = sqrt) and as the sd it may well be: ``reproduced`` needs the
    tighter bound, ``borderline`` is within the looser one only. ``differs``: why the run is not
    the paper's setting (then ``within (differs)`` / ``outside (differs)``, never
    ``reproduced``). ``why`` (for the row's note) explains a borderline or differing verdict;
    ``tolerance`` says the rest. No delta, no verdict."""
    if delta is None or (isinstance(delta, float) and math.isnan(delta)):
        return None, "", ""
    if spread is None or (isinstance(spread, float) and math.isnan(spread)):
        tight = loose = TOLERANCE_WITHOUT_SPREAD
        basis = f"±{TOLERANCE_WITHOUT_SPREAD} (the paper gives no spread)"
    elif spread_kind == "variance":
        tight, loose = sorted((2 * float(spread), 2 * math.sqrt(float(spread))))
        basis = (f"2 sd, the paper's ±{_fmt_published(float(spread))} read as a variance ({2 * math.sqrt(spread):.2f}) "
                 f"and as an sd ({2 * spread:.2f})")
    else:
        tight = loose = 2 * float(spread)
        basis = f"2 sd (the paper's ±{_fmt_published(float(spread))})"
    size = abs(delta)
    if differs:
        word = "within (differs)" if size <= loose + 1e-9 else "outside (differs)"
        return _round2(loose), word, f"verdict: |delta| {size:.2f} vs {basis}, not the paper's setting"
    if size <= tight + 1e-9:
        return _round2(tight), "reproduced", ""
    if size <= loose + 1e-9:
        return _round2(tight), "borderline", f"verdict: |delta| {size:.2f} within {basis} only as a variance"
    return _round2(tight), "missed", ""


def make_table(
    score_jsons: list[Path],
    paper: str,
    table: str,
    published: Path,
    out_tsv: Path,
    unavailable: list[dict] | None = None,
    significance: dict | None = None,
    note: str = "",
    not_comparable: dict[str, str] | None = None,
    differences: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Average score JSONs over seeds, join the published values, write ``out_tsv``.

    ``differences``: system -> how its runs differ from the paper's setting in a declared way
    (e.g. word vectors trained here): its rows get a delta, and a verdict that says so.

    ``note``: a caveat of this run (e.g. a scaled-down model) put on every row we produced.
    ``not_comparable``: system -> reason its runs differ from the paper's set-up (e.g. word
    vectors trained here instead of the paper's); its rows show the paper's value but no
    ``delta``, with the reason in ``note``.

    ``unavailable``: rows we cannot produce, each ``{system, pair, test_set, metric, reason}``
    (optional ``condition``, default ``congruent``); they appear with empty ``ours`` and the
    reason as ``note``. ``significance``: p-values keyed by
    ``(system, pair, test_set, condition, metric)`` or ``"system|pair|test_set|condition|metric"``.
    Published rows of this paper/table that nothing covers appear with note
    "not run in this configuration". Returns the table (numeric columns as floats/ints).
    """
    recs = _score_records(score_jsons, paper, table)
    group_key = ["system", "pair", "test_set", "condition", "metric"]

    rows: dict[tuple, dict] = {}
    for key, grp in recs.groupby(group_key, sort=True):
        dup = grp[grp.duplicated("seed", keep=False)]
        if len(dup):
            raise DataError(
                dup["file"].iloc[0],
                f"seed {dup['seed'].iloc[0]} of {dict(zip(group_key, key))} appears in several score files: "
                f"{sorted(dup['file'])}",
                "give each run its own seed or pass each score file once",
            )
        sigs = sorted(set(grp["signature"]))
        if len(sigs) > 1:
            raise DataError(
                grp["file"].iloc[0],
                f"{dict(zip(group_key, key))} was scored with different settings across seeds: {sigs}",
                "re-score every seed with the same metric settings",
            )
        values = grp["value"].tolist()
        n = len(values)
        mean = sum(values) / n
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
        # Degenerate output (empty or cut-off hypotheses) is said on the row, seed by seed.
        warnings = [f"seed {s}: {w}" for s, w in zip(grp["seed"], grp["degenerate"]) if w]
        reason = (not_comparable or {}).get(key[0], "")
        comparable = not reason
        reason = "; ".join(x for x in (reason, (differences or {}).get(key[0], "")) if x)
        rows[key] = {
            "ours": _round2(mean),
            "ours_std": None if std is None else _round2(std),
            "n_seeds": n,
            "signature": sigs[0],
            "runs": " ".join(sorted({r for r in grp["run"] if r})),
            "note": "; ".join([x for x in (note, reason, *warnings) if x]),
            "comparable": comparable,
        }
    rows.update(gain_rows(rows))  # the masked-word probe's gain (tables/masked.py)

    for item in unavailable or []:
        missing = [k for k in ("system", "pair", "test_set", "metric", "reason") if k not in item]
        if missing:
            raise ValueError(f"unavailable entry {item!r} lacks {missing}")
        key = (
            str(item["system"]),
            str(item["pair"]),
            str(item["test_set"]),
            str(item.get("condition", CONGRUENT)),
            str(item["metric"]),
        )
        if key in rows and rows[key]["n_seeds"] > 0:
            raise ValueError(f"{dict(zip(group_key, key))} is listed as unavailable but has scores; drop one of the two")
        rows[key] = {"ours": None, "ours_std": None, "n_seeds": 0, "signature": "", "runs": "",
                     "note": str(item["reason"])}

    pub = read_published(published)
    pub = pub[(pub["paper"] == paper) & (pub["table"] == table)]
    paper_values: dict[tuple, float] = {}
    paper_marks: dict[tuple, str] = {}
    spreads: dict[tuple, tuple] = {}
    for r in pub.itertuples(index=False):
        key = (r.system, r.pair, r.test_set, r.condition, r.metric)
        paper_values[key] = float(r.value)
        paper_marks[key] = r.marks
        spreads[key] = (None if pd.isna(r.spread) else float(r.spread), r.spread_kind)
        if key not in rows:
            rows[key] = {"ours": None, "ours_std": None, "n_seeds": 0, "signature": "", "runs": "", "note": NOT_RUN}

    pvals = _significance_lookup(significance)
    stray = sorted(k for k in pvals if k not in rows)
    if stray:
        raise ValueError(f"significance given for rows not in the table: {stray}")
    out = []
    for key in sorted(rows):
        r = rows[key]
        pv = paper_values.get(key)
        comparable = r.get("comparable", True)
        delta = _round2(r["ours"] - pv) if (r["ours"] is not None and pv is not None and comparable) else None
        other_tool = not_the_papers_tool(r["signature"])
        if delta is not None and other_tool:
            delta = None
            r["note"] = "; ".join(x for x in (r["note"], f"no delta: {other_tool}") if x)
        tolerance, word, why = verdict(delta, *spreads.get(key, (None, "")), differs=(differences or {}).get(key[0], ""))
        if why:
            r["note"] = "; ".join(x for x in (r["note"], why) if x)
        out.append(
            {
                "paper": paper,
                "table": table,
                **dict(zip(group_key, key)),
                "ours": r["ours"],
                "ours_std": r["ours_std"],
                "paper_value": pv,
                "paper_marks": paper_marks.get(key, ""),
                "delta": delta,
                "tolerance": tolerance,
                "verdict": word,
                "n_seeds": r["n_seeds"],
                "p_value": pvals.get(key),
                "signature": r["signature"],
                "runs": r.get("runs", ""),
                "note": r["note"],
            }
        )
    df = _normalise(pd.DataFrame.from_records(out, columns=COLUMNS))
    write_table(df, out_tsv)
    return df


def _normalise(df: pd.DataFrame) -> pd.DataFrame:
    """Fix dtypes and column order, sort rows by the key columns."""
    df = df.reindex(columns=COLUMNS)
    for c in TEXT_COLUMNS:
        df[c] = df[c].fillna("").astype(str)
    for c in FLOAT_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="raise").astype(float)
    df["n_seeds"] = pd.to_numeric(df["n_seeds"]).fillna(0).astype(int)
    return df.sort_values(KEY_COLUMNS, kind="mergesort").reset_index(drop=True)


def _fmt(value: float, kind: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if kind == "2f":
        return f"{value:.2f}"
    if kind == "p":
        return f"{value:.4g}"
    return _fmt_published(value)


def _fmt_published(value: float) -> str:
    """Published values as printed: at least one decimal, at most two, no invented zeros."""
    text = f"{value:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _as_text(df: pd.DataFrame) -> pd.DataFrame:
    text = pd.DataFrame(index=df.index)
    for c in COLUMNS:
        if c in ("ours", "ours_std", "delta", "tolerance"):
            text[c] = [_fmt(v, "2f") for v in df[c]]
        elif c == "paper_value":
            text[c] = [_fmt(v, "g") for v in df[c]]
        elif c == "p_value":
            text[c] = [_fmt(v, "p") for v in df[c]]
        else:
            text[c] = df[c].astype(str)
    return text


def write_table(df: pd.DataFrame, out_tsv: Path) -> Path:
    """Write a table as TSV atomically, with fixed number formats (deterministic bytes)."""
    text = _as_text(_normalise(df))
    with atomic_write(out_tsv) as fh:
        text.to_csv(fh, sep="\t", index=False, lineterminator="\n")
    return Path(out_tsv)


def read_table(path: Path) -> pd.DataFrame:
    """Read a table written by :func:`write_table` back with proper dtypes."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "table does not exist", "re-run the make_table rule")
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    if list(df.columns) != COLUMNS:
        raise DataError(path, f"columns {list(df.columns)} differ from {COLUMNS}", "re-run make_table with this version")
    for c in FLOAT_COLUMNS:
        df[c] = df[c].mask(df[c] == "")
    return _normalise(df)


def gather_tables(tables: list[Path], out_tsv: Path, out_parquet: Path | None = None) -> pd.DataFrame:
    """Concatenate per-paper tables into one (``all.tsv``; optionally also Parquet)."""
    frames = [read_table(t) for t in tables]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    df = _normalise(df)
    dup = df[df.duplicated(KEY_COLUMNS, keep=False)]
    if len(dup):
        raise DataError(
            None, f"the same row appears in several tables: {dict(dup.iloc[0][KEY_COLUMNS])}", "gather each table once"
        )
    write_table(df, out_tsv)
    if out_parquet is not None:
        with atomic_path(out_parquet) as tmp:
            df.to_parquet(tmp, index=False)
    return df


def format_table(df: pd.DataFrame) -> str:
    """Compact fixed-width rendering for the end-of-run summary.

    One block per (paper, table, pair, test set); one line per row with ours ± std, the paper
    value, delta, seeds, p-value and the note (why ours is empty).
    """
    if len(df) == 0:
        return "(no results)"
    df = _normalise(df)
    header = ["system", "condition", "metric", "ours", "paper", "delta", "verdict", "n", "p", "note"]
    right = {"ours", "paper", "delta", "n", "p"}
    blocks = []
    for (paper, table, pair, test_set), grp in df.groupby(["paper", "table", "pair", "test_set"], sort=True):
        rows = [header]
        for r in grp.itertuples(index=False):
            ours = "-" if math.isnan(r.ours) else f"{r.ours:.2f}"
            if not math.isnan(r.ours_std):
                ours += f" ±{r.ours_std:.2f}"
            rows.append(
                [
                    r.system,
                    r.condition,
                    r.metric,
                    ours,
                    "-" if math.isnan(r.paper_value) else _fmt_published(r.paper_value) + r.paper_marks,
                    "" if math.isnan(r.delta) else f"{r.delta:+.2f}",
                    r.verdict,
                    str(r.n_seeds),
                    "" if math.isnan(r.p_value) else f"{r.p_value:.3g}",
                    r.note,
                ]
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = [f"== {paper} / {table} / {pair} / {test_set}"]
        for row in rows:
            cells = [
                cell.rjust(w) if name in right else cell.ljust(w) for name, cell, w in zip(header, row, widths)
            ]
            lines.append("  ".join(cells).rstrip())
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def make_table_from_files(
    score_jsons: list[Path],
    paper: str,
    table: str,
    published: Path,
    out_tsv: Path,
    significance_json: Path | None = None,
    unavailable_systems: dict[str, str] | None = None,
    note: str = "",
    not_comparable: dict[str, str] | None = None,
    differences: dict[str, str] | None = None,
    unavailable_rows: list[dict] | None = None,
) -> pd.DataFrame:
    """:func:`make_table` with the p-values read from the significance rule's JSON, and
    ``unavailable_systems`` (system -> reason) expanded to every published row of those systems;
    ``unavailable_rows``: rows of our own that cannot be produced yet (``{system, pair, test_set,
    metric, reason}``, e.g. a CoMMuTE row without the images); ``not_comparable`` as :func:`make_table`."""
    significance = None
    if significance_json:
        significance = json.loads(Path(significance_json).read_text(encoding="utf-8"))
    unavailable = list(unavailable_rows or [])
    if unavailable_systems:
        pub = read_published(published)
        pub = pub[(pub["paper"] == paper) & (pub["table"] == table)]
        for system, reason in sorted(unavailable_systems.items()):
            rows = pub[pub["system"] == system]
            if rows.empty:
                raise DataError(published, f"no published row for unavailable system {system!r} of {paper}/{table}",
                                "list only systems the paper reports")
            unavailable.extend(
                {"system": system, "pair": r.pair, "test_set": r.test_set, "condition": r.condition, "metric": r.metric,
                 "reason": reason}
                for r in rows.itertuples()
            )
    return make_table(
        score_jsons, paper, table, published, out_tsv, unavailable=unavailable or None, significance=significance, note=note,
        not_comparable=not_comparable, differences=differences,
    )
