"""Feature stores: row-aligned float16 ``.npy`` arrays plus a Parquet index, written in
resumable chunks and memory-mapped for training.

Every view of an image or video the papers read is stored the same way: row ``i`` of every
array is line ``i`` of the split's image (or video) list.

=========================  ===============================  ===================================
store (writer)             arrays                           index columns
=========================  ===============================  ===================================
grid / pooled image        ``npy`` (N, L, D) float16        ``row``, ``image``
(:func:`~mmt_repro.features.
 grid.extract_features`,
 ``import_pretrained("resnet50")``)
regions                    ``npy`` (N, K, D) float16,       ``row``, ``image``, ``n_boxes``,
(:func:`~mmt_repro.features.   ``boxes`` (N, K, 4) float32      ``width``, ``height``
regions.extract_regions`,  (x1, y1, x2, y2 in pixels of
``import_pretrained        the original image); slots
("butd")``)                ``n_boxes..K-1`` are zeros
video segments             ``npy`` (N, S, D) float16;       ``row``, ``video``, ``n_segments``
(:func:`~mmt_repro.features.   slots ``n_segments..S-1`` are
video.extract_video_        zeros
features`,
``import_pretrained
("vatex_i3d")``)
=========================  ===============================  ===================================

The index also carries the store's metadata (extractor or backend, weights and their
description, sizes, shape, dtype, ...) as JSON under the Parquet schema metadata key
``mmt_repro``. :class:`FeatureStore` memory-maps any of these (``lengths`` holds
``n_boxes``/``n_segments`` when present); :class:`RegionStore` adds the boxes and their
normalised geometry (:func:`box_geometry`).

Writing (:class:`ChunkedWriter`): arrays are filled through :func:`numpy.lib.format.open_memmap`
on hidden partial files next to the outputs (``.<name>.partial.npy``) one chunk of rows at a
time; after each chunk the arrays are flushed and a progress marker
``.<name>.progress.json`` (a fingerprint of the inputs and settings, and the finished chunks)
is replaced atomically. An interrupted run (killed job, crash, Ctrl-C) leaves both behind and
the next run with the same fingerprint skips the finished chunks; a different fingerprint
discards them. Outputs are renamed into place only once every chunk is done and checked (no
NaN/Inf, nothing overflowing float16); the index is renamed last. Bad input
(:class:`~mmt_repro.io.DataError`) removes the partial files, since re-running cannot help.

:func:`~mmt_repro.features.standardize.standardize_store` is an optional step: per-dimension
mean/std computed (in chunks) over a store -- the training split's -- and applied to any store
with the same layout (padding slots excluded from the statistics and left at zero).

Related modules: :mod:`mmt_repro.features.grid` (the ResNet-50 grid/pooled extractor),
:mod:`mmt_repro.features.images` (the image checks every image extractor shares) and
:mod:`mmt_repro.features.standardize`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mmt_repro.io import DataError, atomic_write, read_lines

_log = logging.getLogger(__name__)

META_KEY = b"mmt_repro"
FLOAT16_MAX = float(np.finfo(np.float16).max)
NAME_COLUMNS = ("image", "video")
LENGTH_COLUMNS = ("n_boxes", "n_segments")

# Row status flags kept (resumably) while a store is written.
ROW_OK, ROW_NONFINITE, ROW_OVERFLOW = 0, 1, 2


def read_item_list(path: Path, what: str = "image") -> list[str]:
    """Names (one per line, stripped) of an image or video list; empty lines and lists fail."""
    names = [line.strip() for line in read_lines(path, allow_empty_lines=False)]
    if not names:
        raise DataError(path, f"{what} list is empty", f"re-run the rule that writes the {what} list")
    return names


def list_problems(kind: str, problems: list[str], where: Path, limit: int = 50, what: str = "image") -> str:
    """``"<n> <kind> <what>(s) under <where>:"`` and the first ``limit`` problems, one per line."""
    shown = problems[:limit]
    more = f"\n    ... and {len(problems) - limit} more" if len(problems) > limit else ""
    return f"{len(problems)} {kind} {what}(s) under {where}:\n    " + "\n    ".join(shown) + more


def names_digest(names: list[str]) -> str:
    return hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()


def weights_fingerprint(weights: str) -> str:
    """``weights`` plus size and mtime when it is a local file (a replaced checkpoint restarts)."""
    path = Path(str(weights))
    if path.is_file():
        st = path.stat()
        return f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"
    return str(weights)


def row_status(feats: np.ndarray) -> np.ndarray:
    """Per row of ``feats`` (B, ...): ROW_OK, ROW_NONFINITE (NaN/Inf) or ROW_OVERFLOW (> float16 max)."""
    flat = feats.reshape(feats.shape[0], -1)
    finite = np.isfinite(flat).all(axis=1)
    big = np.abs(np.where(np.isfinite(flat), flat, 0)).max(axis=1, initial=0) > FLOAT16_MAX
    out = np.full(feats.shape[0], ROW_OK, dtype=np.uint8)
    out[big] = ROW_OVERFLOW
    out[~finite] = ROW_NONFINITE
    return out


def to_float16(x: np.ndarray) -> np.ndarray:
    """Cast to float16 without overflow warnings (:func:`row_status` reports overflowing rows)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x).astype(np.float16)


def raise_for_status(status: np.ndarray, names: list[str], out: Path, what: str, fix: str) -> None:
    """DataError naming every row whose features are NaN/Inf or overflow float16."""
    bad = np.flatnonzero(status != ROW_OK)
    if not len(bad):
        return
    labels = [f"{names[i]} ({'NaN/Inf' if status[i] == ROW_NONFINITE else 'exceeds float16 range'})" for i in bad]
    raise DataError(
        out,
        f"features of {len(bad)} {what}(s) are not finite or overflow float16: "
        + ", ".join(labels[:20]) + (" ..." if len(labels) > 20 else ""),
        fix,
    )



# --------------------------------------------------------------------------------------
# Resumable chunked writer
# --------------------------------------------------------------------------------------


class ChunkedWriter:
    """Row-aligned arrays filled chunk by chunk on partial files, resumable after interruption.

    ``arrays`` maps a key to ``(final_path, shape, dtype)``; a ``final_path`` of ``None``
    makes a scratch array (per-row counts, status flags) that lives only next to the partial
    files and is dropped by :meth:`commit`. All shapes share the first dimension N.
    ``fingerprint`` (JSON-able) identifies the inputs and settings: a partial run is resumed
    only when it matches. Use as a context manager: leaving it with a
    :class:`~mmt_repro.io.DataError` discards the partial files, any other exception keeps
    them for the next run; :meth:`commit` renames the finished arrays into place.
    """

    def __init__(
        self,
        main: Path,
        arrays: dict[str, tuple[Path | None, tuple[int, ...], str]],
        chunk_rows: int,
        fingerprint: dict,
        log: Callable[[str], None] = _log.info,
        tag: str = "features",
        what: str = "images",
    ):
        self.main = Path(main)
        self.log, self.tag, self.what = log, tag, what
        self.spec = {k: (None if p is None else Path(p), tuple(int(x) for x in s), np.dtype(d).str)
                     for k, (p, s, d) in arrays.items()}
        sizes = {s[0] for _, s, _ in self.spec.values()}
        if len(sizes) != 1:
            raise ValueError(f"arrays disagree on the number of rows: {sizes}")
        self.n = sizes.pop()
        self.chunk_rows = max(1, int(chunk_rows))
        self.n_chunks = (self.n + self.chunk_rows - 1) // self.chunk_rows
        self.progress_path = self.main.parent / f".{self.main.name}.progress.json"
        self.partial = {
            k: (p.parent / f".{p.name}.partial.npy" if p is not None else self.main.parent / f".{self.main.name}.{k}.partial.npy")
            for k, (p, _, _) in self.spec.items()
        }
        blob = json.dumps({"fingerprint": fingerprint, "arrays": {k: [str(p), list(s), d] for k, (p, s, d) in self.spec.items()},
                           "chunk_rows": self.chunk_rows}, sort_keys=True, default=str)
        self.digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()
        self.done: set[int] = set()
        self.arrays: dict[str, np.memmap] = {}
        self.resumed = 0
        self.main.parent.mkdir(parents=True, exist_ok=True)
        self._open()

    # -- setup ---------------------------------------------------------------------------
    def _open(self) -> None:
        if self.progress_path.is_file() and all(p.is_file() for p in self.partial.values()):
            try:
                progress = json.loads(self.progress_path.read_text(encoding="utf-8"))
                if progress.get("digest") == self.digest:
                    arrays = {k: np.load(self.partial[k], mmap_mode="r+") for k in self.spec}
                    if all(a.shape == self.spec[k][1] and a.dtype.str == self.spec[k][2] for k, a in arrays.items()):
                        self.arrays = arrays
                        self.done = {int(c) for c in progress.get("done", []) if 0 <= int(c) < self.n_chunks}
                        self.resumed = len(self.done)
                        self.log(f"[{self.tag}] resuming {self.main.name}: {self.resumed}/{self.n_chunks} chunks "
                                 f"already done by an interrupted run ({self.progress_path.name})")
                        return
                    del arrays
                self.log(f"[{self.tag}] discarding partial {self.main.name} from a run with other inputs or settings")
            except (OSError, ValueError) as err:
                self.log(f"[{self.tag}] discarding unreadable partial {self.main.name} ({type(err).__name__}: {err})")
        self._remove_files()
        for k, (_, shape, dtype) in self.spec.items():
            self.arrays[k] = np.lib.format.open_memmap(self.partial[k], mode="w+", dtype=np.dtype(dtype), shape=shape)
        self._write_progress()

    def _write_progress(self) -> None:
        with atomic_write(self.progress_path) as fh:
            json.dump({"digest": self.digest, "n_rows": self.n, "chunk_rows": self.chunk_rows,
                       "n_chunks": self.n_chunks, "done": sorted(self.done)}, fh)

    def _remove_files(self) -> None:
        for p in [*self.partial.values(), self.progress_path]:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()

    # -- use -----------------------------------------------------------------------------
    def __enter__(self) -> ChunkedWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.close()
        elif issubclass(exc_type, DataError):
            self.discard()
        else:
            self.close()
            if self.progress_path.is_file():
                self.log(f"[{self.tag}] interrupted ({exc_type.__name__}); {len(self.done)}/{self.n_chunks} chunks "
                         f"kept in {self.progress_path.parent} for the next run to resume")
        return False

    def pending(self) -> Iterator[tuple[int, int, int]]:
        """``(chunk, start, stop)`` of every chunk not yet done, in order, with progress logs."""
        t0 = time.perf_counter()
        rows_now = 0
        for c in range(self.n_chunks):
            if c in self.done:
                continue
            a, b = c * self.chunk_rows, min(self.n, (c + 1) * self.chunk_rows)
            yield c, a, b
            self.mark_done(c)
            rows_now += b - a
            el = time.perf_counter() - t0
            left = sum(min(self.n, (k + 1) * self.chunk_rows) - k * self.chunk_rows
                       for k in range(self.n_chunks) if k not in self.done)
            rate = rows_now / max(el, 1e-9)
            self.log(f"[{self.tag}] chunk {c + 1}/{self.n_chunks} done: {self.n - left}/{self.n} {self.what}, "
                     f"{rate:.2f} {self.what}/s, ETA {left / max(rate, 1e-9):.0f}s")

    def mark_done(self, chunk: int) -> None:
        for a in self.arrays.values():
            a.flush()
        self.done.add(int(chunk))
        self._write_progress()

    @property
    def complete(self) -> bool:
        return len(self.done) == self.n_chunks

    def close(self) -> None:
        for a in self.arrays.values():
            a.flush()
        self.arrays = {}

    def discard(self) -> None:
        self.arrays = {}
        self._remove_files()

    def commit(self) -> None:
        """Rename every finished array onto its final path and drop scratch arrays and progress."""
        if not self.complete:
            raise RuntimeError(f"{self.main}: {self.n_chunks - len(self.done)} chunks are not done")
        self.close()
        for k, (final, _, _) in self.spec.items():
            if final is not None:
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(self.partial[k], final)
        self._remove_files()


# --------------------------------------------------------------------------------------
# Index
# --------------------------------------------------------------------------------------


def write_index(path: Path, names: list[str], meta: dict, key: str = "image",
                columns: dict[str, np.ndarray] | None = None) -> None:
    """Parquet index: ``row``, the name column ``key`` and extra int32 ``columns``; ``meta`` as JSON."""
    if key not in NAME_COLUMNS:
        raise ValueError(f"name column must be one of {NAME_COLUMNS}, not {key!r}")
    cols = {"row": pa.array(np.arange(len(names), dtype=np.int64)), key: pa.array(names, pa.string())}
    for name, values in (columns or {}).items():
        cols[name] = pa.array(np.asarray(values, dtype=np.int32))
    table = pa.table(cols)
    table = table.replace_schema_metadata({META_KEY: json.dumps(meta, sort_keys=True, default=str).encode("utf-8")})
    pq.write_table(table, path)



def _int_column(table: pa.Table, name: str) -> np.ndarray:
    """An integer column without nulls as a numpy array, read from its buffer: pyarrow's
    ``to_numpy`` imports pandas (0.3 s of every job that opens a store)."""
    col = table.column(name).combine_chunks()
    if not pa.types.is_integer(col.type) or col.null_count:
        return col.to_numpy(zero_copy_only=False)
    width = col.type.bit_width // 8
    kind = "i" if pa.types.is_signed_integer(col.type) else "u"
    return np.frombuffer(col.buffers()[1], dtype=np.dtype(f"{kind}{width}"), count=len(col),
                         offset=col.offset * width).copy()


def read_index(index: Path) -> tuple[list[str], dict[str, np.ndarray], dict, str]:
    """``(names, extra columns, meta, name column)`` of a store index."""
    index = Path(index)
    if not index.is_file():
        raise DataError(index, "feature index does not exist", "re-run the feature extraction rule")
    try:
        # ParquetFile, not pq.read_table: read_table imports pyarrow.dataset and with it pandas
        # (0.3 s of every job that reads a store)
        with pq.ParquetFile(index) as fh:
            table = fh.read()
    except Exception as err:
        raise DataError(index, f"cannot read feature index ({type(err).__name__}: {err})",
                        "delete it and re-run the feature extraction rule") from err
    key = next((k for k in NAME_COLUMNS if k in table.column_names), None)
    if "row" not in table.column_names or key is None:
        raise DataError(index, f"feature index lacks columns row and image/video (has {table.column_names})",
                        "re-run the feature extraction rule")
    rows = _int_column(table, "row")
    if not np.array_equal(rows, np.arange(len(rows))):
        raise DataError(index, "feature index rows are not 0..N-1 in order", "re-run the feature extraction rule")
    raw = (table.schema.metadata or {}).get(META_KEY)
    meta = json.loads(raw.decode("utf-8")) if raw else {}
    extra = {c: _int_column(table, c) for c in table.column_names if c not in ("row", key)}
    return table.column(key).to_pylist(), extra, meta, key


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------


class FeatureStore:
    """Read-only view of a feature ``.npy`` (memory-mapped) and its Parquet index.

    Works for every layout in the module docstring: ``names`` (alias ``images``) are the list
    lines, ``lengths`` the valid slots per row (``n_boxes``/``n_segments``) or ``None`` for
    grid stores, ``columns`` every extra index column, ``meta`` the metadata.
    ``store[row]`` is the padded ``(L, D)`` float32 row; :meth:`mask` says which slots hold
    features; :meth:`batch` (and :meth:`masks`) read many rows at once.
    """

    def __init__(self, npy: Path, index: Path):
        self.npy, self.index = Path(npy), Path(index)
        if not self.npy.is_file():
            raise DataError(self.npy, "feature file does not exist", "re-run the feature extraction rule")
        try:
            self.array = np.load(self.npy, mmap_mode="r")
        except Exception as err:
            raise DataError(self.npy, f"cannot memory-map features ({type(err).__name__}: {err})",
                            "delete it and re-run the feature extraction rule") from err
        if self.array.ndim != 3:
            raise DataError(self.npy, f"expected a 3-d array (N, L, D), found shape {self.array.shape}",
                            "re-run the feature extraction rule")
        self.images, self.columns, self.meta, self.key = read_index(self.index)
        self.names = self.images
        if len(self.images) != self.array.shape[0]:
            raise DataError(self.index, f"index has {len(self.images)} rows but {self.npy} has {self.array.shape[0]}",
                            "the two files come from different runs: re-run the feature extraction rule")
        declared = self.meta.get("shape")
        if declared is not None and list(declared) != list(self.array.shape):
            raise DataError(self.npy, f"array shape {tuple(self.array.shape)} differs from the shape "
                            f"{tuple(declared)} recorded in {self.index}",
                            "the two files come from different runs: re-run the feature extraction rule")
        length_col = next((c for c in LENGTH_COLUMNS if c in self.columns), None)
        self.lengths = None if length_col is None else self.columns[length_col].astype(np.int64)
        if self.lengths is not None and (self.lengths.min(initial=0) < 0 or self.lengths.max(initial=0) > self.array.shape[1]):
            raise DataError(self.index, f"{length_col} outside 0..{self.array.shape[1]}", "re-run the feature extraction rule")
        self._row_of = {name: i for i, name in enumerate(self.images)}

    def __len__(self) -> int:
        return int(self.array.shape[0])

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(int(x) for x in self.array.shape)

    def __getitem__(self, row: int) -> np.ndarray:
        return np.asarray(self.array[row], dtype=np.float32)

    def mask(self, row: int) -> np.ndarray:
        """``(L,)`` bool: True for slots holding features (all True for grid stores)."""
        L = self.array.shape[1]
        if self.lengths is None:
            return np.ones(L, dtype=bool)
        return np.arange(L) < self.lengths[row]

    @staticmethod
    def _row_array(rows) -> np.ndarray:
        r = np.asarray(rows).reshape(-1)
        if r.size == 0:
            return r.astype(np.int64)
        if not np.issubdtype(r.dtype, np.integer):
            raise TypeError(f"rows must be integers, not {r.dtype}")
        return r

    def masks(self, rows) -> np.ndarray:
        """``(len(rows), L)`` bool: :meth:`mask` of every row at once (all True for grid stores)."""
        r = self._row_array(rows)
        L = self.array.shape[1]
        if self.lengths is None:
            return np.ones((len(r), L), dtype=bool)
        return np.arange(L)[None, :] < self.lengths[r][:, None]

    def batch(self, rows) -> tuple[np.ndarray, np.ndarray]:
        """``(B, L, D)`` float32 features and ``(B, L)`` bool masks of ``rows`` (in their order,
        repeats allowed), read from the memory map in one call: the same values as
        ``np.stack([store[r] for r in rows])`` and :meth:`masks`."""
        r = self._row_array(rows)
        uniq, inverse = np.unique(r, return_inverse=True)
        x = self.array[uniq]  # one fancy-indexing read of sorted unique rows (float16)
        if len(uniq) != len(r) or not np.array_equal(uniq, r):
            x = x[inverse.reshape(-1)]
        return np.asarray(x, dtype=np.float32), self.masks(r)

    def rows_for(self, images: list[str]) -> list[int]:
        missing = [name for name in images if name not in self._row_of]
        if missing:
            shown = ", ".join(missing[:20]) + (f" ... ({len(missing)} in all)" if len(missing) > 20 else "")
            raise DataError(self.index, f"{len(missing)} {self.key}(s) have no features: {shown}",
                            f"extract features for the {self.key} list these ids come from")
        return [self._row_of[name] for name in images]

    def check_order(self, image_list: Path) -> None:
        """Row ``i`` must hold line ``i`` of ``image_list`` (the split's image or video list)."""
        names = read_item_list(Path(image_list), self.key)
        for i, (want, have) in enumerate(zip(names, self.images)):
            if want != have:
                raise DataError(self.index, f"row {i} holds {have!r} but line {i + 1} of {image_list} is {want!r}",
                                f"re-extract the features from this {self.key} list (the order must match)")
        if len(names) != len(self.images):
            raise DataError(self.index, f"{len(self.images)} rows but {image_list} has {len(names)} lines",
                            f"re-extract the features from this {self.key} list")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.npy}, shape={self.shape}, weights={self.meta.get('weights_desc')!r})"


def box_geometry(boxes: np.ndarray, width, height) -> np.ndarray:
    """``(..., 4)`` pixel boxes -> ``(..., 6)`` normalised ``x1/W, y1/H, x2/W, y2/H, w/W, h/H``.

    ``width``/``height`` are scalars or arrays over the leading dimensions: ``(N,)`` for boxes
    ``(N, K, 4)``."""
    b = np.asarray(boxes, dtype=np.float32)

    def lead(x):
        x = np.asarray(x, dtype=np.float32)
        return x.reshape(x.shape + (1,) * (b.ndim - x.ndim))

    w, h = lead(width), lead(height)
    x1, y1, x2, y2 = b[..., 0:1] / w, b[..., 1:2] / h, b[..., 2:3] / w, b[..., 3:4] / h
    return np.concatenate([x1, y1, x2, y2, x2 - x1, y2 - y1], axis=-1)


class RegionStore(FeatureStore):
    """A region store: features (memory-mapped), boxes (memory-mapped) and the index."""

    def __init__(self, npy: Path, boxes: Path, index: Path):
        super().__init__(npy, index)
        self.boxes_path = Path(boxes)
        if self.lengths is None or not {"width", "height"} <= set(self.columns):
            raise DataError(self.index, "not a region index (needs n_boxes, width, height columns)",
                            "re-run the region extraction rule")
        if not self.boxes_path.is_file():
            raise DataError(self.boxes_path, "boxes file does not exist", "re-run the region extraction rule")
        try:
            self.boxes = np.load(self.boxes_path, mmap_mode="r")
        except Exception as err:
            raise DataError(self.boxes_path, f"cannot memory-map boxes ({type(err).__name__}: {err})",
                            "delete it and re-run the region extraction rule") from err
        if self.boxes.shape != (*self.array.shape[:2], 4):
            raise DataError(self.boxes_path, f"boxes have shape {self.boxes.shape} but features {self.array.shape} "
                            f"need {(*self.array.shape[:2], 4)}", "re-run the region extraction rule")
        self.width = self.columns["width"].astype(np.int64)
        self.height = self.columns["height"].astype(np.int64)

    def regions(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """Unpadded ``(n, D)`` float32 features and ``(n, 4)`` pixel boxes of one row."""
        k = int(self.lengths[row])
        return np.asarray(self.array[row, :k], dtype=np.float32), np.asarray(self.boxes[row, :k], dtype=np.float32)

    def geometry(self, row: int) -> np.ndarray:
        """``(K, 6)`` normalised ``x1, y1, x2, y2, w, h`` of one row (zeros in padding slots)."""
        g = box_geometry(self.boxes[row], self.width[row], self.height[row])
        g[~self.mask(row)] = 0.0
        return g

    def geometries(self, rows) -> np.ndarray:
        """``(len(rows), K, 6)``: :meth:`geometry` of every row at once (the same float32 values),
        from one read of the boxes' memory map."""
        r = self._row_array(rows)
        g = box_geometry(self.boxes[r], self.width[r], self.height[r])
        g[~self.masks(r)] = 0.0
        return g


def open_features(npy: Path | None, index: Path | None) -> FeatureStore | None:
    """The store of ``npy`` and ``index``, or None when ``npy`` is None (a text-only model).
    A region store (its boxes in ``<split>.boxes.npy`` beside ``<split>.npy``) opens as a
    :class:`RegionStore`, which also gives each row's boxes."""
    if npy is None:
        return None
    boxes = Path(npy).with_name(Path(npy).stem + ".boxes.npy")
    if boxes.is_file():
        return RegionStore(Path(npy), boxes, Path(index))
    return FeatureStore(Path(npy), Path(index))
