"""Tests for mmt_repro.metrics.figures: files are written (PNG and PDF), beta shares by hand."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from mmt_repro.io import DataError
from mmt_repro.metrics.figures import beta_shares, plot_attention, plot_rare_words, plot_scores

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _dump(path=None):
    g = torch.Generator().manual_seed(0)
    items = []
    for T, S in ((4, 5), (3, 4)):  # T = 3 (then 2) tokens + <eos>; S = 4 source tokens + <eos> (+ padding)
        a_src = torch.softmax(torch.randn(T, S, generator=g), dim=-1)
        a_img = torch.softmax(torch.randn(T, 196, generator=g), dim=-1)
        items.append({"alpha_src": a_src, "alpha_img": a_img})
    items[0]["beta"] = torch.tensor([0.9, 0.6, 0.3, 0.85])
    items[1]["beta"] = torch.tensor([0.5, 0.81, 0.1])
    if path is not None:
        torch.save(items, path)
    return items


def _is_figure(png, pdf):
    return png.read_bytes()[:8] == PNG_MAGIC and pdf.read_bytes()[:5] == b"%PDF-"


def test_beta_shares_by_hand(tmp_path):
    dump = _dump(tmp_path / "att.pt")
    # betas: 0.9 0.6 0.3 0.85 | 0.5 0.81 0.1 -> > 0.5: 0.9 0.6 0.85 0.81 = 4/7 (0.5 itself is not > 0.5)
    #                                          > 0.8: 0.9 0.85 0.81 = 3/7
    assert beta_shares(tmp_path / "att.pt") == pytest.approx({"gt_0.5": 4 / 7, "gt_0.8": 3 / 7})
    # only the emitted tokens (3 and 2), not the <eos> steps: 0.9 0.6 0.3 | 0.5 0.81
    assert beta_shares(dump, hyp_lengths=[3, 2]) == pytest.approx({"gt_0.5": 3 / 5, "gt_0.8": 2 / 5})
    with pytest.raises(DataError, match="no beta"):
        beta_shares([{"alpha_src": torch.zeros(1, 1)}])


def test_plot_attention_writes_png_and_pdf(tmp_path):
    _dump(tmp_path / "att.pt")
    png, pdf = plot_attention(tmp_path / "att.pt", 0, "a man in a", "ein Mann im", tmp_path / "fig" / "att0.png")
    assert png == tmp_path / "fig" / "att0.png" and _is_figure(png, pdf)
    assert not [p for p in (tmp_path / "fig").iterdir() if p.name.startswith(".")]  # no temporaries left
    with pytest.raises(ValueError, match="grid"):
        plot_attention(tmp_path / "att.pt", 1, "a b c d", "x y", tmp_path / "bad.png", grid=(7, 7))
    with pytest.raises(IndexError):
        plot_attention(tmp_path / "att.pt", 5, "a", "b", tmp_path / "bad.png")
    assert not (tmp_path / "bad.png").exists()


def test_plot_scores_from_a_results_table(tmp_path):
    table = pd.DataFrame(
        {
            "paper": "doubly_attentive",
            "table": "table1",
            "system": ["nmt", "nmt", "mmt", "mmt"],
            "pair": "en-de",
            "test_set": "test_2016_flickr",
            "condition": "congruent",
            "metric": ["bleu", "meteor", "bleu", "meteor"],
            "ours": ["33.10", "52.00", "35.20", ""],
            "ours_std": ["0.30", "", "0.20", ""],
            "paper_value": ["33.7", "52.3", "36.5", "55.0"],
        }
    )
    tsv = tmp_path / "table1.tsv"
    table.to_csv(tsv, sep="\t", index=False)
    png, pdf = plot_scores(tsv, tmp_path / "plots" / "table1.png")
    assert _is_figure(png, pdf) and pdf == tmp_path / "plots" / "table1.pdf"
    table.drop(columns=["paper_value"]).to_csv(tmp_path / "bad.tsv", sep="\t", index=False)
    with pytest.raises(DataError, match="paper_value"):
        plot_scores(tmp_path / "bad.tsv", tmp_path / "bad.png")


def test_plot_rare_words(tmp_path):
    t = pd.DataFrame({"bin": ["0", "1", "2+"], "fscore": [0.1, 0.3, 0.6]})
    png, pdf = plot_rare_words({"nmt": t, "emb_pred": t.assign(fscore=[0.2, 0.4, 0.6])}, tmp_path / "rare.png")
    assert _is_figure(png, pdf)
