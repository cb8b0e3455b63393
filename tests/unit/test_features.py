"""Feature extractors and stores, with random-init weights at small image sizes (CPU, fast)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image
from torchvision.models import resnet50
from torchvision.models.feature_extraction import create_feature_extractor

from mmt_repro.grounded.images import generate_grounded
from mmt_repro.features import extractors as ex_mod
from mmt_repro.features.extractors import get_extractor
from mmt_repro.features.grid import extract_features
from mmt_repro.features.standardize import standardize_store
from mmt_repro.features.store import FeatureStore, open_features, write_index
from mmt_repro.io import DataError, write_lines

SIZE = 64
_REAL_CALL = ex_mod.ResNet50Extractor.__call__
_BUILT: dict = {}


@pytest.fixture(autouse=True)
def _reuse_random_extractors(monkeypatch):
    """extract_features builds its extractor on every call; a random-init one is a pure function
    of its arguments, so the tests share them (construction dominates these tiny runs)."""
    real = ex_mod.get_extractor

    def cached(name, layer, weights="imagenet", image_size=224, seed=0):
        if weights != "random":
            return real(name, layer, weights=weights, image_size=image_size, seed=seed)
        key = (name, layer, image_size, seed)
        if key not in _BUILT:
            _BUILT[key] = real(name, layer, weights=weights, image_size=image_size, seed=seed)
        return _BUILT[key]

    monkeypatch.setattr(ex_mod, "get_extractor", cached)


@pytest.fixture(scope="module")
def res4f():
    return get_extractor("resnet50", "res4f", weights="random", image_size=SIZE, seed=0)


@pytest.fixture(scope="module")
def pool5():
    return get_extractor("resnet50", "pool5", weights="random", image_size=SIZE, seed=0)


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("grounded")
    generate_grounded(out, {"train": 10, "test": 4}, seed=3, langs=("en", "de"))
    return out


def _image(path: Path) -> Image.Image:
    with Image.open(path) as im:
        return im.convert("RGB")


def test_output_shapes(res4f, pool5, images):
    batch = torch.stack([res4f.preprocess(_image(images / "images" / f"train_{i:05d}.png")) for i in range(3)])
    assert batch.shape == (3, 3, SIZE, SIZE)
    assert res4f(batch).shape == (3, 16, 1024) and res4f.output_shape() == (16, 1024)
    assert pool5(batch).shape == (3, 1, 2048) and pool5.output_shape() == (1, 2048)
    assert res4f.output_shape(96) == (36, 1024)
    assert res4f.output_shape(224) == (196, 1024)
    assert res4f.weights_desc == "random-init seed 0"
    assert not res4f.model.training


def test_res4f_at_224_is_196x1024():
    ext = get_extractor("resnet50", "res4f", weights="random", image_size=224)
    img = Image.new("RGB", (300, 240), (200, 30, 30))
    x = ext.preprocess(img)
    assert x.shape == (3, 224, 224)
    assert ext(x.unsqueeze(0)).shape == (1, 196, 1024)


def test_parity_with_torchvision_forward(res4f, pool5, images):
    """Our res4f/pool5 equal torchvision's layer3/avgpool on the same weights and input."""
    ref = resnet50(weights=None)
    ref.load_state_dict(res4f.model.state_dict())
    ref.eval()
    body = create_feature_extractor(ref, return_nodes={"layer3": "res4f", "avgpool": "pool5"})
    x = torch.stack([res4f.preprocess(_image(images / "images" / f"test_{i:05d}.png")) for i in range(2)])
    with torch.no_grad():
        out = body(x)
    grid = out["res4f"]  # (B, 1024, 4, 4)
    expect_res4f = grid.permute(0, 2, 3, 1).reshape(2, -1, 1024)  # row-major over the grid
    ours = res4f(x)
    torch.testing.assert_close(ours, expect_res4f, rtol=1e-5, atol=1e-5)
    # Row i*W + j is grid cell (i, j).
    torch.testing.assert_close(ours[1, 1 * 4 + 2], grid[1, :, 1, 2], rtol=1e-5, atol=1e-5)
    # pool5 uses the same random weights (same seed) and equals avgpool.
    torch.testing.assert_close(pool5(x)[:, 0], out["pool5"].flatten(1), rtol=1e-5, atol=1e-5)


def test_seed_and_local_weights(res4f, tmp_path):
    x = torch.rand(1, 3, SIZE, SIZE)
    state_before = torch.random.get_rng_state()
    again = get_extractor("resnet50", "res4f", weights="random", image_size=SIZE, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state_before)  # global RNG untouched
    torch.testing.assert_close(again(x), res4f(x), rtol=0, atol=0)
    other = get_extractor("resnet50", "res4f", weights="random", image_size=SIZE, seed=1)
    assert not torch.allclose(other(x), res4f(x))
    path = tmp_path / "r50.pth"
    state = {k: v for k, v in res4f.model.state_dict().items() if not k.startswith("fc.")}
    torch.save(state, path)
    local = get_extractor("resnet50", "res4f", weights=str(path), image_size=SIZE)
    assert local.weights_desc == str(path)
    torch.testing.assert_close(local(x), res4f(x), rtol=0, atol=0)
    with pytest.raises(DataError, match="does not exist"):
        get_extractor("resnet50", "res4f", weights=str(tmp_path / "nope.pth"))
    torch.save({"conv1.weight": torch.zeros(1)}, tmp_path / "bad.pth")
    with pytest.raises(DataError, match="not a torchvision ResNet-50"):
        get_extractor("resnet50", "res4f", weights=str(tmp_path / "bad.pth"))


def test_unknown_name_or_layer_lists_valid_ones():
    with pytest.raises(ValueError, match="resnet50"):
        get_extractor("vgg19", "res4f", weights="random")
    with pytest.raises(ValueError, match="res4f.*pool5"):
        get_extractor("resnet50", "conv5", weights="random")


def test_imagenet_offline_raises_data_error(monkeypatch):
    from torchvision.models import ResNet50_Weights

    def offline(self, *args, **kwargs):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(type(ResNet50_Weights.IMAGENET1K_V1), "get_state_dict", offline)
    with pytest.raises(DataError, match="IMAGENET1K_V1") as err:
        get_extractor("resnet50", "res4f", weights="imagenet")
    assert "pre-download" in str(err.value) and "local" in str(err.value)


def _extract(images: Path, tmp_path: Path, listing: list[str], tag: str = "f", **kw) -> tuple[Path, Path, dict]:
    lst = write_lines(tmp_path / f"{tag}.txt", listing)
    npy, idx = tmp_path / f"{tag}.npy", tmp_path / f"{tag}.parquet"
    logs: list[str] = []
    info = extract_features(lst, images / "images", npy, idx, "resnet50", kw.pop("layer", "res4f"), "random", SIZE,
                            batch_size=kw.pop("batch_size", 3), log=logs.append, **kw)
    info["logs"] = logs
    return npy, idx, info


def test_store_round_trip(res4f, images, tmp_path):
    names = [f"train_{i:05d}.png" for i in range(7)]
    npy, idx, info = _extract(images, tmp_path, names)
    assert info["shape"] == (7, 16, 1024) and info["weights_desc"] == "random-init seed 0"
    assert any("random-init seed 0" in line for line in info["logs"])
    assert any("images/s" in line for line in info["logs"])
    raw = np.load(npy)
    assert raw.dtype == np.float16 and raw.shape == (7, 16, 1024)
    store = FeatureStore(npy, idx)
    assert len(store) == 7 and store.shape == (7, 16, 1024)
    assert store.meta["layer"] == "res4f" and store.meta["image_size"] == SIZE
    assert store.meta["weights_desc"] == "random-init seed 0" and store.meta["shape"] == [7, 16, 1024]
    table = pq.read_table(idx)
    assert table.column_names == ["row", "image"] and table.column("image").to_pylist() == names
    row = store[5]
    assert row.dtype == np.float32 and row.shape == (16, 1024)
    direct = res4f(res4f.preprocess(_image(images / "images" / names[5])).unsqueeze(0))[0].numpy()
    # float16 storage: relative precision ~1e-3 (batch size changes the float32 sums slightly).
    np.testing.assert_allclose(row, direct, rtol=2e-3, atol=2e-3)
    assert store.rows_for([names[3], names[0]]) == [3, 0]
    with pytest.raises(DataError, match="test_00000.png"):
        store.rows_for([names[1], "test_00000.png"])
    store.check_order(tmp_path / "f.txt")
    write_lines(tmp_path / "swapped.txt", [names[0], names[2], names[1]] + names[3:])
    with pytest.raises(DataError, match="row 1 holds 'train_00001.png'.*line 2.*'train_00002.png'"):
        store.check_order(tmp_path / "swapped.txt")
    write_lines(tmp_path / "short.txt", names[:4])
    with pytest.raises(DataError, match="7 rows"):
        store.check_order(tmp_path / "short.txt")
    # one-call batch read = the per-row reads; grid stores have every slot valid
    rows = [5, 0, 5, 2]
    x, m = store.batch(rows)
    assert x.dtype == np.float32 and x.shape == (4, 16, 1024) and m.dtype == bool and m.shape == (4, 16)
    np.testing.assert_array_equal(x, np.stack([store[r] for r in rows]))
    assert m.all() and (store.masks(rows) == np.stack([store.mask(r) for r in rows])).all()


def _grid_store(tmp_path: Path, n: int = 6, L: int = 5, D: int = 3) -> tuple[Path, Path, np.ndarray]:
    data = np.random.default_rng(0).normal(size=(n, L, D)).astype(np.float16)
    npy, idx = tmp_path / "g.npy", tmp_path / "g.index.parquet"
    np.save(npy, data)
    write_index(idx, [f"im{i}.jpg" for i in range(n)], {"kind": "grid", "shape": [n, L, D]})
    return npy, idx, data


@pytest.mark.parametrize("rows", [[3, 1, 4, 1, 5], [0, 1, 2], [5], [-1, 0], np.array([2, 2, 0], dtype=np.int32)])
def test_grid_batch_matches_rows(tmp_path, rows):
    npy, idx, data = _grid_store(tmp_path)
    store = open_features(npy, idx)
    x, m = store.batch(rows)
    np.testing.assert_array_equal(x, np.stack([store[r] for r in rows]))
    np.testing.assert_array_equal(x, data[np.asarray(rows)].astype(np.float32))
    assert x.dtype == np.float32 and m.shape == (len(rows), 5) and m.all()
    np.testing.assert_array_equal(store.masks(rows), np.stack([store.mask(r) for r in rows]))


def test_batch_edge_cases(tmp_path):
    npy, idx, _ = _grid_store(tmp_path)
    store = FeatureStore(npy, idx)
    x, m = store.batch([])
    assert x.shape == (0, 5, 3) and x.dtype == np.float32 and m.shape == (0, 5) and m.dtype == bool
    with pytest.raises(IndexError):
        store.batch([0, 6])
    with pytest.raises(TypeError, match="integers"):
        store.batch([0.5])
    assert open_features(None, None) is None


def test_missing_and_unreadable_images_all_listed(images, tmp_path):
    (images / "images" / "broken.png").write_bytes(b"not a png at all")
    listing = ["train_00000.png", "gone_1.png", "broken.png", "train_00001.png", "gone_2.png"]
    with pytest.raises(DataError) as err:
        _extract(images, tmp_path, listing)
    msg = str(err.value)
    assert "3 missing or unreadable" in msg
    for name in ("gone_1.png", "gone_2.png", "broken.png"):
        assert name in msg
    assert str(images / "images") in msg
    assert not (tmp_path / "f.npy").exists() and not list(tmp_path.glob(".f.npy*"))


def test_nan_features_rejected(images, tmp_path, monkeypatch):
    real_call = ex_mod.ResNet50Extractor.__call__

    def poisoned(self, batch):
        out = real_call(self, batch).clone()
        out[-1, 0, 0] = float("nan")
        return out

    monkeypatch.setattr(ex_mod.ResNet50Extractor, "__call__", poisoned)
    with pytest.raises(DataError, match="NaN") as err:
        _extract(images, tmp_path, [f"train_{i:05d}.png" for i in range(4)], batch_size=2)
    assert "train_00001.png" in str(err.value) and "train_00003.png" in str(err.value)
    assert not (tmp_path / "f.npy").exists() and not (tmp_path / "f.parquet").exists()
    assert list(tmp_path.glob(".f.*")) == []


def test_standardize_store(images, tmp_path):
    tr_npy, tr_idx, _ = _extract(images, tmp_path, [f"train_{i:05d}.png" for i in range(10)], tag="tr", batch_size=5)
    te_npy, te_idx, _ = _extract(images, tmp_path, [f"test_{i:05d}.png" for i in range(4)], tag="te", batch_size=5)
    stats = tmp_path / "stats.npz"
    standardize_store(tr_npy, tr_idx, tmp_path / "str.npy", tmp_path / "str.parquet", stats_out=stats)
    out = FeatureStore(tmp_path / "str.npy", tmp_path / "str.parquet")
    flat = np.asarray(out.array, dtype=np.float64).reshape(-1, 1024)
    raw = np.load(tr_npy).astype(np.float64).reshape(-1, 1024)
    live = raw.std(axis=0) > 1e-3
    np.testing.assert_allclose(flat.mean(axis=0), 0, atol=5e-3)
    np.testing.assert_allclose(flat.std(axis=0)[live], 1, atol=5e-3)
    assert out.meta["standardized"]["n_vectors"] == 10 * 16 and out.meta["layer"] == "res4f"
    assert out.images == FeatureStore(tr_npy, tr_idx).images
    info = standardize_store(te_npy, te_idx, tmp_path / "ste.npy", tmp_path / "ste.parquet", stats_from=stats)
    assert info["stats_from"] == str(stats)
    with np.load(stats) as z:
        mean, std = z["mean"], z["std"]
    expect = (np.load(te_npy).astype(np.float64) - mean) / np.where(std < 1e-6, 1, std)
    got = np.load(tmp_path / "ste.npy").astype(np.float64)
    np.testing.assert_allclose(got, expect, rtol=2e-3, atol=2e-3)
    # The training .npy itself can serve as stats_from (statistics computed on the fly).
    standardize_store(te_npy, te_idx, tmp_path / "ste2.npy", tmp_path / "ste2.parquet", stats_from=tr_npy)
    np.testing.assert_array_equal(np.load(tmp_path / "ste2.npy"), np.load(tmp_path / "ste.npy"))
    pool_npy, pool_idx, _ = _extract(images, tmp_path, ["test_00000.png"], tag="p", layer="pool5")
    with pytest.raises(DataError, match="2048"):
        standardize_store(pool_npy, pool_idx, tmp_path / "x.npy", tmp_path / "x.parquet", stats_from=stats)
    with pytest.raises(DataError, match="do not exist"):
        standardize_store(te_npy, te_idx, tmp_path / "x.npy", tmp_path / "x.parquet", stats_from=tmp_path / "no.npz")


class _Interrupt(RuntimeError):
    """Stands for a killed job (any error that is not bad input)."""


def _counting(monkeypatch, fail_on_call: int | None = None) -> list[int]:
    """Count extractor calls (one per batch); raise on call number ``fail_on_call``."""
    calls: list[int] = []

    def counted(self, batch):
        calls.append(batch.shape[0])
        if fail_on_call is not None and len(calls) == fail_on_call:
            raise _Interrupt("simulated interruption")
        return _REAL_CALL(self, batch)

    monkeypatch.setattr(ex_mod.ResNet50Extractor, "__call__", counted)
    return calls


def test_interrupted_extraction_resumes_from_done_chunks(images, tmp_path, monkeypatch):
    names = [f"train_{i:05d}.png" for i in range(7)]  # chunks of 2: [0,1] [2,3] [4,5] [6]
    ref_npy, ref_idx, _ = _extract(images, tmp_path / "ref", names, batch_size=2, chunk_size=2)
    out = tmp_path / "run"
    calls = _counting(monkeypatch, fail_on_call=3)  # batch = chunk here: dies in chunk 3
    with pytest.raises(_Interrupt):
        _extract(images, out, names, batch_size=2, chunk_size=2)
    assert not (out / "f.npy").exists() and not (out / "f.parquet").exists()
    progress = out / ".f.npy.progress.json"
    assert progress.is_file() and (out / ".f.npy.partial.npy").is_file()
    assert json.loads(progress.read_text())["done"] == [0, 1]
    assert not list(out.glob(".f.parquet*"))  # the index appears only at the very end

    calls = _counting(monkeypatch)
    npy, idx, info = _extract(images, out, names, batch_size=2, chunk_size=2)
    assert calls == [2, 1]  # only chunks 3 and 4 ran again
    assert info["resumed_chunks"] == 2 and any("resuming" in line for line in info["logs"])
    np.testing.assert_array_equal(np.load(npy), np.load(ref_npy))
    assert FeatureStore(npy, idx).images == FeatureStore(ref_npy, ref_idx).images
    assert sorted(p.name for p in out.iterdir()) == ["f.npy", "f.parquet", "f.txt"]  # no partial files left


def test_partial_run_with_other_inputs_is_discarded(images, tmp_path, monkeypatch):
    names = [f"train_{i:05d}.png" for i in range(6)]
    _counting(monkeypatch, fail_on_call=2)
    with pytest.raises(_Interrupt):
        _extract(images, tmp_path, names, batch_size=2, chunk_size=2)
    calls = _counting(monkeypatch)
    other = names[::-1]  # same size, other order: a different fingerprint
    npy, _, info = _extract(images, tmp_path, other, batch_size=2, chunk_size=2)
    assert calls == [2, 2, 2] and info["resumed_chunks"] == 0
    assert any("discarding partial" in line for line in info["logs"])


def test_shape_mismatches_are_data_errors(images, tmp_path, monkeypatch):
    monkeypatch.setattr(ex_mod.ResNet50Extractor, "__call__", lambda self, b: _REAL_CALL(self, b)[:, :-1])
    with pytest.raises(DataError, match=r"shape \(2, 15, 1024\).*expected \(2, 16, 1024\)"):
        _extract(images, tmp_path, ["train_00000.png", "train_00001.png"], batch_size=2)
    assert list(tmp_path.glob(".f.*")) == [] and not (tmp_path / "f.npy").exists()
    monkeypatch.setattr(ex_mod.ResNet50Extractor, "__call__", _REAL_CALL)
    a_npy, a_idx, _ = _extract(images, tmp_path, ["train_00000.png"], tag="a")
    b_npy, b_idx, _ = _extract(images, tmp_path, ["train_00000.png"], tag="b", layer="pool5")
    with pytest.raises(DataError, match=r"array shape \(1, 1, 2048\) differs from the shape \(1, 16, 1024\)"):
        FeatureStore(b_npy, a_idx)


def test_the_index_columns_read_from_their_buffers_equal_pyarrows(tmp_path):
    import pyarrow as pa

    from mmt_repro.features.store import _int_column, read_index

    # several chunks and a slice (a non-zero offset), signed and unsigned widths
    t = pa.table({"a": pa.chunked_array([pa.array([1, -2, 3], pa.int32()), pa.array([4, 5], pa.int32())]),
                  "u": pa.array([1, 2, 3, 4, 70000], pa.uint32()), "w": pa.array([9, 8, 7, 6, 5], pa.int64())})
    for part in (t, t.slice(2), t.slice(1, 3)):
        for name in ("a", "u", "w"):
            got, want = _int_column(part, name), part.column(name).to_numpy()
            assert got.dtype == want.dtype and got.tolist() == want.tolist() and got.flags.writeable
    idx = tmp_path / "s.index.parquet"
    write_index(idx, ["a.jpg", "b.jpg", "c.jpg"], {"shape": [3, 2, 4]}, columns={"n_boxes": [2, 0, 1]})
    names, extra, meta, key = read_index(idx)
    assert (names, key, meta) == (["a.jpg", "b.jpg", "c.jpg"], "image", {"shape": [3, 2, 4]})
    assert extra["n_boxes"].tolist() == [2, 0, 1] and extra["n_boxes"].dtype == np.int32


def test_opening_a_store_imports_neither_pandas_nor_pyarrow_dataset(tmp_path):
    """pyarrow's read_table and to_numpy import pandas (0.3 s of every job that reads features)."""
    idx = tmp_path / "s.index.parquet"
    write_index(idx, ["a.jpg", "b.jpg"], {"shape": [2, 3]}, columns={"n_boxes": [1, 2]})
    code = ("import sys; from mmt_repro.features.store import read_index;"
            f"names, extra, meta, key = read_index({str(idx)!r}); assert extra['n_boxes'].tolist() == [1, 2];"
            "print('pandas' in sys.modules, 'pyarrow.dataset' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


# ----------------------------------------------------------------------------- stand-in images
def test_image_folders_of_the_standins_hold_every_listed_image(standin, tmp_path):
    """The request-only image folders' stand-ins (Flickr30k + the COCO images of Multi30k's
    test_2017_mscoco, Flickr8k) and the COCO zips: every name the lists give is an image, and
    Multi30k's COCO list entries (``COCO_..._<id>.jpg#<caption id>``) find their file."""
    from mmt_repro.corpora.unpack import unpack_archive
    from mmt_repro.features.images import check_images, image_path, load_image
    from mmt_repro.io import read_lines

    t1 = standin("multi30k_task1")
    folder = standin("flickr30k_images")["folder"]
    for split in ("train", "val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco"):
        check_images(read_lines(t1["files"][f"image_splits/{split}.txt"]), folder)  # raises on any missing image
    coco = read_lines(t1["files"]["image_splits/test_2017_mscoco.txt"])[0]
    assert "#" in coco and image_path(folder, coco) == folder / coco.split("#")[0]
    assert load_image(image_path(folder, coco)).size in ((640, 480), (480, 640), (640, 427))
    assert image_path(folder, "nothing.jpg#1") == folder / "nothing.jpg#1"  # a missing one is named as listed
    with pytest.raises(DataError, match="nothing.jpg#1 \\(missing\\)"):
        check_images(["nothing.jpg#1"], folder)
    f8k = standin("flickr8k_text")["files"]
    check_images(read_lines(f8k["Flickr_8k.devImages.txt"]), standin("flickr8k_images")["folder"])
    zips = standin("mscoco_images")
    val = zips["resources"] / "val2014"  # unpacked by the fixture as rule unpack_input does
    karpathy_test = [n for n in sorted(p.name for p in val.glob("*.jpg"))]
    assert karpathy_test and all(n.startswith("COCO_val2014_") for n in karpathy_test)
    out = tmp_path / "train2014"
    unpack_archive(zips["files"]["train2014.zip"], out, strip="train2014/", expect="*.jpg")
    assert all(p.name.startswith("COCO_train2014_") for p in out.glob("*.jpg"))


def test_extraction_reads_multi30k_coco_entries_with_a_caption_id(standin, tmp_path):
    """The grid extractor on the stand-in image folder through Multi30k's test_2017_mscoco list,
    whose entries end in ``#<caption id>``: one row per entry, named as listed, equal to the
    row of the bare file name."""
    from mmt_repro.io import read_lines

    folder = standin("flickr30k_images")["folder"]
    listed = read_lines(standin("multi30k_task1")["files"]["image_splits/test_2017_mscoco.txt"])[:2]
    bare = [n.split("#")[0] for n in listed]
    out = {}
    for tag, names in (("listed", listed), ("bare", bare)):
        lst = write_lines(tmp_path / f"{tag}.txt", names)
        npy, idx = tmp_path / f"{tag}.npy", tmp_path / f"{tag}.parquet"
        info = extract_features(lst, folder, npy, idx, "resnet50", "pool5", "random", 64, batch_size=2)
        assert info["shape"][0] == 2
        out[tag] = np.load(npy)
        assert pq.read_table(idx).column("image").to_pylist() == names
    np.testing.assert_array_equal(out["listed"], out["bare"])
