"""Constant features: every image gets the same ``(L, D)`` block of one value.

A stand-in where a multimodal model must run but the images are not available (the CPU runs on
real Multi30k text, whose Flickr30k images are request-only): the model reads features with
the right shape that carry no information about the image, so whatever it learns comes from
the text. Written as a grid-layout store (``npy (N, L, D)`` float16 + index) with every slot
real; the index metadata says ``extractor: constant`` so that no table can mistake it for
image features.
"""

from __future__ import annotations

import numpy as np

from mmt_repro.features.store import read_item_list, write_index
from mmt_repro.io import atomic_path


def constant_features(image_list, out_npy, out_index, n_regions: int = 36, dim: int = 2048, value: float = 0.0) -> dict:
    """Write the constant store of the images of ``image_list``; returns its shape."""
    names = read_item_list(image_list)
    arr = np.full((len(names), int(n_regions), int(dim)), value, dtype=np.float16)
    with atomic_path(out_npy) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, arr)
    meta = {"extractor": "constant", "value": float(value), "shape": list(arr.shape), "dtype": "float16",
            "note": "no image information: a stand-in where the images are not available"}
    with atomic_path(out_index) as tmp:
        write_index(tmp, names, meta)
    return {"shape": list(arr.shape)}
