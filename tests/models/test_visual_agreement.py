"""Yang et al. (2020): equations against hand computations on tiny tensors, shapes, both
directions, loss falls when overfitting, beam 1 = greedy, checkpoint round trip."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn

from mmt_repro.checkpoint import load_model, save_checkpoint
from mmt_repro.decode.search import beam_search, greedy
from mmt_repro.models import Vocabs, build_model
from mmt_repro.datasets.alignments import alignment_tensors, parse_alignment_batch
from mmt_repro.models.visual_agreement import (
    _reverse_batch,
    _VisualGates,
    agreement_terms,
    attention_mse,
    co_attention,
    fuse,
    hard_targets,
    soft_targets,
)

SRC_V, TGT_V, D_IMG = 20, 25, 6


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    B, n, L, m = 3, 5, 6, 4
    src_len, y_len = torch.tensor([5, 3, 4]), torch.tensor([6, 2, 4])
    src = torch.zeros(B, n, dtype=torch.long)
    tgt_in = torch.zeros(B, L + 1, dtype=torch.long)
    tgt_out = torch.zeros(B, L + 1, dtype=torch.long)
    for b in range(B):
        src[b, : src_len[b]] = torch.randint(4, SRC_V, (int(src_len[b]),), generator=g)
        y = torch.randint(4, TGT_V, (int(y_len[b]),), generator=g)
        tgt_in[b, 0] = 1
        tgt_in[b, 1 : len(y) + 1] = y
        tgt_out[b, : len(y)] = y
        tgt_out[b, len(y)] = 2
    img = torch.randn(B, m, D_IMG, generator=g)
    mask = torch.ones(B, m, dtype=torch.bool)
    mask[0, 3] = False
    align = ["0-0 1-1 2-2 3-3 4-4 4-5", "0-0 1-1 2-1", "0-0 1-1 2-3 3-2"]
    return {"src": src, "src_len": src_len, "tgt_in": tgt_in, "tgt_out": tgt_out, "img": img, "img_mask": mask,
            **alignment_tensors(align, src_len.tolist(), y_len.tolist()), "ids": torch.arange(B)}


S2S = {"emb_dim": 8, "hidden": 8, "att_dim": 8, "dropout": 0.0}
S2S_IMG = {**S2S, "img_dim": D_IMG, "subspaces": 2}
TF = {"d_model": 8, "n_heads": 2, "d_ff": 16, "enc_layers": 2, "dec_layers": 2, "dropout": 0.0, "attention_dropout": 0.0}
TF_IMG = {**TF, "img_dim": D_IMG, "subspaces": 2}
MODELS = [
    ("visual_agreement.seq2seq_text", S2S),
    ("visual_agreement.seq2seq", {**S2S_IMG, "co_attention": False}),
    ("visual_agreement.seq2seq", {**S2S_IMG, "co_attention": False, "damt_gate": True}),
    ("visual_agreement.seq2seq", S2S_IMG),
    ("visual_agreement.seq2seq", {**S2S_IMG, "beta_gate": True, "agreement": "hard"}),
    ("visual_agreement.seq2seq", {**S2S_IMG, "beta_gate": True, "agreement": "soft"}),
    ("visual_agreement.seq2seq", {**S2S_IMG, "agreement": "soft", "weighting": "frozen"}),
    ("visual_agreement.transformer_text", TF),
    ("visual_agreement.transformer", TF_IMG),
    ("visual_agreement.transformer", {**TF_IMG, "beta_gate": True, "agreement": "hard", "align_layer": 1}),
    ("visual_agreement.transformer", {**TF_IMG, "beta_gate": True, "agreement": "soft", "align_layer": 0}),
]


def _model(name, cfg, seed=0):
    torch.manual_seed(seed)
    return build_model(name, cfg, Vocabs.sizes(SRC_V, TGT_V))


# ----------------------------------------------------------------------------- equations by hand
def test_co_attention_eqs_1_to_4_by_hand():
    X = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])  # n = 2 words
    V = torch.tensor([[[1.0, 1.0], [2.0, 0.0], [5.0, 5.0]]])  # m = 3 regions, the last one padding
    x_mask = torch.tensor([[True, True]])
    v_mask = torch.tensor([[True, True, False]])
    M = torch.stack([torch.eye(2), torch.tensor([[0.0, 1.0], [1.0, 0.0]])])  # K = 2
    X_hat, V_hat = co_attention(X, x_mask, V, v_mask, M)
    exp_X, exp_V = torch.zeros(3, 2), torch.zeros(2, 2)
    for Mk in M:
        S = V[0] @ Mk @ X[0].T  # eq. 1, (m, n)
        A_x = torch.softmax(S, dim=1)  # eq. 2: over the words
        St = S.T.clone()
        St[:, 2] = -1e30  # the padded region
        A_v = torch.softmax(St, dim=1)
        exp_X += A_x @ X[0] / 2  # eqs. 3-4
        exp_V += A_v @ V[0] / 2
    # e.g. k = 1, region 0 (1, 1) against words (1, 0), (0, 2): S = [1, 2]
    assert torch.allclose(torch.softmax(torch.tensor([1.0, 2.0]), 0), torch.softmax(V[0] @ M[0] @ X[0].T, 1)[0])
    assert torch.allclose(X_hat[0], exp_X, atol=1e-6)
    assert torch.allclose(V_hat[0], exp_V, atol=1e-6)
    assert X_hat.shape == (1, 3, 2) and V_hat.shape == (1, 2, 2)


def test_fusion_gate_eqs_10_11_by_hand():
    U1, U2 = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        U1.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 0.0]]))
        U2.weight.copy_(torch.tensor([[0.0, 0.0], [0.0, 2.0]]))
    c, c_hat = torch.tensor([[2.0, 1.0]]), torch.tensor([[0.0, -1.0]])
    g = torch.sigmoid(torch.tensor([[2.0, -2.0]]))  # U1 c + U2 c^ = (2, 0) + (0, -2)
    expected = g * c + (1 - g) * c_hat
    assert torch.allclose(fuse(c, c_hat, U1, U2), expected)
    assert math.isclose(float(expected[0, 0]), 2 * (1 / (1 + math.exp(-2))), rel_tol=1e-6)


def test_beta_eq_17_by_hand():
    gates = _VisualGates(2, 2, beta_gate=True)
    with torch.no_grad():
        gates.W1.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
        gates.W2.weight.copy_(torch.tensor([[0.0, 1.0], [0.0, 0.0]]))
        gates.w.weight.copy_(torch.tensor([[2.0, -1.0]]))
    s, c_v = torch.tensor([[0.5, 1.0]]), torch.tensor([[0.0, 0.5]])
    pre = 2 * math.tanh(0.5 + 0.5) - math.tanh(1.0)  # w^T tanh(W1 s + W2 c)
    assert math.isclose(float(gates.beta(s, c_v).detach()), 1 / (1 + math.exp(-pre)), rel_tol=1e-6)


def test_delta_and_weighted_agreement_by_hand():
    a = torch.tensor([[[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]])
    b = torch.tensor([[[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]])
    assert torch.allclose(attention_mse(a, b), torch.tensor([[0.5 / 3, 0.0]]))  # (0.25 + 0.25) / 3
    valid = torch.tensor([[True, True]])
    assert math.isclose(float(agreement_terms(a, b, valid, None)), 0.5 / 3, rel_tol=1e-6)  # eq. 12: frozen
    beta = torch.tensor([[0.2, 0.9]])
    assert math.isclose(float(agreement_terms(a, b, valid, beta)), 0.2 * 0.5 / 3, rel_tol=1e-6)  # eq. 19
    assert float(agreement_terms(a, b, torch.tensor([[False, True]]), beta)) == 0.0


def test_soft_posterior_eq_16_by_hand():
    text_att = torch.tensor([[[0.3, 0.7], [1.0, 0.0]]])  # A_{y -> x}: 2 target words over 2 source words
    other = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]])  # A_{x -> v} (+ the <eos> row)
    out = soft_targets(text_att, other)
    assert torch.allclose(out, torch.tensor([[[0.3, 0.7], [1.0, 0.0]]]))


def test_hard_alignment_eq_14_picks_the_link_nearest_the_diagonal():
    # target 1 is linked to sources 0 and 2 of 4 (3 target words): |0/4 - 1/3| > |2/4 - 1/3|
    al = parse_alignment_batch(["0-0 0-1 2-1", ""], [4, 2], [3, 2])
    assert al.tolist() == [[0, 2, -1], [-1, -1, -1]]
    other = torch.arange(12.0).view(1, 4, 3)
    targets, valid = hard_targets(other, al[:1])
    assert valid.tolist() == [[True, True, False]]
    assert targets[0, 1].tolist() == other[0, 2].tolist()
    with pytest.raises(ValueError, match="outside"):
        parse_alignment_batch(["5-0"], [4], [3])


def test_backward_batch_swaps_the_sides():
    batch = _batch()
    rev = _reverse_batch(batch, Vocabs.sizes(SRC_V, TGT_V).src.specials, Vocabs.sizes(SRC_V, TGT_V).tgt.specials)
    assert rev["src_len"].tolist() == [6, 2, 4]
    assert rev["src"][1, :2].tolist() == batch["tgt_out"][1, :2].tolist()
    assert rev["src"][1, 2:].eq(0).all()
    assert rev["tgt_in"][1].tolist() == [1, *batch["src"][1, :3].tolist(), 0, 0]
    assert rev["tgt_out"][1].tolist() == [*batch["src"][1, :3].tolist(), 2, 0, 0]


# ----------------------------------------------------------------------------- the models
@pytest.mark.parametrize("name,cfg", MODELS)
def test_forward_logs_both_directions_and_gradients_reach_both(name, cfg):
    model = _model(name, cfg)
    out = model(_batch())
    assert {"loss", "n_tokens", "nll_fwd", "nll_bwd"} <= set(out)
    assert int(out["n_tokens"]) == 6 + 2 + 4 + 3
    if cfg.get("agreement", "none") != "none":
        assert float(out["agreement_fwd"]) > 0 and float(out["agreement_bwd"]) > 0
    out["loss"].backward()
    for part in (model.fwd, model.bwd):
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in part.parameters())


@pytest.mark.parametrize("name,cfg", [MODELS[0], MODELS[3], MODELS[7], MODELS[8]])
def test_a_forward_only_model_trains_the_forward_model_alone_with_its_loss(name, cfg, tmp_path):
    """backward: false (a baseline that no job decodes backward): no backward model; the loss is
    the joint model's forward term (same forward weights), and its gradient reaches the forward model."""
    joint, alone = _model(name, cfg), _model(name, {**cfg, "backward": False})
    assert alone.bwd is None and alone.directions == ("forward",)
    n_joint = sum(p.numel() for p in joint.parameters())
    assert sum(p.numel() for p in alone.parameters()) == n_joint - sum(p.numel() for p in joint.bwd.parameters())
    alone.fwd.load_state_dict(joint.fwd.state_dict())
    batch = _batch()
    out, ref = alone(batch), joint(batch)
    assert "nll_bwd" not in out and int(out["n_tokens"]) == int(ref["n_tokens"])
    f = joint._teacher(joint.fwd, batch, "forward")  # the joint loss's forward term (label smoothing included)
    assert torch.allclose(out["loss"], f.get("loss_sum", f["nll"]) / ref["n_tokens"])
    assert torch.allclose(out["nll_fwd"], ref["nll_fwd"])
    out["loss"].backward()
    assert all(p.grad is not None for p in alone.fwd.parameters() if p.requires_grad)
    # the checkpoint holds the forward model alone and decodes only forward
    again, _ = load_model(save_checkpoint(tmp_path / "m.pt", alone.eval(), {"src": "a", "tgt": "b"}))
    assert again.bwd is None
    with pytest.raises(ValueError, match="forward"):
        again.set_direction("backward")
    with pytest.raises(ValueError, match="trained forward only"):
        again.word_attention(batch)


def test_backward_auto_means_both_outside_the_plan_and_agreement_needs_both():
    assert _model("visual_agreement.seq2seq", {**S2S_IMG, "backward": "auto"}).bwd is not None
    assert _model("visual_agreement.transformer_text", {**TF, "backward": "auto"}).bwd is not None
    for name, cfg in (MODELS[5], MODELS[9]):
        with pytest.raises(ValueError, match="needs backward: true"):
            _model(name, {**cfg, "backward": False})
    with pytest.raises(ValueError, match="backward='yes'"):
        _model("visual_agreement.seq2seq_text", {**S2S, "backward": "yes"})


@pytest.mark.parametrize("grad", ["own", "both"])
@pytest.mark.parametrize("agreement", ["hard", "soft"])
def test_agreement_gradient_reaches_the_other_model_only_under_both(grad, agreement):
    """``both``: Delta couples the two, the forward term alone moves the backward model; ``own``
    (the paper's eqs. 19-20): the forward term moves the forward model only."""
    model = _model("visual_agreement.seq2seq", {**S2S_IMG, "agreement": agreement, "weighting": "frozen",
                                                "agreement_grad": grad})
    batch = _batch()
    f, b, rev = model.attention_pair(batch)
    agree_f, _ = model._agreement(batch, rev, f, b)
    agree_f.backward()
    assert model.fwd.att_v.v.weight.grad.abs().sum() > 0
    bwd_grads = [p.grad.abs().sum() for p in model.bwd.parameters() if p.grad is not None]
    if grad == "both":
        assert model.bwd.att_v.v.weight.grad.abs().sum() > 0
    else:
        assert not bwd_grads or max(bwd_grads) == 0


def test_image_row_has_damts_gate_on_the_visual_context():
    """+ Image with ``damt_gate`` (Calixto et al.'s eq. 8): beta = sigmoid(W_beta s_{t-1} + b) per
    step; a closed gate makes the output blind to the image, an open one does not."""
    model = _model("visual_agreement.seq2seq", {**S2S_IMG, "co_attention": False, "damt_gate": True}).eval()
    batch = _batch()
    other = {**batch, "img": torch.randn_like(batch["img"])}
    f, _, _ = model.attention_pair(batch)
    assert f["beta"].shape == batch["tgt_in"].shape and bool(((f["beta"] > 0) & (f["beta"] < 1)).all())
    assert not torch.allclose(model(batch)["nll_fwd"], model(other)["nll_fwd"])
    with torch.no_grad():
        for part in (model.fwd, model.bwd):
            part.damt_beta.weight.zero_()
            part.damt_beta.bias.fill_(-60.0)
    torch.testing.assert_close(model(batch)["nll_fwd"], model(other)["nll_fwd"])
    with pytest.raises(ValueError, match="damt_gate"):
        _model("visual_agreement.seq2seq", {**S2S_IMG, "damt_gate": True})  # with co-attention


def _agreement_grads(name, cfg, lam_f, lam_b):
    """Gradients of the agreement part of the loss (loss at the lambdas minus loss at 0, 0):
    ``(forward parameters, backward parameters)`` as two flat vectors."""
    grads = []
    for lf, lb in ((lam_f, lam_b), (0.0, 0.0)):
        model = _model(name, {**cfg, "lambda_fwd": lf, "lambda_bwd": lb})
        model(_batch())["loss"].backward()
        grads.append([torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten()
                                 for p in part.parameters()]) for part in (model.fwd, model.bwd)])
    return grads[0][0] - grads[1][0], grads[0][1] - grads[1][1]


@pytest.mark.parametrize("name,cfg", [
    ("visual_agreement.seq2seq", {**S2S_IMG, "beta_gate": True, "agreement": "hard"}),
    ("visual_agreement.seq2seq", {**S2S_IMG, "agreement": "soft", "weighting": "frozen"}),
    ("visual_agreement.transformer", {**TF_IMG, "beta_gate": True, "agreement": "soft", "align_layer": 1}),
])
def test_per_direction_lambdas_scale_their_own_model_only(name, cfg):
    """The paper's lambda_1 = 0.5, lambda_2 = 0.1 (En-Fr): under ``agreement_grad: own`` (the
    default) the agreement gradient reaching the forward parameters scales with lambda_1 alone and
    the one reaching the backward parameters with lambda_2 alone, so asymmetric lambdas differ in
    effect; under ``both`` lambda_1 moves the backward model too."""
    gf, gb = _agreement_grads(name, cfg, 0.5, 0.0)
    assert gf.abs().sum() > 0 and gb.abs().max() < 1e-7  # lambda_2 = 0: the backward model is untouched
    gf2, gb2 = _agreement_grads(name, cfg, 0.0, 0.1)
    assert gb2.abs().sum() > 0 and gf2.abs().max() < 1e-7
    gf3, gb3 = _agreement_grads(name, cfg, 1.0, 0.2)  # both doubled: each part doubles
    torch.testing.assert_close(gf3, 2 * gf, rtol=1e-3, atol=1e-6)
    torch.testing.assert_close(gb3, 2 * gb2, rtol=1e-3, atol=1e-6)
    assert not torch.allclose(_agreement_grads(name, cfg, 0.5, 0.1)[0], _agreement_grads(name, cfg, 0.1, 0.5)[0])
    _, gb_both = _agreement_grads(name, {**cfg, "agreement_grad": "both"}, 0.5, 0.0)
    assert gb_both.abs().sum() > 0  # today's joint reading: the forward term trains the backward model


@pytest.mark.parametrize("name,cfg", MODELS)
def test_beam_one_equals_greedy_in_both_directions(name, cfg):
    model = _model(name, cfg).eval()
    batch = _batch()
    for direction in ("forward", "backward"):
        model.set_direction(direction)
        b = batch if direction == "forward" else {**batch, "src": batch["tgt_in"][:, 1:],
                                                   "src_len": torch.tensor([6, 2, 4])}
        hyps, infos = greedy(model, b, 8, collect_info=True)
        assert beam_search(model, b, 1, 8) == hyps
        if model.uses_visual and "alpha_img" in infos[0]:
            assert infos[0]["alpha_img"].shape[-1] == 4
    assert model.specials == model.vocabs.src.specials  # backward emits the source language


def test_direction_switches_specials_and_unknown_direction_is_refused():
    model = _model("visual_agreement.seq2seq_text", S2S)
    assert model.set_direction("backward").specials == model.vocabs.src.specials
    with pytest.raises(ValueError, match="sideways"):
        model.set_direction("sideways")
    one_way = build_model("doubly_attentive.nmt", {"emb_dim": 4, "enc_dim": 4, "dec_dim": 4, "att_dim": 4},
                          Vocabs.sizes(SRC_V, TGT_V))
    with pytest.raises(ValueError, match="forward"):
        one_way.set_direction("backward")


@pytest.mark.parametrize("name,cfg", [MODELS[4], MODELS[9]])
def test_loss_falls_when_overfitting(name, cfg):
    model = _model(name, cfg)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    batch = _batch()
    first = None
    for _ in range(60):
        opt.zero_grad()
        out = model(batch)
        out["loss"].backward()
        opt.step()
        first = first if first is not None else float(out["loss"])
    assert float(out["loss"]) < 0.3 * first


@pytest.mark.parametrize("name,cfg", [MODELS[3], MODELS[8]])
def test_checkpoint_round_trip_gives_identical_outputs(name, cfg, tmp_path):
    model = _model(name, cfg).eval()
    path = save_checkpoint(tmp_path / "m.pt", model, {"src": "a", "tgt": "b"})
    again, _ = load_model(path)
    batch = _batch()
    with torch.no_grad():
        for direction in ("forward", "backward"):
            model.set_direction(direction)
            again.set_direction(direction)
            enc_a, enc_b = model.encode(batch), again.encode(batch)
            prev = torch.tensor([1, 1, 1])
            la, _, _ = model.step(enc_a, model.init_state(enc_a), prev)
            lb, _, _ = again.step(enc_b, again.init_state(enc_b), prev)
            assert torch.equal(la, lb)


def test_config_errors_name_the_problem():
    with pytest.raises(ValueError, match="beta_gate"):
        _model("visual_agreement.seq2seq", {**S2S_IMG, "agreement": "soft"})  # adaptive without beta
    with pytest.raises(ValueError, match="unknown model config"):
        _model("visual_agreement.seq2seq", {**S2S_IMG, "lambda": 0.2})
    with pytest.raises(ValueError, match="align_layer"):
        _model("visual_agreement.transformer", {**TF_IMG, "beta_gate": True, "agreement": "hard"})(_batch())
    with pytest.raises(ValueError, match="extras"):
        _model("visual_agreement.seq2seq", {**S2S_IMG, "beta_gate": True, "agreement": "hard"})(
            {k: v for k, v in _batch().items() if not k.startswith("align")})


def test_transformer_alignment_block_comes_from_the_resource_and_the_checkpoint(tmp_path):
    choice = tmp_path / "layer.json"
    choice.write_text('{"forward": {"layer": 1, "aer": [0.5, 0.2]}, "backward": {"layer": 0, "aer": [0.1, 0.3]}}')
    cfg = {**TF_IMG, "beta_gate": True, "agreement": "hard"}
    model = build_model("visual_agreement.transformer", cfg, Vocabs.sizes(SRC_V, TGT_V), {"alignment_layer": choice})
    assert (model.layer("forward"), model.layer("backward")) == (1, 0)
    path = save_checkpoint(tmp_path / "m.pt", model, {"src": "a", "tgt": "b"})
    again, _ = load_model(path)  # no resources when decoding: the block is in the weights
    assert (again.layer("forward"), again.layer("backward")) == (1, 0)


def test_select_alignment_layer_scores_every_block_and_records_the_best(tmp_path):
    import json

    from mmt_repro.train.alignment_layer import select_alignment_layer
    from mmt_repro.text.vocab import Vocab

    (tmp_path / "x.en").write_text("a red circle .\ntwo blue squares .\n")
    (tmp_path / "x.de").write_text("ein roter kreis .\nzwei blaue quadrate .\n")
    (tmp_path / "x.align").write_text("0-0 1-1 2-2 3-3\n0-0 1-1 2-2 3-3\n")
    sv, tv = Vocab.build([tmp_path / "x.en"]), Vocab.build([tmp_path / "x.de"])
    sv.save(tmp_path / "en.json")
    tv.save(tmp_path / "de.json")
    torch.manual_seed(0)
    model = build_model("visual_agreement.transformer_text", {**TF, "dec_layers": 3}, Vocabs.of(sv, tv))
    save_checkpoint(tmp_path / "m.pt", model, {"src": sv.fingerprint(), "tgt": tv.fingerprint()})
    out = select_alignment_layer(tmp_path / "m.pt", tmp_path / "x.en", tmp_path / "x.de", tmp_path / "en.json",
                                 tmp_path / "de.json", tmp_path / "x.align", tmp_path / "layer.json")
    saved = json.loads((tmp_path / "layer.json").read_text())
    for direction in ("forward", "backward"):
        aer = saved[direction]["aer"]
        assert len(aer) == 3 and all(0.0 <= a <= 1.0 for a in aer)
        assert saved[direction]["layer"] == min(range(3), key=lambda k: (aer[k], k)) == out[direction]["layer"]
