"""The cross-paper table: every paper's systems on the same test sets under one protocol, beside
their image-use figures (docs/scoring.md, "The cross-paper table").

``results/tables/cross_paper.tsv``
    one row per paper, system, pair and test set (:mod:`mmt_repro.plan.build.cross_paper` plans
    them from the papers' own runs):

    ``n_seeds``, ``bleu``, ``meteor``
        the mean over seeds (two decimals) of the config's BLEU protocol (default
        ``detok_13a_lc``: sacreBLEU 13a on the Moses-detokenised text, lowercased) and of
        Meteor 1.5 with ``-norm`` in the target language (:mod:`mmt_repro.metrics.protocols`),
        each paper's translations against its references in its own scoring form, both through
        the same text form (so a ``bleu`` cell equals the paper's protocol grid's cell of that
        protocol); ``not translated`` where the test set was not decoded
        (``cross_paper.decode_missing: false``),
        ``not scored`` where METEOR is off (``cross_paper.meteor: false``);
    ``gain``, ``use_shuffled``, ``use_blank_zero``, ``use_blank_mean``, ``verdict``
        read from the row of the paper's probe table (:mod:`mmt_repro.tables.probe`: BLEU under
        the paper's own protocol; ``use_*`` is what each condition takes away from congruent);
        ``not run`` where the probe has not run a condition, ``text-only`` for a system that reads
        no image, ``no probe`` for a multimodal system that no probe table covers;
    ``probe_table``, ``note``
        the probe table read, why a cell holds no number, and whether the row's translations
        were decoded for this table (a test set no table of its paper translates).
``results/tables/cross_paper.json``
    the protocols (description and signatures) and, for each row, its translations (one per
    seed), references, probe table and every seed's value: the runs behind each cell.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..io import DataError, atomic_write, read_lines
from ..metrics.protocols import describe, meteor_id, score_protocols
from .probe import read_probe

KEY = ("paper", "system", "pair", "test_set")
PROBE_COLUMNS = ("gain", "use_shuffled", "use_blank_zero", "use_blank_mean", "verdict")
COLUMNS = [*KEY, "n_seeds", "bleu", "meteor", *PROBE_COLUMNS, "probe_table", "note"]
NOT_TRANSLATED = "not translated"
NOT_SCORED = "not scored"
NOT_RUN = "not run"


def _mean2(values: Sequence[float]) -> str:
    return f"{float(round(sum(values) / len(values), 2)):.2f}"


def probe_cells(row: Mapping, probes: dict) -> dict:
    """The probe columns of one row: read from its probe table (``row["probe"]``: table and
    file; ``probes`` caches the tables read), or the row's reason in every cell."""
    probe = row.get("probe")
    if not probe:
        return {c: row.get("probe_reason") or "no probe" for c in PROBE_COLUMNS}
    file = probe["file"]
    if file not in probes:
        if not Path(file).is_file():
            raise DataError(file, "probe table does not exist", "run the make_probe_table rule that makes it")
        probes[file] = read_probe(Path(file))
    found = [r for r in probes[file] if r["system"] == row["system"] and r["test_set"] == row["test_set"]]
    if not found:
        have = sorted({f"{r['system']} on {r['test_set']}" for r in probes[file]})
        raise DataError(file, f"no row for system {row['system']!r} on test set {row['test_set']!r} "
                        f"(it has: {', '.join(have) or 'no rows'})",
                        "the probe table is older than the config's probe pairs: re-run make_probe_table")
    return {c: found[0].get(c) or NOT_RUN for c in PROBE_COLUMNS}


def score_rows(rows: Sequence[Mapping], bleu: str, meteor: bool, meteor_jar=None) -> dict:
    """``{(row index, seed): {protocol: {value, signature}}}`` of every translated row's seeds:
    one :func:`~mmt_repro.metrics.protocols.score_protocols` call per target language, each
    row's references (its paper's scoring form, ``ref_subword`` merged back) in the same text
    form as its hypotheses."""
    from ..text.recipes import merge_subwords

    by_lang: dict[str, dict] = {}
    refs: dict[str, dict] = {}
    for i, row in enumerate(rows):
        if not row["translations"]:
            continue
        lang = row["pair"].split("-")[1]
        ref_key = f"{row['paper']}|{row['pair']}|{row['test_set']}"
        if ref_key not in refs.setdefault(lang, {}):
            if not row["references"]:
                raise DataError(None, f"{ref_key}: a translated row without references", "re-plan the table")
            refs[lang][ref_key] = [merge_subwords(read_lines(f), row.get("ref_subword", "none"))
                                   for f in row["references"]]
        for seed, file in row["translations"].items():
            by_lang.setdefault(lang, {})[(i, str(seed))] = (read_lines(file), ref_key)
    out = {}
    for lang, runs in by_lang.items():
        protocols = [bleu, *([meteor_id(lang, True)] if meteor else [])]
        out.update(score_protocols(runs, refs[lang], protocols, lang, meteor_jar=meteor_jar))
    return out


def make_cross_paper(rows: Sequence[Mapping], bleu: str, meteor: bool, out_tsv: str | os.PathLike,
                     out_json: str | os.PathLike, meteor_jar=None, meta: Mapping | None = None) -> list[dict]:
    """Write the cross-paper table and its legend (module docstring) from the planned ``rows``
    (each: paper, system, pair, test_set, translations {seed: file}, references, ref_subword,
    probe {table, file} or None, probe_reason, reason); returns the table's rows."""
    rows = [dict(r) for r in rows]
    values = score_rows(rows, bleu, meteor, meteor_jar)
    probes: dict = {}
    table, legend_rows, signatures = [], [], {}
    for i, row in enumerate(rows):
        seeds = sorted(row["translations"], key=int)
        per_seed = {s: values[i, s] for s in seeds}
        for entry in per_seed.values():
            for pid, v in entry.items():
                signatures.setdefault(pid, set()).add(v["signature"])
        meteor_pid = meteor_id(row["pair"].split("-")[1], True)
        notes = [row["reason"]] if row.get("reason") else []
        if row.get("decoded_here"):
            notes.append("decoded for this table (no table of the paper translates this test set)")
        if seeds:
            cell_bleu = _mean2([per_seed[s][bleu]["value"] for s in seeds])
            cell_meteor = _mean2([per_seed[s][meteor_pid]["value"] for s in seeds]) if meteor else NOT_SCORED
        else:
            cell_bleu = cell_meteor = NOT_TRANSLATED
        if seeds and not meteor:
            notes.append("METEOR not scored (cross_paper.meteor: false)")
        cells = probe_cells(row, probes)
        if not row.get("probe"):
            notes.append({"text-only": "reads no image: no probe"}.get(row.get("probe_reason"),
                                                                     "no probe table covers this system here"))
        out = {**{k: row[k] for k in KEY}, "n_seeds": len(seeds), "bleu": cell_bleu, "meteor": cell_meteor,
               **cells, "probe_table": (row["probe"] or {}).get("table", ""), "note": "; ".join(notes)}
        table.append(out)
        legend_rows.append({**{k: row[k] for k in KEY}, "translations": row["translations"],
                            "decoded_here": bool(row.get("decoded_here")),
                            "references": list(row["references"]), "probe": row.get("probe"),
                            "values": {s: {("bleu" if pid == bleu else "meteor"): v["value"] for pid, v in e.items()}
                                       for s, e in per_seed.items()},
                            "cells": {k: out[k] for k in ("bleu", "meteor", *PROBE_COLUMNS)}})
    legend = {
        **dict(meta or {}),
        "bleu": {"id": bleu, "description": describe(bleu), "signatures": sorted(signatures.get(bleu, ()))},
        "meteor": ({"ids": sorted(p for p in signatures if p.startswith("meteor_")),
                    "description": "Meteor 1.5 -norm in the target language, on the scoring form",
                    "signatures": sorted(s for p, v in signatures.items() if p.startswith("meteor_") for s in v)}
                   if meteor else {"not_scored": "cross_paper.meteor: false"}),
        "probe": "gain, use_* and verdict from each paper's probe table (BLEU under the paper's own protocol)",
        "rows": legend_rows,
    }
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in table:
        writer.writerow([r[c] for c in COLUMNS])
    with atomic_write(out_tsv) as fh:
        fh.write(buf.getvalue())
    with atomic_write(out_json) as fh:
        fh.write(json.dumps(legend, indent=1) + "\n")
    return table


def read_cross_paper(tsv: str | os.PathLike) -> list[dict]:
    """The rows of a cross-paper table as strings."""
    tsv = Path(tsv)
    if not tsv.is_file():
        raise DataError(tsv, "cross-paper table does not exist", "run the make_cross_paper_table rule")
    with open(tsv, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def cross_paper_markdown(tsv: str | os.PathLike, link: str, heading: str = "##") -> list[str]:
    """A committed cross-paper table as Markdown lines (the results pages)."""
    rows = read_cross_paper(tsv)
    head = [c for c in COLUMNS if c != "note"]
    lines = [f"{heading} Cross-paper", "", f"[`cross_paper.tsv`]({link}): every paper's systems on the same test sets "
             "under one protocol ([docs/scoring.md](../scoring.md), `mmt_repro.tables.cross_paper`), beside the "
             "image-use figures of their papers' probe tables.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r.get(c, "") for c in head) + " |" for r in rows]
    return lines
