"""Feature stores: one float16 ``.npy`` of shape (N, L, D) plus a Parquet index.

:func:`extract_features` runs an extractor (:mod:`mmt_repro.features.extractors`) over the
images named in an image list and writes

* ``out_npy``: ``float16`` array ``(N, L, D)``, row ``i`` = line ``i`` of the image list,
  written through :func:`numpy.lib.format.open_memmap` on a temporary path and renamed only
  once complete and checked (no NaN/Inf, nothing overflowing float16);
* ``out_index``: Parquet table with columns ``row`` (int64) and ``image`` (file name), and the
  file-level metadata (extractor, layer, weights, weights_desc, image_size, shape, dtype, ...)
  stored as JSON under the schema metadata key ``mmt_repro``.

:class:`FeatureStore` memory-maps such a pair for training and decoding.

:func:`standardize_store` is an optional step: per-dimension mean/std computed (in chunks)
over a store -- the training split's -- and applied to any store with the same layout.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, UnidentifiedImageError

from mmt_repro.io import DataError, atomic_path, read_lines

_log = logging.getLogger(__name__)

META_KEY = b"mmt_repro"
FLOAT16_MAX = float(np.finfo(np.float16).max)


def _resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _read_image_list(image_list: Path) -> list[str]:
    names = [line.strip() for line in read_lines(image_list, allow_empty_lines=False)]
    if not names:
        raise DataError(image_list, "image list is empty", "re-run the rule that writes the image list")
    return names


def _list_problems(kind: str, problems: list[str], image_dir: Path, limit: int = 50) -> str:
    shown = problems[:limit]
    more = f"\n    ... and {len(problems) - limit} more" if len(problems) > limit else ""
    return f"{len(problems)} {kind} image(s) under {image_dir}:\n    " + "\n    ".join(shown) + more


def _check_images(names: list[str], image_dir: Path) -> None:
    """Every image must exist and have a readable header; list ALL that do not."""
    problems = []
    for name in names:
        path = image_dir / name
        if not path.is_file():
            problems.append(f"{name} (missing)")
            continue
        try:
            with Image.open(path) as im:
                im.size  # noqa: B018 -- header parsed lazily
        except (UnidentifiedImageError, OSError) as err:
            problems.append(f"{name} (unreadable: {err})")
    if problems:
        raise DataError(
            image_dir,
            _list_problems("missing or unreadable", problems, image_dir),
            "fetch or regenerate those images, or remove them from the image list and the parallel text files",
        )


def _load_image(path: Path) -> Image.Image:
    with Image.open(path) as im:
        im.load()
        return im.convert("RGB")


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
) -> dict:
    """Extract features of every image in ``image_list`` (one file name per line, relative to
    ``image_dir``) into ``out_npy`` (float16, (N, L, D)) and ``out_index`` (Parquet).

    Returns a summary dict (n_images, shape, weights_desc, device, seconds, images_per_s).
    Raises :class:`DataError` listing every missing/unreadable image, or naming the images
    whose features contain NaN/Inf or overflow float16.
    """
    import torch

    from mmt_repro.features.extractors import get_extractor

    if not image_dir:
        raise DataError(image_list, "no image folder is configured for these images", missing_dir_fix)
    image_list, image_dir = Path(image_list), Path(image_dir)
    out_npy, out_index = Path(out_npy), Path(out_index)
    names = _read_image_list(image_list)
    _check_images(names, image_dir)

    dev = _resolve_device(device)
    ext = get_extractor(extractor, layer, weights=weights, image_size=image_size, seed=seed)
    ext.to(dev)
    L, D = ext.output_shape(image_size)
    n = len(names)
    log(f"[features] {extractor}/{layer} weights: {ext.weights_desc}; image_size {image_size} -> ({L}, {D}) "
        f"per image; {n} images; device {dev}")

    t0 = time.perf_counter()
    unreadable: list[str] = []
    bad_values: list[str] = []
    with atomic_path(out_npy) as tmp_npy, atomic_path(out_index) as tmp_index:
        arr = np.lib.format.open_memmap(tmp_npy, mode="w+", dtype=np.float16, shape=(n, L, D))
        try:
            for start in range(0, n, batch_size):
                chunk = names[start:start + batch_size]
                tensors = []
                for name in chunk:
                    try:
                        tensors.append(ext.preprocess(_load_image(image_dir / name)))
                    except (UnidentifiedImageError, OSError, ValueError) as err:
                        unreadable.append(f"{name} (unreadable: {err})")
                        tensors.append(None)
                if unreadable:
                    continue  # keep going only to collect every unreadable image
                feats = ext(torch.stack(tensors)).float().cpu().numpy()
                if feats.shape != (len(chunk), L, D):
                    raise RuntimeError(f"extractor returned {feats.shape}, expected {(len(chunk), L, D)}")
                finite = np.isfinite(feats).all(axis=(1, 2))
                big = np.abs(np.where(np.isfinite(feats), feats, 0)).max(axis=(1, 2)) > FLOAT16_MAX
                for name, ok, over in zip(chunk, finite, big):
                    if not ok:
                        bad_values.append(f"{name} (NaN/Inf)")
                    elif over:
                        bad_values.append(f"{name} (exceeds float16 range)")
                arr[start:start + len(chunk)] = feats.astype(np.float16)
                done = start + len(chunk)
                if done == n or (start // batch_size) % 20 == 19:
                    el = time.perf_counter() - t0
                    log(f"[features] {done}/{n} images, {done / max(el, 1e-9):.1f} images/s")
            if unreadable:
                raise DataError(image_dir, _list_problems("unreadable", unreadable, image_dir),
                                "fetch or regenerate those images, or remove them from the image list")
            if bad_values:
                raise DataError(
                    out_npy,
                    f"features of {len(bad_values)} image(s) are not finite or overflow float16: "
                    + ", ".join(bad_values[:20]) + (" ..." if len(bad_values) > 20 else ""),
                    "check the weights file (weights_desc: " + ext.weights_desc + ") and the images; "
                    "NaN from a checkpoint usually means it is corrupt or for another architecture",
                )
            arr.flush()
        finally:
            del arr
        seconds = time.perf_counter() - t0
        meta = {
            "extractor": extractor, "layer": layer, "weights": str(weights), "weights_desc": ext.weights_desc,
            "image_size": int(image_size), "shape": [n, L, D], "dtype": "float16", "seed": int(seed),
            "image_list": str(image_list), "torch_version": torch.__version__,
        }
        _write_index(tmp_index, names, meta)
    ips = n / max(seconds, 1e-9)
    log(f"[features] wrote {out_npy} ({n}, {L}, {D}) float16 in {seconds:.1f}s, {ips:.1f} images/s, "
        f"weights: {ext.weights_desc}")
    return {"n_images": n, "shape": (n, L, D), "weights_desc": ext.weights_desc, "device": dev,
            "seconds": seconds, "images_per_s": ips, "npy": str(out_npy), "index": str(out_index)}


def _write_index(path: Path, names: list[str], meta: dict) -> None:
    table = pa.table({"row": pa.array(np.arange(len(names), dtype=np.int64)), "image": pa.array(names, pa.string())})
    table = table.replace_schema_metadata({META_KEY: json.dumps(meta, sort_keys=True).encode("utf-8")})
    pq.write_table(table, path)


def _read_index(index: Path) -> tuple[list[str], dict]:
    index = Path(index)
    if not index.is_file():
        raise DataError(index, "feature index does not exist", "re-run the feature extraction rule")
    try:
        table = pq.read_table(index)
    except Exception as err:
        raise DataError(index, f"cannot read feature index ({type(err).__name__}: {err})",
                        "delete it and re-run the feature extraction rule") from err
    if not {"row", "image"} <= set(table.column_names):
        raise DataError(index, f"feature index lacks columns row/image (has {table.column_names})",
                        "re-run the feature extraction rule")
    rows = table.column("row").to_numpy()
    if not np.array_equal(rows, np.arange(len(rows))):
        raise DataError(index, "feature index rows are not 0..N-1 in order", "re-run the feature extraction rule")
    raw = (table.schema.metadata or {}).get(META_KEY)
    meta = json.loads(raw.decode("utf-8")) if raw else {}
    return table.column("image").to_pylist(), meta


class FeatureStore:
    """Read-only view of a feature ``.npy`` (memory-mapped) and its Parquet index."""

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
        self.images, self.meta = _read_index(self.index)
        if len(self.images) != self.array.shape[0]:
            raise DataError(self.index, f"index has {len(self.images)} rows but {self.npy} has {self.array.shape[0]}",
                            "the two files come from different runs: re-run the feature extraction rule")
        self._row_of = {name: i for i, name in enumerate(self.images)}

    def __len__(self) -> int:
        return int(self.array.shape[0])

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(int(x) for x in self.array.shape)

    def __getitem__(self, row: int) -> np.ndarray:
        return np.asarray(self.array[row], dtype=np.float32)

    def rows_for(self, images: list[str]) -> list[int]:
        missing = [name for name in images if name not in self._row_of]
        if missing:
            shown = ", ".join(missing[:20]) + (f" ... ({len(missing)} in all)" if len(missing) > 20 else "")
            raise DataError(self.index, f"{len(missing)} image(s) have no features: {shown}",
                            "extract features for the image list these ids come from")
        return [self._row_of[name] for name in images]

    def check_order(self, image_list: Path) -> None:
        names = _read_image_list(Path(image_list))
        for i, (want, have) in enumerate(zip(names, self.images)):
            if want != have:
                raise DataError(self.index, f"row {i} holds {have!r} but line {i + 1} of {image_list} is {want!r}",
                                "re-extract the features from this image list (the order must match)")
        if len(names) != len(self.images):
            raise DataError(self.index, f"{len(self.images)} rows but {image_list} has {len(names)} lines",
                            "re-extract the features from this image list")

    def __repr__(self) -> str:
        return f"FeatureStore({self.npy}, shape={self.shape}, weights={self.meta.get('weights_desc')!r})"


# --------------------------------------------------------------------------------------
# Optional standardisation step
# --------------------------------------------------------------------------------------

_CHUNK_BYTES = 64 * 1024 * 1024
_STD_FLOOR = 1e-6


def _chunks(n: int, row_bytes: int):
    step = max(1, _CHUNK_BYTES // max(row_bytes, 1))
    for start in range(0, n, step):
        yield start, min(n, start + step)


def feature_stats(npy: Path) -> dict:
    """Per-dimension mean/std over all N*L vectors of a (N, L, D) store, in float64 chunks."""
    arr = np.load(npy, mmap_mode="r")
    n, L, D = arr.shape
    count = 0
    mean = np.zeros(D, dtype=np.float64)
    m2 = np.zeros(D, dtype=np.float64)
    for a, b in _chunks(n, L * D * 4):
        x = np.asarray(arr[a:b], dtype=np.float64).reshape(-1, D)
        c = x.shape[0]
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
) -> dict:
    """Write ``(x - mean) / std`` per feature dimension of a store as a new float16 store.

    The statistics come from ``stats_from``: an ``.npz`` written earlier through
    ``stats_out``, or the training split's feature ``.npy`` itself (its statistics are then
    computed on the fly, chunked); when ``stats_from`` is ``None`` they are computed from the input
    store (chunked; the whole array is never loaded). Computed statistics are saved to
    ``stats_out`` when given. Dimensions with std below 1e-6 are only centred. The output
    index keeps the input's rows and metadata, adding a ``standardized`` entry.
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
        st = feature_stats(source_npy)
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
    for key in ("extractor", "layer", "weights_desc", "image_size"):
        if key in src_meta and key in store.meta and src_meta[key] != store.meta[key]:
            raise DataError(source, f"statistics were computed on {key}={src_meta[key]!r} features but "
                            f"{in_npy} has {key}={store.meta[key]!r}",
                            "recompute the statistics on the training store of the same features")
    scale = np.where(std < _STD_FLOOR, 1.0, std)
    bad_rows: list[str] = []
    with atomic_path(out_npy) as tmp_npy, atomic_path(out_index) as tmp_index:
        out = np.lib.format.open_memmap(tmp_npy, mode="w+", dtype=np.float16, shape=(n, L, D))
        try:
            for a, b in _chunks(n, L * D * 4):
                x = (np.asarray(store.array[a:b], dtype=np.float64) - mean) / scale
                ok = np.isfinite(x).all(axis=(1, 2)) & (np.abs(x).max(axis=(1, 2)) <= FLOAT16_MAX)
                bad_rows.extend(store.images[a + i] for i in np.flatnonzero(~ok))
                out[a:b] = x.astype(np.float16)
            if bad_rows:
                raise DataError(in_npy, f"standardised features of {len(bad_rows)} image(s) are not finite or "
                                f"overflow float16: {', '.join(bad_rows[:20])}",
                                "check the input store and the statistics file")
            out.flush()
        finally:
            del out
        meta = dict(store.meta)
        meta["standardized"] = {"stats_from": source, "n_vectors": int(n_vectors), "std_floor": _STD_FLOOR,
                                "input": str(in_npy)}
        _write_index(tmp_index, store.images, meta)
    return {"n_images": n, "shape": (n, L, D), "stats_from": source, "n_vectors": int(n_vectors),
            "npy": str(out_npy), "index": str(out_index)}
