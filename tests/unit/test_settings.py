"""Per-paper settings: the corpora a paper's shared vocabulary is learnt on."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmt_repro.config import ConfigError
from mmt_repro.settings import CorpusPart, load_paper

REPO = Path(__file__).resolve().parents[2]
CALIXTO = REPO / "config" / "papers" / "doubly_attentive.yaml"


@pytest.fixture(scope="module")
def calixto():
    return load_paper("doubly_attentive", CALIXTO)


def test_systems_needed_follows_init_from_and_backtranslation(calixto):
    assert calixto.systems_needed(["nmt_src_img_bt"]) == ["nmt_src_img_bt", "nmt_src_img_pre_bt", "bt_reverse"]
    assert calixto.systems_needed(["nmt_wmt", "nmt"]) == ["nmt_wmt", "nmt", "nmt_pre_wmt"]


def test_one_vocabulary_over_every_corpus_of_table1(calixto):
    """Calixto et al. Table 1: M30k_T, the real German side of M30k_C (5 comparable
    descriptions; the synthetic English is made with this vocabulary) and WMT'15."""
    systems = ["nmt", "nmt_src_img", "nmt_bt", "nmt_src_img_bt", "nmt_wmt", "nmt_src_img_wmt"]
    parts = calixto.vocabulary_corpora(systems, "train", "en-de")
    assert parts == [
        CorpusPart("train", None, "train", ("en", "de")),
        *[CorpusPart("backtranslated", None, f"train_c{k}", ("de",)) for k in range(1, 6)],
        CorpusPart("wmt15", "wmt15", "train", ("en", "de")),
    ]
    # the text-only table of the same dataset trains on M30k_T alone
    assert calixto.vocabulary_corpora(["nmt"], "train", "en-de") == [CorpusPart("train", None, "train", ("en", "de"))]


def test_backtranslated_corpus_needs_a_backtranslation_block(tmp_path):
    raw = CALIXTO.read_text(encoding="utf-8")
    start = raw.index("backtranslation:")
    end = raw.index("systems:")
    path = tmp_path / "p.yaml"
    path.write_text(raw[:start] + raw[end:], encoding="utf-8")
    with pytest.raises(ConfigError, match="back-translated corpus but the paper has no `backtranslation` block"):
        load_paper("doubly_attentive", path).vocabulary_corpora(["nmt_bt"], "train", "en-de")


def test_every_system_block_reaches_each_system_under_its_own_override():
    """papers.<paper>.overrides.every_system (config/rehearsal.yaml's cut to a few updates): merged
    into every system that trains, below the system's own override; a decode_of system (it trains
    nothing) takes its decode settings only."""
    emb = REPO / "config" / "papers" / "emb_pred.yaml"
    paper = load_paper("emb_pred", emb, {
        "every_system": {"train": {"max_steps": 2, "patience": 1}, "decode": {"max_len": 8}},
        "systems": {"nmt": {"train": {"max_steps": 5}},
                    "nmt_small": {"variant_of": "nmt", "train": {"batch_size": 7}}},
    })
    assert paper.systems["nmt"].train["max_steps"] == 5  # its own override wins
    assert paper.systems["nmt"].train["patience"] == 1
    assert paper.systems["imag"].train["max_steps"] == 2
    assert paper.systems["nmt_small"].train["max_steps"] == 2 and paper.systems["nmt_small"].train["batch_size"] == 7
    assert paper.systems["nmt_beam6"].decode["max_len"] == 8  # decode_of nmt: decoding only
    assert paper.systems["nmt_beam6"].decode["beam_size"] == 6
    assert paper.systems["ours"].decode["max_len"] == 8
    # the settings file alone: the paper's own values
    assert load_paper("emb_pred", emb).systems["imag"].train.get("max_steps", 0) == 0
