"""BertGen (Mitzalis et al. 2021): the input stream and its layout, the geometric embedding by
hand, sequence unrolling and the multi-task mix, packing (same losses), batched [MASK]-shift
decoding equal to one-by-one, the VL-BERT/M-BERT key tables (every key used, none left over) and
the hybrid initialisation, overfitting, checkpoint round trip. Tiny random configs and a tiny
WordPiece vocabulary; nothing is downloaded."""

from __future__ import annotations

import fnmatch
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from bertgen_toys import WORDS, Regions, wordpiece_vocab
from mmt_repro.checkpoint import load_model, save_checkpoint
from mmt_repro.datasets.batching import ParallelData
from mmt_repro.datasets.bertgen import bucket_width, collate_unrolled
from mmt_repro.datasets.unroll import UnrolledData, unrolled_count
from mmt_repro.datasets.view import training_view
from mmt_repro.text.positions import seq_len_cap
from mmt_repro.decode.loop import decode_data
from mmt_repro.models import Vocabs, build_model
from mmt_repro.models.bertgen import (
    END,
    IGNORE,
    REGION,
    TEXT,
    BertGen,
    BertGenConfig,
    Layout,
    Stream,
    coordinate_embedding,
    layout,
    parameter_count,
    text_ids,
)
from mmt_repro.models.bertgen_convert import MBERT_KEYS, VLBERT_KEYS, load_pretrained, map_keys, vocab_rows
from mmt_repro.settings import DecodeSettings
from mmt_repro.text.vocab import Vocab

TINY = dict(hidden_size=32, num_layers=2, num_heads=4, ffn_size=64, img_dim=6, coord_freqs=4, init="random",
            full_image="mean", max_regions=5, dropout=0.0, attention_dropout=0.0)


@pytest.fixture(scope="module")
def vocab(tmp_path_factory) -> Vocab:
    return wordpiece_vocab(tmp_path_factory.mktemp("wp"))


def corpus(tmp: Path, n: int, seed: int = 0, src: bool = True) -> tuple[Path | None, Path]:
    """Random sentences of 1-6 words; the target copies the source reversed (learnable)."""
    rng = np.random.default_rng(seed)
    s_lines, t_lines = [], []
    for _ in range(n):
        words = [WORDS[i] for i in rng.integers(0, 20, size=rng.integers(1, 7))]
        s_lines.append(" ".join(words))
        t_lines.append(" ".join(reversed(words)))
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / f"src{seed}").write_text("\n".join(s_lines) + "\n")
    (tmp / f"tgt{seed}").write_text("\n".join(t_lines) + "\n")
    return (tmp / f"src{seed}" if src else None), tmp / f"tgt{seed}"


def trained(vocab, data, steps: int, **over) -> BertGen:
    """A tiny model after ``steps`` Adam updates on all of ``data``'s unrolled examples."""
    model = tiny(vocab, **over)
    mix = training_view(model, data)
    batch = mix.collate(np.stack([np.zeros(len(mix), int), np.arange(len(mix))], 1))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        loss = model(batch)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def tiny(vocab, dtype=torch.float32, **over) -> BertGen:
    torch.manual_seed(0)
    model = build_model("bertgen.bertgen", {**TINY, **over}, Vocabs.of(vocab, vocab))
    return model.to(dtype)


# ----------------------------------------------------------------------------- input stream


def test_text_ids_is_lang_cls_source_sep_prefix_mask_sep():
    assert text_ids(7, 1, 2, 3, [10, 11], [20]) == [7, 1, 10, 11, 2, 20, 3, 2]
    assert text_ids(7, 1, 2, 3, None, []) == [7, 1, 2, 3, 2]  # captioning: no source


def test_layout_positions_kinds_and_packing():
    texts = [[5, 1, 9, 2, 3, 2], [5, 1, 2, 3, 2]]
    lay = layout(texts, [4, 3], [0, -1], [3], slots=4, pad_id=0)
    assert lay.kind[0].tolist() == [TEXT] * 6 + [REGION] * 3 + [END]
    assert lay.pos[0].tolist() == [0, 1, 2, 3, 4, 5, 6, 6, 6, 7]  # regions after the text, [END] next
    assert lay.region[0, 6:9].tolist() == [0, 1, 2]
    assert lay.kind[1].tolist()[:6] == [TEXT] * 5 + [END] and lay.pos[1, 5] == 6
    assert (lay.mask_rows.tolist(), lay.mask_cols.tolist()) == ([0, 1], [4, 3])
    packed = layout(texts, [4, 3], [0, -1], [3], slots=4, pad_id=0, pack_len=20)
    assert packed.packed and packed.tokens.shape == (1, 16)
    assert packed.seg[0].tolist() == [1] * 10 + [2] * 6
    assert packed.pos[0, 10:].tolist() == [0, 1, 2, 3, 4, 6]  # the second example restarts at 0
    assert (packed.mask_rows.tolist(), packed.mask_cols.tolist()) == ([0, 0], [4, 13])


def test_coordinate_embedding_by_hand():
    geo = torch.tensor([[0.1, 0.2, 0.5, 0.6, 0.4, 0.4]], dtype=torch.float64)
    emb = coordinate_embedding(geo, 2)
    pos = [30.0, 40.0, 40.0, 40.0]  # centre x, y, width, height in percent
    want = []
    for p in pos:
        angles = [p / 1000 ** (k / 2) for k in range(2)]
        want += [math.sin(a) for a in angles] + [math.cos(a) for a in angles]
    assert emb.shape == (1, 16)
    assert torch.allclose(emb[0], torch.tensor(want, dtype=torch.float64))


def test_regions_get_the_whole_image_as_slot_0_and_text_sees_it(vocab, tmp_path):
    """full_image=mean prepends the mean region with the image's box; text positions add
    LN_text(obj[:, 0]), so changing the image changes every text position's input."""
    model = tiny(vocab)
    src, tgt = corpus(tmp_path, 2)
    store = Regions(2)
    data = ParallelData(src, vocab, tgt, vocab, features=store, langs=("en", "de"))
    batch = data.collate([0, 1])
    img, mask, geo = model.images(batch)
    assert img.shape[1] == 5 and mask[:, 0].all()
    m = batch["img_mask"][0]
    assert torch.allclose(img[0, 0], batch["img"][0][m].mean(0))
    assert geo[0, 0].tolist() == [0, 0, 1, 1, 1, 1]


@pytest.mark.parametrize("over, want", [
    ({}, (0.0, 0.0)),  # VL-BERT's visual_scale_text_init / visual_scale_object_init
    ({"visual_ln_init": 1.0}, (1.0, 1.0)),
    ({"visual_ln_text_init": 0.0, "visual_ln_object_init": 1.0}, (0.0, 1.0)),
    ({"visual_ln_init": 1.0, "visual_ln_text_init": 0.02}, (0.02, 1.0)),
])
def test_visual_layernorm_scales_at_init_are_the_configs(vocab, over, want):
    """The text positions' and the region positions' visual LayerNorms start at the configured
    scales (each apart, or both from visual_ln_init); their biases at 0."""
    model = tiny(vocab, **over)
    for ln, scale in zip((model.visual_ln_text, model.visual_ln_object), want):
        assert torch.equal(ln.weight, torch.full_like(ln.weight, scale))
        assert not ln.bias.any()


def test_text_scale_zero_keeps_the_image_off_text_positions(vocab, tmp_path):
    """visual_ln_text_init 0: at initialisation a text position's embedding does not depend on
    the image (the image enters through the region positions only)."""
    model = tiny(vocab, visual_ln_text_init=0.0, visual_ln_object_init=1.0).eval()
    src, tgt = corpus(tmp_path, 2)
    data = ParallelData(src, vocab, tgt, vocab, features=Regions(2), langs=("en", "de"))
    lay = training_view(model, data).collate(np.array([[0, 0], [0, 1]]))
    lay = Layout.from_batch(lay)
    obj = torch.randn(2, 5, TINY["hidden_size"])
    a, b = model.embed(lay, obj), model.embed(lay, torch.randn_like(obj))
    text, region = lay.kind == TEXT, lay.kind == REGION
    assert torch.equal(a[text], b[text])
    assert not torch.allclose(a[region], b[region])


def test_region_dropout_is_vlberts_by_default_and_configurable(vocab):
    """The regions' [box; RoI] input is dropped at VL-BERT's fixed p = 0.1 unless the config says
    otherwise: at 0 two training-mode passes give the same region vectors, at 0.1 they differ;
    probabilities outside [0, 1) are named."""
    img, geo = torch.randn(3, 5, TINY["img_dim"]), torch.rand(3, 5, 6)
    default = tiny(vocab).train()
    assert default.obj_downsample[0].p == 0.1
    assert not torch.equal(default.regions(img, geo), default.regions(img, geo))
    off = tiny(vocab, region_dropout=0.0).train()
    assert off.obj_downsample[0].p == 0.0
    assert torch.equal(off.regions(img, geo), off.regions(img, geo))
    # the same weights: with p = 0 in training mode the regions equal the default's in eval mode
    assert torch.equal(off.regions(img, geo), default.eval().regions(img, geo))
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match="region_dropout"):
            tiny(vocab, region_dropout=bad)


# ----------------------------------------------------------------------------- unrolling


def test_unrolling_is_lazy_and_gives_n_plus_one_examples_per_sentence(vocab, tmp_path):
    src, tgt = corpus(tmp_path, 50)
    data = ParallelData(src, vocab, tgt, vocab, langs=("en", "de"))
    view = UnrolledData(data)
    lines = tgt.read_text().splitlines()
    assert len(view) == sum(len(x.split()) + 1 for x in lines) == unrolled_count(lines)
    sent, t = view.locate(np.arange(len(view)))
    pairs = list(zip(sent.tolist(), t.tolist()))
    assert pairs == [(i, j) for i, x in enumerate(lines) for j in range(len(x.split()) + 1)]
    assert view.offsets.nbytes == 8 * (len(lines) + 1)  # one integer per sentence, no copy of the text


def test_unrolled_examples_predict_each_target_token_then_stop(vocab, tmp_path):
    src, tgt = corpus(tmp_path, 1)
    data = ParallelData(src, vocab, tgt, vocab, langs=("en", "de"))
    model = tiny(vocab)
    mix = training_view(model, data)
    n = len(data.tgt[0])
    batch = mix.collate(np.stack([np.zeros(n + 1, dtype=int), np.arange(n + 1)], 1))
    assert batch["labels"].tolist() == data.tgt[0] + [vocab.eos_id]
    lay_tok = batch["lay_tokens"]
    for t in range(n + 1):  # example t: the first t target tokens, then [MASK] [SEP]
        row = lay_tok[t][batch["lay_kind"][t] == TEXT].tolist()
        assert row[-(t + 2):] == data.tgt[0][:t] + [vocab.mask_id, vocab.token_to_id("[SEP]")]


def test_multitask_epoch_is_one_pass_over_the_reference_and_other_tasks_continue(vocab, tmp_path):
    s1, t1 = corpus(tmp_path, 30, seed=1)
    s2, t2 = corpus(tmp_path, 7, seed=2)
    _, t3 = corpus(tmp_path, 11, seed=3)
    model = tiny(vocab)
    ref = ParallelData(s1, vocab, t1, vocab, langs=("en", "de"))
    mt = ParallelData(s2, vocab, t2, vocab, langs=("de", "en"))
    cap = ParallelData(None, vocab, t3, vocab, features=Regions(11), langs=(None, "de"))
    mix = training_view(model, ref, {"mt": mt, "ic": cap})
    assert list(mix.counts()) == ["reference", "mt", "ic"]
    e1, e2 = mix.train_batches(4, 1, 1), mix.train_batches(4, 1, 2)
    seen = np.concatenate([b[b[:, 0] == 0, 1] for b in e1])
    assert sorted(seen.tolist()) == list(range(len(mix)))  # every reference example once
    assert all((b[:, 0] == k).sum() >= 1 for b in e1 for k in (0, 1, 2))  # every task in every step
    other = np.concatenate([b[b[:, 0] == 1, 1] for b in list(e1) + list(e2)])
    n_mt = len(mix.tasks[1][1])
    assert len(other) > n_mt and set(other.tolist()) == set(range(n_mt))  # passes continue over epochs
    again = mix.train_batches(4, 1, 2)
    assert all(np.array_equal(a, b) for a, b in zip(e2, again))  # a pure function of (seed, epoch)
    batch = mix.collate(e1[0])
    assert batch["img"] is not None and model(batch)["loss"].isfinite()


# ----------------------------------------------------------------------------- the authors' seq_len cap


def authors_cut(n_text: int, n_regions: int, seq_len: int) -> tuple[int, int]:
    """The truncation of ImperialNLP/BertGen's Multi30kDataset.__getitem__ restated step by
    step: one position at a time, a region while regions outnumber text positions, else a text
    position, until the sum fits (or a side is empty); then at least 2 text positions, 1 region."""
    if n_text + n_regions <= seq_len:
        return n_text, n_regions
    t, b = n_text, n_regions
    while t + b > seq_len and t > 0 and b > 0:
        if b > t:
            b -= 1
        else:
            t -= 1
    return max(t, 2), max(b, 1)


def test_seq_len_cap_is_the_authors_loop_in_closed_form():
    for seq_len in range(1, 41):
        t, b = np.meshgrid(np.arange(1, 37), np.arange(0, 37), indexing="ij")
        got_t, got_b = seq_len_cap(t.ravel(), b.ravel(), seq_len)
        for tt, bb, gt, gb in zip(t.ravel(), b.ravel(), got_t, got_b):
            want = (int(tt), int(bb)) if bb == 0 else authors_cut(int(tt), int(bb), seq_len)
            assert (int(gt), int(gb)) == want, (tt, bb, seq_len)
    # their training runs: 64 positions, 100 regions + the whole image
    assert [tuple(int(v) for v in seq_len_cap(t, 101, 64)) for t in (20, 32, 33, 40, 80)] == [
        (20, 44), (32, 32), (32, 32), (32, 32), (32, 32)]
    assert tuple(int(v) for v in seq_len_cap(20, 11, 64)) == (20, 11)  # fits: untouched
    assert tuple(int(v) for v in seq_len_cap(60, 11, 64)) == (53, 11)  # few regions: only text is cut
    assert tuple(int(v) for v in seq_len_cap(200, 0, 64)) == (200, 0)  # no image (MT): never cut
    assert tuple(int(v) for v in seq_len_cap(40, 101, 0)) == (40, 101)  # 0: off


class _Task:
    """What collate_unrolled reads of a task: language pair, source and target ids."""

    def __init__(self, src, tgt, langs):
        self.src, self.tgt, self.langs = src, tgt, langs


def _collate(vocab, seq_len: int, items, n_regions: list[int]) -> dict:
    """collate_unrolled of ``items`` ``(task, sentence, t, image)``, image ``i`` with
    ``n_regions[i]`` valid slots (the whole image in slot 0: full_image store)."""
    model = tiny(vocab, max_regions=16, full_image="store")
    stream = Stream(model.cls_id, model.sep_id, model.mask_id, vocab.pad_id, vocab.eos_id, model.lang_ids,
                    "store", 16, image_seq_len=seq_len)
    width = max(n_regions)
    mask = np.arange(width)[None] < np.asarray(n_regions)[:, None]
    images = (np.ones((len(n_regions), width, 6), np.float32), mask, np.zeros((len(n_regions), width, 6), np.float32))

    def read(got):
        return [img for *_, img in items], images

    return collate_unrolled(stream, [(d, i, t) for d, i, t, _ in items], read)


def _example(batch: dict, e: int) -> tuple[list[int], int, int]:
    """Example ``e`` (one per row, unpacked): its text ids, its region positions, its label."""
    kind = batch["lay_kind"][e]
    return (batch["lay_tokens"][e][kind == TEXT].tolist(), int((kind == REGION).sum()),
            int(batch["labels"][e]))


def test_seq_len_cap_cuts_regions_then_text_with_its_mask_and_label(vocab):
    """Hand-built examples at a cap of 16 positions (text + regions): a short caption keeps its
    text and loses regions; an MMT example whose text passes 8 keeps its first 7 text positions
    and the final [SEP], without [MASK] or label, beside 8 regions; a short one that fits is
    untouched; an MT example (no image) is never cut. Off (0), every example is as before."""
    w = [vocab.token_to_id(f"w{i}") for i in range(12)]
    cap = _Task(None, [w[:4]], (None, "de"))
    mmt = _Task([w[:6], w[:2]], [w[6:11], w[6:8]], ("en", "de"))
    mt = _Task([w[:10]], [w[:10]], ("en", "de"))
    items = [(cap, 0, 1, 0),   # text 6, 13 regions: 19 > 16, the regions go to 10
             (mmt, 0, 3, 1),   # text 6 + 3 + 5 = 14, 13 regions: text and regions down to 8 each
             (mmt, 1, 1, 2),   # text 2 + 1 + 5 = 8, 8 regions: 16, fits
             (mt, 0, 9, -1)]   # text 24, no image
    on = _collate(vocab, 16, items, [13, 13, 8])
    off = _collate(vocab, 0, items, [13, 13, 8])
    sep, mask = vocab.token_to_id("[SEP]"), vocab.mask_id
    # off: every region and label, the [MASK] before the final [SEP]
    for e, (regions, label) in enumerate([(13, w[1]), (13, w[9]), (8, w[7]), (0, w[9])]):
        text, n_reg, lab = _example(off, e)
        assert (n_reg, lab) == (regions, label) and text[-2:] == [mask, sep]
    # on: the caption keeps its 6 text positions and label, 10 regions (slots 0-9: the first)
    text, n_reg, lab = _example(on, 0)
    assert (text, n_reg, lab) == (_example(off, 0)[0], 10, w[1])
    assert on["lay_region"][0][on["lay_kind"][0] == REGION].tolist() == list(range(10))
    # the MMT example's text is cut to 8: its first 7 positions and the final [SEP]; no [MASK], no label
    text, n_reg, lab = _example(on, 1)
    full_text = _example(off, 1)[0]
    assert len(full_text) == 14 and text == full_text[:7] + [sep] and mask not in text
    assert (n_reg, lab) == (8, IGNORE)
    # the short MMT example and the MT example are untouched
    for e in (2, 3):
        assert _example(on, e) == _example(off, e)
        real = [b["lay_pos"][e][b["lay_kind"][e] != 0] for b in (on, off)]  # rows pad to different widths
        assert torch.equal(*real)


def test_seq_len_cap_off_is_the_layout_of_before(vocab):
    """image_seq_len 0 lays out exactly what the uncapped layout gives (every region of every
    image, the [MASK] before the final [SEP]) and keeps every label."""
    w = [vocab.token_to_id(f"w{i}") for i in range(12)]
    mmt = _Task([w[:6]], [w[6:11]], ("en", "de"))
    items = [(mmt, 0, t, 0) for t in range(6)]
    batch = _collate(vocab, 0, items, [13])
    model = tiny(vocab)
    lang = model.lang_id("de")
    texts = [text_ids(lang, model.cls_id, model.sep_id, model.mask_id, w[:6], w[6:11][:t]) for t in range(6)]
    lay = layout(texts, [len(x) - 2 for x in texts], [0] * 6, [13], 13, vocab.pad_id)
    for key, value in lay.to_batch().items():
        assert value == batch[key] if isinstance(value, bool) else torch.equal(value, batch[key]), key
    assert batch["labels"].tolist() == w[6:11] + [vocab.eos_id]


def test_seq_len_cap_loss_is_the_mean_over_the_labels_left(vocab, tmp_path):
    """With the cap, examples whose [MASK] was cut add nothing: the loss is the mean over the
    other examples' labels and n_tokens counts them; a batch without any label gives 0 and no
    gradient (the authors' mean over no label would be NaN)."""
    src, tgt = corpus(tmp_path, 8, seed=4)
    store = Regions(8, k=12, d=6, seed=2)
    data = ParallelData(src, vocab, tgt, vocab, features=store, langs=("en", "de"))
    model = tiny(vocab, max_regions=13, image_seq_len=14).eval()
    mix = training_view(model, data)
    ids = np.stack([np.zeros(len(mix), int), np.arange(len(mix))], 1)
    batch = mix.collate(ids)
    labels = batch["labels"]
    kept = labels != IGNORE
    assert 0 < int(kept.sum()) < len(labels)  # some cut, some not
    out = model(batch)
    logits = model.predict(model.hidden(Layout.from_batch(batch), model.obj(batch)))
    want = torch.nn.functional.cross_entropy(logits[kept].float(), labels[kept])
    assert torch.allclose(out["loss"], want, atol=1e-6) and int(out["n_tokens"]) == int(kept.sum())
    none = mix.collate(ids[~kept.numpy()])
    assert (none["labels"] == IGNORE).all()
    model.train()
    out = model(none)
    out["loss"].backward()
    assert out["loss"].item() == 0 and int(out["n_tokens"]) == 0
    assert all(p.grad is None or not p.grad.any() for p in model.parameters())


def test_seq_len_cap_turns_the_length_sort_off_for_image_tasks_only(vocab, tmp_path):
    """Capped rows hold about seq_len positions each, and sorting by text length would gather
    the label-less examples into whole batches: with the cap, the image tasks' passes are
    shuffled without the sort (the text-only tasks keep it); off, everything is sorted."""
    src, tgt = corpus(tmp_path, 30, seed=6)
    img = ParallelData(src, vocab, tgt, vocab, features=Regions(30), langs=("en", "de"))
    mt = ParallelData(src, vocab, tgt, vocab, langs=("en", "de"))
    on = training_view(tiny(vocab, image_seq_len=64), img, {"mt": mt})
    off = training_view(tiny(vocab), img, {"mt": mt})
    assert [v.sort_by_length for _, v in on.tasks] == [False, True]
    assert [v.sort_by_length for _, v in off.tasks] == [True, True]
    a, b = on.tasks[0][1].pass_batches(4, 3), off.tasks[0][1].pass_batches(4, 3)
    assert sorted(a.order.tolist()) == sorted(b.order.tolist()) and not np.array_equal(a.order, b.order)
    assert np.array_equal(a.order, np.random.default_rng(3).permutation(len(on.tasks[0][1])))
    assert np.array_equal(on.tasks[1][1].pass_batches(4, 3).order, off.tasks[1][1].pass_batches(4, 3).order)


# ----------------------------------------------------------------------------- packing


def test_packing_gives_the_same_losses(vocab, tmp_path):
    src, tgt = corpus(tmp_path, 12)
    data = ParallelData(src, vocab, tgt, vocab, features=Regions(12), langs=("en", "de"))
    _, tcap = corpus(tmp_path, 12, seed=5)
    cap = ParallelData(None, vocab, tcap, vocab, features=Regions(12, seed=3), langs=(None, "de"))
    plain = tiny(vocab, torch.float64)
    packed = tiny(vocab, torch.float64, pack_len=64)
    packed.load_state_dict(plain.state_dict())
    ids = np.stack([np.r_[np.zeros(30, int), np.ones(20, int)], np.r_[np.arange(30), np.arange(20)]], 1)
    a = training_view(plain, data, {"ic": cap}).collate(ids)
    b = training_view(packed, data, {"ic": cap}).collate(ids)
    assert b["lay_packed"] and b["lay_tokens"].size(0) < a["lay_tokens"].size(0)
    la, lb = plain(a)["loss"], packed(b)["loss"]
    assert torch.allclose(la, lb, atol=1e-10, rtol=0), (la.item(), lb.item())
    ga = torch.autograd.grad(la, plain.word_embeddings.weight)[0]
    gb = torch.autograd.grad(lb, packed.word_embeddings.weight)[0]
    assert torch.allclose(ga, gb, atol=1e-10)


@pytest.mark.parametrize("with_images", [False, True])
def test_padding_and_packing_are_masked_with_and_without_sdpa(vocab, with_images):
    """``use_sdpa`` false (HF's eager attention, which adds its mask to the scores) and true
    (SDPA, a boolean mask): a short example's [MASK] logits are the same alone, padded in a
    batch beside a longer example (more text, more regions) and in a packed row; and the two
    attention paths give the same logits on the same batch."""
    w = [vocab.token_to_id(f"w{i}") for i in range(25)]
    base = tiny(vocab, visual_ln_init=1.0).eval()
    lang = base.lang_id("de")
    a = text_ids(lang, base.cls_id, base.sep_id, base.mask_id, w[:3], w[10:12])
    b = text_ids(lang, base.cls_id, base.sep_id, base.mask_id, w[:15], w[20:25])
    at = [len(a) - 2, len(b) - 2, len(b) - 2]
    n_reg = [2, 5, 5]  # regions of images 0 (a's), 1 and 2 (b's)
    img = [0, 1, 2] if with_images else [-1, -1, -1]
    obj = torch.randn(3, 5, TINY["hidden_size"], generator=torch.Generator().manual_seed(1)) if with_images else None
    size = [len(t) + (n if with_images else 0) + 1 for t, n in zip((a, b), n_reg)]
    lays = {
        "alone": (layout([a], at[:1], img[:1], n_reg[:1], 5, vocab.pad_id), 0, obj[:1] if with_images else None),
        "padded": (layout([a, b], at[:2], img[:2], n_reg[:2], 5, vocab.pad_id), 0, obj[:2] if with_images else None),
        # rows [b, a] and [b] (padded): a shares its row with b
        "packed": (layout([b, a, b], [at[1], at[0], at[2]], [img[1], img[0], img[2]], n_reg, 5,
                          vocab.pad_id, pack_len=sum(size)),
                   1, obj),
    }
    assert lays["padded"][0].kind[0].eq(0).any() and lays["packed"][0].packed
    got = {}
    for sdpa in (False, True):
        model = tiny(vocab, visual_ln_init=1.0, use_sdpa=sdpa).eval()
        model.load_state_dict(base.state_dict())
        with torch.no_grad():
            for name, (lay, e, o) in lays.items():
                got[sdpa, name] = model.predict(model.hidden(lay, o))[e]
        for name in ("padded", "packed"):
            diff = (got[sdpa, name] - got[sdpa, "alone"]).abs().max().item()
            assert diff <= 1e-5, (sdpa, name, diff)
    for name in lays:
        diff = (got[False, name] - got[True, name]).abs().max().item()
        assert diff <= 1e-5, (name, diff)


# ----------------------------------------------------------------------------- shape buckets


def test_bucket_width_is_the_next_bucket_or_the_width_itself():
    assert [bucket_width(w, (8, 16, 32)) for w in (1, 8, 9, 16, 17, 32, 33)] == [8, 8, 16, 16, 32, 32, 33]
    assert bucket_width(5, ()) == 5


@pytest.mark.parametrize("use_sdpa", [True, False])
def test_shape_buckets_give_the_unpadded_loss_and_gradients(vocab, tmp_path, use_sdpa):
    """A step of three tasks (MMT with regions, MT without, captioning), the last batch of a
    pass short (2 of 3 examples of the captioning task): padded to a bucket's width, the step's
    9 rows and 6 images, in fp32, its loss, n_tokens and every parameter's gradient are the
    unpadded step's to float rounding; the padded batch has the fixed shape."""
    src, tgt = corpus(tmp_path, 12)
    data = ParallelData(src, vocab, tgt, vocab, features=Regions(12), langs=("en", "de"))
    msrc, mtgt = corpus(tmp_path, 10, seed=2)
    mt = ParallelData(msrc, vocab, mtgt, vocab, langs=("de", "en"))
    _, tcap = corpus(tmp_path, 12, seed=5)
    cap = ParallelData(None, vocab, tcap, vocab, features=Regions(12, seed=3), langs=(None, "de"))
    # no dropout (its draws follow the tensors' shapes); the visual LayerNorms at 1, so that the
    # regions reach the loss
    over = dict(use_sdpa=use_sdpa, region_dropout=0.0, visual_ln_init=1.0)
    plain, bucketed = tiny(vocab, **over), tiny(vocab, **over)
    bucketed.load_state_dict(plain.state_dict())
    tasks = {"mt": mt, "ic": cap}
    ids = np.array([[0, 3], [0, 17], [0, 40], [1, 5], [1, 2], [1, 30], [2, 7], [2, 44]])
    a = training_view(plain, data, tasks).collate(ids)
    view = training_view(bucketed, data, tasks, shape_buckets=[16, 24, 48], batch_size=3)
    b = view.collate(ids)
    assert a["lay_tokens"].shape[0] == 8 and a["lay_tokens"].shape[1] < 24
    assert b["lay_tokens"].shape == (9, 24) and b["img"].shape[0] == 6 and a["img"].shape[0] < 6
    assert b["labels"].tolist() == [*a["labels"].tolist(), IGNORE] and b["padded"] and "padded" not in a
    out_a, out_b = plain(a), bucketed(b)
    assert int(out_a["n_tokens"]) == int(out_b["n_tokens"]) == 8
    assert torch.allclose(out_a["loss"], out_b["loss"], rtol=0, atol=1e-6), (out_a["loss"], out_b["loss"])
    out_a["loss"].backward()
    out_b["loss"].backward()
    compared = 0
    for (name, pa), pb in zip(plain.named_parameters(), bucketed.parameters()):
        assert pa.grad is not None and pb.grad is not None, name
        assert torch.allclose(pa.grad, pb.grad, rtol=1e-5, atol=1e-6), (name, (pa.grad - pb.grad).abs().max())
        compared += pa.grad.abs().sum().item() > 0
    assert compared >= len(list(plain.parameters())) - 2  # every gradient but [END]'s and at most one more is not 0


def test_bucketed_step_traces_as_one_graph_per_shape(vocab, tmp_path):
    """The trainer's compiled step on a CPU (TorchDynamo and AOTAutograd, the ``aot_eager``
    backend in place of Inductor's CUDA graphs): the padded step traces whole (``fullgraph``),
    a batch of a bucket already seen reuses its graph, a new bucket adds one, and loss and gradients are
    the eager step's."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    from mmt_repro.train.graphs import compiled_step

    src, tgt = corpus(tmp_path, 12)
    data = ParallelData(src, vocab, tgt, vocab, features=Regions(12), langs=("en", "de"))
    msrc, mtgt = corpus(tmp_path, 10, seed=2)
    mt = ParallelData(msrc, vocab, mtgt, vocab, langs=("de", "en"))
    model = tiny(vocab, region_dropout=0.0, visual_ln_init=1.0)
    view = training_view(model, data, {"mt": mt}, shape_buckets=[16, 20, 24, 48], batch_size=3)
    torch._dynamo.reset()
    counters.clear()
    step = compiled_step(model, 4, backend="aot_eager")
    assert torch._dynamo.config.recompile_limit >= 8
    steps = [[[0, 3], [0, 17], [0, 40], [1, 5], [1, 2], [1, 30]], [[0, 1], [0, 2], [0, 4], [1, 0], [1, 1], [1, 3]],
             [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]]
    widths = []
    for ids in steps:
        batch = view.collate(np.array(ids))
        widths.append(batch["lay_tokens"].size(1))
        model.zero_grad()
        eager = model(batch)
        eager["loss"].backward()
        want = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        got = step(batch)
        got["loss"].backward()
        assert torch.allclose(got["loss"], eager["loss"], rtol=0, atol=1e-6)
        assert all(torch.allclose(p.grad, w, rtol=1e-5, atol=1e-6) for p, w in zip(model.parameters(), want))
    assert widths == [20, 24, 20]  # raw widths 20, 21, 19
    assert counters["stats"]["unique_graphs"] == 2 and not counters["graph_break"]
    torch._dynamo.reset()


def test_shape_buckets_refuse_packed_rows_and_a_model_of_pairs(vocab, tmp_path):
    src, tgt = corpus(tmp_path, 4)
    data = ParallelData(src, vocab, tgt, vocab, langs=("en", "de"))
    with pytest.raises(ValueError, match="set pack_len 0"):
        training_view(tiny(vocab, pack_len=32), data, shape_buckets=[16], batch_size=1)


# ----------------------------------------------------------------------------- decoding


@pytest.mark.parametrize("with_images", [False, True])
def test_batched_decoding_equals_one_by_one(vocab, tmp_path, with_images):
    src, tgt = corpus(tmp_path, 13, seed=4)
    store = Regions(13) if with_images else None
    data = ParallelData(src, vocab, tgt, vocab, features=store, langs=("en", "de"))
    model = trained(vocab, data, steps=25).double().eval()  # stops after some words: hypotheses of many lengths
    settings = DecodeSettings(beam_size=1, max_len=12, max_len_a=0, batch_size=1)
    one = decode_data(model, data, settings, torch.device("cpu"))
    many = decode_data(model, data, DecodeSettings(beam_size=1, max_len=12, max_len_a=0, batch_size=8),
                       torch.device("cpu"))
    assert one.hyps == many.hyps and one.cut == many.cut
    assert len({len(h) for h in one.hyps}) > 1  # sentences of different lengths in one batch


def test_search_matches_a_step_by_step_argmax_over_the_model(vocab, tmp_path):
    """Greedy by hand: at each step the argmax of the [MASK] slot's logits goes into the stream."""
    src, tgt = corpus(tmp_path, 1, seed=6)
    data = ParallelData(src, vocab, tgt, vocab, langs=("en", "de"))
    model = tiny(vocab, torch.float64).eval()
    hyp = decode_data(model, data, DecodeSettings(beam_size=1, max_len=6, max_len_a=0), torch.device("cpu")).hyps[0]
    prefix = []
    forbid = model.never_emitted()
    for _ in range(6):
        text = text_ids(model.lang_id("de"), model.cls_id, model.sep_id, model.mask_id, data.src[0], prefix)
        lay = layout([text], [len(text) - 2], [-1], [], 1, vocab.pad_id)
        logits = model.predict(model.hidden(lay, None))[0]
        logits[forbid] = -math.inf
        y = int(logits.argmax())
        if y == vocab.eos_id:
            break
        prefix.append(y)
    assert hyp == prefix


def test_captioning_decodes_from_images_alone(vocab, tmp_path):
    store = Regions(5)
    data = ParallelData(None, vocab, features=store, langs=(None, "de"))
    model = tiny(vocab).eval()
    out = decode_data(model, data, DecodeSettings(beam_size=1, max_len=5, max_len_a=0), torch.device("cpu"))
    assert len(out.hyps) == 5


# ----------------------------------------------------------------------------- learning, checkpoints


def test_loss_falls_when_overfitting(vocab, tmp_path):
    src, tgt = corpus(tmp_path, 6, seed=7)
    data = ParallelData(src, vocab, tgt, vocab, features=Regions(6), langs=("en", "de"))
    first = trained(vocab, data, steps=0)
    mix = training_view(first, data)
    batch = mix.collate(np.stack([np.zeros(len(mix), int), np.arange(len(mix))], 1))
    model = trained(vocab, data, steps=150)
    before, after = first(batch)["loss"].item(), model(batch)["loss"].item()
    assert after < 0.05 * before, (before, after)
    model.eval()
    hyps = decode_data(model, data, DecodeSettings(beam_size=1, max_len=10, max_len_a=0), torch.device("cpu")).hyps
    assert hyps == data.tgt


def test_checkpoint_round_trip_gives_identical_logits(vocab, tmp_path):
    src, tgt = corpus(tmp_path, 3)
    data = ParallelData(src, vocab, tgt, vocab, features=Regions(3), langs=("en", "de"))
    model = tiny(vocab).eval()
    path = save_checkpoint(tmp_path / "m.pt", model, {"src": None, "tgt": vocab.fingerprint()})
    again, _ = load_model(path)
    assert again.vocabs.tgt.reserved == model.vocabs.tgt.reserved
    mix = training_view(model, data)
    batch = mix.collate(np.stack([np.zeros(len(mix), int), np.arange(len(mix))], 1))
    with torch.no_grad():
        a = model.predict(model.hidden(Layout.from_batch(batch), model.obj(batch)))
        b = again.predict(again.hidden(Layout.from_batch(batch), again.obj(batch)))
    assert torch.equal(a, b)


def test_unknown_language_and_missing_reserved_tokens_are_named(vocab, tmp_path):
    model = tiny(vocab)
    with pytest.raises(ValueError, match="no language specifier for 'xx'"):
        model.lang_id("xx")
    plain = Vocab(WORDS)
    with pytest.raises(ValueError, match=r"lacks \['\[CLS\]', '\[SEP\]', '\[MASK\]'\]"):
        build_model("bertgen.bertgen", TINY, Vocabs.of(plain, plain))
    with pytest.raises(ValueError, match=r"unknown model config \(bertgen.bertgen\) key\(s\) \[.hidden.\]"):
        build_model("bertgen.bertgen", {"hidden": 3}, Vocabs.of(vocab, vocab))


# ----------------------------------------------------------------------------- pre-trained weights


def vlbert_state(h=768, inter=3072, layers=12, vocab=30522, device="meta") -> dict:
    """The keys and shapes of VL-BERT base's pre-training checkpoint (vl-bert-base-prec.model,
    ``state_dict`` as saved by DataParallel: ``module.`` prefix; ResNetVLBERTForPretrainingMultitask
    with pre-computed features, MLM and masked-region heads, no pooler)."""
    t = lambda *s: torch.empty(*s, device=device)  # noqa: E731
    sd = {
        "module.image_feature_extractor.obj_downsample.1.weight": t(h, 4096),
        "module.image_feature_extractor.obj_downsample.1.bias": t(h),
        "module.object_linguistic_embeddings.weight": t(1, h),
        "module.object_mask_visual_embedding.weight": t(1, 2048),
        "module.object_mask_word_embedding.weight": t(1, h),
        "module.aux_text_visual_embedding.weight": t(1, h),
        "module.vlbert.word_embeddings.weight": t(vocab, h),
        "module.vlbert.end_embedding.weight": t(1, h),
        "module.vlbert.position_embeddings.weight": t(512, h),
        "module.vlbert.token_type_embeddings.weight": t(3, h),
        "module.vlbert.embedding_LayerNorm.weight": t(h),
        "module.vlbert.embedding_LayerNorm.bias": t(h),
        "module.vlbert.visual_ln_text.weight": t(h),
        "module.vlbert.visual_ln_text.bias": t(h),
        "module.vlbert.visual_ln_object.weight": t(h),
        "module.vlbert.visual_ln_object.bias": t(h),
        "module.vlbert.mlm_head.predictions.bias": t(vocab),
        "module.vlbert.mlm_head.predictions.transform.dense.weight": t(h, h),
        "module.vlbert.mlm_head.predictions.transform.dense.bias": t(h),
        "module.vlbert.mlm_head.predictions.transform.LayerNorm.weight": t(h),
        "module.vlbert.mlm_head.predictions.transform.LayerNorm.bias": t(h),
        "module.vlbert.mlm_head.predictions.decoder.weight": t(vocab, h),
        "module.vlbert.mvrc_head.transform.dense.weight": t(h, h),
        "module.vlbert.mvrc_head.transform.dense.bias": t(h),
        "module.vlbert.mvrc_head.region_cls_pred.weight": t(1601, h),
        "module.vlbert.mvrc_head.region_cls_pred.bias": t(1601),
    }
    sd.update(encoder_state("module.vlbert.encoder", h, inter, layers, t))
    return sd


def encoder_state(prefix, h, inter, layers, t) -> dict:
    sd = {}
    for i in range(layers):
        p = f"{prefix}.layer.{i}"
        for name in ("query", "key", "value"):
            sd[f"{p}.attention.self.{name}.weight"], sd[f"{p}.attention.self.{name}.bias"] = t(h, h), t(h)
        sd[f"{p}.attention.output.dense.weight"], sd[f"{p}.attention.output.dense.bias"] = t(h, h), t(h)
        sd[f"{p}.attention.output.LayerNorm.weight"], sd[f"{p}.attention.output.LayerNorm.bias"] = t(h), t(h)
        sd[f"{p}.intermediate.dense.weight"], sd[f"{p}.intermediate.dense.bias"] = t(inter, h), t(inter)
        sd[f"{p}.output.dense.weight"], sd[f"{p}.output.dense.bias"] = t(h, inter), t(h)
        sd[f"{p}.output.LayerNorm.weight"], sd[f"{p}.output.LayerNorm.bias"] = t(h), t(h)
    return sd


def mbert_state(h=768, inter=3072, layers=12, vocab=119547, device="meta", gamma=False) -> dict:
    """The keys and shapes of Hugging Face's bert-base-multilingual-cased (BertForPreTraining)."""
    t = lambda *s: torch.empty(*s, device=device)  # noqa: E731
    w, b = ("gamma", "beta") if gamma else ("weight", "bias")
    sd = {
        "bert.embeddings.word_embeddings.weight": t(vocab, h),
        "bert.embeddings.position_embeddings.weight": t(512, h),
        "bert.embeddings.token_type_embeddings.weight": t(2, h),
        f"bert.embeddings.LayerNorm.{w}": t(h),
        f"bert.embeddings.LayerNorm.{b}": t(h),
        "bert.pooler.dense.weight": t(h, h),
        "bert.pooler.dense.bias": t(h),
        "cls.predictions.bias": t(vocab),
        "cls.predictions.transform.dense.weight": t(h, h),
        "cls.predictions.transform.dense.bias": t(h),
        f"cls.predictions.transform.LayerNorm.{w}": t(h),
        f"cls.predictions.transform.LayerNorm.{b}": t(h),
        "cls.predictions.decoder.weight": t(vocab, h),
        "cls.seq_relationship.weight": t(2, h),
        "cls.seq_relationship.bias": t(2),
    }
    sd.update(encoder_state("bert.encoder", h, inter, layers, t))
    return sd


def full_size_vocabs() -> Vocabs:
    from mmt_repro.models.base import Specials, VocabSpec

    reserved = {"[PAD]": 4, "[STOP]": 5, "[TO_EN]": 20, "[TO_DE]": 21, "[TO_FR]": 22, "[TO_TU]": 24, "[UNK]": 104,
                "[CLS]": 105, "[SEP]": 106, "[MASK]": 107}
    spec = VocabSpec(119547 + 4, Specials(mask=107), reserved)
    return Vocabs(spec, spec)


def test_key_tables_cover_every_vlbert_and_mbert_key_at_full_size():
    """At BertGen's real sizes (meta tensors: no memory): every VL-BERT and M-BERT key matches
    one table entry, every entry matches a key, each mapped key lands on a parameter of ours of
    the same shape, and the hybrid initialisation sets every parameter of ours exactly once."""
    with torch.device("meta"):
        model = BertGen(BertGenConfig(init="random"), full_size_vocabs())
    own = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    vl, mb = vlbert_state(), mbert_state()
    for state, table in ((vl, VLBERT_KEYS), (mb, MBERT_KEYS)):
        mapped = map_keys(state, table)
        assert set(mapped) == set(state)  # every key used
        used = {pat for pat, *_ in table if any(fnmatch.fnmatchcase(k.removeprefix("module."), pat) for k in state)}
        optional = {"vlbert.relationsip_head.*", "vlbert.pooler.*", "bert.embeddings.position_ids",
                    "cls.predictions.decoder.bias"}  # absent from these releases
        assert {pat for pat, *_ in table} - used <= optional  # no entry left over
        for theirs, (ours, src) in mapped.items():
            if ours is not None:
                want = own[ours]
                have = tuple(state[theirs].shape)
                assert have == want or (src == "rows" and have[1:] == want[1:]), (theirs, ours, have, want)
    hybrid = [o for o, s in map_keys(vl, VLBERT_KEYS).values() if o and s in ("visual", "vlbert")]
    hybrid += [o for o, s in map_keys(mb, MBERT_KEYS).values() if o]
    assert sorted(hybrid) == sorted(own)  # every parameter once, none twice
    assert abs(parameter_count(model) / 1e6 - 89.3) < 0.2  # "~89.3M parameters excluding the word embeddings"


def test_unmatched_key_is_named():
    with pytest.raises(KeyError, match="vlbert.something_new"):
        map_keys({"module.vlbert.something_new": torch.zeros(1)}, VLBERT_KEYS)


def test_hybrid_initialisation_loads_vlbert_and_mbert_values(vocab, tmp_path):
    """Tiny synthetic checkpoints with the real key names: VL-BERT's visual parts, position and
    token types; M-BERT's word rows (our four specials from [PAD] [CLS] [STOP] [UNK]),
    LayerNorm, Transformer and MLM head."""
    h, inter, layers = TINY["hidden_size"], TINY["ffn_size"], TINY["num_layers"]
    n_rows = len(vocab) - 4
    g = torch.Generator().manual_seed(0)

    def rand(state):
        return {k: torch.randn(v.shape, generator=g) for k, v in state.items()}

    vl = rand(vlbert_state(h, inter, layers, vocab=30, device="cpu"))
    vl["module.image_feature_extractor.obj_downsample.1.weight"] = torch.randn(h, 8 * TINY["coord_freqs"] + TINY["img_dim"])
    vl["module.vlbert.position_embeddings.weight"] = torch.randn(512, h)
    mb = rand(mbert_state(h, inter, layers, vocab=n_rows, device="cpu", gamma=True))
    torch.save({"state_dict": vl, "epoch": 19}, tmp_path / "vl.model")
    torch.save(mb, tmp_path / "mbert.bin")
    res = {"vl_bert": tmp_path / "vl.model", "mbert": tmp_path / "mbert.bin"}
    model = build_model("bertgen.bertgen", {**TINY, "init": "hybrid"}, Vocabs.of(vocab, vocab), res)
    sd = model.state_dict()
    assert torch.equal(sd["obj_downsample.1.weight"], vl["module.image_feature_extractor.obj_downsample.1.weight"])
    assert torch.equal(sd["position_embeddings.weight"], vl["module.vlbert.position_embeddings.weight"])
    assert torch.equal(sd["encoder.layer.1.output.dense.weight"], mb["bert.encoder.layer.1.output.dense.weight"])
    assert torch.equal(sd["embedding_LayerNorm.weight"], mb["bert.embeddings.LayerNorm.gamma"])
    words = mb["bert.embeddings.word_embeddings.weight"]
    assert torch.equal(sd["word_embeddings.weight"][4:], words)
    for ours, theirs in ((vocab.pad_id, "[PAD]"), (vocab.bos_id, "[CLS]"), (vocab.eos_id, "[STOP]"), (vocab.unk_id, "[UNK]")):
        assert torch.equal(sd["word_embeddings.weight"][ours], words[vocab.token_to_id(theirs) - 4])
    assert torch.equal(sd["mlm_bias"][4:], mb["cls.predictions.bias"])
    assert len(model.pretrained) == len(sd)
    visual = build_model("bertgen.bertgen", {**TINY, "init": "visual"}, Vocabs.of(vocab, vocab), res)
    vs = visual.state_dict()
    assert torch.equal(vs["visual_ln_text.weight"], vl["module.vlbert.visual_ln_text.weight"])
    assert not torch.equal(vs["position_embeddings.weight"], sd["position_embeddings.weight"])
    assert not torch.equal(vs["encoder.layer.0.output.dense.weight"], sd["encoder.layer.0.output.dense.weight"])


def test_vocab_rows_needs_the_same_vocab_txt(vocab):
    with pytest.raises(ValueError, match="build the vocabulary from the same vocab.txt"):
        vocab_rows(Vocabs.of(vocab, vocab), len(vocab))


def test_fairseq_baseline_has_the_papers_size():
    """transformer_iwslt_de_en as configured: "~31.5M parameters excluding the word embeddings"."""
    import yaml

    cfg = yaml.safe_load((Path(__file__).resolve().parents[2] / "config/papers/bertgen.yaml").read_text())
    model = build_model("transformer.nmt", cfg["systems"]["fairseq"]["model_config"], Vocabs.sizes(10, 10))
    without_embeddings = sum(p.numel() for n, p in model.named_parameters() if not n.endswith("tokens.weight"))
    assert abs(without_embeddings / 1e6 - 31.5) < 0.1, without_embeddings


def test_shorter_epochs_stream_the_reference_task_too(vocab, tmp_path):
    src, tgt = corpus(tmp_path, 20, seed=8)
    data = ParallelData(src, vocab, tgt, vocab, langs=("en", "de"))
    mix = training_view(tiny(vocab, epoch_examples=16), data)
    epochs = [mix.train_batches(4, 1, e) for e in (1, 2, 3)]
    assert [len(e) for e in epochs] == [4, 4, 4]
    seen = np.concatenate([b[:, 1] for e in epochs for b in e])
    full = np.concatenate([b[:, 1] for e in [mix.train_batches(4, 1, 1)] for b in e])
    assert len(seen) == 48 and len(set(full.tolist())) == 16  # a stream, not the same 16 examples again
    assert len(set(seen.tolist())) > 16


def test_hybrid_initialisation_from_the_standin_checkpoints(standin):
    """The stand-in VL-BERT and M-BERT checkpoints (mmt_repro.standins: every real key name,
    hidden size shrunk to 16, the 12 layers kept) and BertGen's stand-in vocab.txt, fetched from a
    stand-in mirror: the key tables map every key, the vocabulary gives M-BERT's rows, and the
    hybrid initialisation sets every parameter of ours once (the path of the released files)."""
    from mmt_repro.models.bertgen_convert import read_state_dict
    from mmt_repro.standins.media_inputs import SHRUNK
    from mmt_repro.text.wordpiece import load_wordpiece

    vl = standin("vl_bert_base")["files"]["vl-bert-base-prec.model"]
    # the manual-only VL-BERT file came from the mirror: the stand-in manifest gives it a mirror_dir
    assert standin("vl_bert_base")["manifest"]["vl_bert_base"].mirror_dir == "vl-bert"
    mb = standin("mbert_weights")["files"]["model.safetensors"]
    vocab_txt = standin("bertgen_vocab")["files"]["vocab.txt"]
    assert standin("mbert_vocab")["files"]["vocab.txt"].read_text(encoding="utf-8").count("\n") == \
        vocab_txt.read_text(encoding="utf-8").count("\n")  # the same WordPiece count, BertGen's renamed
    vocab = Vocab.from_wordpiece(vocab_txt)
    tok = load_wordpiece(vocab_txt)
    assert tok.convert_tokens_to_ids(["[PAD]", "[STOP]", "[TO_DE]", "[UNK]", "[CLS]"]) == [0, 1, 17, 100, 101]
    state = read_state_dict(mb)
    assert len(state) == 207 and state["bert.embeddings.word_embeddings.weight"].shape == (len(vocab) - 4, 16)
    h = SHRUNK["hidden"]
    cfg = {**TINY, "hidden_size": h, "ffn_size": SHRUNK["ffn"], "num_layers": SHRUNK["layers"], "num_heads": 4,
           "img_dim": 2048, "coord_freqs": 256, "init": "hybrid"}
    model = build_model("bertgen.bertgen", cfg, Vocabs.of(vocab, vocab), {"vl_bert": vl, "mbert": mb})
    sd = model.state_dict()
    vl_state = read_state_dict(vl)
    assert torch.equal(sd["obj_downsample.1.weight"], vl_state["module.image_feature_extractor.obj_downsample.1.weight"])
    assert torch.equal(sd["encoder.layer.11.output.dense.weight"], state["bert.encoder.layer.11.output.dense.weight"])
    # our id 4 + i is row i of vocab.txt; our <pad> <bos> <eos> <unk> take [PAD] [CLS] [STOP] [UNK]
    words = state["bert.embeddings.word_embeddings.weight"]
    assert torch.equal(sd["word_embeddings.weight"][4 + 200], words[200])
    assert torch.equal(sd["word_embeddings.weight"][:4], words[[0, 101, 1, 100]])
