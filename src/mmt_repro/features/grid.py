"""Grid and pooled ResNet-50 image features (res4f, res5c, pool5) written as a feature store.

:func:`extract_features` runs a frozen extractor of :mod:`mmt_repro.features.extractors` over
every image of a split's image list and writes the grid/pooled layout of
:mod:`mmt_repro.features.store` (``npy`` (N, L, D) float16 and its Parquet index) in
resumable chunks (:class:`~mmt_repro.features.store.ChunkedWriter`).

Its image helpers, shared with the region extractor, are :mod:`mmt_repro.features.images`; the
device (``"auto"``: ``"cuda"`` when available, else ``"cpu"``) is
:func:`mmt_repro.device.pick_device`'s.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from PIL import UnidentifiedImageError

from mmt_repro.device import pick_device
from mmt_repro.features.images import check_images, image_path, load_image
from mmt_repro.features.store import (
    ChunkedWriter,
    list_problems,
    names_digest,
    raise_for_status,
    read_item_list,
    row_status,
    to_float16,
    weights_fingerprint,
    write_index,
)
from mmt_repro.io import DataError, atomic_path

_log = logging.getLogger(__name__)


def extract_features(
    image_list: Path,
    image_dir: Path,
    out_npy: Path,
    out_index: Path,
    extractor: str,
    layer: str,
    weights: str,
    image_size: int,
    batch_size: int = 32,
    seed: int = 0,
    device: str = "auto",
    log=_log.info,
    missing_dir_fix: str = "set the dataset's image folder in the config",
    chunk_size: int = 1024,
) -> dict:
    """Extract features of every image in ``image_list`` (one file name per line, relative to
    ``image_dir``) into ``out_npy`` (float16, (N, L, D)) and ``out_index`` (Parquet).

    Work proceeds in chunks of ``chunk_size`` images (batches of ``batch_size`` inside); an
    interrupted run is resumed from its finished chunks (see
    :class:`~mmt_repro.features.store.ChunkedWriter`).
    Returns a summary dict (n_images, shape, weights_desc, device, seconds, images_per_s,
    resumed_chunks). Raises :class:`DataError` listing every missing/unreadable image, naming
    the images whose features contain NaN/Inf or overflow float16, or when the extractor's
    output does not have the declared shape.
    """
    import torch

    from mmt_repro.features.extractors import get_extractor

    if not image_dir:
        raise DataError(image_list, "no image folder is configured for these images", missing_dir_fix)
    image_list, image_dir = Path(image_list), Path(image_dir)
    out_npy, out_index = Path(out_npy), Path(out_index)
    names = read_item_list(image_list)
    check_images(names, image_dir)

    dev = str(pick_device(device))
    ext = get_extractor(extractor, layer, weights=weights, image_size=image_size, seed=seed)
    ext.to(dev)
    L, D = ext.output_shape(image_size)
    n = len(names)
    log(f"[features] {extractor}/{layer} weights: {ext.weights_desc}; image_size {image_size} -> ({L}, {D}) "
        f"per image; {n} images; device {dev}")
    fingerprint = {"extractor": extractor, "layer": layer, "weights": weights_fingerprint(weights),
                   "weights_desc": ext.weights_desc, "image_size": int(image_size), "seed": int(seed),
                   "names": names_digest(names), "image_dir": str(image_dir.resolve())}
    t0 = time.perf_counter()
    unreadable: list[str] = []
    done_now = 0
    with atomic_path(out_index) as tmp_index, ChunkedWriter(
        out_npy, {"features": (out_npy, (n, L, D), "float16"), "status": (None, (n,), "uint8")},
        chunk_size, fingerprint, log=log, tag="features",
    ) as writer:
        arr, status = writer.arrays["features"], writer.arrays["status"]
        for _, a, b in writer.pending():
            for start in range(a, b, batch_size):
                chunk = names[start:min(b, start + batch_size)]
                tensors = []
                for name in chunk:
                    try:
                        tensors.append(ext.preprocess(load_image(image_path(image_dir, name))))
                    except (UnidentifiedImageError, OSError, ValueError) as err:
                        unreadable.append(f"{name} (unreadable: {err})")
                if unreadable:
                    continue  # keep going only to collect every unreadable image
                feats = ext(torch.stack(tensors)).float().cpu().numpy()
                if feats.shape != (len(chunk), L, D):
                    raise DataError(out_npy, f"extractor {ext!r} returned features of shape {feats.shape} for "
                                    f"{len(chunk)} images, expected {(len(chunk), L, D)}",
                                    "the extractor's output_shape disagrees with its output: fix the extractor")
                status[start:start + len(chunk)] = row_status(feats)
                arr[start:start + len(chunk)] = to_float16(feats)
                done_now += len(chunk)
        if unreadable:
            raise DataError(image_dir, list_problems("unreadable", unreadable, image_dir),
                            "fetch or regenerate those images, or remove them from the image list")
        raise_for_status(np.asarray(status), names, out_npy, "image",
                         "check the weights file (weights_desc: " + ext.weights_desc + ") and the images; "
                         "NaN from a checkpoint usually means it is corrupt or for another architecture")
        seconds = time.perf_counter() - t0
        meta = {
            "kind": "grid", "extractor": extractor, "layer": layer, "weights": str(weights),
            "weights_desc": ext.weights_desc, "image_size": int(image_size), "shape": [n, L, D], "dtype": "float16",
            "seed": int(seed), "image_list": str(image_list), "torch_version": torch.__version__,
        }
        write_index(tmp_index, names, meta)
        resumed = writer.resumed
        writer.commit()
    ips = done_now / max(seconds, 1e-9)
    log(f"[features] wrote {out_npy} ({n}, {L}, {D}) float16 in {seconds:.1f}s, {ips:.1f} images/s"
        + (f" ({resumed} chunks resumed)" if resumed else "") + f", weights: {ext.weights_desc}")
    return {"n_images": n, "shape": (n, L, D), "weights_desc": ext.weights_desc, "device": dev,
            "seconds": seconds, "images_per_s": ips, "resumed_chunks": resumed,
            "npy": str(out_npy), "index": str(out_index)}
