"""Forced decoding (mmt_repro.decode.forced): the NLL it gives each sentence, summed over a batch
and divided by the batch's tokens, is the model's own training cross-entropy on that batch."""

import pytest
import torch

from mmt_repro.decode.forced import batch_nll, scoring_capable
from mmt_repro.models import Vocabs, build_model

SRC_V, TGT_V, D_IMG = 20, 25, 6


def _batch(seed=0, n_regions=4):
    """Three sentences of different source and target lengths (padding in both), with images."""
    g = torch.Generator().manual_seed(seed)
    src_len, y_len = torch.tensor([5, 3, 4]), torch.tensor([6, 2, 4])
    b, n, steps = 3, int(src_len.max()), int(y_len.max()) + 1
    src = torch.zeros(b, n, dtype=torch.long)
    tgt_in = torch.zeros(b, steps, dtype=torch.long)
    tgt_out = torch.zeros(b, steps, dtype=torch.long)
    for i in range(b):
        src[i, : src_len[i]] = torch.randint(4, SRC_V, (int(src_len[i]),), generator=g)
        y = torch.randint(4, TGT_V, (int(y_len[i]),), generator=g)
        tgt_in[i, 0] = 1
        tgt_in[i, 1 : len(y) + 1] = y
        tgt_out[i, : len(y)] = y
        tgt_out[i, len(y)] = 2
    return {"src": src, "src_len": src_len, "tgt_in": tgt_in, "tgt_out": tgt_out,
            "img": torch.randn(b, n_regions, D_IMG, generator=g), "img_mask": torch.ones(b, n_regions, dtype=torch.bool),
            "ids": torch.arange(b)}


CGRU = dict(emb_dim=6, enc_dim=5, dec_dim=7, att_dim=4, init_std=0.5)
TF = dict(d_model=8, n_heads=2, d_ff=16, enc_layers=2, dec_layers=2, dropout=0.0, attention_dropout=0.0)
MODELS = [
    # (registry name, config, the key of forward()'s plain cross-entropy per token)
    ("doubly_attentive.nmt", CGRU, "loss"),
    ("doubly_attentive.nmt_src_img", dict(CGRU, img_dim=D_IMG, img_att_dim=4), "loss"),
    ("transformer.nmt", dict(TF, label_smoothing=0.1), "nll"),
    ("visual_agreement.transformer", dict(TF, img_dim=D_IMG, subspaces=2), "nll_fwd"),
    ("visual_agreement.seq2seq", dict(emb_dim=8, hidden=8, att_dim=8, dropout=0.0, img_dim=D_IMG, subspaces=2),
     "nll_fwd"),
    ("emb_pred.nmt", dict(emb_dim=6, enc_dim=5, dec_dim=7), "loss"),
]


@pytest.mark.parametrize("name,cfg,key", MODELS, ids=[m[0] for m in MODELS])
def test_forced_nll_is_the_training_cross_entropy_of_the_batch(name, cfg, key):
    torch.manual_seed(0)
    model = build_model(name, cfg, Vocabs.sizes(SRC_V, TGT_V)).eval()
    batch = _batch()
    with torch.no_grad():
        out = model(dict(batch))
        nll, n_tokens = batch_nll(model, dict(batch))
    assert n_tokens.tolist() == [7, 3, 5]  # target tokens + <eos>; padding counts nothing
    assert int(out["n_tokens"]) == 15
    torch.testing.assert_close(nll.sum().float() / 15, out[key].float(), rtol=1e-5, atol=1e-6)
    # each sentence alone gets what it gets in the batch (padding changes nothing)
    for i, length in enumerate((7, 3, 5)):
        one = {k: (v[i : i + 1] if torch.is_tensor(v) else v) for k, v in batch.items()}
        one["tgt_in"], one["tgt_out"] = one["tgt_in"][:, :length], one["tgt_out"][:, :length]
        one["src"] = one["src"][:, : int(one["src_len"][0])]
        with torch.no_grad():
            alone, count = batch_nll(model, one)
            out_one = model(one)
        assert int(count[0]) == length
        torch.testing.assert_close(alone[0], nll[i], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(alone[0].float() / length, out_one[key].float(), rtol=1e-5, atol=1e-6)


def test_nll_depends_on_the_image_for_a_multimodal_model_only():
    batch, other = _batch(), _batch()
    other["img"] = torch.randn_like(other["img"]) * 3
    for name, cfg, _ in MODELS[:2]:
        torch.manual_seed(0)
        model = build_model(name, cfg, Vocabs.sizes(SRC_V, TGT_V)).eval()
        with torch.no_grad():
            a, _ = batch_nll(model, dict(batch))
            b, _ = batch_nll(model, dict(other))
        assert torch.equal(a, b) == (name == "doubly_attentive.nmt")


def test_embedding_output_and_self_decoding_models_cannot_score():
    model = build_model("emb_pred.ours_text", dict(emb_dim=6, enc_dim=5, dec_dim=7),
                        Vocabs.sizes(SRC_V, TGT_V))
    ok, why = scoring_capable(model)
    assert not ok and "word embedding" in why and "nearest neighbour" in why
    with pytest.raises(ValueError, match="no probability of a translation"):
        batch_nll(model, _batch())
