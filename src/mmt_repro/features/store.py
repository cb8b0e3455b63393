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
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, UnidentifiedImageError

from mmt_repro.io import DataError, atomic_path, read_lines

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
    log=print,
) -> dict:
    """Extract features of every image in ``image_list`` (one file name per line, relative to
    ``image_dir``) into ``out_npy`` (float16, (N, L, D)) and ``out_index`` (Parquet).

    Returns a summary dict (n_images, shape, weights_desc, device, seconds, images_per_s).
    Raises :class:`DataError` listing every missing/unreadable image, or naming the images
    whose features contain NaN/Inf or overflow float16.
    """
    import torch

    from mmt_repro.features.extractors import get_extractor

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
