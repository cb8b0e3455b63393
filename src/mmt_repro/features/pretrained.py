"""Official pre-extracted features loaded into the package's own stores.

:func:`import_pretrained` converts (in resumable chunks, float16, with the same checks as
extraction) three published formats into the layouts of :mod:`mmt_repro.features.store`:

``kind="resnet50"`` -- the Multi30k ResNet-50 features (one ``.npy`` per split, rows in the
  order of the split's official image list):

  * ``(N, 2048)`` pool5/avgpool -> store ``(N, 1, 2048)``, layer ``pool5``;
  * ``(N, 1024, 14, 14)`` (channels first, as the released ``res4frelu`` files),
    ``(N, 14, 14, 1024)`` or ``(N, 196, 1024)`` res4f -> ``(N, 196, 1024)`` with row
    ``i * W + j`` = grid cell (i, j) (as :mod:`~mmt_repro.features.extractors`), layer
    ``res4f``; 2048-channel grids likewise give layer ``res5c``.

  ``src`` may also be a directory holding ``<stem of image_list>.npy``.

``kind="butd"`` -- bottom-up-attention region features, one ``.npz`` per image in the
  directory ``src``, found as ``<image name>.npz``, ``<image stem>.npz`` or, for COCO names
  (``COCO_<split>_<12 digits>``), ``<integer id>.npz``. Keys (either spelling): features
  ``features``/``x`` (n, D) -- or (D, n), recognised by ``D`` = 2048 --, boxes ``boxes``/``bbox``
  (n, 4) x1, y1, x2, y2 pixels, ``num_boxes``/``num_bbox`` (optional), ``image_w``/
  ``image_h``. Written as a region store (``out_boxes`` needed) padded to ``max_boxes``
  slots; an image with more boxes keeps the first ``max_boxes`` (the files list them by
  confidence) and the import log counts them.

  The pysimt release (``multi30k_butd_features.tar.bz2``) holds one file per *split* instead:
  ``<split>_obj36.npz`` (``src`` the folder holding it, found by the image list's stem, or the
  file itself) with the arrays pysimt's ``ObjectDetectionsDataset`` reads: ``features`` (N, 36,
  D), rows in the split's image-list order, and ``boxes_and_areas`` (N, 36, 5: x1, y1, x2, y2,
  area). Its boxes carry no image size: fractions of the image (all <= 1) are stored with
  width = height = 1, so the normalised geometry is theirs; larger (pixel) values take each
  image's largest x2/y2 as its size, an approximation the index metadata names.

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
import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mmt_repro.features.store import (
    ChunkedWriter,
    list_problems,
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
_COCO = re.compile(r"^COCO_[A-Za-z0-9]+_0*(\d+)$")


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
        info = _import_butd(src, image_list, out_npy, Path(out_boxes), out_index, int(max_boxes), chunk_size, log)
    else:
        info = _import_vatex(src, image_list, out_npy, out_index, n_segments, chunk_size, log)
    info["seconds"] = time.perf_counter() - t0
    log(f"[import] {kind}: wrote {out_npy} {tuple(info['shape'])} float16 from {src} in {info['seconds']:.1f}s")
    return info


def _find(src: Path, name: str, suffix: str) -> Path | None:
    stem = Path(name).stem
    cands = [src / f"{name}{suffix}", src / f"{stem}{suffix}"]
    m = _COCO.match(stem)
    if m:
        cands.append(src / f"{int(m.group(1))}{suffix}")
    return next((c for c in cands if c.is_file()), None)


def _find_all(src: Path, names: list[str], suffix: str, what: str) -> list[Path]:
    found = [_find(src, n, suffix) for n in names]
    missing = [f"{n} (no {n}{suffix} or {Path(n).stem}{suffix})" for n, p in zip(names, found) if p is None]
    if missing:
        raise DataError(src, list_problems("missing pre-extracted", missing, src, what=what),
                        "download the complete official feature release, or remove those items from the list")
    return found  # type: ignore[return-value]


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
        cand = src / f"{image_list.stem}.npy"
        if not cand.is_file():
            raise DataError(src, f"no {cand.name} in this folder", "pass the split's .npy file itself as src")
        src = cand
    try:
        raw = np.load(src, mmap_mode="r")
    except Exception as err:
        raise DataError(src, f"cannot read as .npy ({type(err).__name__}: {err})", "download the file again") from err
    rows, found_layer, side = _to_rows(raw, src)
    if layer is not None and layer != found_layer:
        raise DataError(src, f"holds {found_layer} features (shape {raw.shape}) but layer {layer!r} was asked for",
                        "point src at the file of the requested layer")
    if rows.shape[0] != len(names):
        raise DataError(src, f"has {rows.shape[0]} rows but {image_list} has {len(names)} images",
                        "use the features of the same split (rows follow the official image list order)")
    n, L, D = rows.shape
    fingerprint = {"kind": "resnet50", "src": str(src.resolve()), "size": src.stat().st_size,
                   "mtime": src.stat().st_mtime_ns, "names": names_digest(names)}
    arrays = {"features": (out_npy, (n, L, D), "float16"), "status": (None, (n,), "uint8")}
    step = max(1, min(chunk_size, (256 << 20) // max(L * D * 4, 1)))
    with atomic_path(out_index) as tmp_index, ChunkedWriter(out_npy, arrays, step, fingerprint, log=log,
                                                            tag="import") as w:
        for _, a, b in w.pending():
            x = np.asarray(rows[a:b], dtype=np.float32)
            w.arrays["status"][a:b] = row_status(x)
            w.arrays["features"][a:b] = to_float16(x)
        raise_for_status(np.asarray(w.arrays["status"]), names, src, "image", "the file is corrupt: download it again")
        meta = {"kind": "grid", "extractor": "resnet50", "layer": found_layer, "weights": "pretrained",
                "weights_desc": f"official pre-extracted features {src.name}", "source": str(src),
                "source_shape": list(raw.shape), "image_size": int(side * 16) if found_layer == "res4f" else
                (int(side * 32) if found_layer == "res5c" else None), "shape": [n, L, D], "dtype": "float16",
                "image_list": str(image_list)}
        write_index(tmp_index, names, meta)
        w.commit()
    return {"n": n, "shape": (n, L, D), "layer": found_layer, "npy": str(out_npy), "index": str(out_index)}


def _pick(z, keys: tuple[str, ...]):
    for k in keys:
        if k in z.files:
            return z[k]
    return None


def _read_butd(path: Path, D: int | None) -> tuple[np.ndarray, np.ndarray, int, int]:
    try:
        with np.load(path, allow_pickle=False) as z:
            feats, boxes = _pick(z, ("features", "x")), _pick(z, ("boxes", "bbox"))
            num, w, h = _pick(z, ("num_boxes", "num_bbox")), _pick(z, ("image_w",)), _pick(z, ("image_h",))
            keys = z.files
    except Exception as err:
        raise DataError(path, f"cannot read as .npz ({type(err).__name__}: {err})", "download it again") from err
    lacking = [k for k, v in (("features/x", feats), ("boxes/bbox", boxes), ("image_w", w), ("image_h", h)) if v is None]
    if lacking:
        raise DataError(path, f"lacks {', '.join(lacking)} (has {keys})",
                        "expected bottom-up-attention .npz files with features, boxes, image_w and image_h")
    feats, boxes = np.asarray(feats), np.asarray(boxes, dtype=np.float32)
    if feats.ndim == 2 and feats.shape[1] != (D or 2048) and feats.shape[0] == (D or 2048):
        feats = feats.T  # some releases store (D, n)
    k = int(num) if num is not None else feats.shape[0]
    if feats.ndim != 2 or boxes.shape != (feats.shape[0], 4) or k != feats.shape[0] or (D and feats.shape[1] != D):
        raise DataError(path, f"inconsistent shapes: features {feats.shape}, boxes {boxes.shape}, num_boxes {k}"
                        + (f", other files have {D}-d features" if D else ""), "download it again")
    return feats, boxes, int(w), int(h)


def _butd_split_file(src: Path, image_list: Path) -> Path | None:
    """The per-split pysimt file for ``image_list``: ``src`` itself (an ``.npz`` holding
    ``boxes_and_areas``) or ``src/<stem>_obj36.npz``; None for a folder of per-image files."""
    if src.is_file() and src.suffix == ".npz":
        return src
    cand = src / f"{image_list.stem}_obj36.npz"
    return cand if src.is_dir() and cand.is_file() else None


def _import_butd_split(path, image_list, out_npy, out_boxes, out_index, K, log) -> dict:
    names = read_item_list(image_list)
    try:
        with np.load(path, allow_pickle=False) as z:
            if not {"features", "boxes_and_areas"} <= set(z.files):
                raise DataError(path, f"lacks features/boxes_and_areas (has {z.files})",
                                "expected pysimt's <split>_obj36.npz (multi30k_butd_features.tar.bz2)")
            feats, geo = np.asarray(z["features"]), np.asarray(z["boxes_and_areas"], dtype=np.float32)
    except DataError:
        raise
    except Exception as err:
        raise DataError(path, f"cannot read as .npz ({type(err).__name__}: {err})", "download it again") from err
    if feats.ndim != 3 or geo.shape[:2] != feats.shape[:2] or geo.shape[2] < 4:
        raise DataError(path, f"inconsistent shapes: features {feats.shape}, boxes_and_areas {geo.shape}",
                        "download the release again")
    if feats.shape[0] != len(names):
        raise DataError(path, f"has {feats.shape[0]} rows but {image_list} has {len(names)} images",
                        "use the file of the same split (rows follow the official image list order)")
    n, k0, D = feats.shape
    k = min(k0, K)
    boxes = geo[:, :k, :4]
    fractions = bool(np.all(boxes <= 1.0 + 1e-6))
    if fractions:
        size = np.ones((n, 2), dtype=np.int32)
    else:
        size = np.stack([np.ceil(boxes[..., 2].max(axis=1)), np.ceil(boxes[..., 3].max(axis=1))], 1).astype(np.int32)
    out_feats = np.zeros((n, K, D), dtype=np.float32)
    out_feats[:, :k] = feats[:, :k]
    status = row_status(out_feats)
    raise_for_status(status, names, path, "image", "the file is corrupt: download it again")
    padded = np.zeros((n, K, 4), dtype=np.float32)
    padded[:, :k] = boxes
    with atomic_path(out_npy) as tmp_npy, atomic_path(out_boxes) as tmp_boxes, atomic_path(out_index) as tmp_index:
        np.save(tmp_npy, to_float16(out_feats))
        np.save(tmp_boxes, padded)
        meta = {"kind": "regions", "backend": "butd-pretrained", "weights": "pretrained",
                "weights_desc": f"official pre-extracted bottom-up-attention features {path.name} (pysimt, one file "
                                "per split)", "source": str(path), "feature_dim": int(D), "max_boxes": K,
                "truncated_images": int(n if k0 > K else 0), "shape": [n, K, int(D)], "dtype": "float16",
                "boxes_file": Path(out_boxes).name,
                "box_format": ("x1,y1,x2,y2 as fractions of the image (width = height = 1), float32" if fractions else
                               "x1,y1,x2,y2 pixels; width/height = each image's largest x2/y2 (the release has no "
                               "image sizes), float32"),
                "image_list": str(image_list)}
        write_index(tmp_index, names, meta, columns={"n_boxes": np.full(n, k, dtype=np.int32), "width": size[:, 0],
                                                     "height": size[:, 1]})
    log(f"[import] {path.name}: {n} images x {k} regions of {k0}")
    return {"n": n, "shape": (n, K, int(D)), "mean_boxes": float(k), "truncated": int(n if k0 > K else 0),
            "npy": str(out_npy), "boxes": str(out_boxes), "index": str(out_index)}


def _import_butd(src, image_list, out_npy, out_boxes, out_index, K, chunk_size, log) -> dict:
    split_file = _butd_split_file(src, image_list)
    if split_file is not None:
        return _import_butd_split(split_file, image_list, out_npy, out_boxes, out_index, K, log)
    names = read_item_list(image_list)
    files = _find_all(src, names, ".npz", "image")
    D = int(_read_butd(files[0], None)[0].shape[1])
    n = len(names)
    fingerprint = {"kind": "butd", "src": str(src.resolve()), "names": names_digest(names), "K": K, "D": D}
    arrays = {"features": (out_npy, (n, K, D), "float16"), "boxes": (out_boxes, (n, K, 4), "float32"),
              "n_boxes": (None, (n,), "int32"), "size": (None, (n, 2), "int32"), "status": (None, (n,), "uint8"),
              "truncated": (None, (n,), "uint8")}
    with atomic_path(out_index) as tmp_index, ChunkedWriter(out_npy, arrays, chunk_size, fingerprint, log=log,
                                                            tag="import") as w:
        A = w.arrays
        for _, a, b in w.pending():
            for row in range(a, b):
                feats, boxes, width, height = _read_butd(files[row], D)
                k = min(len(feats), K)
                padded = np.zeros((K, D), dtype=np.float32)
                padded[:k] = feats[:k]
                A["status"][row] = row_status(padded[None])[0]
                A["features"][row] = to_float16(padded)
                A["boxes"][row] = 0
                A["boxes"][row, :k] = boxes[:k]
                A["n_boxes"][row], A["size"][row], A["truncated"][row] = k, (width, height), len(feats) > K
        raise_for_status(np.asarray(A["status"]), names, src, "image", "those files are corrupt: download them again")
        n_boxes, size, cut = np.array(A["n_boxes"]), np.array(A["size"]), int(np.asarray(A["truncated"]).sum())
        if cut:
            log(f"[import] {cut} image(s) had more than {K} boxes; kept their first {K}")
        meta = {"kind": "regions", "backend": "butd-pretrained", "weights": "pretrained",
                "weights_desc": f"official pre-extracted bottom-up-attention features {src}", "source": str(src),
                "feature_dim": D, "max_boxes": K, "truncated_images": cut, "shape": [n, K, D], "dtype": "float16",
                "boxes_file": out_boxes.name, "box_format": "x1,y1,x2,y2 pixels of the original image, float32",
                "image_list": str(image_list)}
        write_index(tmp_index, names, meta, columns={"n_boxes": n_boxes, "width": size[:, 0], "height": size[:, 1]})
        w.commit()
    return {"n": n, "shape": (n, K, D), "mean_boxes": float(n_boxes.mean()), "truncated": cut,
            "npy": str(out_npy), "boxes": str(out_boxes), "index": str(out_index)}


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
    files = _find_all(src, names, ".npy", "video")
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
