"""Protocol grids: why a number differs from the paper's. One grid per translation table: the
translations its rows already have, scored under every protocol that makes sense for the
table's target language (:mod:`mmt_repro.metrics.protocols`: tokenised or detokenised text,
cased or lowercased, multi-bleu.perl or sacreBLEU's tokenisers, Chinese by character or by
word, one reference or several, METEOR with or without ``-norm`` and in which language).

``results/tables/<paper>/<table>.protocols.tsv``
    one row per system, test set and image condition (the table's rows, in its order):
    ``system, test_set, condition, n_seeds``, then one column per protocol id, the mean over
    seeds to two decimals (like the table's ``ours``). A column that computes one of the table's
    own metrics, the paper's protocol as its ``scoring`` block states it, is marked by a ``*``
    after its id (``tok_multibleu*``): its cells are the table's ``ours`` for that metric.
``results/tables/<paper>/<table>.protocols.json``
    the legend: each protocol's description, its signature(s) (sacreBLEU's or METEOR's, with
    the text form in front where it is not the scoring form) and the table metric it computes;
    and every seed's value.

Before anything is written, every run's marked cells are compared with its score file (the
table's input): a grid that does not give the table's own number stops with an error naming
both, so the grid and the table cannot drift apart.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..io import DataError, atomic_write, read_lines
from ..metrics.protocols import describe, score_protocols

KEY = ("system", "test_set", "condition")
MARK = "*"
#: the most a recomputed cell may differ from the score file's value (they run the same code)
AGREEMENT = 1e-6


def _split_key(key: str) -> tuple[str, str, str, str]:
    system, test_set, condition, seed = key.split("|")
    return system, test_set, condition, seed


def _mean2(values: Sequence[float]) -> str:
    """The table's ``ours``: the mean over seeds rounded to two decimals (tables.build)."""
    return f"{float(round(sum(values) / len(values), 2)):.2f}"


def check_against_scores(values: Mapping[str, Mapping[str, dict]], scores: Mapping[str, str],
                         table_metrics: Mapping[str, str]) -> None:
    """Each run's cell of each table metric (``table_metrics``: metric -> protocol) against the
    value of its score file (``scores``: run key -> file); DataError on the first that differs."""
    for key, file in scores.items():
        data = json.loads(Path(file).read_text(encoding="utf-8"))
        for metric, pid in table_metrics.items():
            entry = (data.get("scores") or {}).get(metric)
            if entry is None:
                raise DataError(file, f"no {metric!r} score, but the paper's scoring block lists it",
                                "re-run the score rule for this run")
            ours = values[key][pid]["value"]
            if abs(float(entry["value"]) - ours) > AGREEMENT:
                raise DataError(file, f"{metric} is {entry['value']!r} there, but protocol {pid} (the paper's) gives "
                                f"{ours!r} on the same translation", "the grid's protocol of this metric no longer "
                                "computes what the score job does: fix mmt_repro.metrics.protocols.table_protocols")


def protocol_grid(
    translations: Mapping[str, str],
    references: Mapping[str, Sequence[str]],
    protocols: Sequence[str],
    lang: str,
    out_tsv: str | os.PathLike,
    out_json: str | os.PathLike,
    table_metrics: Mapping[str, str] | None = None,
    scores: Mapping[str, str] | None = None,
    ref_subword: str = "none",
    meteor_jar: str | os.PathLike | None = None,
    meta: Mapping | None = None,
) -> dict:
    """Score ``translations`` (``"system|test_set|condition|seed"`` -> hypothesis file) against
    ``references`` (test set -> its reference file(s), in the scoring form; ``ref_subword``
    undone first, as the score job does) under ``protocols`` (ids), check the table metrics'
    cells against ``scores`` (same keys -> score file) and write the grid (module docstring).
    ``lang``: the target language. Returns the legend (the JSON)."""
    from ..text.recipes import merge_subwords

    table_metrics = dict(table_metrics or {})
    stray = sorted(set(table_metrics.values()) - set(protocols))
    if stray:
        raise ValueError(f"table metrics name protocols not in the grid: {stray}")
    refs = {ts: [merge_subwords(read_lines(f), ref_subword) for f in ([files] if isinstance(files, str) else files)]
            for ts, files in references.items()}
    runs = {key: (read_lines(file), _split_key(key)[1]) for key, file in translations.items()}
    values = score_protocols(runs, refs, protocols, lang, meteor_jar=meteor_jar)
    if scores:
        check_against_scores(values, scores, table_metrics)

    marked = {pid: metric for metric, pid in table_metrics.items()}
    order = sorted(translations, key=lambda k: (*_split_key(k)[:3], int(_split_key(k)[3])))  # the table's order
    legend = {
        **dict(meta or {}),
        "lang": lang,
        "protocols": [{"id": pid, "description": describe(pid), "table_metric": marked.get(pid, ""),
                       "signatures": sorted({values[k][pid]["signature"] for k in values})} for pid in protocols],
        "runs": [{"system": s, "test_set": ts, "condition": c, "seed": int(seed),
                  "values": {pid: values[key][pid]["value"] for pid in protocols}}
                 for key in order for s, ts, c, seed in [_split_key(key)]],
    }
    rows: dict[tuple, list[dict]] = {}
    for run in legend["runs"]:
        rows.setdefault(tuple(run[k] for k in KEY), []).append(run["values"])
    header = [*KEY, "n_seeds", *(pid + (MARK if pid in marked else "") for pid in protocols)]
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(header)
    for key, seeds in rows.items():
        writer.writerow([*key, len(seeds), *(_mean2([v[pid] for v in seeds]) for pid in protocols)])
    with atomic_write(out_tsv) as fh:
        fh.write(buf.getvalue())
    with atomic_write(out_json) as fh:
        fh.write(json.dumps(legend, indent=1) + "\n")
    return legend


def read_grid(tsv: str | os.PathLike) -> tuple[list[str], dict[str, bool], list[dict]]:
    """``(protocol ids, id -> marked (a table metric's column), rows)`` of a grid TSV; each row
    maps the key columns, ``n_seeds`` and every protocol id to its text."""
    tsv = Path(tsv)
    if not tsv.is_file():
        raise DataError(tsv, "protocol grid does not exist", "run the protocol_grid rule that makes it")
    with open(tsv, encoding="utf-8", newline="") as fh:
        table = list(csv.reader(fh, delimiter="\t"))
    head = table[0]
    if tuple(head[:4]) != (*KEY, "n_seeds"):
        raise DataError(tsv, f"columns start {head[:4]}", f"a protocol grid starts {', '.join(KEY)}, n_seeds")
    ids = [c.rstrip(MARK) for c in head[4:]]
    marked = {c.rstrip(MARK): c.endswith(MARK) for c in head[4:]}
    rows = [dict(zip([*head[:4], *ids], r)) for r in table[1:]]
    return ids, marked, rows


def grid_markdown(tsv: str | os.PathLike, legend: str | os.PathLike, title: str, link: str,
                  heading: str = "###") -> list[str]:
    """A committed grid as Markdown lines (the results pages, :mod:`mmt_repro.tables.pages`):
    its rows with a last column ``BLEU spread`` (the row's largest BLEU minus its smallest: how
    far the protocol alone moves the number), then each protocol's description and signature."""
    ids, marked, rows = read_grid(tsv)
    info = {p["id"]: p for p in json.loads(Path(legend).read_text(encoding="utf-8"))["protocols"]}
    bleu = [pid for pid in ids if not pid.startswith("meteor_")]
    head = ["system", "test set", "condition", "seeds", *(f"`{pid}`" + (MARK if marked[pid] else "") for pid in ids),
            "BLEU spread"]
    lines = [f"{heading} [`{title}`]({link})", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        values = [float(r[pid]) for pid in bleu if r[pid]]
        spread = f"{max(values) - min(values):.2f}" if values else ""
        lines.append("| " + " | ".join([r["system"], r["test_set"], r["condition"], r["n_seeds"],
                                        *(r[pid] for pid in ids), spread]) + " |")
    lines.append("")
    for pid in ids:
        p = info.get(pid, {"description": describe(pid), "table_metric": "", "signatures": []})
        own = f" (the table's `{p['table_metric']}`)" if p["table_metric"] else ""
        sigs = "; ".join(f"`{s}`" for s in p["signatures"])
        lines.append(f"- `{pid}`{MARK if marked[pid] else ''}{own}: {p['description']}" + (f"; {sigs}" if sigs else ""))
    return lines
