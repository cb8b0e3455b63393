"""The gain rows of the source-degradation probe (docs/scoring.md): for every system, test set
and metric with both masked conditions, ``masked_gain`` = ``masked`` minus ``masked_shuffled``
(means over seeds), what the right image gives back once the source no longer names the colours."""

from __future__ import annotations

GAIN = "masked_gain"


def gain_rows(rows: dict) -> dict:
    """Rows of :func:`mmt_repro.tables.build.make_table` (keyed by system, pair, test_set,
    condition, metric) -> the gain rows they imply, in the same form."""
    out = {}
    for (system, pair, test_set, condition, metric), row in rows.items():
        other = rows.get((system, pair, test_set, "masked_shuffled", metric))
        if condition != "masked" or other is None or row["ours"] is None or other["ours"] is None:
            continue
        out[(system, pair, test_set, GAIN, metric)] = {
            "ours": round(row["ours"] - other["ours"], 2), "ours_std": None,
            "n_seeds": min(row["n_seeds"], other["n_seeds"]), "signature": row["signature"],
            "runs": row["runs"], "note": "; ".join(x for x in ("masked minus masked_shuffled", row["note"]) if x),
            "comparable": False,
        }
    return out
