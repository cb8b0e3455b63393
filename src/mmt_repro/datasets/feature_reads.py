"""Rows of feature stores read into batch arrays: one task's rows
(:class:`~mmt_repro.datasets.batching.ParallelData`) and the images of a batch of unrolled examples
from several tasks (:mod:`mmt_repro.datasets.unroll`, BertGen's multi-task mix), so that a model's
batch builder gets arrays, never a store."""

from __future__ import annotations

import numpy as np


def read_feature_rows(store, rows: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Features ``(len(rows), L, D)`` float32 and their mask ``(len(rows), L)`` bool of a store
    (a :class:`~mmt_repro.features.store.FeatureStore`, or any object with ``len`` and
    ``[row] -> (L, D)``; without ``mask`` every slot counts)."""
    if hasattr(store, "batch"):
        return store.batch(rows)
    img = np.stack([np.asarray(store[r], dtype=np.float32) for r in rows])
    if hasattr(store, "mask"):
        mask = np.stack([np.asarray(store.mask(r), dtype=bool) for r in rows])
    else:
        mask = np.ones(img.shape[:2], dtype=bool)
    return img, mask


def read_geometry_rows(store, rows: list[int]) -> np.ndarray:
    """``(len(rows), L, 6)`` float32 normalised box geometry of a region store's rows
    (:meth:`~mmt_repro.features.store.RegionStore.geometry`; zeros in padded slots), read at
    once where the store can (:meth:`~mmt_repro.features.store.RegionStore.geometries`)."""
    if hasattr(store, "geometries"):
        return store.geometries(rows)
    return np.stack([np.asarray(store.geometry(r), dtype=np.float32) for r in rows])


def read_task_images(items: list) -> tuple[list[int], tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
    """The images of a batch of unrolled examples ``(data, sentence, t)`` (``data`` a
    :class:`~mmt_repro.datasets.batching.ParallelData`): each example's image in the batch (-1 for
    a task without images, e.g. MT) and the images' features ``(N, L, D)`` float32, masks
    ``(N, L)`` and box geometry ``(N, L, 6)`` (zero-padded to the widest store), or None when no
    example has an image. Images are numbered task by task, in order of first use within each
    task; an image seen twice is read once."""
    reads: dict[int, tuple[object, dict[int, int]]] = {}  # task -> (store, {row: image index in the task})
    img_of = []
    for data, i, _ in items:
        if data.features is None:
            img_of.append(None)
            continue
        rows = reads.setdefault(id(data), (data.features, {}))[1]
        row = int(data.image_rows[i])
        img_of.append((id(data), rows.setdefault(row, len(rows))))
    # images of the batch: task by task, in order of first use within each task
    start, base = 0, {}
    for task, (_, rows) in reads.items():
        base[task], start = start, start + len(rows)
    img_of = [-1 if x is None else base[x[0]] + x[1] for x in img_of]
    if not reads:
        return img_of, None
    parts = [(read_feature_rows(store, list(rows)), read_geometry_rows(store, list(rows)))
             for store, rows in reads.values()]
    width = max(f.shape[1] for (f, _), _ in parts)
    dims = {f.shape[2] for (f, _), _ in parts}
    if len(dims) > 1:
        raise ValueError(f"the tasks' feature stores differ in feature size: {sorted(dims)}")

    def pad(a, fill=0):
        return np.pad(a, [(0, 0), (0, width - a.shape[1])] + [(0, 0)] * (a.ndim - 2), constant_values=fill)

    img = np.concatenate([pad(f) for (f, _), _ in parts])
    mask = np.concatenate([pad(m, False) for (_, m), _ in parts])
    geom = np.concatenate([pad(g) for _, g in parts])
    return img_of, (img, mask, geom)
