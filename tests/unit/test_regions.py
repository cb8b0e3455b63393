"""Region features: selection by hand, a stub backend for the store, and the torchvision
detector (random weights, small images) on two real COCO images."""

from __future__ import annotations

import json
import shutil
import urllib.error
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from mmt_repro.features import detectors as dt
from mmt_repro.features import regions as rg
from mmt_repro.features.detectors import (
    MissingBackendError,
    RegionBackend,
    Regions,
    get_region_backend,
    proposal_confidence,
    select_boxes,
)
from mmt_repro.features.regions import extract_regions
from mmt_repro.features.standardize import standardize_store
from mmt_repro.features.store import FeatureStore, RegionStore, box_geometry, write_index
from mmt_repro.io import DataError, write_lines

MEDIA = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "sample-media"
COCO = ["COCO_train2014_000000398172.jpg", "COCO_train2014_000000398177.jpg", "COCO_train2014_000000398200.jpg"]
SIZES = {COCO[0]: (427, 640), COCO[1]: (640, 640), COCO[2]: (640, 480)}
DETECTOR = dict(min_size=128, max_size=200, proposals=48)  # small and fast on CPU

needs_media = pytest.mark.skipif(not all((MEDIA / n).is_file() for n in COCO),
                                 reason=f"sample images not found under {MEDIA} (shared/datasets/sample-media)")


# -- selection and geometry, checked by hand -------------------------------------------


def test_region_store_batch_and_masks_match_rows(tmp_path):
    # a regions-layout store written directly: K = 5 slots, n_boxes < K for most rows
    n_boxes = np.array([2, 5, 0, 3, 1])
    K, D = 5, 4
    rng = np.random.default_rng(1)
    feats = rng.normal(size=(len(n_boxes), K, D)).astype(np.float16)
    feats[np.arange(K)[None, :] >= n_boxes[:, None]] = 0
    npy, boxes, index = tmp_path / "r.npy", tmp_path / "r.boxes.npy", tmp_path / "r.index.parquet"
    np.save(npy, feats)
    xy = rng.uniform(0, 30, size=(len(n_boxes), K, 2)).astype(np.float32)
    np.save(boxes, np.concatenate([xy, xy + rng.uniform(1, 30, size=xy.shape).astype(np.float32)], axis=-1))
    names = [f"im{i}.jpg" for i in range(len(n_boxes))]
    width, height = np.array([64, 80, 64, 50, 96]), np.array([48, 60, 48, 70, 32])
    write_index(index, names, {"kind": "regions", "shape": [len(n_boxes), K, D]},
                columns={"n_boxes": n_boxes, "width": width, "height": height})
    for store in (FeatureStore(npy, index), RegionStore(npy, boxes, index)):
        for rows in ([4, 0, 2, 0, 3], [1], list(range(5))):
            x, m = store.batch(rows)
            assert x.dtype == np.float32 and x.shape == (len(rows), K, D)
            assert m.dtype == bool and m.shape == (len(rows), K)
            np.testing.assert_array_equal(x, np.stack([store[r] for r in rows]))
            want = np.stack([store.mask(r) for r in rows])
            np.testing.assert_array_equal(m, want)
            np.testing.assert_array_equal(store.masks(rows), want)
            np.testing.assert_array_equal(m.sum(axis=1), n_boxes[rows])
        assert not store.masks([2]).any() and store.masks([1]).all()
    # the batched geometry read: every row's geometry bit for bit (its own image size), padding zero
    rs = RegionStore(npy, boxes, index)
    G = rs.geometries([4, 0, 2, 0, 3])
    assert G.dtype == np.float32 and G.shape == (5, K, 6)
    np.testing.assert_array_equal(G, np.stack([rs.geometry(r) for r in [4, 0, 2, 0, 3]]))
    b = np.load(boxes)[3, 1]
    np.testing.assert_allclose(G[4, 1], [b[0] / 50, b[1] / 70, b[2] / 50, b[3] / 70, (b[2] - b[0]) / 50,
                                         (b[3] - b[1]) / 70], rtol=1e-6)
    assert (G[4, 3:] == 0).all() and (G[2] == 0).all() and (G[0, 1:] == 0).all()

def test_select_boxes_top_k_and_confidence_range():
    conf = torch.tensor([0.1, 0.5, 0.3, 0.25, 0.05])
    assert select_boxes(conf, 2, 3, 0.2).tolist() == [1, 2, 3]  # 3 above 0.2, within 2..3
    assert select_boxes(conf, 2, 3, 0.4).tolist() == [1, 2]  # 1 above 0.4 -> at least 2
    assert select_boxes(conf, 1, 2, 0.0).tolist() == [1, 2]  # all above 0 -> at most 2
    assert select_boxes(conf, 3, 3, 0.9).tolist() == [1, 2, 3]  # top-K ignores the threshold
    assert select_boxes(conf, 10, 10, 0.2).tolist() == [1, 2, 3, 0, 4]  # fewer proposals than K


def test_proposal_confidence_per_class_nms():
    boxes = torch.tensor([[0.0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]])  # p0 and p1 overlap (IoU .81)
    scores = torch.tensor([[0.3, 0.6, 0.1], [0.1, 0.5, 0.4], [0.6, 0.1, 0.3]])  # background first
    conf, best = proposal_confidence(scores, boxes, 0.3)
    # class 1 keeps p0 (.6) and p2 (.1), suppresses p1; class 2 keeps p1 (.4) and p2 (.3), suppresses p0
    torch.testing.assert_close(conf, torch.tensor([0.6, 0.4, 0.3]))
    assert best.tolist() == [1, 2, 2]
    per_class = boxes[:, None, :].expand(3, 3, 4)  # per-class boxes give the same answer here
    torch.testing.assert_close(proposal_confidence(scores, per_class, 0.3)[0], conf)


def test_box_geometry():
    g = box_geometry(np.array([[10, 20, 50, 80], [0, 0, 100, 200]]), 100, 200)
    np.testing.assert_allclose(g, [[0.1, 0.1, 0.5, 0.4, 0.4, 0.3], [0, 0, 1, 1, 1, 1]], rtol=1e-6)
    both = box_geometry(np.zeros((2, 3, 4)), np.array([10, 20]), np.array([5, 5]))
    assert both.shape == (2, 3, 6)


def test_unknown_backend_and_missing_detectron2():
    with pytest.raises(ValueError, match=r"torchvision \(1024-d\).*detectron2 \(2048-d\)"):
        get_region_backend("yolo", "random")
    assert dt.available_backends() == {"torchvision": 1024, "detectron2": 2048}
    try:
        import detectron2  # noqa: F401
    except ImportError:
        with pytest.raises(MissingBackendError) as err:
            get_region_backend("detectron2", "weights.pkl", config_file="cfg.yaml")
        msg = str(err.value)
        assert "'detectron2'" in msg and "backend: torchvision" in msg
        assert isinstance(err.value, ImportError) and isinstance(err.value, DataError)
    else:
        pytest.skip("detectron2 is installed here; its missing-package message cannot be checked")


def test_coco_weights_offline_is_a_data_error(monkeypatch):
    from torchvision.models.detection import FasterRCNN_ResNet50_FPN_V2_Weights

    def offline(self, *args, **kwargs):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(type(FasterRCNN_ResNet50_FPN_V2_Weights.COCO_V1), "get_state_dict", offline)
    with pytest.raises(DataError, match="COCO_V1") as err:
        get_region_backend("torchvision", "coco", **DETECTOR)
    assert "pre-download" in str(err.value) and "random" in str(err.value)


# -- the store, with a stub backend (no detector) --------------------------------------

class StubRegions(RegionBackend):
    """Box counts 2, 4, 3, 2, 4, 3, ... (in call order); feature j of a region is its rank."""

    name, feature_dim = "stub", 8
    counts = (2, 4, 3)

    def __init__(self, **kw):
        self.weights_desc, self.min_size, self.max_size = "stub weights", 1, 1
        self.calls = 0
        StubRegions.instance = self

    def to(self, device):
        return self

    def __call__(self, images, min_boxes, max_boxes, conf_thresh, full_image=False):
        out = []
        for im in images:
            k = min(max_boxes, self.counts[self.calls % 3])
            self.calls += 1
            w, h = im.size
            boxes = np.array([[i, i, w - i, h - 2 * i] for i in range(k)], dtype=np.float32)
            feats = np.tile(np.arange(1, k + 1, dtype=np.float32)[:, None], (1, self.feature_dim))
            out.append(Regions(feats, boxes, np.linspace(1, 0.5, k, dtype=np.float32), w, h))
        return out


@pytest.fixture
def stub(monkeypatch):
    monkeypatch.setitem(dt._BACKENDS, "stub", StubRegions)
    return StubRegions


def _run(tmp_path: Path, names: list[str], tag: str = "r", **kw) -> tuple[tuple[Path, Path, Path], dict]:
    lst = write_lines(tmp_path / f"{tag}.txt", names)
    paths = (tmp_path / f"{tag}.npy", tmp_path / f"{tag}.boxes.npy", tmp_path / f"{tag}.index.parquet")
    logs: list[str] = []
    kw.setdefault("backend", "stub")
    kw.setdefault("weights", "random")
    info = extract_regions(lst, MEDIA, *paths, log=logs.append, device="cpu", **kw)
    info["logs"] = logs
    return paths, info


@needs_media
def test_region_store_layout_padding_and_geometry(stub, tmp_path):
    (npy, boxes, index), info = _run(tmp_path, COCO, max_boxes=4, min_boxes=1, batch_size=2)
    assert info["shape"] == (3, 4, 8)
    raw = np.load(npy)
    assert raw.dtype == np.float16 and raw.shape == (3, 4, 8)
    assert np.load(boxes).dtype == np.float32 and np.load(boxes).shape == (3, 4, 4)
    store = RegionStore(npy, boxes, index)
    assert store.lengths.tolist() == [2, 4, 3] and store.images == COCO
    assert [(int(w), int(h)) for w, h in zip(store.width, store.height)] == [SIZES[n] for n in COCO]
    # padding slots are zero; real slots hold the regions in order
    np.testing.assert_array_equal(raw[0, :, 0], [1, 2, 0, 0])
    np.testing.assert_array_equal(np.load(boxes)[0, 2:], 0)
    feats, bx = store.regions(2)
    assert feats.shape == (3, 8) and bx.shape == (3, 4)
    np.testing.assert_array_equal(bx[1], [1, 1, 639, 478])
    g = store.geometry(2)
    np.testing.assert_allclose(g[1], [1 / 640, 1 / 480, 639 / 640, 478 / 480, 638 / 640, 477 / 480], rtol=1e-5)
    assert (g[3] == 0).all() and store.mask(2).tolist() == [True, True, True, False]
    assert store.meta["backend"] == "stub" and store.meta["weights_desc"] == "stub weights"
    assert store.meta["feature_dim"] == 8 and store.meta["min_boxes"] == 1 and store.meta["max_boxes"] == 4
    store.check_order(tmp_path / "r.txt")
    # a plain FeatureStore reads the same files and knows the valid slots
    plain = FeatureStore(npy, index)
    assert plain.lengths.tolist() == [2, 4, 3] and plain[1].shape == (4, 8)
    x, m = store.batch([2, 0, 1, 0])
    np.testing.assert_array_equal(x, np.stack([store[r] for r in [2, 0, 1, 0]]))
    np.testing.assert_array_equal(m, np.stack([store.mask(r) for r in [2, 0, 1, 0]]))
    # standardising skips padding: valid slots centred, padding stays zero
    standardize_store(npy, index, tmp_path / "s.npy", tmp_path / "s.index.parquet")
    std = RegionStore(tmp_path / "s.npy", boxes, tmp_path / "s.index.parquet")
    valid = np.concatenate([std.regions(i)[0] for i in range(3)])
    np.testing.assert_allclose(valid.mean(axis=0), 0, atol=2e-3)
    assert (np.asarray(std.array)[0, 2:] == 0).all() and std.lengths.tolist() == [2, 4, 3]
    with pytest.raises(DataError, match="boxes have shape"):
        RegionStore(npy, tmp_path / "s.npy", index)


@needs_media
def test_region_extraction_resumes_and_checks(stub, tmp_path, monkeypatch):
    real = StubRegions.__call__

    def dying(self, images, *a, **k):
        if self.calls >= 2:
            raise KeyboardInterrupt
        return real(self, images, *a, **k)

    monkeypatch.setattr(StubRegions, "__call__", dying)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, COCO, max_boxes=4, min_boxes=1, batch_size=1, chunk_size=1)
    assert json.loads((tmp_path / ".r.npy.progress.json").read_text())["done"] == [0, 1]
    assert not (tmp_path / "r.npy").exists() and not (tmp_path / "r.boxes.npy").exists()
    monkeypatch.setattr(StubRegions, "__call__", real)
    StubRegions.counts = (3, 2, 4)  # the resumed run's first call is image 3, which had 3 boxes
    try:
        (npy, boxes, index), info = _run(tmp_path, COCO, max_boxes=4, min_boxes=1, batch_size=1, chunk_size=1)
    finally:
        StubRegions.counts = (2, 4, 3)
    assert StubRegions.instance.calls == 1 and info["resumed_chunks"] == 2
    assert RegionStore(npy, boxes, index).lengths.tolist() == [2, 4, 3]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@needs_media
def test_region_extraction_refuses_bad_input(stub, tmp_path, monkeypatch):
    shutil.copy(MEDIA / COCO[0], tmp_path / "ok.jpg")
    (tmp_path / "broken.jpg").write_bytes(b"not a jpeg")
    lst = write_lines(tmp_path / "l.txt", ["ok.jpg", "gone.jpg", "broken.jpg", "gone2.jpg"])
    out = (tmp_path / "o.npy", tmp_path / "o.boxes.npy", tmp_path / "o.index.parquet")
    with pytest.raises(DataError, match="3 missing or unreadable") as err:
        extract_regions(lst, tmp_path, *out, backend="stub", weights="random")
    assert all(n in str(err.value) for n in ("gone.jpg", "gone2.jpg", "broken.jpg"))
    real = StubRegions.__call__

    def nan(self, images, *a, **k):
        regs = real(self, images, *a, **k)
        regs[-1].features[0, 0] = np.nan
        return regs

    monkeypatch.setattr(StubRegions, "__call__", nan)
    with pytest.raises(DataError, match=r"COCO_train2014_000000398177.jpg \(NaN/Inf\)"):
        _run(tmp_path, COCO[:2], max_boxes=4, batch_size=2)
    assert not list(tmp_path.glob(".r.*")) and not (tmp_path / "r.npy").exists()


# -- the torchvision detector, random weights -------------------------------------------

@pytest.fixture(scope="module")
def detector():
    return get_region_backend("torchvision", "random", seed=0, **DETECTOR)


@needs_media
def test_torchvision_top36_store_matches_backend(detector, tmp_path, monkeypatch):
    built: list[dict] = []

    def reuse(name, weights, **kw):  # the same seeded random detector, built once for the module
        built.append(dict(kw, name=name, weights=weights))
        return detector

    monkeypatch.setattr(rg, "get_region_backend", reuse)
    (npy, boxes, index), info = _run(tmp_path, COCO[:2], backend="torchvision", max_boxes=36, batch_size=2,
                                     **DETECTOR)
    assert built == [dict(name="torchvision", weights="random", seed=0, proposals=48, nms_thresh=0.3,
                          config_file=None, min_size=128, max_size=200)]
    assert info["shape"] == (2, 36, 1024) and info["weights_desc"] == "random-init seed 0"
    store = RegionStore(npy, boxes, index)
    assert store.lengths.tolist() == [36, 36]
    assert store.meta["feature_dim"] == 1024 and store.meta["weights"] == "random"
    assert store.meta["min_size"] == 128 and store.meta["proposals"] == 48
    ims = [Image.open(MEDIA / n).convert("RGB") for n in COCO[:2]]
    direct = detector(ims, 36, 36, 0.2)
    for i, r in enumerate(direct):
        assert r.features.shape == (36, 1024) and (r.width, r.height) == SIZES[COCO[i]]
        assert (np.diff(r.scores) <= 0).all()  # most confident first
        b = r.boxes
        assert (b[:, 0] >= 0).all() and (b[:, 2] <= r.width + 1e-3).all() and (b[:, 3] <= r.height + 1e-3).all()
        assert (b[:, 2] >= b[:, 0]).all() and (b[:, 3] >= b[:, 1]).all()
        feats, bx = store.regions(i)
        np.testing.assert_allclose(feats, r.features, rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(bx, r.boxes, rtol=1e-5, atol=1e-3)
        g = store.geometry(i)
        assert g.shape == (36, 6) and (g >= -1e-6).all() and (g <= 1 + 1e-6).all()


@needs_media
def test_torchvision_confidence_range_and_full_image(detector):
    ims = [Image.open(MEDIA / COCO[2]).convert("RGB")]
    (r,) = detector(ims, 10, 100, 0.2, full_image=True)
    n = len(r.features) - 1
    assert 10 <= n <= 48  # at most the proposals
    np.testing.assert_allclose(r.boxes[0], [0, 0, 640, 480], atol=1e-3)  # slot 0: the whole image
    assert r.scores[0] == 0 and n == max(10, int((r.scores[1:] >= 0.2).sum()))
    assert r.features.shape == (n + 1, 1024) and np.isfinite(r.features).all()


def test_torchvision_local_weights(detector, tmp_path):
    path = tmp_path / "det.pth"
    torch.save({"model": detector.model.state_dict()}, path)
    local = get_region_backend("torchvision", str(path), **DETECTOR)
    assert local.weights_desc == str(path)
    for (k, a), b in zip(detector.model.state_dict().items(), local.model.state_dict().values()):
        assert torch.equal(a, b), k
    torch.save({"backbone.body.conv1.weight": torch.zeros(1)}, tmp_path / "bad.pth")
    with pytest.raises(DataError, match="not a torchvision fasterrcnn"):
        get_region_backend("torchvision", str(tmp_path / "bad.pth"), **DETECTOR)
    with pytest.raises(DataError, match="does not exist"):
        get_region_backend("torchvision", str(tmp_path / "nope.pth"))


# -- given boxes: the same backbone and RoI pooling, no detection -------------------------

@needs_media
def test_given_boxes_pool_exactly_like_detected_ones(detector):
    """Detected boxes handed back as given boxes give the detector's own features."""
    ims = [Image.open(MEDIA / n).convert("RGB") for n in COCO[:2]]
    detected = detector(ims, 5, 5, 0.2, full_image=True)
    given = detector.pool(ims, [r.boxes[1:] for r in detected], full_image=True)
    for d, g in zip(detected, given):
        np.testing.assert_allclose(g.boxes, d.boxes, atol=1e-3)
        np.testing.assert_allclose(g.features, d.features, rtol=1e-3, atol=1e-3)
        assert g.scores.tolist() == [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    (one,) = detector.pool(ims[:1], [np.array([[10.0, 20.0, 200.0, 300.0]])])
    assert one.features.shape == (1, 1024) and one.boxes.tolist() == [[10.0, 20.0, 200.0, 300.0]]


@needs_media
def test_extract_regions_with_given_boxes_pads_and_masks(detector, tmp_path, monkeypatch):
    monkeypatch.setattr(rg, "get_region_backend", lambda name, weights, **kw: detector)
    given = {COCO[0]: [[0, 0, 100, 100], [50, 60, 300, 400]],
             COCO[1]: [[10, 10, 20, 30], [100, 100, 640, 640], [0, 0, 640, 320]]}
    (tmp_path / "boxes.json").write_text(json.dumps(given))
    (npy, boxes, index), info = _run(tmp_path, COCO[:2], backend="torchvision", max_boxes=4, full_image=True,
                                     given_boxes=tmp_path / "boxes.json", **DETECTOR)
    store = RegionStore(npy, boxes, index)
    assert info["shape"] == (2, 5, 1024) and store.lengths.tolist() == [3, 4]
    assert store.masks([0, 1]).tolist() == [[True, True, True, False, False], [True] * 4 + [False]]
    np.testing.assert_allclose(store.regions(1)[1], [[0, 0, 640, 640]] + given[COCO[1]], atol=1e-4)
    assert store.meta["given_boxes"] == str(tmp_path / "boxes.json")
    assert any("given boxes" in line for line in info["logs"])


@pytest.mark.parametrize("boxes, match", [
    ({COCO[0]: [[0, 0, 10, 10]]}, "(?s)without boxes.*COCO_train2014_000000398177.jpg"),
    ({COCO[0]: [[0, 0, 10, 10]], COCO[1]: [[5, 5, 5, 9]]}, "bad boxes"),
    ({COCO[0]: [[0, 0, 10, 10]] * 5, COCO[1]: [[0, 0, 1, 1]]}, "(?s)bad boxes.*raise max_boxes"),
    ({COCO[0]: [[0, 0, 10, 10]], COCO[1]: []}, "bad boxes"),
])
def test_bad_given_boxes_name_the_file_and_images(tmp_path, boxes, match):
    path = tmp_path / "b.json"
    path.write_text(json.dumps(boxes))
    with pytest.raises(DataError, match=match) as err:
        rg.read_given_boxes(path, COCO[:2], max_boxes=4)
    assert str(path) in str(err.value)
    with pytest.raises(DataError, match="does not exist"):
        rg.read_given_boxes(tmp_path / "none.json", COCO[:2], max_boxes=4)
