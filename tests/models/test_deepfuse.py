"""DeepFuse (Wu 2020) and its Table 1 baselines: eq. 5-7 by hand, video masks, the video path,
incremental decoding, beam 1 = greedy, learning and checkpoints; the direction-accuracy column."""

import math

import pytest
import torch
import torch.nn.functional as F

from mmt_repro.checkpoint import load_model, save_checkpoint
from mmt_repro.grounded.video import direction_accuracy
from mmt_repro.decode.search import beam_search, greedy
from mmt_repro.models import Vocabs, build_model, make_config, visual_input

V = 21
TINY = dict(d_model=16, n_heads=2, d_ff=20, enc_layers=2, dec_layers=2, dropout=0.0, attention_dropout=0.0, img_dim=6)
TINY_VATEX = dict(emb_dim=8, enc_dim=6, dec_dim=12, layers=2, dropout=0.0, img_dim=6)
TINY_LSTM = dict(TINY_VATEX, enc_dim=12)


def make(name="deepfuse.deepfuse", cfg=None, seed=0):
    torch.manual_seed(seed)
    base = TINY if name == "deepfuse.deepfuse" else TINY_LSTM if name == "deepfuse.lstm" else TINY_VATEX
    return build_model(name, dict(base, **(cfg or {})), Vocabs.sizes(V, V)).eval()


def batch(bsz=3, seed=0, pad_src=0, pad_video=0, segments=4):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, V, (bsz, 6), generator=g)
    src[0, 4:] = 0
    tgt = torch.randint(4, V, (bsz, 5), generator=g)
    img = torch.randn(bsz, segments, 6, generator=g)
    mask = torch.ones(bsz, segments, dtype=torch.bool)
    mask[1, 2:] = False
    img[1, 2:] = 0.0
    if pad_src:
        src = F.pad(src, (0, pad_src))
    if pad_video:
        img = F.pad(img, (0, 0, 0, pad_video))
        mask = F.pad(mask, (0, pad_video), value=False)
    return {"src": src, "src_len": (src != 0).sum(1), "img": img, "img_mask": mask, "ids": torch.arange(bsz),
            "tgt_in": torch.cat([torch.ones(bsz, 1, dtype=torch.long), tgt[:, :-1]], 1), "tgt_out": tgt}


def test_registry_and_config_checks():
    assert visual_input("deepfuse.deepfuse") == "video" and visual_input("deepfuse.vatex") == "video"
    assert visual_input("deepfuse.lstm") == "none" and visual_input("transformer.nmt") == "none"
    cfg = make_config("deepfuse.deepfuse", {})  # the paper's sizes: 6+6 x 512, FFN 2048, 8 heads
    assert (cfg.enc_layers, cfg.dec_layers, cfg.d_model, cfg.d_ff, cfg.n_heads) == (6, 6, 512, 2048, 8)
    with pytest.raises(ValueError, match="fuse_residual"):
        make_config("deepfuse.deepfuse", {"fuse_residual": "thrice"})
    assert cfg.video_positions == "none"  # eq. 5: K_E, V_E are linear transforms of E alone
    with pytest.raises(ValueError, match="video_positions"):
        make_config("deepfuse.deepfuse", {"video_positions": "learned"})
    with pytest.raises(ValueError, match="dec_dim"):
        build_model("deepfuse.vatex", dict(TINY_VATEX, dec_dim=10), Vocabs.sizes(V, V))


@pytest.mark.parametrize("residual", ["once", "twice"])
def test_video_encoder_attention_and_gate_equal_equations_5_to_7(residual):
    m = make(cfg={"fuse_residual": residual})
    layer = m.encoder.layers[0]
    g = torch.Generator().manual_seed(1)
    x, video = torch.randn(2, 5, 16, generator=g), torch.randn(2, 3, 6, generator=g)
    mask = torch.tensor([[True, True, True], [True, False, False]])
    src_mask = torch.ones(2, 5, dtype=torch.bool)
    with torch.no_grad():
        got, info = layer(x, src_mask, video=video, video_mask=mask, need_weights=True)
        hl, _ = super(type(layer), layer).forward(x, src_mask)  # eq. 1-4: H^L
        K = video @ layer.video_k.weight.T + layer.video_k.bias
        Vv = video @ layer.video_v.weight.T + layer.video_v.bias
        s = (hl @ K.transpose(1, 2) / math.sqrt(16)).masked_fill(~mask[:, None, :], float("-inf"))
        a = torch.softmax(s, -1)
        h_bar = a @ Vv  # eq. 5
        lam = torch.sigmoid(h_bar @ layer.gate_w.weight.T + layer.gate_w.bias + hl @ layer.gate_u.weight.T)  # eq. 7
        fused = hl + lam * h_bar  # eq. 6
        expected = layer.video_norm(hl + fused if residual == "twice" else fused)
    assert torch.allclose(info["video_attn"], a, atol=1e-6) and torch.allclose(info["gate"], lam, atol=1e-6)
    assert torch.allclose(got, expected, atol=1e-5)
    if residual == "twice":  # LayerNorm is scale-invariant: 'twice' = 'once' with the gate halved
        half = torch.nn.functional.layer_norm(hl + 0.5 * lam * h_bar, (16,), layer.video_norm.weight,
                                              layer.video_norm.bias, eps=layer.video_norm.eps * 0.25)
        assert torch.allclose(got, half, atol=1e-5)


@pytest.mark.parametrize("name", ["deepfuse.deepfuse", "deepfuse.vatex"])
def test_padding_source_and_video_further_changes_nothing(name):
    m = make(name)
    with torch.no_grad():
        a, b = m(batch()), m(batch(pad_src=3, pad_video=5))
        assert torch.allclose(a["loss"], b["loss"], atol=1e-5)
        assert greedy(m, batch(), 8)[0] == greedy(m, batch(pad_src=3, pad_video=5), 8)[0]


@pytest.mark.parametrize("positions", ["none", "sinusoidal"])
def test_video_positions_decide_whether_the_encoder_sees_the_segment_order(positions):
    m = make(cfg={"video_positions": positions})
    b = batch(segments=5)
    b["img_mask"][:] = True  # every segment real: a permutation only reorders them
    perm = torch.tensor([3, 0, 4, 1, 2])
    moved = dict(b, img=b["img"][:, perm])
    with torch.no_grad():
        memory, mask, _ = m.run_encoder(b)
        memory_moved, _, _ = m.run_encoder(moved)
        diff = (memory - memory_moved).abs()[mask].max().item()  # text positions only
    if positions == "none":
        assert diff < 1e-5  # eq. 5 alone: attention over a set of segments
    else:
        assert diff > 1e-3  # PE(j) on K_E and V_E: the order reaches the encoder output
    with torch.no_grad():  # padded segments beyond the real ones still change nothing
        assert torch.allclose(m(batch())["loss"], m(batch(pad_video=5))["loss"], atol=1e-5)


@pytest.mark.parametrize("name", ["deepfuse.deepfuse", "deepfuse.vatex"])
def test_the_video_reaches_the_output(name):
    m = make(name)
    b = batch()
    other = dict(b, img=b["img"].flip(0), img_mask=b["img_mask"].flip(0))
    with torch.no_grad():
        assert not torch.allclose(m(b)["loss"], m(other)["loss"])
    with pytest.raises(ValueError, match="img_dim"):
        m(dict(b, img=torch.randn(3, 4, 5)))


def test_deepfuse_incremental_decoding_equals_full_recomputation():
    m = make(cfg={"pre_norm": True})
    b = batch()
    with torch.no_grad():
        enc = m.encode(b)
        state = m.init_state(enc)
        for t in range(b["tgt_in"].size(1)):
            lp, state, _ = m.step(enc, state, b["tgt_in"][:, t])
            assert torch.allclose(lp, m.full_step_scores(b, b["tgt_in"][:, : t + 1]), atol=1e-5)


@pytest.mark.parametrize("name", ["deepfuse.deepfuse", "deepfuse.vatex", "deepfuse.lstm"])
def test_beam_one_equals_greedy(name):
    m = make(name, seed=3)
    b = batch(bsz=4, seed=2)
    assert beam_search(m, b, 1, max_len=9, alpha=0.0) == greedy(m, b, max_len=9)[0]


def test_vatex_decoder_starts_from_both_encoders_and_attends_by_soft_dot():
    m = make("deepfuse.vatex")
    b = batch()
    with torch.no_grad():
        enc = m.encode(b)
        out, (h, _) = m.src_encoder(m.src_embed(b["src"][2:3]))  # sentence 2 has no padding
        assert torch.allclose(enc["h0"][2, 1, :6], torch.cat([h[2, 0], h[3, 0]]), atol=1e-6)  # layer 2: [fwd; bwd]
        assert enc["h0"].shape == (3, 2, 12) and enc["vid_out"].shape == (3, 4, 6)
        q = torch.randn(3, 12)
        ctx, alpha = m.src_attention(enc["src_out"], q, enc["src_mask"])
        s = (enc["src_out"] @ (q @ m.src_attention.linear_in.weight.T).unsqueeze(-1)).squeeze(-1)
        s = s.masked_fill(~enc["src_mask"], float("-inf"))
        assert torch.allclose(alpha, torch.softmax(s, -1), atol=1e-6)


@pytest.mark.parametrize("name", ["deepfuse.deepfuse", "deepfuse.vatex", "deepfuse.lstm"])
def test_loss_falls_when_overfitting(name):
    torch.manual_seed(0)
    m = make(name)
    m.train()
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    b = batch()
    first = None
    for _ in range(80):
        out = m(b)
        opt.zero_grad()
        out["loss"].backward()
        opt.step()
        first = first if first is not None else out["loss"].item()
    assert out["loss"].item() < 0.35 * first
    if name == "deepfuse.deepfuse":
        assert 0.0 < out["gate"].item() < 1.0


@pytest.mark.parametrize("name", ["deepfuse.deepfuse", "deepfuse.vatex"])
def test_checkpoint_round_trip(tmp_path, name):
    m = make(name)
    path = save_checkpoint(tmp_path / "m.pt", m, {"src": "a", "tgt": "b", "src_size": V, "tgt_size": V})
    m2, _ = load_model(path)
    b = batch()
    with torch.no_grad():
        assert torch.equal(m(b)["loss"], m2.eval()(b)["loss"])


def test_direction_accuracy_column():
    refs = ["一 个 红 色 的 圆 形 向 右 移 动 。", "有 一 个 蓝 色 的 正 方 形 在 向 上 移 动 。", "无 方 向 。"]
    hyps = ["一个红色的圆形向右移动。", "有 一 个 蓝 色 的 正 方 形 在 向 下 移 动 。", "x"]
    assert direction_accuracy(hyps, refs, "zh") == {"accuracy": 50.0, "sentences": 2}
    both = ["一 个 圆 形 向 右 向 左 移 动 。", "向 上"]
    assert direction_accuracy(both, refs[:2], "zh")["accuracy"] == 50.0  # two directions stated: wrong
    de = direction_accuracy(["ein kreis bewegt sich nach links ."], ["ein kreis bewegt sich nach links ."], "de")
    assert de["accuracy"] == 100.0


def test_jieba_word_bleu_beside_character_bleu():
    from mmt_repro.metrics.zh_words import word_bleu
    from mmt_repro.text.zh_segment import jieba_words, join_chars

    assert join_chars("一 个 人 在 跑 步 。") == "一个人在跑步。"
    words = jieba_words("一 个 人 在 跑 步 。").split()
    assert "".join(words) == "一个人在跑步。" and len(words) < 7
    same = word_bleu(["一 个 人 在 跑 步 。"], ["一个人在跑步。"])
    assert same["value"] == pytest.approx(100.0) and same["signature"].endswith("zh-seg:jieba")


class _Decoded(Exception):
    """Raised by the stand-in for the trainer's decode_data, carrying the settings it got."""


@pytest.mark.parametrize("system", ["transformer", "deepfuse", "lstm", "vatex"])
def test_validation_and_test_decoding_share_one_length_bound(monkeypatch, system):
    """The paper names no length bound; the checkpoint kept (validation) and the table's output
    (test) are decoded under the same one: max_len, max_len_a n + max_len_b."""
    from pathlib import Path
    from types import SimpleNamespace

    from mmt_repro.settings import load_paper, make_train_config
    from mmt_repro.train import trainer

    paper = load_paper("deepfuse", Path(__file__).parents[2] / "config" / "papers" / "deepfuse.yaml")
    test = paper.decode_for(system)

    def capture(model, data, settings, device, **_):
        raise _Decoded(settings)

    monkeypatch.setattr(trainer, "decode_data", capture)
    run = SimpleNamespace(cfg=make_train_config(paper.system(system).train), val_data=None, model=None, device="cpu")
    with pytest.raises(_Decoded) as got:
        trainer.validate(run)
    val = got.value.args[0]
    assert (val.max_len, val.max_len_a, val.max_len_b) == (test.max_len, test.max_len_a, test.max_len_b)
