"""Optional standardisation of a feature store: per-dimension mean/std computed (in chunks)
over a store -- the training split's -- and applied to any store with the same layout
(padding slots excluded from the statistics and left at zero).

:func:`feature_stats` computes the statistics without loading the whole array;
:func:`standardize_store` writes ``(x - mean) / std`` as a new float16 store whose index keeps
the input's rows, columns and metadata (layouts: :mod:`mmt_repro.features.store`). With
``scale=False`` it only subtracts the training-set centroid (a feature set's ``center: true``;
Hirasawa et al. 2019, sec. 3.1: "We calculate the centroid of visual features in the training
dataset as the bias vector and subtract the bias vector from all visual features").
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from mmt_repro.features.store import FLOAT16_MAX, LENGTH_COLUMNS, FeatureStore, read_index, write_index
from mmt_repro.io import DataError, atomic_path

_CHUNK_BYTES = 64 * 1024 * 1024
_STD_FLOOR = 1e-6


def _chunks(n: int, row_bytes: int):
    step = max(1, _CHUNK_BYTES // max(row_bytes, 1))
    for start in range(0, n, step):
        yield start, min(n, start + step)


def _sibling_lengths(npy: Path) -> np.ndarray | None:
    """Valid-slot counts from the index next to ``npy`` (``<split>.index.parquet``), if any."""
    index = Path(npy).with_name(Path(npy).stem + ".index.parquet")
    if not index.is_file():
        return None
    _, columns, _, _ = read_index(index)
    col = next((c for c in LENGTH_COLUMNS if c in columns), None)
    return None if col is None else columns[col].astype(np.int64)


def feature_stats(npy: Path, lengths: np.ndarray | None = None) -> dict:
    """Per-dimension mean/std over all N*L vectors of a (N, L, D) store, in float64 chunks;
    with ``lengths`` only the first ``lengths[i]`` slots of row ``i`` count (padding excluded)."""
    arr = np.load(npy, mmap_mode="r")
    n, L, D = arr.shape
    count = 0
    mean = np.zeros(D, dtype=np.float64)
    m2 = np.zeros(D, dtype=np.float64)
    for a, b in _chunks(n, L * D * 4):
        x = np.asarray(arr[a:b], dtype=np.float64)
        if lengths is not None:
            x = x[np.arange(L)[None, :] < lengths[a:b, None]]
        x = x.reshape(-1, D)
        c = x.shape[0]
        if c == 0:
            continue
        cm = x.mean(axis=0)
        cm2 = ((x - cm) ** 2).sum(axis=0)
        delta = cm - mean
        tot = count + c
        mean = mean + delta * (c / tot)
        m2 = m2 + cm2 + delta ** 2 * (count * c / tot)
        count = tot
    std = np.sqrt(m2 / max(count, 1))
    return {"mean": mean, "std": std, "n_vectors": count}


def standardize_store(
    in_npy: Path,
    in_index: Path,
    out_npy: Path,
    out_index: Path,
    stats_from: Path | None = None,
    stats_out: Path | None = None,
    in_boxes: Path | None = None,
    out_boxes: Path | None = None,
    scale: bool = True,
) -> dict:
    """Write ``(x - mean) / std`` per feature dimension of a store as a new float16 store
    (``scale=False``: ``x - mean``, the centroid subtracted and nothing scaled).

    The statistics come from ``stats_from``: an ``.npz`` written earlier through
    ``stats_out``, or the training split's feature ``.npy`` itself (its statistics are then
    computed on the fly, chunked, skipping padding slots when its ``<split>.index.parquet``
    has ``n_boxes``/``n_segments``); when ``stats_from`` is ``None`` they are computed from the
    input store (chunked; the whole array is never loaded). Computed statistics are saved to
    ``stats_out`` when given. Dimensions with std below 1e-6 are only centred; padding slots
    stay zero. The output index keeps the input's rows, columns and metadata, adding a
    ``standardized`` entry. A region store's boxes (``in_boxes``) are copied unchanged to
    ``out_boxes``, so that the standardised store is a complete region store.
    """
    in_npy, in_index, out_npy, out_index = map(Path, (in_npy, in_index, out_npy, out_index))
    store = FeatureStore(in_npy, in_index)
    n, L, D = store.shape
    if stats_from is not None and Path(stats_from).suffix == ".npz":
        stats_from = Path(stats_from)
        if not stats_from.is_file():
            raise DataError(stats_from, "standardisation statistics do not exist",
                            "run standardize_store on the training store with stats_out first")
        with np.load(stats_from) as z:
            mean, std = z["mean"].astype(np.float64), z["std"].astype(np.float64)
            n_vectors = int(z["n_vectors"])
            src_meta = json.loads(str(z["meta"])) if "meta" in z else {}
        source = str(stats_from)
    else:
        # Statistics of a feature .npy: the training store, or the input store itself.
        source_npy = Path(stats_from) if stats_from is not None else in_npy
        if not source_npy.is_file():
            raise DataError(source_npy, "training feature store does not exist",
                            "extract the training features first (or pass the .npz written through stats_out)")
        lengths = store.lengths if source_npy == in_npy else _sibling_lengths(source_npy)
        st = feature_stats(source_npy, lengths)
        mean, std, n_vectors = st["mean"], st["std"], st["n_vectors"]
        src_meta = dict(store.meta) if source_npy == in_npy else {}
        source = str(source_npy)
        if stats_out is not None:
            with atomic_path(stats_out) as tmp:
                np.savez(tmp, mean=mean, std=std, n_vectors=np.int64(n_vectors), source=np.array(source),
                         meta=np.array(json.dumps(src_meta, sort_keys=True)))
    if mean.shape != (D,):
        raise DataError(source, f"statistics have {mean.shape[0]} dimensions but {in_npy} has {D}",
                        "use statistics of the training store of the same extractor and layer")
    for key in ("extractor", "layer", "weights_desc", "image_size", "backend"):
        if key in src_meta and key in store.meta and src_meta[key] != store.meta[key]:
            raise DataError(source, f"statistics were computed on {key}={src_meta[key]!r} features but "
                            f"{in_npy} has {key}={store.meta[key]!r}",
                            "recompute the statistics on the training store of the same features")
    divisor = np.where(std < _STD_FLOOR, 1.0, std) if scale else np.ones_like(std)
    bad_rows: list[str] = []
    with atomic_path(out_npy) as tmp_npy, atomic_path(out_index) as tmp_index:
        out = np.lib.format.open_memmap(tmp_npy, mode="w+", dtype=np.float16, shape=(n, L, D))
        try:
            for a, b in _chunks(n, L * D * 4):
                x = (np.asarray(store.array[a:b], dtype=np.float64) - mean) / divisor
                if store.lengths is not None:
                    x[np.arange(L)[None, :] >= store.lengths[a:b, None]] = 0.0
                ok = np.isfinite(x).all(axis=(1, 2)) & (np.abs(x).max(axis=(1, 2)) <= FLOAT16_MAX)
                bad_rows.extend(store.images[a + i] for i in np.flatnonzero(~ok))
                out[a:b] = x.astype(np.float16)
            if bad_rows:
                raise DataError(in_npy, f"standardised features of {len(bad_rows)} {store.key}(s) are not finite or "
                                f"overflow float16: {', '.join(bad_rows[:20])}",
                                "check the input store and the statistics file")
            out.flush()
        finally:
            del out
        meta = dict(store.meta)
        entry = {"stats_from": source, "n_vectors": int(n_vectors), "input": str(in_npy)}
        if scale:
            meta["standardized"] = dict(entry, std_floor=_STD_FLOOR)
        else:
            meta["centered"] = entry
        write_index(tmp_index, store.images, meta, key=store.key, columns=store.columns)
    if in_boxes is not None and out_boxes is not None:
        with atomic_path(out_boxes) as tmp_boxes:
            shutil.copyfile(in_boxes, tmp_boxes)
    return {"n_images": n, "shape": (n, L, D), "stats_from": source, "n_vectors": int(n_vectors),
            "npy": str(out_npy), "index": str(out_index)}
