"""benchmarks/emb_pred_output_space.py: the measures behind docs/emb_pred.md's reading of the
"Ours - Images" miss, on a hand-made table (numpy only)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import emb_pred_output_space as eps  # noqa: E402

# rows: his, her (cosine 0.96 to his), dog, climbing, ice-climbing (cosine 0.995 to climbing)
WORDS = ["his", "her", "dog", "climbing", "ice-climbing"]
TABLE = np.array([[1.0, 0.0, 0.0], [0.96, 0.28, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.1, 0.995, 0.0]])
INDEX = {w: i for i, w in enumerate(WORDS)}


def test_crowding_counts_the_words_with_a_near_duplicate_row():
    counts = np.array([500, 300, 50, 120, 1])
    bands, sims = eps.crowding(TABLE, counts)
    assert [b["words"] for b in bands] == [1, 1, 3]
    # ice-climbing (count 1) has climbing at cosine 0.995; dog (50) has nothing near
    assert bands[0]["cos>=0.95"] == 1.0 and bands[1]["cos>=0.9"] == 0.0
    # >= 100: his (her at 0.96), her (his), climbing (ice-climbing at 0.995)
    assert bands[2]["cos>=0.95"] == 1.0
    assert np.isclose(sims[0, 1], 0.96) and sims[0, 0] == -2.0


def test_rare_outputs_and_near_substitutions_by_hand():
    _, sims = eps.crowding(TABLE, np.ones(5))
    hyps = ["his dog ice-climbing", "her dog", "dog dog"]
    refs = ["her dog climbing", "her dog", "dog"]
    counts = Counter({"his": 500, "her": 300, "dog": 50, "climbing": 120, "ice-climbing": 1})
    # ice-climbing written once, wrong, and climbing (in the reference) is at cosine 0.995
    assert eps.rare_outputs(hyps, refs, counts, INDEX, sims) == {"written": 1, "wrong": 1, "wrong_near_ref": 1}
    n = eps.near_substitutions(hyps, refs, INDEX, sims)
    # beyond the reference: his, ice-climbing (sentence 1), one dog (sentence 3); the first two
    # stand for a missing word within 0.9 (her, climbing); the extra dog has no missing word
    assert n["extra"] == 3 and n["near"] == 2
    assert dict(n["pairs"]) == {("her", "his"): 1, ("climbing", "ice-climbing"): 1}
