"""Feature stores held whole on the training device (issue 23, "Feeding the GPU").

A training set's store is read once, in chunks, into device memory in its own precision
(float16 stores stay float16); a batch then carries only its row numbers (``img_rows``) and the
store (``img_source``), and :func:`resolve_features` gathers the rows and converts them to float32
on the device, after the batch has been moved there. The host neither reads the memory map per
batch nor copies the features, and the NaN/Inf scan runs once, at load, instead of per batch.
The values are those of the host path exactly (float16 to float32 is exact), so the updates are
the same bit for bit (``tests/unit/test_resident.py``).

Which stores: ``MMT_RESIDENT`` = ``0`` (never), ``1`` (always, on any device: the tests use the
CPU), or unset / ``auto``: on a GPU when the store (features, masks, box geometry) takes at
most half of the device's free memory at load.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import torch

from ..io import DataError
from .feature_reads import read_feature_rows, read_geometry_rows

log = logging.getLogger(__name__)

CHUNK_ROWS = 1024


def _dtype(store) -> torch.dtype:
    array = getattr(store, "array", None)
    return torch.float16 if array is not None and array.dtype == np.float16 else torch.float32


def store_bytes(store) -> int:
    """Device bytes of a resident copy: features in the store's precision, masks, geometry."""
    n = len(store)
    shape = getattr(store, "shape", None) or (n, *np.asarray(store[0]).shape)
    _, slots, dim = shape
    per = torch.finfo(_dtype(store)).bits // 8
    geometry = slots * 6 * 4 if hasattr(store, "geometry") else 0
    return n * (slots * dim * per + slots + geometry)


def resident_choice(store, device: torch.device, environ=None) -> tuple[bool, str]:
    """Whether to hold ``store`` on ``device``, and why (for the log)."""
    environ = os.environ if environ is None else environ
    value = environ.get("MMT_RESIDENT", "auto").strip().lower() or "auto"
    if value not in ("0", "1", "auto"):
        raise ValueError(f"MMT_RESIDENT={value!r}: give 0 (never), 1 (always) or auto")
    need = store_bytes(store)
    if value == "0":
        return False, "MMT_RESIDENT=0"
    if value == "1":
        return True, f"MMT_RESIDENT=1 ({need / 2**30:.2f} GiB)"
    if device.type != "cuda":
        return False, "not on a GPU"
    free, _ = torch.cuda.mem_get_info(device)
    fits = need <= free // 2
    return fits, f"{need / 2**30:.2f} GiB {'<=' if fits else '>'} half of the GPU's free {free / 2**30:.1f} GiB"


class ResidentFeatures:
    """The rows of a feature store on ``device``: ``gather(rows)`` gives the batch's
    ``img (B, L, D)`` float32, ``img_mask (B, L)`` and, for a region store, ``img_geometry``."""

    def __init__(self, store, device: torch.device):
        n = len(store)
        self.device = device
        self.path = getattr(store, "npy", None)
        raw = getattr(store, "array", None)  # a FeatureStore's memory map: copied as stored, no float32 detour
        first = raw[:1] if raw is not None else read_feature_rows(store, [0])[0]
        slots, dim = first.shape[1:]
        self.features = torch.empty((n, slots, dim), dtype=_dtype(store), device=device)
        self.mask = torch.empty((n, slots), dtype=torch.bool, device=device)
        regions = hasattr(store, "geometry")
        self.geometry = torch.empty((n, slots, 6), dtype=torch.float32, device=device) if regions else None
        bad = []
        for start in range(0, n, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, n)
            rows = list(range(start, stop))
            if raw is not None:
                img, mask = np.ascontiguousarray(raw[start:stop]), store.masks(rows)
            else:
                img, mask = read_feature_rows(store, rows)
            finite = np.isfinite(img).reshape(len(rows), -1).all(1)
            bad += [r for r, ok in zip(rows, finite) if not ok]
            self.features[start:stop] = torch.from_numpy(img).to(self.features.dtype)
            self.mask[start:stop] = torch.from_numpy(mask)
            if regions:
                self.geometry[start:stop] = torch.from_numpy(read_geometry_rows(store, rows))
        if bad:
            raise DataError(self.path, f"feature row(s) {bad[:20]} hold NaN or Inf",
                            "delete the feature store and re-run feature extraction (check the images and weights)")

    def __len__(self) -> int:
        return int(self.features.shape[0])

    def gather(self, rows: torch.Tensor) -> dict:
        rows = rows.to(self.device, non_blocking=True)
        out = {"img": self.features.index_select(0, rows).float(), "img_mask": self.mask.index_select(0, rows)}
        if self.geometry is not None:
            out["img_geometry"] = self.geometry.index_select(0, rows)
        return out


def resolve_features(batch: dict) -> dict:
    """A batch whose features stay on the device (``img_rows`` + ``img_source``) with its
    ``img``, ``img_mask`` (and ``img_geometry``) gathered there; other batches unchanged."""
    if "img_rows" not in batch:
        return batch
    out = {k: v for k, v in batch.items() if k not in ("img_rows", "img_source")}
    out.update(batch["img_source"].gather(batch["img_rows"]))
    return out
