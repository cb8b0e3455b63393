"""Image-use probe tables: does a multimodal system use the image? (docs/probes.md)

One row per probed multimodal system and test set (``results/tables/<paper>/<table>.probe.tsv``),
means over seeds of the probe's metric (BLEU), rounded to 2 decimals:

``text``
    the text-only counterpart (its congruent runs), or the system's own runs without images
    (``no_image``) where it is its own counterpart;
``congruent``, ``shuffled``, ``no_image``, ``blank_zero``, ``blank_mean``
    the system under each image condition (empty where the probe has not run it);
``gain``
    ``congruent - text``: what the system gains over its text-only counterpart;
``use_shuffled``, ``use_blank_zero``, ``use_blank_mean``
    ``congruent - <condition>``: what the condition takes away (the image-use figures);
``verdict``, ``note``
    ``uses the image`` when the system beats its counterpart by more than :data:`TOLERANCE`
    and every probe condition (shuffled, blank) brings it back to within :data:`TOLERANCE` of
    the counterpart; ``gain not from the image`` when every condition keeps the gain (within
    :data:`TOLERANCE` of congruent); ``partly`` otherwise; ``no gain`` when the system does not
    beat its counterpart by more than :data:`TOLERANCE`. The note says it condition by
    condition (``removes``, ``reduces``, ``keeps``).

Stdlib only: the job reads JSON score files and writes one TSV.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from mmt_repro.io import DataError, atomic_write

#: points of the metric within which two figures count as equal (the tables' bound where a paper
#: gives no spread, mmt_repro.tables.build.TOLERANCE_WITHOUT_SPREAD)
TOLERANCE = 0.5
CONDITIONS = ("congruent", "shuffled", "no_image", "blank_zero", "blank_mean")
PROBES = ("shuffled", "blank_zero", "blank_mean")  # the conditions that take the image away
COLUMNS = ["paper", "table", "system", "counterpart", "pair", "test_set", "metric", "n_seeds", "text",
           *CONDITIONS, "gain", *(f"use_{c}" for c in PROBES), "verdict", "note"]


def _value(file: str, metric: str) -> float:
    try:
        data = json.loads(Path(file).read_text(encoding="utf-8"))
        return float(data["scores"][metric]["value"])
    except FileNotFoundError:
        raise DataError(file, "score file does not exist", "re-run the score rule that makes it") from None
    except (ValueError, KeyError, TypeError) as err:
        raise DataError(file, f"no {metric!r} value ({type(err).__name__}: {err})", "re-run the score rule") from err


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def effect(text: float, congruent: float, value: float, tolerance: float = TOLERANCE) -> str:
    """What a condition does to the gain ``congruent - text``: ``removes`` it (the condition's
    figure within ``tolerance`` of the text-only one, or below), ``keeps`` it (within
    ``tolerance`` of congruent) or ``reduces`` it."""
    if value - text <= tolerance + 1e-9:
        return "removes"
    if congruent - value <= tolerance + 1e-9:
        return "keeps"
    return "reduces"


def verdict(text: float | None, congruent: float | None, probes: dict[str, float],
            tolerance: float = TOLERANCE) -> tuple[str, str]:
    """``(verdict, note)`` of one row (module docstring); ``probes``: condition -> figure."""
    if text is None or congruent is None:
        return "", "no congruent or text-only figure"
    gain = congruent - text
    if gain <= tolerance + 1e-9:
        return "no gain", f"{gain:+.2f} over the text-only counterpart (within ±{tolerance})"
    effects = {c: effect(text, congruent, v, tolerance) for c, v in probes.items()}
    note = f"gain {gain:+.2f}; " + ", ".join(f"{c} {e} it ({probes[c] - text:+.2f} left)" for c, e in effects.items())
    if not effects:
        return "", f"gain {gain:+.2f}; no probe condition run"
    if all(e == "removes" for e in effects.values()):
        return "uses the image", note
    if all(e == "keeps" for e in effects.values()):
        return "gain not from the image", note
    return "partly", note


def probe_rows(scores: dict[str, str], pairs: dict[str, str], metric: str = "bleu",
               tolerance: float = TOLERANCE) -> list[dict]:
    """The probe's rows from ``scores`` (``"system|test_set|condition|seed"`` -> score file) and
    ``pairs`` (multimodal system -> text-only counterpart, itself for its no_image runs)."""
    values: dict[tuple[str, str, str], list[float]] = {}
    for key, file in sorted(scores.items()):
        system, test_set, condition, _seed = key.split("|")
        values.setdefault((system, test_set, condition), []).append(_value(file, metric))
    rows = []
    test_sets = sorted({k[1] for k in values})
    for system, counterpart in pairs.items():
        for test_set in test_sets:
            fig = {c: _mean(values.get((system, test_set, c), [])) for c in CONDITIONS}
            if fig["congruent"] is None:
                continue
            text_key = (system, test_set, "no_image") if counterpart == system else (counterpart, test_set, "congruent")
            text = _mean(values.get(text_key, []))
            probes = {c: fig[c] for c in PROBES if fig[c] is not None}
            word, note = verdict(text, fig["congruent"], probes, tolerance)
            rows.append({
                "system": system, "counterpart": counterpart, "test_set": test_set, "metric": metric,
                "n_seeds": len(values[(system, test_set, "congruent")]), "text": text, **fig,
                "gain": None if text is None else round(fig["congruent"] - text, 2),
                **{f"use_{c}": None if fig[c] is None else round(fig["congruent"] - fig[c], 2) for c in PROBES},
                "verdict": word, "note": note,
            })
    return rows


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def make_probe(scores: dict[str, str], pairs: dict[str, str], out_tsv: Path, paper: str, table: str, pair: str,
               metric: str = "bleu", note: str = "") -> list[dict]:
    """Write the probe table of one paper table (module docstring); returns its rows."""
    rows = [{"paper": paper, "table": table, "pair": pair, **r} for r in probe_rows(scores, pairs, metric)]
    for r in rows:
        r["note"] = "; ".join(x for x in (note, r["note"]) if x)
    with atomic_write(out_tsv) as fh:
        writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
        writer.writerow(COLUMNS)
        for r in rows:
            writer.writerow([_cell(r[c]) for c in COLUMNS])
    return rows


def read_probe(tsv: Path) -> list[dict]:
    """The rows of a probe table as strings (empty cells ``""``)."""
    with open(tsv, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))
