"""Constant features: the stand-in store where images are unavailable."""

import numpy as np

from mmt_repro.features.constant import constant_features
from mmt_repro.features.store import open_features


def test_constant_store_has_the_shape_and_no_image_information(tmp_path):
    (tmp_path / "list.txt").write_text("a.jpg\nb.jpg\nc.jpg\n")
    info = constant_features(tmp_path / "list.txt", tmp_path / "x.npy", tmp_path / "x.index.parquet", 4, 8, 0.5)
    assert info["shape"] == [3, 4, 8]
    store = open_features(tmp_path / "x.npy", tmp_path / "x.index.parquet")
    assert len(store) == 3 and np.array_equal(np.asarray(store[1], dtype=np.float32), np.full((4, 8), 0.5, np.float32))
