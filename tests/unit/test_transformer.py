"""The shared Transformer (models/transformer.py): equations on tiny tensors, incremental
decoding against full recomputation, padding, beam search with cached state, learning and
checkpoints."""

import math

import pytest
import torch
import torch.nn.functional as F

from mmt_repro.checkpoint import load_model, save_checkpoint
from mmt_repro.decode.search import beam_search, greedy
from mmt_repro.models import Vocabs, build_model, make_config
from mmt_repro.models.transformer import (
    MultiHeadAttention,
    TransformerConfig,
    attention,
    label_smoothed_nll,
    sinusoidal_table,
)

TINY = dict(d_model=16, n_heads=4, d_ff=24, enc_layers=2, dec_layers=2, dropout=0.0, attention_dropout=0.0)
V = 23


def make(cfg=None, seed=0, vocab=V):
    torch.manual_seed(seed)
    return build_model("transformer.nmt", dict(TINY, **(cfg or {})), Vocabs.sizes(vocab, vocab)).eval()


def batch(bsz=3, src_len=6, tgt_len=5, seed=0, pad_extra=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, V, (bsz, src_len), generator=g)
    src[0, 4:] = 0
    src[1, 5:] = 0
    tgt = torch.randint(4, V, (bsz, tgt_len), generator=g)
    tgt[2, 3:] = 0
    tgt_out = tgt.clone()
    tgt_out[2, 3] = 2  # <eos> right after the last real token
    tgt_in = torch.cat([torch.ones(bsz, 1, dtype=torch.long), tgt[:, :-1]], 1)
    if pad_extra:
        src = F.pad(src, (0, pad_extra))
        tgt_in, tgt_out = F.pad(tgt_in, (0, pad_extra)), F.pad(tgt_out, (0, pad_extra))
    return {"src": src, "src_len": (src != 0).sum(1), "tgt_in": tgt_in, "tgt_out": tgt_out, "ids": torch.arange(bsz),
            "img": None, "img_mask": None}


def test_config_checks_and_registry():
    with pytest.raises(ValueError, match="multiple of n_heads"):
        TransformerConfig(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="valid keys"):
        make_config("transformer.nmt", {"d_modle": 8})
    # BertGen's fairseq transformer_iwslt_de_en: 6+6 x 512, FFN 1024, 4 heads
    cfg = make_config("transformer.nmt", {"d_ff": 1024, "n_heads": 4})
    assert (cfg.enc_layers, cfg.dec_layers, cfg.d_model, cfg.d_ff, cfg.n_heads) == (6, 6, 512, 1024, 4)


def test_sinusoidal_positions_by_hand():
    pe = sinusoidal_table(5, 6)
    for pos in range(5):
        for i in range(3):
            angle = pos / 10000 ** (2 * i / 6)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_multi_head_attention_equals_equations_1_to_3_by_hand():
    torch.manual_seed(3)
    mha = MultiHeadAttention(8, 2).eval()
    q_in, kv_in = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    out, w, _ = mha(q_in, kv_in, key_mask=mask, need_weights=True)
    heads = []
    for h in range(2):
        sl = slice(4 * h, 4 * h + 4)
        Q = q_in @ mha.q_proj.weight[sl].T + mha.q_proj.bias[sl]
        K = kv_in @ mha.k_proj.weight[sl].T + mha.k_proj.bias[sl]
        Vv = kv_in @ mha.v_proj.weight[sl].T + mha.v_proj.bias[sl]
        s = Q @ K.transpose(1, 2) / math.sqrt(4)
        s = s.masked_fill(~mask[:, None, :], float("-inf"))
        a = torch.softmax(s, -1)
        assert torch.allclose(w[:, h], a, atol=1e-6)
        heads.append(a @ Vv)
    expected = torch.cat(heads, -1) @ mha.out_proj.weight.T + mha.out_proj.bias
    assert torch.allclose(out, expected, atol=1e-5)
    fused, none, _ = mha(q_in, kv_in, key_mask=mask)  # the fused kernel: same numbers, no weights
    assert none is None and torch.allclose(fused, expected, atol=1e-5)
    assert torch.all(w[1, :, :, 3:] == 0)  # padded keys get no weight


def test_causal_masks_and_empty_rows():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 4, 3), torch.randn(1, 2, 4, 3), torch.randn(1, 2, 4, 3)
    _, w = attention(q, k, v, causal=True, need_weights=True)
    assert torch.all(w.triu(1) == 0)
    fused, _ = attention(q, k, v, causal=True)
    manual, _ = attention(q, k, v, causal=True, need_weights=True)
    assert torch.allclose(fused, manual, atol=1e-6)
    mask = torch.tensor([[True, True, False, False]])
    both, _ = attention(q, k, v, key_mask=mask, causal=True)  # padding and causality together
    both_w, w2 = attention(q, k, v, key_mask=mask, causal=True, need_weights=True)
    assert torch.allclose(both, both_w, atol=1e-6) and torch.all(w2[..., 2:] == 0)
    out, _ = attention(q, k, v, key_mask=torch.zeros(1, 4, dtype=torch.bool))  # no real key: zeros, not NaN
    assert torch.all(out == 0)


def test_label_smoothing_by_hand():
    lprobs = torch.log_softmax(torch.tensor([[1.0, 2.0, 0.5, -1.0]]), -1)
    loss, nll = label_smoothed_nll(lprobs, torch.tensor([1]), 0.1)
    q = torch.full((4,), 0.1 / 3)
    q[1] = 0.9  # 1 - epsilon on the gold token, epsilon / (V - 1) elsewhere
    assert loss.item() == pytest.approx(-(q * lprobs[0]).sum().item(), abs=1e-6)
    assert nll.item() == pytest.approx(-lprobs[0, 1].item(), abs=1e-6)


@pytest.mark.parametrize("cfg", [{}, {"pre_norm": True}, {"tie_embeddings": True}, {"share_all_embeddings": True}])
def test_incremental_decoding_equals_full_recomputation(cfg):
    m = make(cfg)
    b = batch()
    with torch.no_grad():
        enc = m.encode(b)
        state = m.init_state(enc)
        for t in range(b["tgt_in"].size(1)):
            prev = b["tgt_in"][:, t]
            lp, state, _ = m.step(enc, state, prev)
            full = m.full_step_scores(b, b["tgt_in"][:, : t + 1])
            assert torch.allclose(lp, full, atol=1e-5), f"step {t}"
        assert state["k"][0].shape == (3, 4, b["tgt_in"].size(1), 4)
        # ... and teacher forcing gives the same distributions at every position
        hidden, _, _ = m.decoder_hidden(b)
        tf = torch.log_softmax(F.linear(hidden[:, -1], m.output_weight), -1)
        assert torch.allclose(tf, lp, atol=1e-5)


def test_tied_and_shared_embeddings():
    m = make({"tie_embeddings": True})
    assert m.out_proj is None and m.output_weight is m.tgt_embed.tokens.weight
    assert m.src_embed is not m.tgt_embed
    s = make({"share_all_embeddings": True})
    assert s.src_embed is s.tgt_embed
    with pytest.raises(ValueError, match="joint_vocab"):
        build_model("transformer.nmt", dict(TINY, share_all_embeddings=True), Vocabs.sizes(10, 12))


def test_padding_a_batch_further_changes_nothing():
    m = make()
    with torch.no_grad():
        a, b = m(batch()), m(batch(pad_extra=4))
        assert torch.allclose(a["loss"], b["loss"], atol=1e-6) and a["n_tokens"] == b["n_tokens"]
        ea, eb = m.encode(batch()), m.encode(batch(pad_extra=4))
        assert torch.allclose(ea["memory"], eb["memory"][:, :6], atol=1e-5)
        ga, _ = greedy(m, batch(), max_len=8)
        gb, _ = greedy(m, batch(pad_extra=4), max_len=8)
        assert ga == gb


def test_beam_one_equals_greedy():
    m = make(seed=4)
    b = batch(bsz=4, seed=2)
    g, _ = greedy(m, b, max_len=9)
    assert beam_search(m, b, 1, max_len=9, alpha=0.0) == g


class _NoCache:
    """The same model decoded without a cache: the state is the prefix, recomputed at each step."""

    def __init__(self, model):
        self.m, self.specials, self.decoding = model, model.specials, "step"

    def encode(self, batch):
        return {"src": batch["src"]}

    def init_state(self, enc):
        return enc["src"].new_zeros(enc["src"].size(0), 0)  # the target prefix so far (starts empty)

    def step(self, enc, state, prev):
        prefix = torch.cat([state, prev.unsqueeze(1)], 1)  # <bos> first
        return self.m.full_step_scores({"src": enc["src"]}, prefix), prefix, {}


def test_beam_search_with_cached_state_equals_beam_search_without_cache():
    """The shared beam search reorders the caches (index_select on dim 0) and drops finished
    sentences from the flat batch: the result equals decoding that recomputes every prefix."""
    m = make(seed=5)
    b = batch(bsz=5, seed=3)
    with torch.no_grad():
        cached = beam_search(m, b, 4, max_len=10, alpha=1.0)
        plain = beam_search(_NoCache(m), b, 4, max_len=10, alpha=1.0)
        assert cached == plain
        g_cached, _ = greedy(m, b, max_len=10)
        g_plain, _ = greedy(_NoCache(m), b, max_len=10)
        assert g_cached == g_plain


def test_per_head_weights_of_a_decoder_block():
    m = make()
    with torch.no_grad():
        _, enc_infos, dec_infos = m.decoder_hidden(batch(), need_weights=True)
    w = dec_infos[1]["cross_attn"]
    assert w.shape == (3, 4, 5, 6)
    assert torch.allclose(w.sum(-1), torch.ones(3, 4, 5), atol=1e-5)
    assert torch.all(w[0, :, :, 4:] == 0)  # the padded source positions
    assert enc_infos[0]["self_attn"].shape == (3, 4, 6, 6)
    assert torch.all(dec_infos[0]["self_attn"][0].triu(1) == 0)


def test_loss_falls_when_overfitting():
    torch.manual_seed(0)
    m = build_model("transformer.nmt", dict(TINY, label_smoothing=0.1), Vocabs.sizes(V, V))
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    b = batch()
    first = None
    for _ in range(60):
        out = m(b)
        opt.zero_grad()
        out["loss"].backward()
        opt.step()
        first = first if first is not None else out["loss"].item()
    assert out["nll"].item() < 0.3 * first
    assert out["n_tokens"].item() == 14
    m.eval()
    with torch.no_grad():
        hyps, _ = greedy(m, b, max_len=8)
    assert hyps[0] == b["tgt_out"][0].tolist()[:5] or hyps[0][:4] == b["tgt_out"][0].tolist()[:4]


def test_checkpoint_round_trip(tmp_path):
    m = make({"pre_norm": True})
    path = save_checkpoint(tmp_path / "t.pt", m, {"src": "a", "tgt": "b", "src_size": V, "tgt_size": V})
    m2, _ = load_model(path)
    b = batch()
    with torch.no_grad():
        assert torch.equal(m(b)["loss"], m2.eval()(b)["loss"])
        assert greedy(m, b, 7)[0] == greedy(m2, b, 7)[0]
