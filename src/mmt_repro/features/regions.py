"""Region (object-detection) features of an image list, written as a region store.

The detection itself (the bottom-up-attention recipe over interchangeable backends: torchvision,
detectron2) is :mod:`mmt_repro.features.detectors`; the store's reader,
:class:`~mmt_repro.features.store.RegionStore`, and the box geometry are in
:mod:`mmt_repro.features.store`.

Store (:func:`extract_regions`; layout shared with ``import_pretrained("butd")``):

* ``out_npy``: float16 ``(N, K, D)``; row ``i`` = line ``i`` of the image list, slot ``j`` =
  the j-th most confident region; slots ``n_boxes[i]..K-1`` are zeros;
* ``out_boxes``: float32 ``(N, K, 4)``: ``x1, y1, x2, y2`` in pixels of the original image
  (zeros in padding slots);
* ``out_index``: Parquet ``row``, ``image``, ``n_boxes``, ``width``, ``height`` (int32) plus
  metadata (backend, weights, weights_desc, feature_dim, max/min_boxes, conf_thresh, ...).

With ``full_image=True`` slot 0 holds the whole image as one more box (BertGen's full-image
RoI feature) and K = ``max_boxes + 1``. With ``given_boxes`` (a feature set's ``boxes: given``)
the boxes come from a file instead of the detector and
:meth:`~mmt_repro.features.detectors.RegionBackend.pool` runs the same backbone and RoI pooling
on them (the grounded set's objects). :class:`~mmt_repro.features.store.RegionStore` reads the
three files; :func:`~mmt_repro.features.store.box_geometry` gives the normalised ``x1, y1, x2,
y2, w, h`` per box.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from PIL import UnidentifiedImageError

from mmt_repro.device import pick_device
from mmt_repro.features.detectors import get_region_backend
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


def extract_regions(
    image_list: Path,
    image_dir: Path,
    out_npy: Path,
    out_boxes: Path,
    out_index: Path,
    backend: str = "torchvision",
    weights: str = "coco",
    max_boxes: int = 36,
    min_boxes: int | None = None,
    conf_thresh: float = 0.2,
    full_image: bool = False,
    min_size: int | None = None,
    max_size: int | None = None,
    proposals: int = 300,
    nms_thresh: float = 0.3,
    config_file: str | None = None,
    batch_size: int = 2,
    chunk_size: int = 256,
    seed: int = 0,
    device: str = "auto",
    log: Callable[[str], None] = _log.info,
    missing_dir_fix: str = "set the dataset's image folder in the config",
    given_boxes: Path | None = None,
) -> dict:
    """Region features of every image of ``image_list`` into a region store (module docstring).

    ``min_boxes`` defaults to ``max_boxes`` (fixed top-K). ``given_boxes``: a JSON file
    ``{image: [[x1, y1, x2, y2], ...]}`` (pixels of the original image, at most ``max_boxes``
    per image, in slot order) whose boxes are pooled instead of detected ones
    (:meth:`~mmt_repro.features.detectors.RegionBackend.pool`: the same backbone and RoI pooling,
    no detection; e.g. the grounded generator's object boxes). Resumable in chunks of
    ``chunk_size`` images like :func:`~mmt_repro.features.grid.extract_features`; the same
    checks (every missing/unreadable image listed, NaN/Inf or float16 overflow named).
    Returns a summary dict (n_images, shape, mean_boxes, weights_desc, seconds, images_per_s).
    """
    if not image_dir:
        raise DataError(image_list, "no image folder is configured for these images", missing_dir_fix)
    min_boxes = int(max_boxes if min_boxes is None else min_boxes)
    if not 1 <= min_boxes <= int(max_boxes):
        raise ValueError(f"need 1 <= min_boxes <= max_boxes, got {min_boxes} and {max_boxes}")
    image_list, image_dir = Path(image_list), Path(image_dir)
    out_npy, out_boxes, out_index = Path(out_npy), Path(out_boxes), Path(out_index)
    names = read_item_list(image_list)
    check_images(names, image_dir)
    given = None if given_boxes is None else read_given_boxes(Path(given_boxes), names, int(max_boxes))
    dev = str(pick_device(device))
    det = get_region_backend(backend, weights, seed=seed, min_size=min_size, max_size=max_size,
                             proposals=proposals, nms_thresh=nms_thresh, config_file=config_file).to(dev)
    n, D = len(names), det.feature_dim
    K = int(max_boxes) + (1 if full_image else 0)
    boxes_desc = (f"given boxes from {given_boxes}" if given is not None
                  else f"{min_boxes}..{max_boxes} boxes at conf >= {conf_thresh}")
    log(f"[regions] {backend} ({D}-d) weights: {det.weights_desc}; {boxes_desc}{' + full image' if full_image else ''}; "
        f"sizes {det.min_size}/{det.max_size}; {n} images; device {dev}")
    settings = {"backend": backend, "weights": str(weights), "weights_desc": det.weights_desc, "feature_dim": D,
                "max_boxes": int(max_boxes), "min_boxes": min_boxes, "conf_thresh": float(conf_thresh),
                "full_image": bool(full_image), "min_size": det.min_size, "max_size": det.max_size,
                "proposals": int(proposals), "nms_thresh": float(nms_thresh), "seed": int(seed),
                "given_boxes": None if given_boxes is None else str(given_boxes)}
    fingerprint = dict(settings, weights=weights_fingerprint(weights), names=names_digest(names),
                       image_dir=str(image_dir.resolve()), config_file=str(config_file),
                       given_boxes=None if given is None else names_digest([json.dumps(given[k]) for k in names]))
    arrays = {"features": (out_npy, (n, K, D), "float16"), "boxes": (out_boxes, (n, K, 4), "float32"),
              "n_boxes": (None, (n,), "int32"), "size": (None, (n, 2), "int32"), "status": (None, (n,), "uint8")}
    t0 = time.perf_counter()
    unreadable: list[str] = []
    done_now = 0
    with atomic_path(out_index) as tmp_index, ChunkedWriter(out_npy, arrays, chunk_size, fingerprint, log=log,
                                                            tag="regions") as w:
        A = w.arrays
        for _, a, b in w.pending():
            for start in range(a, b, batch_size):
                chunk = names[start:min(b, start + batch_size)]
                ims = []
                for name in chunk:
                    try:
                        ims.append(load_image(image_path(image_dir, name)))
                    except (UnidentifiedImageError, OSError, ValueError) as err:
                        unreadable.append(f"{name} (unreadable: {err})")
                if unreadable:
                    continue
                if given is not None:
                    found = det.pool(ims, [given[name] for name in chunk], full_image)
                else:
                    found = det(ims, min_boxes, int(max_boxes), float(conf_thresh), full_image)
                for i, r in enumerate(found):
                    row, k = start + i, len(r.features)
                    if r.features.ndim != 2 or r.features.shape[1] != D or k > K or r.boxes.shape != (k, 4):
                        raise DataError(out_npy, f"backend {det!r} returned features {r.features.shape} and boxes "
                                        f"{r.boxes.shape} for {chunk[i]}, expected (<= {K}, {D}) and (<= {K}, 4)",
                                        "the backend's feature_dim or box selection is wrong: fix the backend")
                    padded = np.zeros((1, K, D), dtype=np.float32)
                    padded[0, :k] = r.features
                    A["status"][row] = row_status(padded)[0]
                    A["features"][row] = to_float16(padded[0])
                    A["boxes"][row] = 0
                    A["boxes"][row, :k] = r.boxes
                    A["n_boxes"][row] = k
                    A["size"][row] = (r.width, r.height)
                done_now += len(chunk)
        if unreadable:
            raise DataError(image_dir, list_problems("unreadable", unreadable, image_dir),
                            "fetch or regenerate those images, or remove them from the image list")
        raise_for_status(np.asarray(A["status"]), names, out_npy, "image",
                         f"check the detector weights ({det.weights_desc}) and the images")
        n_boxes, size = np.array(A["n_boxes"]), np.array(A["size"])
        seconds = time.perf_counter() - t0
        meta = dict(settings, kind="regions", shape=[n, K, D], dtype="float16", boxes_file=out_boxes.name,
                    box_format="x1,y1,x2,y2 pixels of the original image, float32",
                    image_list=str(image_list), torch_version=torch.__version__, config_file=config_file)
        write_index(tmp_index, names, meta, columns={"n_boxes": n_boxes, "width": size[:, 0], "height": size[:, 1]})
        resumed = w.resumed
        w.commit()
    ips = done_now / max(seconds, 1e-9)
    log(f"[regions] wrote {out_npy} ({n}, {K}, {D}) float16 + {out_boxes.name}, {n_boxes.mean():.1f} boxes/image "
        f"in {seconds:.1f}s, {ips:.2f} images/s" + (f" ({resumed} chunks resumed)" if resumed else ""))
    return {"n_images": n, "shape": (n, K, D), "mean_boxes": float(n_boxes.mean()), "weights_desc": det.weights_desc,
            "device": dev, "seconds": seconds, "images_per_s": ips, "resumed_chunks": resumed,
            "npy": str(out_npy), "boxes": str(out_boxes), "index": str(out_index)}


def read_given_boxes(path: Path, names: list[str], max_boxes: int) -> dict[str, list[list[float]]]:
    """The boxes of every image of ``names`` from a JSON file ``{image: [[x1, y1, x2, y2], ...]}``,
    checked: every image present, 1..``max_boxes`` boxes each, ``x1 < x2``, ``y1 < y2``, no
    negative coordinate. (Boxes beyond the image are clipped by the RoI pooling.)"""
    if not path.is_file():
        raise DataError(path, "the given-boxes file does not exist", "re-run the rule that writes it (for the "
                        "grounded set: generate_grounded), or drop `boxes: given` from the feature set")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(path, f"not a JSON file of boxes ({err})", "write {image: [[x1, y1, x2, y2], ...]}") from err
    if not isinstance(data, dict):
        raise DataError(path, "not a JSON object of image -> boxes", "write {image: [[x1, y1, x2, y2], ...]}")
    missing = [n for n in names if n not in data]
    if missing:
        raise DataError(path, list_problems("without boxes", missing, path), "give boxes for every image of the list")
    bad = []
    for name in names:
        b = np.asarray(data[name], dtype=np.float64)
        if (b.ndim != 2 or b.shape[1] != 4 or not 1 <= len(b) <= max_boxes or not np.isfinite(b).all()
                or (b < 0).any() or (b[:, 2] <= b[:, 0]).any() or (b[:, 3] <= b[:, 1]).any()):
            bad.append(f"{name} ({data[name]!r:.80})")
    if bad:
        raise DataError(path, f"{len(bad)} image(s) with bad boxes, e.g. {'; '.join(bad[:5])}",
                        f"give 1..{max_boxes} boxes x1 < x2, y1 < y2 (pixels, >= 0) per image, or raise max_boxes")
    return {n: [list(map(float, box)) for box in data[n]] for n in names}
