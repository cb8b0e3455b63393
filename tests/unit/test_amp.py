"""bf16 autocast works for every registered model: one training update through the shared
trainer's step (:func:`mmt_repro.train.step.train_update`, as the trainer runs ``amp: true``
on a GPU) under CPU autocast gives a finite loss and finite, nonzero gradients; and the shared
output layer's loss (``linear_cross_entropy``) keeps float32 where it must."""

from __future__ import annotations

import pytest
import torch

from mmt_repro.models import Vocabs, available, build_model, model_class
from mmt_repro.models.layers import linear_cross_entropy
from mmt_repro.train.step import StepSums, train_update
from mmt_repro.train.synthetic import bertgen_vocabs, model_batch

S2S = {"emb_dim": 8, "hidden": 8, "att_dim": 8, "dropout": 0.1}
S2S_IMG = {**S2S, "img_dim": 6, "subspaces": 2}
TF = {"d_model": 8, "n_heads": 2, "d_ff": 16, "enc_layers": 2, "dec_layers": 2}
TF_IMG = {**TF, "img_dim": 6, "subspaces": 2}
GRU = dict(emb_dim=6, enc_dim=5, dec_dim=7, att_dim=4, init_std=0.5)
EMB = dict(emb_dim=6, enc_dim=5, dec_dim=7)
VATEX = dict(emb_dim=8, enc_dim=6, dec_dim=12, layers=2, img_dim=6)

#: (registered model, tiny configuration, feature slots): every model of the package, and the
#: configurations whose training path differs (agreement kinds, co-attention on/off).
CASES = [
    ("bertgen.bertgen", dict(hidden_size=32, num_layers=2, num_heads=4, ffn_size=64, img_dim=6, coord_freqs=4,
                             init="random", max_regions=5, visual_ln_init=1.0), 4),
    ("bertgen.bertgen", dict(hidden_size=32, num_layers=2, num_heads=4, ffn_size=64, img_dim=6, coord_freqs=4,
                             init="random", max_regions=5, pack_len=40, use_sdpa=False), 4),
    ("deepfuse.deepfuse", dict(d_model=16, n_heads=2, d_ff=20, enc_layers=2, dec_layers=2, img_dim=6), 4),
    ("deepfuse.lstm", dict(VATEX, enc_dim=12), None),
    ("deepfuse.vatex", VATEX, 4),
    ("doubly_attentive.nmt", GRU, None),
    ("doubly_attentive.nmt_src_img", dict(GRU, img_dim=3, img_att_dim=4), 6),
    ("emb_pred.nmt", EMB, None),
    ("emb_pred.imag", dict(EMB, img_dim=4), 1),
    ("emb_pred.ours", dict(EMB, img_dim=4), 1),
    ("emb_pred.ours_text", EMB, None),
    ("transformer.nmt", dict(TF, label_smoothing=0.1), None),
    ("visual_agreement.seq2seq_text", S2S, None),
    ("visual_agreement.seq2seq", {**S2S_IMG, "co_attention": False}, 4),
    ("visual_agreement.seq2seq", {**S2S_IMG, "beta_gate": True, "agreement": "hard"}, 4),
    ("visual_agreement.seq2seq", {**S2S_IMG, "beta_gate": True, "agreement": "soft"}, 4),
    ("visual_agreement.transformer_text", TF, None),
    ("visual_agreement.transformer", {**TF_IMG, "beta_gate": True, "agreement": "hard", "align_layer": 1}, 4),
    ("visual_agreement.transformer", {**TF_IMG, "beta_gate": True, "agreement": "soft", "align_layer": 0}, 4),
]


def _package_models() -> set[str]:
    return {n for n in available() if model_class(n).__module__.startswith("mmt_repro.models.")}


def test_every_registered_model_has_an_autocast_case():
    assert _package_models() <= {name for name, _, _ in CASES}


def _build(name: str, cfg: dict):
    torch.manual_seed(0)
    vocabs = bertgen_vocabs(60) if name.startswith("bertgen.") else Vocabs.sizes(23, 29)
    return build_model(name, cfg, vocabs, {})


@pytest.mark.parametrize("name, cfg, slots", CASES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)])
def test_one_bf16_autocast_update_of_every_model(name, cfg, slots):
    model = _build(name, cfg).train()
    batch = model_batch(model, 3 if not name.startswith("bertgen.") else 1, src_len=(3, 7), tgt_len=(2, 6),
                        img_slots=slots, min_regions=2 if slots and slots > 1 else None, seed=1)
    dtypes = []
    hooks = [m.register_forward_hook(lambda mod, args, out: dtypes.append(out.dtype) if torch.is_tensor(out) else None)
             for m in model.modules() if isinstance(m, torch.nn.Linear)]
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    sums = StepSums()
    try:
        train_update(model, opt, [batch], torch.device("cpu"), amp=True, clip_norm=1.0, sums=sums, step=1)
    except RuntimeError as err:  # oneDNN's fused LSTM (packed sequences) has no bf16 kernel without AVX-512 BF16
        if "primitive descriptor" in str(err) and not torch.ops.mkldnn._is_mkldnn_bf16_supported():
            pytest.skip(f"this CPU has no bf16 oneDNN kernels for {name}'s LSTM ({str(err).splitlines()[0][:60]}); "
                        "its GPU path is timed by benchmarks/gpu_calibration.py")
        raise
    for h in hooks:
        h.remove()
    assert torch.bfloat16 in dtypes, "the forward pass did not run under bf16 autocast"
    read = sums.read()  # raises FloatingPointError on a non-finite loss
    assert torch.isfinite(torch.tensor(read["train_loss"])) and read["n_tokens"] > 0
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    assert grads, "no gradient reached any parameter"
    assert all(torch.isfinite(g).all() for g in grads.values())
    assert all(g.dtype == p.dtype for g, p in ((grads[n], dict(model.named_parameters())[n]) for n in grads))
    assert sum(float(g.float().norm()) for g in grads.values()) > 0
    moved = [n for n, p in model.named_parameters() if n in before and not torch.equal(before[n], p.detach())]
    assert moved, "the update changed no parameter"


def test_linear_cross_entropy_under_autocast_matches_fp32():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(37, 16, generator=g, requires_grad=True)
    w = torch.randn(50, 16, generator=g, requires_grad=True)
    b = torch.randn(50, generator=g, requires_grad=True)
    y = torch.randint(0, 50, (37,), generator=g)
    y[::5] = 0  # ignored rows
    ref = torch.nn.functional.cross_entropy(h @ w.t() + b, y, ignore_index=0, reduction="sum")
    ref_grads = torch.autograd.grad(ref, (h, w, b))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        hb = torch.nn.functional.linear(h, torch.eye(16))  # a bf16 activation, as an autocast model gives
        loss = linear_cross_entropy(hb, w, b, y, ignore_index=0, max_chunk_elements=500)  # several chunks
    assert loss.dtype == torch.float32
    grads = torch.autograd.grad(loss, (h, w, b))
    assert [x.dtype for x in grads] == [torch.float32] * 3  # each in its parameter's dtype
    torch.testing.assert_close(loss, ref, rtol=2e-2, atol=0.5)
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got, want, rtol=5e-2, atol=5e-2)


def test_linear_cross_entropy_fp32_path_is_unchanged():
    """Without autocast: exactly F.cross_entropy's loss and gradients (fp32, to rounding)."""
    g = torch.Generator().manual_seed(1)
    h = torch.randn(20, 8, generator=g, requires_grad=True)
    w = torch.randn(30, 8, generator=g, requires_grad=True)
    y = torch.randint(1, 30, (20,), generator=g)
    loss = linear_cross_entropy(h, w, None, y, ignore_index=0, max_chunk_elements=90)
    ref = torch.nn.functional.cross_entropy(h @ w.t(), y, ignore_index=0, reduction="sum")
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, ref)
    for got, want in zip(torch.autograd.grad(loss, (h, w)), torch.autograd.grad(ref, (h, w))):
        torch.testing.assert_close(got, want)
