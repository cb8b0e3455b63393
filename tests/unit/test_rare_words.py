"""Tests for mmt_repro.metrics.rare_words (Hirasawa et al. 2019, Fig. 1), computed by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from mmt_repro.io import DataError
from mmt_repro.metrics.rare_words import COLUMNS, rare_word_fscore, rare_word_fscore_files, word_presence

TRAIN = ["a a a b c", "a b e"]  # training counts: a 4, b 2, c 1, e 1, d 0
HYPS = ["a b c", "a d b", "c e c", "b"]
REFS = ["a c", "a d", "b e", "b c"]
# sentence presence (k = sentence index):
#   a: hyp {0, 1}     ref {0, 1}     both {0, 1} -> P 2/2, R 2/2, F 1
#   b: hyp {0, 1, 3}  ref {2, 3}     both {3}    -> P 1/3, R 1/2, F 2 (1/6) / (5/6) = 0.4
#   c: hyp {0, 2}     ref {0, 3}     both {0}    -> P 1/2, R 1/2, F 0.5   ("c e c" counts once)
#   d: hyp {1}        ref {1}        both {1}    -> 1
#   e: hyp {2}        ref {2}        both {2}    -> 1


def test_word_presence_by_hand():
    words = word_presence(HYPS, REFS).set_index("word")
    assert words.loc["b", ["hyp_sents", "ref_sents", "both"]].tolist() == [3, 2, 1]
    assert words.loc["b", "precision"] == pytest.approx(1 / 3)
    assert words.loc["b", "recall"] == pytest.approx(1 / 2)
    assert words.loc["b", "fscore"] == pytest.approx(0.4)
    assert words.loc["c", "hyp_sents"] == 2
    assert words["fscore"].to_dict() == pytest.approx({"a": 1.0, "b": 0.4, "c": 0.5, "d": 1.0, "e": 1.0})


def test_bins_by_training_frequency():
    table = rare_word_fscore(HYPS, REFS, TRAIN, bins=(0, 1, 2, 3, 5))
    assert list(table.columns) == COLUMNS
    assert table["bin"].tolist() == ["0", "1", "2", "3-4", "5+"]
    t = table.set_index("bin")
    # bin 0: d (unseen in training)
    assert t.loc["0", "fscore"] == pytest.approx(1.0)
    # bin 1: c and e pooled: both 1 + 1, hyp 2 + 1, ref 2 + 1 -> P = R = 2/3 -> F = 2/3;
    #        word mean (0.5 + 1) / 2 = 0.75
    assert t.loc["1", ["n_words", "both", "hyp_sents", "ref_sents"]].tolist() == [2, 2, 3, 3]
    assert t.loc["1", "fscore"] == pytest.approx(2 / 3)
    assert t.loc["1", "fscore_word_mean"] == pytest.approx(0.75)
    # bin 2: b
    assert t.loc["2", "precision"] == pytest.approx(1 / 3)
    assert t.loc["2", "recall"] == pytest.approx(1 / 2)
    assert t.loc["2", "fscore"] == pytest.approx(0.4)
    # bin 3-4: a (4 times)
    assert t.loc["3-4", "fscore"] == pytest.approx(1.0)
    # bin 5+: no word
    assert t.loc["5+", "n_words"] == 0 and math.isnan(t.loc["5+", "fscore"])


def test_default_bins_and_multiple_references():
    table = rare_word_fscore(HYPS, [REFS, ["b", "b", "b", "b"]], TRAIN)
    assert table["bin"].tolist() == ["0", "1", "2", "3", "4", "5-9", "10-99", "100-999", "1000+"]
    # a second reference "b" on every line: b is now in the references of all 4 segments;
    # the output has b in segments {0, 1, 3}, all matched -> P = 3/3, R = 3/4, F = 2 * 0.75 / 1.75 = 6/7
    assert table.set_index("bin").loc["2", "fscore"] == pytest.approx(6 / 7)


def test_files_round_trip(tmp_path):
    for name, lines in (("hyp", HYPS), ("ref", REFS), ("train", TRAIN)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "rare" / "table.tsv"
    table = rare_word_fscore_files(tmp_path / "hyp", tmp_path / "ref", tmp_path / "train", out, bins=(0, 1, 2, 3, 5))
    back = pd.read_csv(out, sep="\t")
    assert back["fscore"].round(6).tolist()[:4] == [round(v, 6) for v in table["fscore"][:4]]
    (tmp_path / "short").write_text("a\n", encoding="utf-8")
    with pytest.raises(DataError, match="short"):
        rare_word_fscore_files(tmp_path / "hyp", tmp_path / "short", tmp_path / "train", tmp_path / "x.tsv")
    with pytest.raises(ValueError, match="increasing"):
        rare_word_fscore(HYPS, REFS, TRAIN, bins=(0, 5, 2))
