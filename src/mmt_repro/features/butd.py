"""Bottom-up-attention region features (``import_pretrained("butd")``, rule import_regions) into a
region store (:class:`~mmt_repro.features.store.RegionStore`), from either published layout:

  * **one file per split** (pysimt's release, ``<split>_obj36.npz``, ``valid_obj36.npz`` for
    val; read by pysimt's ``ObjectDetectionsDataset``): ``features`` ``(N, R, D)``,
    ``boxes_and_areas`` ``(N, R, >=4)`` (the first four columns x1, y1, x2, y2), ``order``
    ``(N,)``. Rows are mapped to the image list through ``order`` when it names the images
    (file names or stems, or the images' numeric Flickr/COCO ids); ``order`` holding the row
    positions 0..N-1, or absent, means the rows follow the image list, which is how pysimt reads
    them (row ``i`` for sentence ``i``). Boxes in pixels need ``image_w``/``image_h`` per row;
    boxes within [0, 1] are taken as normalised by the image size (stored with size 1 x 1, so
    their geometry is the same); pixel boxes without sizes take the image size from the boxes'
    extent, which the index's metadata says. A count that does not fit the image list is a
    :class:`~mmt_repro.io.DataError` naming the file and the fix.
  * **one file per image** (bottom-up-attention.pytorch's ``extract_features.py``:
    ``<image stem>.npz``), in the directory ``src``, found as ``<image name>.npz``,
    ``<image stem>.npz`` or, for COCO names (``COCO_<split>_<12 digits>``),
    ``<integer id>.npz``. Keys (either spelling): features ``features``/``x`` (n, D) -- or
    (D, n), recognised by ``D`` = 2048 --, boxes ``boxes``/``bbox`` (n, 4) x1, y1, x2, y2
    pixels, ``num_boxes``/``num_bbox`` (optional), ``image_w``/``image_h``.

  Written as a region store (``out_boxes`` needed) padded to ``max_boxes`` slots; an image
  with more boxes keeps the first ``max_boxes`` (the files list them by confidence) and the
  import log counts them.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from mmt_repro.features.release_files import COCO, find_items, split_file
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


def import_butd(src, image_list, out_npy, out_boxes, out_index, K, chunk_size, log) -> dict:
    """One file per split (pysimt's release) when ``src`` is that file or a folder holding the
    split's ``<split>_obj36.npz``; else one file per image."""
    per_split = src if src.is_file() else split_file(src, image_list.stem, ".npz")
    if per_split is not None:
        return _import_butd_split(per_split, image_list, out_npy, out_boxes, out_index, K, chunk_size, log)
    return _import_butd_per_image(src, image_list, out_npy, out_boxes, out_index, K, chunk_size, log)


def _import_butd_per_image(src, image_list, out_npy, out_boxes, out_index, K, chunk_size, log) -> dict:
    names = read_item_list(image_list)
    files = find_items(src, names, ".npz", "image")
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


class _NpzArray:
    """One array of an ``.npz`` read in row ranges without loading the whole of it: the member is
    streamed (stored or deflated alike) from its start, forward, and re-opened for a range that
    lies behind the stream's position."""

    def __init__(self, path: Path, key: str):
        self.path, self.member = path, f"{key}.npy"
        try:
            self._zip = zipfile.ZipFile(path)
            self._open()
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
            raise DataError(path, f"cannot read {key!r} ({type(err).__name__}: {err})", "download the file again") from err
        if self.dtype.hasobject or self.fortran:
            raise DataError(path, f"{key!r} is stored as {'Python objects' if self.dtype.hasobject else 'Fortran order'}",
                            "expected a plain numeric array (np.savez of a C-ordered array)")
        self.row_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize

    def _open(self) -> None:
        self._stream = self._zip.open(self.member)
        version = np.lib.format.read_magic(self._stream)
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        self.shape, self.fortran, self.dtype = reader(self._stream)
        self._pos = 0

    def rows(self, a: int, b: int) -> np.ndarray:
        """Rows ``a:b`` as an array of the file's dtype."""
        if a < self._pos:
            self._stream.close()
            self._open()
        while self._pos < a:  # skip forward in blocks of at most 64 MB
            step = min(a - self._pos, max(1, (64 << 20) // max(self.row_bytes, 1)))
            self._read(step)
        return self._read(b - a)

    def _read(self, n: int) -> np.ndarray:
        want = n * self.row_bytes
        data = self._stream.read(want)
        if len(data) != want:
            raise DataError(self.path, f"{self.member} ends before row {self._pos + n} of {self.shape[0]}: the file is "
                            "truncated", "download it again")
        self._pos += n
        return np.frombuffer(data, dtype=self.dtype).reshape((n, *self.shape[1:]))

    def close(self) -> None:
        self._stream.close()
        self._zip.close()


def _small(z, key):
    """A small array of the .npz (order, sizes, counts), or None when the file lacks it."""
    if key not in z.files:
        return None
    try:
        return np.asarray(z[key])
    except ValueError as err:  # an object array (pickled): refused unread
        raise DataError(None, f"{key!r} is stored as Python objects ({err})", "expected a plain array") from err


def _image_id(name: str) -> int | None:
    """The numeric id of a Flickr30k (``1000092795.jpg``) or COCO (``COCO_val2014_000000398076.jpg#657409``)
    image name; None for any other."""
    stem = _stem(name)
    m = COCO.match(stem)
    if m:
        return int(m.group(1))
    return int(stem) if stem.isdigit() else None


def _stem(name: str) -> str:
    """An image name without folder, extension or Multi30k's ``#<caption id>`` suffix."""
    base = str(name).strip().replace("\\", "/").rsplit("/", 1)[-1].split("#", 1)[0]
    return base.rsplit(".", 1)[0] if "." in base else base


def _rows_of_images(order, n_rows: int, names: list[str], path: Path, image_list: Path) -> tuple[np.ndarray, str]:
    """The file's row of every image of the list, and how it was found (for the log and index)."""
    def by_position(how: str):
        if n_rows != len(names):
            raise DataError(path, f"has {n_rows} rows but {image_list} has {len(names)} images, and {how}",
                            "use the release's file of the same split: its rows follow the split's official image "
                            "list (Multi30k image_splits/<split>.txt), one row per line")
        return np.arange(n_rows, dtype=np.int64)

    if order is None:
        return by_position("the file has no `order` key to map them"), "no `order` key: rows in image-list order"
    order = np.asarray(order).reshape(-1)
    if order.size != n_rows:
        raise DataError(path, f"`order` has {order.size} entries but `features` has {n_rows} rows",
                        "the file is corrupt or not the release: download it again")
    if order.dtype.kind in "US":  # image names
        keys = [_stem(str(x)) for x in order.tolist()]
        row_of = {k: i for i, k in enumerate(keys)}
        if len(row_of) != len(keys):
            raise DataError(path, "`order` names an image twice", "the file is corrupt: download it again")
        missing = [n for n in names if _stem(n) not in row_of]
        if missing:
            raise DataError(path, list_problems("image(s) of the list not named by `order` in", missing, path),
                            f"use the release's file of the split of {image_list}")
        return np.array([row_of[_stem(n)] for n in names], dtype=np.int64), "mapped by the image names in `order`"
    if order.dtype.kind not in "iu":
        raise DataError(path, f"`order` is of dtype {order.dtype}: neither image names nor integers",
                        "expected pysimt's release (download it again)")
    values = order.astype(np.int64)
    if np.array_equal(np.sort(values), np.arange(n_rows)):  # row positions
        how = "`order` holds the row positions: rows in image-list order (as pysimt reads them)"
        if not np.array_equal(values, np.arange(n_rows)):
            how = ("`order` is a permutation of the row positions; rows taken in file order, as pysimt's reader "
                   "takes them (it uses only the size of `order`)")
        return by_position("`order` holds row positions"), how
    ids = [_image_id(n) for n in names]
    row_of = {int(v): i for i, v in enumerate(values)}
    if all(i is not None for i in ids) and len(row_of) == len(values):
        missing = [n for n, i in zip(names, ids) if i not in row_of]
        if not missing:
            return np.array([row_of[i] for i in ids], dtype=np.int64), "mapped by the image ids in `order`"
        if len(missing) < len(names):
            raise DataError(path, list_problems("image(s) of the list whose id is not in `order` of", missing, path),
                            f"use the release's file of the split of {image_list}")
    raise DataError(path, f"`order` holds integers ({', '.join(map(str, values[:5].tolist()))}, ...) that are neither the "
                    f"row positions 0..{n_rows - 1} nor the numeric ids of the images of {image_list}",
                    "check that the file is the release's file of this split")


def _import_butd_split(path, image_list, out_npy, out_boxes, out_index, K, chunk_size, log) -> dict:
    names = read_item_list(image_list)
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = list(z.files)
            order = _small(z, "order")
            width, height = _small(z, "image_w"), _small(z, "image_h")
            counts = next((_small(z, k) for k in ("num_boxes", "num_bbox") if k in z.files), None)
    except DataError as err:
        raise DataError(path, err.problem, err.fix) from err
    except Exception as err:
        raise DataError(path, f"cannot read as .npz ({type(err).__name__}: {err})", "download it again") from err
    feat_key = next((k for k in ("features", "x") if k in keys), None)
    box_key = next((k for k in ("boxes_and_areas", "boxes", "bbox") if k in keys), None)
    if feat_key is None or box_key is None:
        raise DataError(path, f"lacks {'features' if feat_key is None else 'boxes_and_areas'} (has {keys})",
                        "expected pysimt's per-split bottom-up-attention file (features, boxes_and_areas, order)")
    feats, boxes = _NpzArray(path, feat_key), _NpzArray(path, box_key)
    try:
        if len(feats.shape) != 3 or len(boxes.shape) != 3 or boxes.shape[:2] != feats.shape[:2] or boxes.shape[2] < 4:
            raise DataError(path, f"inconsistent shapes: {feat_key} {feats.shape}, {box_key} {boxes.shape}",
                            "expected features (N, R, D) and boxes (N, R, 4 or more); download it again")
        n_rows, R, D = feats.shape
        for what, arr in (("image_w", width), ("image_h", height), ("num_boxes", counts)):
            if arr is not None and arr.reshape(-1).size != n_rows:
                raise DataError(path, f"`{what}` has {arr.size} entries for {n_rows} rows", "download it again")
        src_rows, how = _rows_of_images(order, n_rows, names, path, image_list)
        log(f"[import] {path.name}: {n_rows} rows of {R} regions x {D}; {how}")
        n = len(names)
        per_row = np.full(n_rows, R, dtype=np.int64) if counts is None else np.minimum(counts.reshape(-1), R)
        k_of = np.minimum(per_row[src_rows], K)
        fingerprint = {"kind": "butd-split", "src": str(path.resolve()), "size": path.stat().st_size,
                       "mtime": path.stat().st_mtime_ns, "names": names_digest(names), "K": K, "D": D}
        arrays = {"features": (out_npy, (n, K, D), "float16"), "boxes": (out_boxes, (n, K, 4), "float32"),
                  "status": (None, (n,), "uint8")}
        step = max(1, min(chunk_size, (256 << 20) // max(R * D * 4, 1)))
        with atomic_path(out_index) as tmp_index, ChunkedWriter(out_npy, arrays, step, fingerprint, log=log,
                                                                tag="import") as w:
            A = w.arrays
            for _, a, b in w.pending():
                want = src_rows[a:b]
                lo, hi = int(want.min()), int(want.max()) + 1
                block_f = feats.rows(lo, hi)
                block_b = boxes.rows(lo, hi)
                for j, r in enumerate(want - lo):
                    row, k = a + j, int(k_of[a + j])
                    padded = np.zeros((K, D), dtype=np.float32)
                    padded[:k] = block_f[r, :k]
                    A["status"][row] = row_status(padded[None])[0]
                    A["features"][row] = to_float16(padded)
                    A["boxes"][row] = 0
                    A["boxes"][row, :k] = block_b[r, :k, :4]
            raise_for_status(np.asarray(A["status"]), names, path, "image", "the file is corrupt: download it again")
            boxes_all = np.array(A["boxes"])
            size, box_format = _image_sizes(boxes_all, k_of, width, height, src_rows, path)
            cut = int((per_row[src_rows] > K).sum())
            if cut:
                log(f"[import] {cut} image(s) had more than {K} boxes; kept their first {K}")
            meta = {"kind": "regions", "backend": "butd-pretrained", "weights": "pretrained",
                    "weights_desc": f"official pre-extracted bottom-up-attention features {path.name}",
                    "source": str(path), "layout": "one file per split", "row_order": how, "feature_dim": D,
                    "max_boxes": K, "truncated_images": cut, "shape": [n, K, D], "dtype": "float16",
                    "boxes_file": out_boxes.name, "box_format": box_format, "image_list": str(image_list)}
            write_index(tmp_index, names, meta, columns={"n_boxes": k_of, "width": size[:, 0], "height": size[:, 1]})
            w.commit()
    finally:
        feats.close()
        boxes.close()
    return {"n": n, "shape": (n, K, D), "mean_boxes": float(k_of.mean()) if n else 0.0, "truncated": cut,
            "row_order": how, "box_format": box_format, "npy": str(out_npy), "boxes": str(out_boxes),
            "index": str(out_index)}


def _image_sizes(boxes, k_of, width, height, src_rows, path) -> tuple[np.ndarray, str]:
    """(width, height) of every image and the index's words for the box format: the file's sizes;
    1 x 1 for boxes normalised to [0, 1]; else the boxes' extent (the file gives no sizes)."""
    real = np.arange(boxes.shape[1])[None, :] < k_of[:, None]
    b = boxes[real]
    if len(b) and ((b[:, 2] < b[:, 0] - 1e-3).any() or (b[:, 3] < b[:, 1] - 1e-3).any()):
        raise DataError(path, "its boxes are not x1, y1, x2, y2 (some have x2 < x1 or y2 < y1)",
                        "expected pysimt's boxes_and_areas (x1, y1, x2, y2, area); check the release")
    if width is not None and height is not None:
        size = np.stack([width.reshape(-1)[src_rows], height.reshape(-1)[src_rows]], axis=1).astype(np.float32)
        return size, "x1,y1,x2,y2 pixels of the original image (sizes from the file), float32"
    if len(b) == 0 or (b.min() >= -1e-3 and b.max() <= 1.0 + 1e-3):
        return np.ones((len(boxes), 2), np.float32), "x1,y1,x2,y2 normalised to [0, 1] by the release (size 1 x 1)"
    extent = np.where(real[..., None], boxes[..., 2:4], 0).max(axis=1)
    return np.maximum(np.ceil(extent), 1).astype(np.float32), (
        "x1,y1,x2,y2 pixels; the file gives no image sizes: width and height are the boxes' extent (an estimate)")
