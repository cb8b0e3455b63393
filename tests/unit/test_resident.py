"""Feature stores held on the training device (issue 23, "Feeding the GPU";
mmt_repro.datasets.resident): the same batches and updates as the host path, a bad row refused at
load naming the file, and the choice of which stores stay resident."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mmt_repro.checkpoint import read_checkpoint
from mmt_repro.datasets.feature_reads import read_feature_rows, read_geometry_rows
from mmt_repro.datasets.resident import ResidentFeatures, resident_choice, resolve_features, store_bytes
from mmt_repro.features.store import RegionStore, write_index
from mmt_repro.io import DataError

from test_trainer import run  # tests/unit is on sys.path


def _region_store(tmp_path, n=5, L=4, D=3, bad_row=None) -> RegionStore:
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((n, L, D)).astype(np.float16)
    n_boxes = np.array([4, 2, 3, 1, 4][:n])
    for r, k in enumerate(n_boxes):
        feats[r, k:] = 0
    if bad_row is not None:
        feats[bad_row, 0, 0] = np.nan
    boxes = np.zeros((n, L, 4), dtype=np.float32)
    boxes[..., 2:] = 10.0
    boxes[..., 0] = np.arange(L) % 3
    np.save(tmp_path / "s.npy", feats)
    np.save(tmp_path / "s.boxes.npy", boxes)
    write_index(tmp_path / "s.index.parquet", [f"im{i}.jpg" for i in range(n)], {"kind": "regions", "shape": [n, L, D]},
                columns={"n_boxes": n_boxes, "width": np.full(n, 20), "height": np.full(n, 10)})
    return RegionStore(tmp_path / "s.npy", tmp_path / "s.boxes.npy", tmp_path / "s.index.parquet")


def test_gathered_rows_equal_the_host_read_in_float32(tmp_path):
    store = _region_store(tmp_path)
    res = ResidentFeatures(store, torch.device("cpu"))
    assert res.features.dtype == torch.float16 and len(res) == 5  # the store's own precision
    rows = [3, 0, 3, 1]
    got = res.gather(torch.tensor(rows))
    img, mask = read_feature_rows(store, rows)
    assert got["img"].dtype == torch.float32 and torch.equal(got["img"], torch.from_numpy(img))
    assert got["img_mask"].tolist() == mask.tolist() == [[True, False, False, False], [True] * 4,
                                                         [True, False, False, False], [True, True, False, False]]
    assert torch.equal(got["img_geometry"], torch.from_numpy(read_geometry_rows(store, rows)))
    # x1 of row 3's one box is 0 (slot 0), its width 10 of 20 pixels: 0.5
    assert got["img_geometry"][0, 0].tolist()[:5] == [0.0, 0.0, 0.5, 1.0, 0.5]
    batch = resolve_features({"ids": torch.tensor([7]), "img_rows": torch.tensor([1]), "img_source": res})
    assert set(batch) == {"ids", "img", "img_mask", "img_geometry"} and batch["img"].shape == (1, 4, 3)
    assert resolve_features({"img": None}) == {"img": None}  # host batches pass through


def test_a_nan_row_is_refused_at_load_naming_the_store(tmp_path):
    store = _region_store(tmp_path, bad_row=2)
    with pytest.raises(DataError, match=r"(?s)s\.npy.*row\(s\) \[2\] hold NaN.*re-run feature extraction"):
        ResidentFeatures(store, torch.device("cpu"))


def test_which_stores_stay_resident(tmp_path, monkeypatch):
    store = _region_store(tmp_path)
    # 5 rows x (4 slots x 3 dims x 2 bytes + 4 mask bytes + 4 x 6 x 4 geometry bytes)
    assert store_bytes(store) == 5 * (4 * 3 * 2 + 4 + 4 * 6 * 4) == 620
    cpu = torch.device("cpu")
    assert resident_choice(store, cpu, {})[0] is False  # auto: GPUs only
    assert resident_choice(store, cpu, {"MMT_RESIDENT": "1"})[0] is True
    assert resident_choice(store, torch.device("cuda"), {"MMT_RESIDENT": "0"}) == (False, "MMT_RESIDENT=0")
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda d=None: (1000, 80_000))
    assert resident_choice(store, torch.device("cuda"), {}) == (False, "0.00 GiB > half of the GPU's free 0.0 GiB")
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda d=None: (1240, 80_000))
    assert resident_choice(store, torch.device("cuda"), {})[0] is True  # 620 <= 1240 // 2
    with pytest.raises(ValueError, match="MMT_RESIDENT='yes'"):
        resident_choice(store, cpu, {"MMT_RESIDENT": "yes"})


def test_training_with_resident_features_makes_the_same_updates(toy_corpus, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("MMT_RESIDENT", "0")
    run(toy_corpus, tmp_path / "host", accumulate=2)
    monkeypatch.setenv("MMT_RESIDENT", "1")
    with caplog.at_level("INFO", logger="mmt_repro.train.run"):  # build_run logs where the features are held
        run(toy_corpus, tmp_path / "resident", accumulate=2)
    assert "training features resident on cpu (MMT_RESIDENT=1" in caplog.text
    a = read_checkpoint(tmp_path / "host" / "last.pt")["weights"]
    b = read_checkpoint(tmp_path / "resident" / "last.pt")["weights"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert (tmp_path / "host" / "curve.tsv").read_text().split("\n")[1].split("\t")[:4] == \
        (tmp_path / "resident" / "curve.tsv").read_text().split("\n")[1].split("\t")[:4]
