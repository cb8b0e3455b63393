"""Hirasawa et al. 2019's published numbers (config/published_results.tsv), checked a second
way: the differences the paper states in its text must follow from the transcribed tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

TSV = Path(__file__).resolve().parents[2] / "config" / "published_results.tsv"


@pytest.fixture(scope="module")
def pub():
    df = pd.read_csv(TSV, sep="\t", dtype={"value": float})
    df = df[df.paper == "emb_pred"]
    return {(r.table, r.system, r.test_set, r.metric): r.value for r in df.itertuples()}


def test_table1_differences_stated_in_section_4(pub):
    t = "test_2016_flickr"
    # "outperforms the text-only baseline by +2.49 BLEU and +1.24 METEOR"
    assert pub["table1", "ours", t, "bleu"] - pub["table1", "nmt", t, "bleu"] == pytest.approx(2.49)
    assert pub["table1", "ours", t, "meteor"] - pub["table1", "nmt", t, "meteor"] == pytest.approx(1.24)
    # "and the multimodal baseline by +2.31 BLEU and +1.09 METEOR"
    assert pub["table1", "ours", t, "bleu"] - pub["table1", "imag", t, "bleu"] == pytest.approx(2.31)
    assert pub["table1", "ours", t, "meteor"] - pub["table1", "imag", t, "meteor"] == pytest.approx(1.09)


def test_table2_differences_stated_in_section_5(pub):
    t = "test_2016_flickr"
    # "up to +2.77 BLEU and +1.37 METEOR" (best row against the worst)
    assert pub["table2", "ours", t, "bleu"] - pub["table2", "ours_enc_random_unfixed", t, "bleu"] == pytest.approx(2.77)
    assert pub["table2", "ours", t, "meteor"] - pub["table2", "ours_enc_random_unfixed", t, "meteor"] == pytest.approx(1.37)
    # "initializing the decoder ... +1.80 BLEU; ... initializing the encoder ... only +0.11 BLEU"
    assert pub["table2", "ours_enc_random", t, "bleu"] - pub["table2", "ours_random", t, "bleu"] == pytest.approx(1.80)
    assert pub["table2", "ours_dec_random", t, "bleu"] - pub["table2", "ours_random", t, "bleu"] == pytest.approx(0.11)


def test_tables_agree_where_they_repeat_a_row(pub):
    t = "test_2016_flickr"
    for metric in ("bleu", "meteor"):
        assert pub["table1", "ours", t, metric] == pub["table2", "ours", t, metric] == pub["table3", "ours", t, metric]
    assert pub["table1", "ours", "val", "bleu"] == pub["table3", "ours", "val", "bleu"]
    assert sum(1 for k in pub if k[0] in ("table1", "table2", "table3")) == 36
