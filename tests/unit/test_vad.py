"""Tests for mmt_repro.metrics.vad (Yang et al. 2020, eqs. 21-22), computed by hand."""

from __future__ import annotations

import json
import math

import pytest
import torch

from mmt_repro.metrics.vad import parse_alignment, unique_pairs, vad_files, visual_agreement_distance

# three image regions. Sentence 1: x = "a big dog runs", y = "un grand chien court" (tokens
# irrelevant except for the visual split); alignment 0-0 1-1 2-1 3-2:
#   target 1 is linked to sources 1 and 2 -> neither (1,1) nor (2,1) is unique; (0,0), (3,2) are
BWD1 = [[0.5, 0.5, 0.0], [0.2, 0.2, 0.6], [0.3, 0.3, 0.4], [0.0, 0.0, 1.0]]  # rows: source words
FWD1 = [[0.2, 0.8, 0.0], [0.1, 0.1, 0.8], [0.5, 0.0, 0.5]]  # rows: target words
#   (0,0): |0.5-0.2| + |0.5-0.8| + 0 = 0.6      (3,2): 0.5 + 0 + 0.5 = 1.0     -> VAD_1 = 0.8
# Sentence 2: x = "cat", y = "le chat", alignment 0-1:
BWD2 = [[1.0, 0.0, 0.0]]
FWD2 = [[0.3, 0.3, 0.4], [0.0, 0.0, 1.0]]
#   (0,1): 1 + 0 + 1 = 2.0 -> VAD_2 = 2.0
# Sentence 3: no alignment links -> no pairs, not counted
BWD3 = [[1.0, 0.0, 0.0]]
FWD3 = [[1.0, 0.0, 0.0]]
ALIGN = ["0-0 1-1 2-1 3-2", "0-1", ""]
SRC = ["a big dog runs", "cat", "x"]
TGT = ["un grand chien court", "le chat", "y"]


def test_unique_pairs():
    assert parse_alignment("0-0 3-2") == [(0, 0), (3, 2)]
    assert unique_pairs("0-0 1-1 2-1 3-2") == [(0, 0), (3, 2)]
    assert unique_pairs("0-0 0-1 1-2") == [(1, 2)]
    assert unique_pairs("") == []
    with pytest.raises(ValueError, match="Pharaoh"):
        parse_alignment("0:1")


def test_vad_by_hand():
    fwd, bwd = [FWD1, FWD2, FWD3], [BWD1, BWD2, BWD3]
    inst = visual_agreement_distance(fwd, bwd, ALIGN)
    assert inst["vad"] == pytest.approx((0.8 + 2.0) / 2)  # mean over the 2 instances with pairs
    assert (inst["n_pairs"], inst["n_instances"]) == (3, 2)
    pair = visual_agreement_distance(fwd, bwd, ALIGN, average="pair")
    assert pair["vad"] == pytest.approx((0.6 + 1.0 + 2.0) / 3)
    # visual split: "cat" is visual -> sentence 2's pair; sentence 1's pairs are non-visual
    split = visual_agreement_distance(fwd, bwd, ALIGN, SRC, TGT, visual_words={"cat", "chat"})
    assert split["vad_visual"] == pytest.approx(2.0)
    assert split["vad_non_visual"] == pytest.approx(0.8)
    assert (split["n_pairs_visual"], split["n_pairs_non_visual"]) == (1, 2)
    # "chien" (target of 2-1, not unique) makes nothing visual; "runs" (source of 3-2) does
    split = visual_agreement_distance(fwd, bwd, ALIGN, SRC, TGT, visual_words={"runs"})
    assert split["vad_visual"] == pytest.approx(1.0)
    assert split["vad_non_visual"] == pytest.approx((0.6 + 2.0) / 2)


def test_errors():
    with pytest.raises(ValueError, match="outside"):
        visual_agreement_distance([FWD2], [BWD2], ["0-5"])
    with pytest.raises(ValueError, match="regions"):
        visual_agreement_distance([[[1.0, 0.0]]], [BWD2], ["0-0"])
    with pytest.raises(ValueError, match="parallel"):
        visual_agreement_distance([FWD1], [BWD1, BWD2], ALIGN[:1])
    assert math.isnan(visual_agreement_distance([FWD3], [BWD3], [""])["vad"])


def test_vad_files(tmp_path):
    torch.save([{"alpha_img": torch.tensor(a)} for a in (FWD1, FWD2, FWD3)], tmp_path / "fwd.pt")
    torch.save([{"alpha_img": torch.tensor(a)} for a in (BWD1, BWD2, BWD3)], tmp_path / "bwd.pt")
    (tmp_path / "align").write_text("\n".join(ALIGN) + "\n", encoding="utf-8")
    (tmp_path / "src").write_text("\n".join(SRC) + "\n", encoding="utf-8")
    (tmp_path / "tgt").write_text("\n".join(TGT) + "\n", encoding="utf-8")
    (tmp_path / "visual").write_text("cat\n", encoding="utf-8")
    out = tmp_path / "vad.json"
    res = vad_files(tmp_path / "fwd.pt", tmp_path / "bwd.pt", tmp_path / "align", out,
                    src=tmp_path / "src", tgt=tmp_path / "tgt", visual_words=tmp_path / "visual")
    assert json.loads(out.read_text()) == res
    assert res["vad"] == pytest.approx(1.4, abs=1e-6)  # float32 tensors
    assert res["vad_visual"] == pytest.approx(2.0, abs=1e-6)
