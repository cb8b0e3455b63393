"""Blank images (mmt_repro.datasets.blank), the image-use probes' conditions blank_zero and
blank_mean, on every feature layout the five models read: a grid (Calixto et al.), a pooled
vector (Hirasawa et al.), regions with boxes and masks (Yang et al., BertGen) and video segments
(DeepFuse); values chosen exact in float16, so the averages are exact too."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mmt_repro.datasets.batching import ParallelData, derangement
from mmt_repro.datasets.blank import BlankImages, BlankRegions, average_image, blank_images
from mmt_repro.features.store import box_geometry, open_features, write_index


def _store(folder, name, array, lengths=None, key="image", boxes=None, sizes=None):
    """A store written as the extractors write it: float16 npy, parquet index (+ boxes)."""
    folder.mkdir(parents=True, exist_ok=True)
    npy, index = folder / f"{name}.npy", folder / f"{name}.index.parquet"
    np.save(npy, array.astype(np.float16))
    columns = {}
    if lengths is not None:
        columns["n_boxes" if boxes is not None else "n_segments"] = np.asarray(lengths)
    if boxes is not None:
        np.save(folder / f"{name}.boxes.npy", boxes.astype(np.float32))
        columns["width"], columns["height"] = sizes
    names = [f"{k}.{'mp4' if key == 'video' else 'jpg'}" for k in range(len(array))]
    write_index(index, names, {"shape": list(array.shape)}, key=key, columns=columns)
    return open_features(npy, index)


def _padded(values, lengths):
    """(N, L, D) with rows' slots past their length zero, as the region and video writers pad."""
    out = np.asarray(values, dtype=np.float32).copy()
    for i, n in enumerate(lengths):
        out[i, n:] = 0.0
    return out


def test_a_grid_blanks_to_zeros_or_the_per_cell_mean_of_the_training_split(tmp_path):
    train = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 3, 2) / 4  # quarters: exact in float16
    test = -np.ones((2, 3, 2), dtype=np.float32)
    train_store = _store(tmp_path, "train", train)
    test_store = _store(tmp_path, "test", test)

    zero = blank_images(test_store, "zero")
    img, mask = zero.batch([1, 0])
    assert type(zero) is BlankImages and img.shape == (2, 3, 2) and img.dtype == np.float32
    assert not img.any() and mask.all()  # every cell zero, every cell kept

    mean = blank_images(test_store, "mean", train_store)
    img, mask = mean.batch([0, 1, 1])
    np.testing.assert_array_equal(img[0], train.mean(axis=0))  # (0+6+12+18)/4/4 = 2.25 in cell 0, dim 0
    assert img[0, 0, 0] == 2.25 and (img == img[0]).all() and mask.all()
    assert len(mean) == 2 and mean.shape == (2, 3, 2)  # the test split's rows, as the decoder checks


def test_a_pooled_vector_blanks_as_a_one_slot_grid(tmp_path):
    train = np.array([[[1.0, 2.0, 0.5, -1.0]], [[3.0, 0.0, 0.5, 1.0]]])  # (N, 1, D): Hirasawa et al.'s pool5
    mean = blank_images(_store(tmp_path, "test", train[:1]), "mean", _store(tmp_path, "train", train))
    img, mask = mean.batch([0])
    np.testing.assert_array_equal(img, [[[2.0, 1.0, 0.5, 0.0]]])
    assert mask.tolist() == [[True]]
    img, mask = blank_images(_store(tmp_path, "test", train[:1]), "zero").batch([0])
    np.testing.assert_array_equal(img, np.zeros((1, 1, 4)))
    assert mask.tolist() == [[True]]


def _regions(tmp_path, name, values, lengths):
    n, k = values.shape[:2]
    rng = np.random.default_rng(len(name))
    x1 = rng.integers(0, 40, (n, k, 1)).astype(np.float32)
    y1 = rng.integers(0, 20, (n, k, 1)).astype(np.float32)
    boxes = np.concatenate([x1, y1, x1 + 16, y1 + 8], axis=-1)
    for i, m in enumerate(lengths):
        boxes[i, m:] = 0.0
    sizes = (np.full(n, 64), np.full(n, 32))
    return _store(tmp_path, name, _padded(values, lengths), lengths, boxes=boxes, sizes=sizes), boxes


def test_regions_keep_their_masks_and_boxes_under_zero_and_become_the_average_image_under_mean(tmp_path):
    # four training images with 1, 2, 3 and 2 regions (L = 3): slot 0 filled 4 times, slot 1 3 times,
    # slot 2 once; the average image keeps the slots at least half the images fill (0 and 1)
    values = np.stack([np.full((3, 2), v, dtype=np.float32) for v in (1.0, 2.0, 3.0, 6.0)])
    values[:, 1] += 0.5
    lengths = [1, 2, 3, 2]
    train_store, train_boxes = _regions(tmp_path, "train", values, lengths)
    test_store, test_boxes = _regions(tmp_path, "test", values[:2] * 0 + 7.0, [2, 1])

    zero = blank_images(test_store, "zero")
    assert type(zero) is BlankRegions
    img, mask = zero.batch([0, 1])
    assert not img.any() and mask.tolist() == [[True, True, False], [True, False, False]]  # box counts kept
    geometry = zero.geometries([0, 1])
    np.testing.assert_array_equal(geometry, test_store.geometries([0, 1]))  # the images' own boxes
    assert geometry[0, 0, 2] == pytest.approx((test_boxes[0, 0, 2]) / 64)

    mean = blank_images(test_store, "mean", train_store)
    img, mask = mean.batch([0, 1])
    assert mask.tolist() == [[True, True, False]] * 2  # the same average image for both sentences
    # slot 0: the mean of 1, 2, 3, 6; slot 1: of 2.5, 3.5, 6.5 (the images with a second region); slot 2 dropped
    np.testing.assert_array_equal(img[0], np.float32([[3.0, 3.0], [12.5 / 3, 12.5 / 3], [0.0, 0.0]]))
    np.testing.assert_array_equal(img[1], img[0])
    geometry = mean.geometries([0, 1])
    g = box_geometry(train_boxes, np.full(4, 64), np.full(4, 32))
    np.testing.assert_allclose(geometry[1, 0], g[:, 0].mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(geometry[1, 1], g[[1, 2, 3], 1].mean(axis=0), rtol=1e-6)
    assert not geometry[:, 2].any()


def test_video_segments_blank_with_their_segment_masks(tmp_path):
    values = np.stack([np.full((2, 3), v, dtype=np.float32) for v in (2.0, 4.0, 8.0)])
    train = _store(tmp_path, "train", _padded(values, [2, 1, 2]), [2, 1, 2], key="video")
    test = _store(tmp_path, "test", _padded(values[:1] + 1, [1]), [1], key="video")
    img, mask = blank_images(test, "zero").batch([0])
    assert not img.any() and mask.tolist() == [[True, False]]
    average = average_image(train)
    assert average.mask.tolist() == [True, True] and average.rows == 3 and average.geometry is None
    np.testing.assert_array_equal(average.features, np.float32([[14 / 3] * 3, [5.0] * 3]))  # slot 1: (2 + 8) / 2


def test_the_decoders_batches_carry_the_blank_images(tmp_path):
    """ParallelData (the decode path) reads a blank store as any other: img, img_mask and the
    region geometry the models read, in the test split's row order, shuffled or not."""
    values = np.stack([np.full((3, 2), v, dtype=np.float32) for v in (1.0, 2.0, 3.0, 6.0)])
    store, _ = _regions(tmp_path, "train", values, [1, 2, 3, 2])
    data = ParallelData(None, None, features=blank_images(store, "mean", store))
    batch = data.collate([0, 3])
    assert tuple(batch["img"].shape) == (2, 3, 2) and batch["img_mask"].tolist() == [[True, True, False]] * 2
    assert tuple(batch["img_geometry"].shape) == (2, 3, 6)
    # one image for every sentence: features, mask and boxes (the images' own differ)
    assert (batch["img"][0] == batch["img"][1]).all() and (batch["img_geometry"][0] == batch["img_geometry"][1]).all()
    own = ParallelData(None, None, features=store).collate([0, 3])
    assert not (own["img_geometry"][0] == own["img_geometry"][1]).all() and not (own["img"][0] == own["img"][1]).all()
    data = ParallelData(None, None, features=blank_images(store, "zero"), shuffle_images_seed=1234)
    assert data.image_rows.tolist() == derangement(4, 1234).tolist()
    batch = data.collate([0, 1, 2, 3])
    assert not batch["img"].any()
    assert batch["img_mask"].sum(1).tolist() == [[1, 2, 3, 2][r] for r in derangement(4, 1234)]


def test_a_mean_blank_needs_the_training_store_of_the_same_feature_set(tmp_path):
    test = _store(tmp_path, "test", np.ones((2, 3, 2)))
    with pytest.raises(ValueError, match="training split"):
        blank_images(test, "mean")
    with pytest.raises(ValueError, match="same feature set"):
        blank_images(test, "mean", _store(tmp_path, "other", np.ones((2, 4, 2))))
    with pytest.raises(ValueError, match="unknown mode"):
        blank_images(test, "grey")


def test_translate_with_blank_images_loses_what_only_the_image_says(toy_corpus, tmp_path):
    """The toy task's colour is read off the image alone: decoded with blank images (zeros, or
    the training split's average image) the model no longer knows it."""
    from mmt_repro.decode.translate import translate
    from mmt_repro.io import read_lines
    from mmt_repro.train.trainer import train
    from training_jobs import corpus_inputs, train_job, write_store

    d = toy_corpus["dir"]
    model = dict(emb_dim=16, enc_dim=16, dec_dim=24, att_dim=16, img_dim=4, img_att_dim=8, dropout_enc=0.0,
                 dropout_dec=0.0, dropout_out=0.0, dropout_img=0.0, init_std=0.1)
    train(train_job(tmp_path, "doubly_attentive.nmt_src_img", model,
                    dict(optimizer="adam", lr=0.02, batch_size=8, max_epochs=12, patience=50, log_every=0, seed=7),
                    corpus_inputs(d, toy_corpus["stores"])))
    val_npy, val_index = write_store(tmp_path, "val", np.asarray(toy_corpus["val_features"].arr))
    train_npy, train_index = toy_corpus["stores"]["train"]
    refs = [r.split()[-1] for r in read_lines(d / "val.tgt")]
    colours = {}
    for blank in (None, "zero", "mean"):
        out = tmp_path / f"{blank}.txt"
        info = translate(checkpoint=tmp_path / "best.pt", src=d / "val.src", out=out, src_vocab=d / "src.json",
                         tgt_vocab=d / "tgt.json", features_npy=val_npy, features_index=val_index,
                         decode={"beam_size": 1, "max_len": 20}, device="cpu", blank=blank,
                         mean_npy=train_npy, mean_index=train_index, stats_out=tmp_path / f"{blank}.json")
        colours[blank] = sum(h.split()[-1] == r for h, r in zip(read_lines(out), refs))
        assert info.get("blank_images") == blank
        assert json.loads((tmp_path / f"{blank}.json").read_text()).get("blank_images") == blank
    majority = max(refs.count("red"), refs.count("blue"))
    assert colours[None] >= 14, colours  # 16 sentences: the congruent image gives the colour
    assert colours["zero"] <= majority and colours["mean"] <= majority, (colours, majority)


class _Memory:
    """An in-memory store of ``n`` images (regions with boxes when ``boxes``): real slots differ
    from image to image in number, features and boxes."""

    def __init__(self, n=4, k=3, d=6, boxes=True, seed=0):
        rng = np.random.default_rng(seed)
        self.lengths = np.array([1, 3, 2, 3][:n])
        self.arr = rng.normal(size=(n, k, d)).astype(np.float32)
        corner = rng.uniform(0, 0.5, size=(n, k, 2)).astype(np.float32)
        self.geo = np.concatenate([corner, corner + 0.25, np.full((n, k, 2), 0.25, np.float32)], -1)
        for r, m in enumerate(self.lengths):
            self.arr[r, m:], self.geo[r, m:] = 0.0, 0.0
        self.shape = self.arr.shape
        if boxes:
            self.geometry = lambda row: self.geo[row]

    def __len__(self):
        return len(self.arr)

    def batch(self, rows):
        return self.arr[rows], np.arange(self.arr.shape[1])[None] < self.lengths[rows][:, None]


def _wordpiece(tmp_path):
    from mmt_repro.text.vocab import Vocab
    from mmt_repro.text.wordpiece import LEARNED_SPECIALS

    path = tmp_path / "vocab.txt"
    path.write_text("\n".join([*LEARNED_SPECIALS, *(f"w{i}" for i in range(12))]) + "\n", encoding="utf-8")
    return Vocab.from_wordpiece(path)


@pytest.mark.parametrize("key, config, boxes", [
    ("doubly_attentive.nmt_src_img", dict(emb_dim=8, enc_dim=8, dec_dim=8, att_dim=8, img_dim=6, img_att_dim=8), False),
    ("visual_agreement.seq2seq", dict(emb_dim=8, hidden=8, att_dim=8, dropout=0.0, img_dim=6, subspaces=2), True),
    ("visual_agreement.transformer", dict(d_model=8, n_heads=2, d_ff=16, enc_layers=1, dec_layers=2, dropout=0.0,
                                          attention_dropout=0.0, img_dim=6, subspaces=2), True),
    ("deepfuse.deepfuse", dict(d_model=16, n_heads=2, d_ff=20, enc_layers=2, dec_layers=2, dropout=0.0,
                               attention_dropout=0.0, img_dim=6), False),
    ("bertgen.bertgen", dict(hidden_size=16, num_layers=1, num_heads=2, ffn_size=32, img_dim=6, coord_freqs=4,
                             init="random", full_image="mean", max_regions=4, dropout=0.0, attention_dropout=0.0),
     True),
])
def test_every_models_decoding_sees_one_image_under_blank_mean(tmp_path, key, config, boxes):
    """Every layout through the model that reads it (untrained, tiny): four copies of one
    sentence, each with its own image (own regions, boxes, segment count), decode under both
    blank conditions, and under blank_mean alike (the batches carry one image: the test above)."""
    import torch

    from mmt_repro.decode.loop import decode_data
    from mmt_repro.models import Vocabs, build_model
    from mmt_repro.settings import DecodeSettings
    from mmt_repro.text.vocab import Vocab

    src = tmp_path / "src.txt"
    src.write_text("w1 w2 w3\n" * 4, encoding="utf-8")
    vocab = _wordpiece(tmp_path) if key.startswith("bertgen") else Vocab.build([src])
    torch.manual_seed(0)
    model = build_model(key, config, Vocabs.of(vocab, vocab)).eval()
    store = _Memory(boxes=boxes)
    settings = DecodeSettings(beam_size=1, max_len=6, max_len_a=0)
    langs = ("en", "de") if key.startswith("bertgen") else None
    hyps = {}
    for mode in (None, "zero", "mean"):
        feats = store if mode is None else blank_images(store, mode, store)
        data = ParallelData(src, vocab, features=feats, langs=langs)
        hyps[mode] = decode_data(model, data, settings, torch.device("cpu")).hyps
        assert len(hyps[mode]) == 4
    assert all(h == hyps["mean"][0] for h in hyps["mean"]), hyps
