"""The alignment stage (fast_align through systran-align), the grounded gold alignments and AER."""

from __future__ import annotations

import hashlib
import logging

import pytest

from mmt_repro.grounded.images import _sample_example, _split_rng, generate_grounded
from mmt_repro.grounded.captions import caption, gold_alignment, tagged_caption
from mmt_repro.text.align import aer, aer_files, align_files, learn_alignment, parse_links, reverse_links


def test_aer_by_hand():
    # gold: sure 0-0, 1-1; possible 1-2. Hypothesis: 0-0 (sure), 1-2 (possible), 2-2 (wrong)
    res = aer(["0-0 1-2 2-2"], ["0-0 1-1 1?2"])
    # 1 - (|A&S| + |A&P|) / (|A| + |S|) = 1 - (1 + 2) / (3 + 2)
    assert res["aer"] == pytest.approx(0.4)
    assert res["precision"] == pytest.approx(2 / 3) and res["recall"] == pytest.approx(0.5)
    assert aer(["0-0 1-1"], ["0-0 1-1"])["aer"] == 0.0
    assert parse_links("0-1 2?3") == ({(0, 1)}, {(0, 1), (2, 3)})
    assert reverse_links("0-1 2?3") == "1-0 3?2"
    with pytest.raises(ValueError, match="not an alignment link"):
        parse_links("0:1")


def test_gold_alignment_tags_every_word_of_every_caption():
    rng = _split_rng(3, "train")
    for i in range(400):
        ex = _sample_example(rng, f"x{i}.png", 64, 0.5)
        for lang in ("en", "de", "fr"):
            assert " ".join(w for w, _ in tagged_caption(ex, lang)) == caption(ex, lang)
        for a, b in (("en", "de"), ("en", "fr"), ("de", "fr")):
            sure, possible = parse_links(gold_alignment(ex, a, b))
            assert sure <= possible
            n_a, n_b = len(caption(ex, a).split()), len(caption(ex, b).split())
            assert all(i < n_a and j < n_b for i, j in possible)
            assert (n_a - 1, n_b - 1) in sure  # the full stops


def test_gold_alignment_of_a_known_caption():
    rng = _split_rng(1, "test")
    ex = _sample_example(rng, "test_00000.png", 64, 0.5)
    # "here is a picture of a red object on the left ." / "hier ist ein bild mit einem roten quadrat links ."
    assert caption(ex, "en") == "here is a picture of a red object on the left ."
    assert gold_alignment(ex, "en", "de") == "0-0 1-1 2-2 3-3 4?4 5-5 6-6 7-7 8?8 9?8 10-8 11-9"


def test_generator_outputs_before_the_gold_alignments_are_unchanged(tmp_path):
    """The gold alignments are new files; every file the generator wrote before is byte-identical
    (these digests were taken with the generator before the gold alignments were added)."""
    generate_grounded(tmp_path, {"train": 20, "test": 5}, seed=1)
    digest = hashlib.sha256()
    for path in sorted(p for p in tmp_path.rglob("*") if p.is_file() and "align" not in p.parts):
        digest.update(path.relative_to(tmp_path).as_posix().encode())
        digest.update(path.read_bytes())
    assert digest.hexdigest() == BEFORE_GOLD
    assert (tmp_path / "align" / "test.en-de.gold").read_text().count("\n") == 5
    assert sorted(p.name for p in (tmp_path / "align").iterdir())[:3] == ["test.de-fr.gold", "test.en-de.gold",
                                                                          "test.en-fr.gold"]


# Taken before the gold alignments were added, then again when the generator moved from
# mmt_repro.data.grounded to mmt_repro.grounded.images: README.txt names the generator's module
# (the only difference; every image and caption is byte-identical to the first digest's).
BEFORE_GOLD = "589b4f2c31749deaae8c56982cc8301bb17b03830027f594db563259b97e3d57"


@pytest.fixture(scope="module")
def grounded(tmp_path_factory):
    out = tmp_path_factory.mktemp("grounded_align")
    generate_grounded(out, {"train": 1500, "test": 200}, seed=5)
    return out


@pytest.mark.parametrize("tgt", ["de", "fr"])
def test_fast_align_on_grounded_text_has_aer_below_015(grounded, tgt, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    d = grounded
    info = learn_alignment(d / "train.en", d / f"train.{tgt}", tmp_path / "fwd", tmp_path / "bwd")
    assert info["forward_log_likelihood"] < 0 and info["backward_log_likelihood"] < 0
    assert "log_e likelihood" in caplog.text  # fast_align's own report is in the log
    res = align_files(tmp_path / "fwd", tmp_path / "bwd", d / "test.en", d / f"test.{tgt}", tmp_path / "test.align")
    assert res["sentences"] == 200 and res["forward_log_likelihood"] < 0
    score = aer_files(tmp_path / "test.align", d / "align" / f"test.en-{tgt}.gold")
    assert score["aer"] < 0.15, score
