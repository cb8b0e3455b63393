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
