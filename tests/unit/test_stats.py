"""Corpus statistics (mmt_repro.corpora.stats) on a tiny corpus counted by hand."""

from __future__ import annotations

import gzip
import math

import pandas as pd
import pytest

from mmt_repro.corpora.stats import COLUMNS, corpus_stats, write_stats
from mmt_repro.io import DataError


@pytest.fixture
def toy(tmp_path):
    files = {
        ("train", "en"): "a b c\na a\n",  # 5 tokens, types {a, b, c}
        ("train", "de"): "x y\n",  # 2 tokens, types {x, y}
        ("test", "en"): "a d\nd  e a\n",  # 5 tokens (double space is one separator), types {a, d, e}
        ("test", "de"): "x z\nz z\n",  # 4 tokens, types {x, z}
    }
    paths = {}
    for (split, lang), text in files.items():
        p = tmp_path / f"{split}.{lang}"
        p.write_text(text, encoding="utf-8")
        paths[(split, lang)] = p
    gz = tmp_path / "valid.en.gz"  # gzip is read transparently
    with gzip.open(gz, "wt", encoding="utf-8") as fh:
        fh.write("c c q\n")
    paths[("valid", "en")] = gz
    return paths


def test_corpus_stats_by_hand(toy):
    df = corpus_stats("toy", toy)
    assert list(df.columns) == COLUMNS
    rows = {(r.split, r.lang): r for r in df.itertuples()}
    assert (rows[("train", "en")].sentences, rows[("train", "en")].tokens, rows[("train", "en")].types) == (2, 5, 3)
    assert rows[("train", "en")].oov_rate == 0.0
    # test.en: tokens a d d e a -> d, d, e unseen in train.en: 3/5
    assert (rows[("test", "en")].tokens, rows[("test", "en")].types) == (5, 3)
    assert rows[("test", "en")].oov_rate == pytest.approx(3 / 5)
    # test.de: x z z z -> 3 of 4 tokens unseen in train.de (a, c of English do not count)
    assert rows[("test", "de")].oov_rate == pytest.approx(3 / 4)
    # valid.en (gzip): c c q -> q unseen: 1/3
    assert (rows[("valid", "en")].sentences, rows[("valid", "en")].tokens) == (1, 3)
    assert rows[("valid", "en")].oov_rate == pytest.approx(1 / 3)
    assert set(df.corpus) == {"toy"}


def test_no_train_split_gives_nan(toy):
    df = corpus_stats("toy", {k: v for k, v in toy.items() if k[0] == "test"})
    assert df.oov_rate.map(math.isnan).all()
    df2 = corpus_stats("toy", toy, train_split="valid")  # valid.en as the reference: a, d, e unseen in test.en
    assert df2.set_index(["split", "lang"]).loc[("test", "en"), "oov_rate"] == pytest.approx(1.0)


def test_write_stats_sorted_tsv(toy, tmp_path):
    a = corpus_stats("zeta", {("test", "en"): toy[("test", "en")]})
    b = corpus_stats("alpha", toy)
    out = write_stats([a, b], tmp_path / "stats" / "corpora.tsv")
    text = out.read_text(encoding="utf-8").splitlines()
    assert text[0] == "corpus\tsplit\tlang\tsentences\ttokens\ttypes\toov_rate"
    assert [tuple(x.split("\t")[:3]) for x in text[1:]] == [
        ("alpha", "test", "de"), ("alpha", "test", "en"), ("alpha", "train", "de"), ("alpha", "train", "en"),
        ("alpha", "valid", "en"), ("zeta", "test", "en")]
    assert text[2] == "alpha\ttest\ten\t2\t5\t3\t0.600000"
    assert text[6] == "zeta\ttest\ten\t2\t5\t3\t"  # no train split: empty oov_rate
    back = pd.read_csv(out, sep="\t")
    assert back.shape == (6, 7) and math.isnan(back.oov_rate.iloc[5])
    with pytest.raises(DataError, match="alpha/train/en appears twice"):
        write_stats([b, b], tmp_path / "dup.tsv")
    assert not (tmp_path / "dup.tsv").exists()
