"""Attention dumps with tokens, beta shares as a registered analysis, and the Figure 2 plot."""

import json

import pytest
import torch

from mmt_repro.decode.translate import dump_attention
from mmt_repro.io import DataError
from mmt_repro.metrics.attention_figure import plot_attention_from_dump
from mmt_repro.models import Vocabs, build_model
from mmt_repro.analyses.run import run_analysis
from mmt_repro.text.vocab import Vocab
from mmt_repro.checkpoint import save_checkpoint


class Store:
    def __init__(self, arr):
        self.arr = arr

    def __len__(self):
        return len(self.arr)

    def __getitem__(self, i):
        return self.arr[i]


def test_dump_beta_scores_and_figure(tmp_path, monkeypatch):
    src_lines = ["a b c", "b c", "c a b a"]
    (tmp_path / "src").write_text("\n".join(src_lines) + "\n", encoding="utf-8")
    sv, tv = Vocab(["a", "b", "c"]), Vocab(["x", "y", "z"])
    sv.save(tmp_path / "sv.json")
    tv.save(tmp_path / "tv.json")
    torch.manual_seed(0)
    cfg = dict(emb_dim=8, enc_dim=8, dec_dim=8, att_dim=8, img_dim=5, img_att_dim=8, init_std=0.5)
    model = build_model("doubly_attentive.nmt_src_img", cfg, Vocabs.of(sv, tv))
    vocab = {"src": sv.fingerprint(), "tgt": tv.fingerprint(), "src_size": len(sv), "tgt_size": len(tv)}
    save_checkpoint(tmp_path / "m.pt", model, vocab)
    feats = Store(torch.randn(3, 16, 5).numpy())
    monkeypatch.setattr("mmt_repro.decode.translate.open_features", lambda npy, index: feats)
    info = dump_attention(tmp_path / "m.pt", tmp_path / "src", tmp_path / "d.pt", tmp_path / "sv.json",
                          tmp_path / "tv.json", features_npy="x", features_index="y", decode={"max_len": 6}, device="cpu")
    assert info == {"sentences": 3, "model": "doubly_attentive.nmt_src_img"}
    dumps = torch.load(tmp_path / "d.pt", weights_only=False)
    assert [d["src_tokens"] for d in dumps] == [line.split() for line in src_lines]
    for d in dumps:
        steps = d["alpha_src"].shape[0]
        assert d["alpha_img"].shape == (steps, 16) and d["beta"].shape == (steps,)
        assert len(d["hyp_tokens"]) in (steps, steps - 1)  # with or without the <eos> step
        assert torch.allclose(d["alpha_img"].sum(-1), torch.ones(steps), atol=1e-5)
    meta = {"paper": "p", "table": "figure2", "system": "s", "pair": "en-de", "test_set": "test", "seed": 1,
            "condition": "congruent"}
    result = run_analysis("doubly_attentive.beta_shares", "attention", {"attention": tmp_path / "d.pt"},
                          tmp_path / "b.json", meta)
    betas = torch.cat([d["beta"][: len(d["hyp_tokens"])] for d in dumps])
    assert result["scores"]["beta_gt_0.5"]["value"] == pytest.approx(100 * float((betas > 0.5).float().mean()), abs=1e-3)
    assert json.loads((tmp_path / "b.json").read_text())["meta"] == meta
    png, pdf = plot_attention_from_dump(tmp_path / "d.pt", 2, tmp_path / "fig.png")
    assert png.stat().st_size > 1000 and pdf.exists()
    with pytest.raises(DataError, match="the dump has 3"):
        plot_attention_from_dump(tmp_path / "d.pt", 7, tmp_path / "fig2.png")


def test_analysis_with_the_wrong_inputs_or_name_is_refused(tmp_path):
    with pytest.raises(ValueError, match="set `inputs: attention` in the table's config"):
        run_analysis("doubly_attentive.beta_shares", "translation", {}, tmp_path / "b.json", {})
    with pytest.raises(ValueError, match="unknown analysis 'doubly_attentive.nope'; registered: .*doubly_attentive.beta_shares"):
        run_analysis("doubly_attentive.nope", "attention", {}, tmp_path / "b.json", {})


def test_analysis_takes_one_reference_given_as_a_list(tmp_path):
    """The analyse rule hands the references as a list (several for captioning test sets); a
    one-file list reaches the analysis as its one Path (emb_pred.rare_f read a list and failed)."""
    import mmt_repro.models  # noqa: F401  (registers the analyses)

    (tmp_path / "hyp").write_text("a b\nc\n", encoding="utf-8")
    (tmp_path / "ref").write_text("a b\nd\n", encoding="utf-8")
    (tmp_path / "train").write_text("a a b\nc d\n", encoding="utf-8")
    files = {"hyp": str(tmp_path / "hyp"), "ref": [str(tmp_path / "ref")], "train": str(tmp_path / "train")}
    result = run_analysis("emb_pred.rare_f", "translation_train", files, tmp_path / "r.json", {})
    scores = result["scores"]
    # bin 2 holds 'a' (in hypothesis and reference): F = 100. Bin 1 holds b, c, d: 'b' matches,
    # 'c' is only in a hypothesis, 'd' only in a reference: pooled P = R = 1/2, F = 50
    assert scores["f_freq_2"]["value"] == pytest.approx(100.0)
    assert scores["f_freq_1"]["value"] == pytest.approx(50.0)
    assert set(scores) == {"f_freq_1", "f_freq_2"}
    with pytest.raises(ValueError, match="names no file"):
        run_analysis("emb_pred.rare_f", "translation_train", dict(files, ref=[]), tmp_path / "r2.json", {})


def test_a_tables_options_reach_its_analysis_and_unknown_ones_are_refused(tmp_path):
    """run_analysis hands a table's `options` to the analysis as keywords; one it does not take
    is an error naming the options it does take."""
    from mmt_repro.analyses.registry import _ANALYSES, register_analysis

    seen = []

    @register_analysis("toyoptions.count", inputs="translation")
    def count(files, lines=None):
        seen.append(lines)
        return {"n": {"value": float(lines or 0), "signature": f"lines:{lines}"}}

    try:
        got = run_analysis("toyoptions.count", "translation", {}, tmp_path / "o.json", {}, options={"lines": 4})
        assert seen == [4] and got["scores"]["n"]["value"] == 4.0
        run_analysis("toyoptions.count", "translation", {}, tmp_path / "o.json", {})
        assert seen == [4, None]
        with pytest.raises(ValueError, match=r"takes no options \['beam'\] \(it takes \['lines'\]\)"):
            run_analysis("toyoptions.count", "translation", {}, tmp_path / "o.json", {}, options={"beam": 2})
    finally:
        del _ANALYSES["toyoptions.count"]
