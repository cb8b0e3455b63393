"""Blank images: the feature store of a test split read as if every image were blank, for the
image-use probes (docs/probes.md). Two conditions, applied at decode time to the store the
decoder reads (:func:`mmt_repro.decode.translate.translate`), so that every model gets them
through the batches it always reads (``img``, ``img_mask``, ``img_geometry``;
:mod:`mmt_repro.datasets.batching`):

- ``zero`` (condition ``blank_zero``): every feature vector is zeros; each image keeps its own
  mask and boxes (which grid cells, regions or video segments it has, and where).
- ``mean`` (condition ``blank_mean``): every image is the training split's *average image*
  (:func:`average_image`): the same features, mask and boxes for every sentence, so nothing of
  the sentence's own image is left.

The layouts (:mod:`mmt_repro.features.store`) are all ``(N, L, D)`` with a mask over ``L``: a
grid (Calixto et al.: 196 cells, all real), a pooled vector (Hirasawa et al.: ``L`` = 1), regions
with boxes (Yang et al., BertGen: ``n_boxes`` real slots of ``L``, padded with zeros) and video
segments (DeepFuse: ``n_segments`` real slots). The average image is taken slot by slot over
the training images that fill the slot, and has the slots that at least half of them fill (the
median number of regions or segments; every cell of a grid). Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .feature_reads import read_feature_rows, read_geometry_rows

MODES = ("zero", "mean")
#: rows of the training store read at once while averaging (bounded by ~128 MB of float32)
_CHUNK_BYTES = 1 << 27


@dataclass(frozen=True)
class AverageImage:
    """The average image of a store: ``features (L, D)`` float32, ``mask (L,)`` bool and, for a
    region store, ``geometry (L, 6)`` float32 (zeros outside the mask); ``rows``: the images
    averaged."""

    features: np.ndarray
    mask: np.ndarray
    geometry: np.ndarray | None
    rows: int


def average_image(store) -> AverageImage:
    """The training split's average image (module docstring): each slot's mean feature vector
    (and normalised box, for region stores) over the images that fill the slot, accumulated in
    float64, read in chunks of rows."""
    n, L, D = (int(x) for x in store.shape)
    regions = hasattr(store, "geometry")
    total = np.zeros((L, D), dtype=np.float64)
    boxes = np.zeros((L, 6), dtype=np.float64)
    count = np.zeros(L, dtype=np.int64)
    step = max(1, _CHUNK_BYTES // max(1, L * D * 4))
    for start in range(0, n, step):
        rows = list(range(start, min(n, start + step)))
        img, mask = read_feature_rows(store, rows)
        weight = mask.astype(np.float64)
        total += np.einsum("bld,bl->ld", img, weight, dtype=np.float64)
        count += mask.sum(axis=0)
        if regions:
            boxes += np.einsum("blk,bl->lk", read_geometry_rows(store, rows), weight, dtype=np.float64)
    filled = np.maximum(count, 1)[:, None]
    keep = 2 * count >= n
    if L and not keep.any():
        keep[0] = True  # at least one slot: a model attends over something
    feats = (total / filled).astype(np.float32)
    feats[~keep] = 0.0
    geometry = None
    if regions:
        geometry = (boxes / filled).astype(np.float32)
        geometry[~keep] = 0.0
    return AverageImage(features=feats, mask=keep, geometry=geometry, rows=n)


class BlankImages:
    """A store (:class:`~mmt_repro.features.store.FeatureStore` or any object with ``shape``,
    ``len`` and ``batch``/``[row]``) whose rows read as blank images (module docstring). Row
    order, length, shape and the store's file are the store's, so the checks the decoder makes
    (row count, feature size) hold as for the congruent condition."""

    def __init__(self, store, mode: str, average: AverageImage | None = None):
        if mode not in MODES:
            raise ValueError(f"blank images: unknown mode {mode!r}; valid: {', '.join(MODES)}")
        if mode == "mean" and average is None:
            raise ValueError("blank images 'mean' need the training split's average image (average_image)")
        if average is not None and average.features.shape != tuple(store.shape[1:]):
            raise ValueError(f"the average image has shape {average.features.shape} but the store's rows are "
                             f"{tuple(store.shape[1:])}: average the training split of the same feature set")
        self.store, self.mode, self.average = store, mode, average
        self.npy = getattr(store, "npy", None)
        self.shape = tuple(int(x) for x in store.shape)

    def __len__(self) -> int:
        return len(self.store)

    def batch(self, rows) -> tuple[np.ndarray, np.ndarray]:
        """``(B, L, D)`` float32 blank features and their ``(B, L)`` masks."""
        rows = list(rows)
        b = len(rows)
        if self.mode == "mean":
            a = self.average
            return (np.broadcast_to(a.features, (b, *a.features.shape)).copy(),
                    np.broadcast_to(a.mask, (b, *a.mask.shape)).copy())
        _, mask = read_feature_rows(self.store, rows)
        return np.zeros((b, *self.shape[1:]), dtype=np.float32), mask

    def __getitem__(self, row: int) -> np.ndarray:
        return self.batch([row])[0][0]

    def mask(self, row: int) -> np.ndarray:
        return self.batch([row])[1][0]


class BlankRegions(BlankImages):
    """:class:`BlankImages` of a region store: the boxes' geometry too (the image's own under
    ``zero``, the average image's under ``mean``)."""

    def geometries(self, rows) -> np.ndarray:
        rows = list(rows)
        if self.mode == "mean":
            g = self.average.geometry
            return np.broadcast_to(g, (len(rows), *g.shape)).copy()
        return read_geometry_rows(self.store, rows)

    def geometry(self, row: int) -> np.ndarray:
        return self.geometries([row])[0]


def blank_images(store, mode: str, training_store=None):
    """``store`` read as blank images of ``mode`` (``zero``, or ``mean`` with the training
    split's store of the same feature set, ``training_store``)."""
    average = None
    if mode == "mean":
        if training_store is None:
            raise ValueError("blank images 'mean' need the training split's feature store")
        average = average_image(training_store)
    cls = BlankRegions if hasattr(store, "geometry") else BlankImages
    return cls(store, mode, average)
