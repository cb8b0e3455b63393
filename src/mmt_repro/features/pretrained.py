"""Official pre-extracted features loaded into the package's own stores.

:func:`import_pretrained` converts (in resumable chunks, float16, with the same checks as
extraction) three published formats into the layouts of :mod:`mmt_repro.features.store`:

``kind="resnet50"`` -- Multi30k ResNet-50 features, one ``.npy`` per split, rows in the order of
  the split's official image list (Multi30k ``image_splits/<split>.txt``):

  * ``(N, 2048)`` pool5/avgpool -> store ``(N, 1, 2048)``, layer ``pool5``;
  * ``(N, 1024, H, W)`` (channels first, as nmtpytorch/pysimt write grids), ``(N, H, W, 1024)``
    or ``(N, H*W, 1024)`` res4f -> ``(N, H*W, 1024)`` with row ``i * W + j`` = grid cell (i, j)
    (as :mod:`~mmt_repro.features.extractors`), layer ``res4f``; 2048-channel grids likewise
    give layer ``res5c``;
  * ``layer="pool5"`` asked of a res5c grid averages the grid over its cells -> ``(N, 1, 2048)``
    (ResNet's pool5 *is* that mean of the res5c_relu map; a release that L2-normalised the
    grid gives the mean of the normalised cells, which the index's metadata says).

  ``src`` is the split's file, or a folder holding it, directly or in one sub-folder (an archive
  unpacked with its top folder). The split's file is found by name, under the split's own name
  or a release's spelling of it (:data:`SPLIT_ALIASES`): ``<split>.npy``; nmtpytorch/pysimt's
  ``<split>-resnet50-<layer>[-r256-c256][-l2norm].npy`` (pysimt's Zenodo release 4298396 holds
  ``resnet50-256x256/<split>-resnet50-res5c_relu-r256-c256-l2norm.npy``); LIUM's WMT17
  ``flickr30k_ResNet50_pool5_<split>.npy`` (``test2016``, ``test2017``). Several files of one
  split are told apart by the ``layer`` named in their file name; none or several left is a
  :class:`~mmt_repro.io.DataError` listing what the folder holds.

``kind="butd"`` -- bottom-up-attention region features, one file per split (pysimt's release) or
  one file per image: :mod:`mmt_repro.features.butd`.

``kind="vatex_i3d"`` -- VATEX I3D features, one ``<video id>.npy`` per video in ``src``
  (``(n, 1024)`` or ``(1, n, 1024)``), as a video store ``(N, n_segments, 1024)``: videos
  with more segments keep ``n_segments`` picked evenly (as ``mode="windows"`` extraction),
  shorter ones are zero-padded with their count in the ``n_segments`` column.
  ``n_segments=None`` uses the longest video's count.

Every file named by the list must exist (all missing ones are listed in one
:class:`~mmt_repro.io.DataError`), shapes must agree, and NaN/Inf or float16 overflow is
refused with the offending rows named.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mmt_repro.features.butd import import_butd
from mmt_repro.features.release_files import find_items, no_split_file, split_file
from mmt_repro.features.store import (
    ChunkedWriter,
    names_digest,
    raise_for_status,
    read_item_list,
    row_status,
    to_float16,
    write_index,
)
from mmt_repro.io import DataError, atomic_path

_log = logging.getLogger(__name__)

KINDS = ("resnet50", "butd", "vatex_i3d")


def import_pretrained(
    kind: str,
    src: Path,
    image_list: Path,
    out_npy: Path,
    out_index: Path,
    out_boxes: Path | None = None,
    layer: str | None = None,
    max_boxes: int = 36,
    n_segments: int | None = None,
    chunk_size: int = 2048,
    log: Callable[[str], None] = _log.info,
) -> dict:
    """Convert official features at ``src`` for the items of ``image_list`` (an image or video
    list) into a store; see the module docstring. ``layer`` (resnet50 only) asserts the
    layer read from the file's shape. Returns a summary dict (n, shape, layer/kind, seconds)."""
    if kind not in KINDS:
        raise ValueError(f"unknown pretrained feature kind {kind!r}; valid kinds: {', '.join(KINDS)}")
    if not src or str(src).strip() in ("", "."):
        raise DataError(None, f"no folder of pre-extracted {kind} features is configured",
                        "set the feature set's `src` (datasets.<dataset>.features.<set>.src) to the folder holding them")
    src, image_list, out_npy, out_index = Path(src), Path(image_list), Path(out_npy), Path(out_index)
    if not src.exists():
        raise DataError(src, "pre-extracted features do not exist", "download the official features and set their path")
    t0 = time.perf_counter()
    if kind == "resnet50":
        info = _import_resnet(src, image_list, out_npy, out_index, layer, chunk_size, log)
    elif kind == "butd":
        if out_boxes is None:
            raise ValueError("import_pretrained('butd') needs out_boxes")
        info = import_butd(src, image_list, out_npy, Path(out_boxes), out_index, int(max_boxes), chunk_size, log)
    else:
        info = _import_vatex(src, image_list, out_npy, out_index, n_segments, chunk_size, log)
    info["seconds"] = time.perf_counter() - t0
    log(f"[import] {kind}: wrote {out_npy} {tuple(info['shape'])} float16 from {src} in {info['seconds']:.1f}s")
    return info


def _to_rows(arr: np.ndarray, src: Path) -> tuple[np.ndarray, str, int]:
    """View ``arr`` as ``(N, L, C)`` (no copy where possible); returns the view, layer and grid side."""
    shape = arr.shape
    if arr.ndim == 2 and shape[1] == 2048:
        return arr[:, None, :], "pool5", 1
    if arr.ndim == 3 and shape[2] in (1024, 2048):
        side = int(round(np.sqrt(shape[1])))
        if side * side == shape[1]:
            return arr, ("res4f" if shape[2] == 1024 else ("pool5" if side == 1 else "res5c")), side
    if arr.ndim == 3 and shape[1] in (1024, 2048):
        side = int(round(np.sqrt(shape[2])))
        if side * side == shape[2]:
            return arr.transpose(0, 2, 1), "res4f" if shape[1] == 1024 else "res5c", side
    if arr.ndim == 4 and shape[1] in (1024, 2048) and shape[2] == shape[3]:
        return arr.reshape(shape[0], shape[1], -1).transpose(0, 2, 1), "res4f" if shape[1] == 1024 else "res5c", shape[2]
    if arr.ndim == 4 and shape[3] in (1024, 2048) and shape[1] == shape[2]:
        return arr.reshape(shape[0], -1, shape[3]), "res4f" if shape[3] == 1024 else "res5c", shape[1]
    raise DataError(src, f"unrecognised ResNet-50 feature shape {shape}",
                    "expected (N, 2048) pool5, (N, 1024, 14, 14), (N, 14, 14, 1024) or (N, 196, 1024) res4f")


def _import_resnet(src, image_list, out_npy, out_index, layer, chunk_size, log) -> dict:
    names = read_item_list(image_list)
    if src.is_dir():
        found = split_file(src, image_list.stem, ".npy", layer)
        if found is None:
            raise no_split_file(src, image_list.stem, ".npy")
        src = found
    try:
        raw = np.load(src, mmap_mode="r")
    except Exception as err:
        raise DataError(src, f"cannot read as .npy ({type(err).__name__}: {err})", "download the file again") from err
    rows, found_layer, side = _to_rows(raw, src)
    pooled = layer == "pool5" and found_layer == "res5c"  # ResNet's pool5 = the mean of its res5c_relu map
    if layer is not None and layer != found_layer and not pooled:
        raise DataError(src, f"holds {found_layer} features (shape {raw.shape}) but layer {layer!r} was asked for",
                        "point src at the file of the requested layer")
    if rows.shape[0] != len(names):
        raise DataError(src, f"has {rows.shape[0]} rows but {image_list} has {len(names)} images",
                        "use the features of the same split: the release's rows follow the split's official image "
                        "list (Multi30k image_splits/<split>.txt), one row per line")
    n, L, D = rows.shape
    out_L = 1 if pooled else L
    fingerprint = {"kind": "resnet50", "src": str(src.resolve()), "size": src.stat().st_size,
                   "mtime": src.stat().st_mtime_ns, "names": names_digest(names), "pooled": pooled}
    arrays = {"features": (out_npy, (n, out_L, D), "float16"), "status": (None, (n,), "uint8")}
    step = max(1, min(chunk_size, (256 << 20) // max(L * D * 4, 1)))
    if pooled:
        log(f"[import] {src.name}: pool5 as the mean of its {side} x {side} res5c grid (ResNet's average pool)")
    with atomic_path(out_index) as tmp_index, ChunkedWriter(out_npy, arrays, step, fingerprint, log=log,
                                                            tag="import") as w:
        for _, a, b in w.pending():
            x = np.asarray(rows[a:b], dtype=np.float32)
            if pooled:
                x = x.mean(axis=1, keepdims=True)
            w.arrays["status"][a:b] = row_status(x)
            w.arrays["features"][a:b] = to_float16(x)
        raise_for_status(np.asarray(w.arrays["status"]), names, src, "image", "the file is corrupt: download it again")
        meta = {"kind": "grid", "extractor": "resnet50", "layer": "pool5" if pooled else found_layer,
                "weights": "pretrained", "weights_desc": f"official pre-extracted features {src.name}",
                "source": str(src), "source_shape": list(raw.shape),
                "image_size": int(side * 16) if found_layer == "res4f" else
                (int(side * 32) if found_layer == "res5c" else None), "shape": [n, out_L, D], "dtype": "float16",
                "image_list": str(image_list)}
        if pooled:
            meta["derived"] = (f"mean over the {side} x {side} cells of the file's res5c grid (as normalised in the "
                               "file: an L2-normalised grid gives the mean of unit vectors, not the raw pool5)")
        write_index(tmp_index, names, meta)
        w.commit()
    return {"n": n, "shape": (n, out_L, D), "layer": meta["layer"], "npy": str(out_npy), "index": str(out_index),
            "source": str(src)}


def _vatex_array(path: Path) -> np.ndarray:
    try:
        arr = np.load(path, mmap_mode="r")
    except Exception as err:
        raise DataError(path, f"cannot read as .npy ({type(err).__name__}: {err})", "download it again") from err
    if arr.ndim == 3 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise DataError(path, f"expected (n_segments, D) or (1, n_segments, D) features, found {arr.shape}",
                        "download it again")
    return arr


def _import_vatex(src, video_list, out_npy, out_index, n_segments, chunk_size, log) -> dict:
    from mmt_repro.features.video import pick_evenly

    names = read_item_list(video_list, "video")
    files = find_items(src, names, ".npy", "video")
    shapes = [_vatex_array(f).shape for f in files]
    dims = {s[1] for s in shapes}
    if len(dims) != 1:
        odd = [f"{n} ({s[1]}-d)" for n, s in zip(names, shapes) if s[1] != shapes[0][1]]
        raise DataError(src, f"feature dimensions differ across videos: {shapes[0][1]}-d in {names[0]} but "
                        + ", ".join(odd[:20]), "download the features again from one release")
    D = dims.pop()
    S = int(n_segments) if n_segments else max(s[0] for s in shapes)
    n = len(names)
    fingerprint = {"kind": "vatex_i3d", "src": str(src.resolve()), "names": names_digest(names), "S": S, "D": D}
    arrays = {"features": (out_npy, (n, S, D), "float16"), "n_segments": (None, (n,), "int32"),
              "source_segments": (None, (n,), "int32"), "status": (None, (n,), "uint8")}
    with atomic_path(out_index) as tmp_index, ChunkedWriter(out_npy, arrays, chunk_size, fingerprint, log=log,
                                                            tag="import", what="videos") as w:
        A = w.arrays
        for _, a, b in w.pending():
            for row in range(a, b):
                x = np.asarray(_vatex_array(files[row]), dtype=np.float32)
                m = x.shape[0]
                if m > S:
                    x = x[pick_evenly(m, S)]
                padded = np.zeros((S, D), dtype=np.float32)
                padded[:len(x)] = x
                A["status"][row] = row_status(padded[None])[0]
                A["features"][row] = to_float16(padded)
                A["n_segments"][row], A["source_segments"][row] = len(x), m
        raise_for_status(np.asarray(A["status"]), names, src, "video", "those files are corrupt: download them again")
        counts, source = np.array(A["n_segments"]), np.array(A["source_segments"])
        meta = {"kind": "video", "extractor": "i3d", "weights": "pretrained", "feature_dim": int(D),
                "weights_desc": f"official pre-extracted VATEX I3D features {src}", "source": str(src),
                "n_segments": S, "sampled_videos": int((source > S).sum()), "shape": [n, S, D], "dtype": "float16",
                "video_list": str(video_list)}
        write_index(tmp_index, names, meta, key="video", columns={"n_segments": counts, "source_segments": source})
        w.commit()
    return {"n": n, "shape": (n, S, int(D)), "sampled": int((source > S).sum()), "npy": str(out_npy),
            "index": str(out_index)}
