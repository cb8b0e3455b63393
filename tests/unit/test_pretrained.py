"""Official pre-extracted features (Multi30k ResNet-50, BUTD .npz, VATEX I3D) imported into
the package's stores; every input file is written here in the published format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmt_repro.features.pretrained import import_pretrained
from mmt_repro.features.store import RegionStore
from mmt_repro.features.store import FeatureStore
from mmt_repro.io import DataError, read_lines, write_lines
from mmt_repro.standins.world import SIZES

IMAGES = ["1000092795.jpg", "10002456.jpg", "1000268201.jpg"]


@pytest.fixture
def image_list(tmp_path) -> Path:
    return write_lines(tmp_path / "train.txt", IMAGES)


def _out(tmp_path: Path, tag: str = "o") -> tuple[Path, Path]:
    return tmp_path / f"{tag}.npy", tmp_path / f"{tag}.index.parquet"


def test_resnet50_pool5(tmp_path, image_list):
    rng = np.random.default_rng(0)
    pool = rng.normal(size=(3, 2048)).astype(np.float32)
    np.save(tmp_path / "train-resnet50-avgpool.npy", pool)
    info = import_pretrained("resnet50", tmp_path / "train-resnet50-avgpool.npy", image_list, *_out(tmp_path))
    store = FeatureStore(*_out(tmp_path))
    assert info["layer"] == "pool5" and store.shape == (3, 1, 2048) and store.images == IMAGES
    np.testing.assert_allclose(store[2][0], pool[2], rtol=1e-3, atol=1e-3)
    assert store.meta["layer"] == "pool5" and store.meta["extractor"] == "resnet50" and store.lengths is None
    assert "train-resnet50-avgpool.npy" in store.meta["weights_desc"]


@pytest.mark.parametrize("layout", ["channels_first", "channels_last", "flat"])
def test_resnet50_res4f_layouts_give_row_major_grid(tmp_path, image_list, layout):
    grid = np.random.default_rng(1).normal(size=(3, 4, 4, 1024)).astype(np.float32)  # (N, H, W, C)
    data = {"channels_first": grid.transpose(0, 3, 1, 2), "channels_last": grid,
            "flat": grid.reshape(3, 16, 1024)}[layout]
    np.save(tmp_path / "res4f.npy", np.ascontiguousarray(data))
    info = import_pretrained("resnet50", tmp_path / "res4f.npy", image_list, *_out(tmp_path), layer="res4f")
    store = FeatureStore(*_out(tmp_path))
    assert info["layer"] == "res4f" and store.shape == (3, 16, 1024) and store.meta["image_size"] == 64
    np.testing.assert_allclose(store[1][2 * 4 + 3], grid[1, 2, 3], rtol=1e-3, atol=1e-3)  # row i*W+j = cell (i, j)


def test_resnet50_refuses_bad_files(tmp_path, image_list):
    np.save(tmp_path / "short.npy", np.zeros((2, 2048), np.float32))
    with pytest.raises(DataError, match="has 2 rows but .* has 3 images"):
        import_pretrained("resnet50", tmp_path / "short.npy", image_list, *_out(tmp_path))
    np.save(tmp_path / "pool.npy", np.zeros((3, 2048), np.float32))
    with pytest.raises(DataError, match="holds pool5 features .* layer 'res4f'"):
        import_pretrained("resnet50", tmp_path / "pool.npy", image_list, *_out(tmp_path), layer="res4f")
    np.save(tmp_path / "odd.npy", np.zeros((3, 7, 300), np.float32))
    with pytest.raises(DataError, match=r"unrecognised ResNet-50 feature shape \(3, 7, 300\)"):
        import_pretrained("resnet50", tmp_path / "odd.npy", image_list, *_out(tmp_path))
    bad = np.zeros((3, 2048), np.float32)
    bad[1, 5] = np.inf
    bad[2, 0] = 1e6  # beyond float16
    np.save(tmp_path / "bad.npy", bad)
    with pytest.raises(DataError, match=r"10002456.jpg \(NaN/Inf\), 1000268201.jpg \(exceeds float16"):
        import_pretrained("resnet50", tmp_path / "bad.npy", image_list, *_out(tmp_path))
    assert not (tmp_path / "o.npy").exists() and not list(tmp_path.glob(".o.*"))
    with pytest.raises(DataError, match="do not exist"):
        import_pretrained("resnet50", tmp_path / "nope.npy", image_list, *_out(tmp_path))
    with pytest.raises(ValueError, match="resnet50, butd, vatex_i3d"):
        import_pretrained("clip", tmp_path / "pool.npy", image_list, *_out(tmp_path))


def _butd_dir(tmp_path: Path) -> tuple[Path, dict]:
    rng = np.random.default_rng(2)
    src = tmp_path / "butd"
    src.mkdir()
    feats = {name: rng.random((n, 2048), dtype=np.float32) for name, n in zip(IMAGES, (3, 5, 4))}
    boxes = {name: np.array([[i, 2 * i, 100 + i, 50 + i] for i in range(len(f))], np.float32)
             for name, f in feats.items()}
    # bottom-up-attention.pytorch spelling, features stored (D, n), file named by stem
    np.savez_compressed(src / "1000092795.npz", x=feats[IMAGES[0]].T, bbox=boxes[IMAGES[0]], num_bbox=3,
                        image_w=500, image_h=375)
    # obj36-style spelling, file named by the full image name
    np.savez(src / "10002456.jpg.npz", features=feats[IMAGES[1]], boxes=boxes[IMAGES[1]], num_boxes=5,
             image_w=333, image_h=500)
    np.savez(src / "1000268201.npz", features=feats[IMAGES[2]], boxes=boxes[IMAGES[2]], image_w=640, image_h=480)
    return src, {"feats": feats, "boxes": boxes}


def test_butd_npz_per_image(tmp_path, image_list):
    src, ref = _butd_dir(tmp_path)
    boxes_out = tmp_path / "o.boxes.npy"
    logs: list[str] = []
    info = import_pretrained("butd", src, image_list, *_out(tmp_path), out_boxes=boxes_out, max_boxes=4,
                             log=logs.append)
    assert info["shape"] == (3, 4, 2048) and info["truncated"] == 1
    assert any("1 image(s) had more than 4 boxes" in line for line in logs)
    store = RegionStore(tmp_path / "o.npy", boxes_out, tmp_path / "o.index.parquet")
    assert store.lengths.tolist() == [3, 4, 4] and store.width.tolist() == [500, 333, 640]
    feats, boxes = store.regions(0)
    np.testing.assert_allclose(feats, ref["feats"][IMAGES[0]], rtol=1e-3, atol=1e-3)  # transposed back
    np.testing.assert_array_equal(boxes, ref["boxes"][IMAGES[0]])
    np.testing.assert_allclose(store.regions(1)[0], ref["feats"][IMAGES[1]][:4], rtol=1e-3, atol=1e-3)
    assert (np.asarray(store.array)[0, 3] == 0).all()  # padding
    np.testing.assert_allclose(store.geometry(0)[1], [1 / 500, 2 / 375, 101 / 500, 51 / 375, 0.2, 49 / 375],
                               rtol=1e-5)
    assert store.meta["feature_dim"] == 2048 and store.meta["backend"] == "butd-pretrained"


def test_butd_missing_files_and_keys(tmp_path, image_list):
    src, _ = _butd_dir(tmp_path)
    (src / "1000268201.npz").unlink()
    lst = write_lines(tmp_path / "more.txt", IMAGES + ["999.jpg", "COCO_val2014_000000000042.jpg"])
    with pytest.raises(DataError, match="3 missing pre-extracted image") as err:
        import_pretrained("butd", src, lst, *_out(tmp_path), out_boxes=tmp_path / "b.npy")
    assert "999.jpg" in str(err.value) and "COCO_val2014_000000000042.jpg" in str(err.value)
    np.savez(src / "42.npz", features=np.zeros((2, 2048), np.float32), boxes=np.zeros((2, 4), np.float32))
    np.savez(src / "1000268201.npz", features=np.zeros((2, 2048), np.float32), boxes=np.zeros((2, 4), np.float32))
    coco = write_lines(tmp_path / "coco.txt", ["COCO_val2014_000000000042.jpg"])  # found as 42.npz
    with pytest.raises(DataError, match="lacks image_w, image_h"):
        import_pretrained("butd", src, coco, *_out(tmp_path), out_boxes=tmp_path / "b.npy")


def test_vatex_i3d_per_video(tmp_path):
    rng = np.random.default_rng(3)
    src = tmp_path / "vatex"
    src.mkdir()
    videos = ["Ptf_2VRj-V0_000122_000132", "-0RaTFcnn3A_000012_000022", "abc_000001_000011"]
    arrays = [rng.normal(size=(5, 1024)), rng.normal(size=(2, 1024)), rng.normal(size=(1, 3, 1024))]
    for v, a in zip(videos, arrays):
        np.save(src / f"{v}.npy", a.astype(np.float32))
    lst = write_lines(tmp_path / "val.txt", videos)
    info = import_pretrained("vatex_i3d", src, lst, *_out(tmp_path), n_segments=4)
    store = FeatureStore(*_out(tmp_path))
    assert info["shape"] == (3, 4, 1024) and info["sampled"] == 1 and store.key == "video"
    assert store.lengths.tolist() == [4, 2, 3] and store.columns["source_segments"].tolist() == [5, 2, 3]
    np.testing.assert_allclose(store[0], arrays[0][[0, 1, 3, 4]], rtol=1e-3, atol=2e-3)  # evenly picked
    np.testing.assert_allclose(store[1][:2], arrays[1], rtol=1e-3, atol=2e-3)
    assert (store[1][2:] == 0).all() and store.mask(1).tolist() == [True, True, False, False]
    np.testing.assert_allclose(store[2][:3], arrays[2][0], rtol=1e-3, atol=2e-3)
    import_pretrained("vatex_i3d", src, lst, *_out(tmp_path, "all"))  # n_segments=None: the longest video
    assert FeatureStore(*_out(tmp_path, "all")).shape == (3, 5, 1024)
    np.save(src / f"{videos[1]}.npy", np.zeros((2, 512), np.float32))
    with pytest.raises(DataError, match="dimensions differ"):
        import_pretrained("vatex_i3d", src, lst, *_out(tmp_path, "x"))


# ---- the published releases' layouts ----------------------------------------------------------
# pysimt's ResNet-50 release (Zenodo 4298396, multi30k_resnet50_features.tar.bz2): pysimt's
# data/multi30k/prepare.sh unpacks it without renaming and every OC config of pysimt reads
# features/resnet50-256x256/<split>-resnet50-res5c_relu-r256-c256-l2norm.npy, which its
# NumpyDataset flattens as (n, C, H, W) -> (H*W, n, C) with aux_dim 2048: channels first, 8 x 8
# at 256 px. LIUM's WMT17 pool5 (wmt17-mmt configs and README): resnet50-imagenet-pool5/
# flickr30k_ResNet50_pool5_<split>.npy with LIUM's split names (train, val, test2016, test2017).
PYSIMT_GRID = "resnet50-256x256/{split}-resnet50-res5c_relu-r256-c256-l2norm.npy"


def _pysimt_resnet(root: Path, splits=("train", "val"), n=3, side=2) -> dict:
    rng = np.random.default_rng(4)
    grids = {}
    for split in splits:
        grid = rng.random((n, 2048, side, side), dtype=np.float32)  # (N, C, H, W) as released
        grid /= np.linalg.norm(grid, axis=1, keepdims=True)  # L2-normalised cells ("l2norm")
        f = root / PYSIMT_GRID.format(split=split)
        f.parent.mkdir(parents=True, exist_ok=True)
        np.save(f, grid)
        grids[split] = grid
    return grids


def test_the_pysimt_resnet50_release_is_found_below_its_top_folder_by_split(tmp_path, image_list):
    grids = _pysimt_resnet(tmp_path / "resnet50")  # the folder rule unpack_input writes
    info = import_pretrained("resnet50", tmp_path / "resnet50", image_list, *_out(tmp_path), layer="res5c")
    store = FeatureStore(*_out(tmp_path))
    assert info["layer"] == "res5c" and store.shape == (3, 4, 2048) and store.meta["image_size"] == 64
    assert info["source"].endswith("resnet50-256x256/train-resnet50-res5c_relu-r256-c256-l2norm.npy")
    np.testing.assert_allclose(store[2][1 * 2 + 0], grids["train"][2, :, 1, 0], rtol=1e-3, atol=1e-3)
    val = write_lines(tmp_path / "val.txt", IMAGES)
    import_pretrained("resnet50", tmp_path / "resnet50", val, *_out(tmp_path, "v"), layer="res5c")
    np.testing.assert_allclose(FeatureStore(*_out(tmp_path, "v"))[0][3], grids["val"][0, :, 1, 1], rtol=1e-3,
                               atol=1e-3)


def test_pool5_asked_of_a_res5c_grid_is_its_mean_over_the_cells(tmp_path, image_list):
    grids = _pysimt_resnet(tmp_path / "resnet50")
    info = import_pretrained("resnet50", tmp_path / "resnet50", image_list, *_out(tmp_path), layer="pool5")
    store = FeatureStore(*_out(tmp_path))
    assert info["layer"] == "pool5" and store.shape == (3, 1, 2048) and store.meta["layer"] == "pool5"
    np.testing.assert_allclose(store[1][0], grids["train"][1].mean(axis=(1, 2)), rtol=1e-3, atol=1e-4)
    assert "mean over the 2 x 2 cells" in store.meta["derived"] and "L2-normalised" in store.meta["derived"]
    with pytest.raises(DataError, match="holds res5c features .* layer 'res4f'"):
        import_pretrained("resnet50", tmp_path / "resnet50", image_list, *_out(tmp_path, "x"), layer="res4f")


def test_lium_pool5_files_are_found_under_lium_split_names(tmp_path):
    folder = tmp_path / "pool5" / "resnet50-imagenet-pool5"
    folder.mkdir(parents=True)
    pool = np.random.default_rng(5).normal(size=(3, 2048)).astype(np.float32)
    np.save(folder / "flickr30k_ResNet50_pool5_test2016.npy", pool)
    np.save(folder / "flickr30k_ResNet50_pool5_train.npy", pool[::-1])
    test = write_lines(tmp_path / "test_2016_flickr.txt", IMAGES)
    info = import_pretrained("resnet50", tmp_path / "pool5", test, *_out(tmp_path), layer="pool5")
    assert info["source"].endswith("flickr30k_ResNet50_pool5_test2016.npy")
    np.testing.assert_allclose(FeatureStore(*_out(tmp_path))[2][0], pool[2], rtol=1e-3, atol=1e-3)


def test_a_split_held_twice_is_told_apart_by_its_layer_and_a_missing_split_lists_the_folder(tmp_path, image_list):
    src = tmp_path / "feats"
    src.mkdir()
    np.save(src / "train-resnet50-avgpool.npy", np.ones((3, 2048), np.float32))
    np.save(src / "train-resnet50-res4f_relu.npy", np.ones((3, 1024, 2, 2), np.float32))
    assert import_pretrained("resnet50", src, image_list, *_out(tmp_path), layer="res4f")["layer"] == "res4f"
    assert import_pretrained("resnet50", src, image_list, *_out(tmp_path, "p"), layer="pool5")["layer"] == "pool5"
    with pytest.raises(DataError, match="several files hold split 'train'") as err:
        import_pretrained("resnet50", src, image_list, *_out(tmp_path, "x"))
    assert "set the feature set's `layer`" in str(err.value)
    test = write_lines(tmp_path / "test_2017_flickr.txt", IMAGES)
    with pytest.raises(DataError, match="no .npy file of split 'test_2017_flickr'") as err:
        import_pretrained("resnet50", src, test, *_out(tmp_path, "x"), layer="pool5")
    assert "test_2017_flickr / test2017" in str(err.value) and "train-resnet50-avgpool.npy" in str(err.value)


def test_a_release_file_with_another_count_than_the_image_list_is_refused_naming_both(tmp_path):
    _pysimt_resnet(tmp_path / "resnet50", splits=("val",), n=4)
    val = write_lines(tmp_path / "val.txt", IMAGES)
    with pytest.raises(DataError, match=r"val-resnet50-res5c_relu-r256-c256-l2norm.npy: has 4 rows but .*val.txt "
                       r"has 3 images") as err:
        import_pretrained("resnet50", tmp_path / "resnet50", val, *_out(tmp_path), layer="res5c")
    assert "image_splits/<split>.txt" in str(err.value)
    assert not (tmp_path / "o.npy").exists() and not list(tmp_path.glob(".o.*"))


# pysimt's BUTD release (multi30k_butd_features.tar.bz2): one <split>_obj36.npz per split, val as
# valid_obj36.npz (pysimt's configs); keys read by pysimt's ObjectDetectionsDataset
# (pysimt/datasets/objdet.py): features (n, regions, 2048), boxes_and_areas (n, regions, k),
# objects_id / attrs_id (n, regions), order (its size = the number of rows; pysimt reads row i
# for sentence i). The box columns are not documented: x1, y1, x2, y2 and an area here.
def _obj36(path: Path, n=3, R=5, D=8, order=None, compressed=False, pixels=False, seed=6) -> dict:
    rng = np.random.default_rng(seed)
    feats = rng.random((n, R, D), dtype=np.float32)
    xy = rng.random((n, R, 2), dtype=np.float32) * 0.5
    wh = rng.random((n, R, 2), dtype=np.float32) * 0.5
    boxes = np.concatenate([xy, xy + wh, (wh[..., :1] * wh[..., 1:])], axis=-1)  # x1 y1 x2 y2 area
    arrays = {"features": feats, "order": np.arange(n) if order is None else order,
              "objects_id": rng.integers(0, 1600, (n, R)), "attrs_id": rng.integers(0, 400, (n, R))}
    if pixels:
        boxes[..., :4] *= 500
        arrays.update(image_w=np.full(n, 500), image_h=np.full(n, 400))
    arrays["boxes_and_areas"] = boxes
    path.parent.mkdir(parents=True, exist_ok=True)
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    return {"feats": feats, "boxes": boxes}


@pytest.mark.parametrize("compressed", [False, True])
def test_butd_one_file_per_split_as_pysimt_releases_it(tmp_path, compressed):
    ref = _obj36(tmp_path / "obj36" / "valid_obj36.npz", compressed=compressed)
    val = write_lines(tmp_path / "val.txt", IMAGES)
    logs: list[str] = []
    info = import_pretrained("butd", tmp_path / "obj36", val, *_out(tmp_path), out_boxes=tmp_path / "o.boxes.npy",
                             max_boxes=4, log=logs.append)
    store = RegionStore(tmp_path / "o.npy", tmp_path / "o.boxes.npy", tmp_path / "o.index.parquet")
    assert info["shape"] == (3, 4, 8) and info["truncated"] == 3 and store.images == IMAGES
    assert store.lengths.tolist() == [4, 4, 4] and store.width.tolist() == [1, 1, 1]
    feats, boxes = store.regions(1)
    np.testing.assert_allclose(feats, ref["feats"][1, :4], rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(boxes, ref["boxes"][1, :4, :4])
    b = ref["boxes"][2, 0]
    np.testing.assert_allclose(store.geometry(2)[0], [b[0], b[1], b[2], b[3], b[2] - b[0], b[3] - b[1]], rtol=1e-5)
    assert "rows in image-list order" in store.meta["row_order"] and "normalised" in store.meta["box_format"]
    assert store.meta["layout"] == "one file per split" and any("valid_obj36.npz" in line for line in logs)


@pytest.mark.parametrize("kind", ["names", "stems", "ids"])
def test_butd_rows_follow_the_image_list_through_order(tmp_path, kind):
    shuffled = [2, 0, 1]  # row r of the file holds image shuffled[r] of the list
    order = {"names": np.array([IMAGES[i] for i in shuffled]),
             "stems": np.array([IMAGES[i].split(".")[0] for i in shuffled]),
             "ids": np.array([int(IMAGES[i].split(".")[0]) for i in shuffled])}[kind]
    ref = _obj36(tmp_path / "obj36" / "train_obj36.npz", order=order, pixels=True)
    lst = write_lines(tmp_path / "train.txt", IMAGES)
    info = import_pretrained("butd", tmp_path / "obj36", lst, *_out(tmp_path), out_boxes=tmp_path / "o.boxes.npy")
    store = RegionStore(tmp_path / "o.npy", tmp_path / "o.boxes.npy", tmp_path / "o.index.parquet")
    for image, row in zip(IMAGES, range(3)):
        np.testing.assert_allclose(store.regions(row)[0], ref["feats"][shuffled.index(IMAGES.index(image))],
                                   rtol=1e-3, atol=1e-3)
    assert "mapped by the image" in info["row_order"] and store.width.tolist() == [500] * 3
    assert store.height.tolist() == [400] * 3 and "pixels" in info["box_format"]


def test_butd_per_split_mismatches_are_refused_naming_the_file_and_the_fix(tmp_path):
    lst = write_lines(tmp_path / "train.txt", IMAGES)
    out = dict(out_boxes=tmp_path / "o.boxes.npy")
    _obj36(tmp_path / "a" / "train_obj36.npz", n=2)  # another split's count
    with pytest.raises(DataError, match=r"train_obj36.npz: has 2 rows but .*train.txt has 3 images") as err:
        import_pretrained("butd", tmp_path / "a", lst, *_out(tmp_path), **out)
    assert "use the release's file of the same split" in str(err.value)
    _obj36(tmp_path / "b" / "train_obj36.npz", order=np.array([7, 8, 9]))
    with pytest.raises(DataError, match="neither the row positions 0..2 nor the numeric ids"):
        import_pretrained("butd", tmp_path / "b", lst, *_out(tmp_path), **out)
    _obj36(tmp_path / "c" / "train_obj36.npz", order=np.array(["1000092795.jpg", "10002456.jpg", "42.jpg"]))
    with pytest.raises(DataError, match="1 image\\(s\\) of the list not named by `order`") as err:
        import_pretrained("butd", tmp_path / "c", lst, *_out(tmp_path), **out)
    assert "1000268201.jpg" in str(err.value)
    np.savez(tmp_path / "d_obj36.npz", features=np.zeros((3, 2, 8), np.float32), order=np.arange(3))
    with pytest.raises(DataError, match="lacks boxes_and_areas"):
        import_pretrained("butd", tmp_path / "d_obj36.npz", lst, *_out(tmp_path), **out)
    assert not (tmp_path / "o.npy").exists() and not list(tmp_path.glob(".o.*"))


def test_a_per_image_folder_is_still_read_per_image(tmp_path, image_list):
    src, _ = _butd_dir(tmp_path)  # BertGen's 10-100-box folders (bottom-up-attention.pytorch's npz per image)
    info = import_pretrained("butd", src, image_list, *_out(tmp_path), out_boxes=tmp_path / "o.boxes.npy")
    assert info["shape"] == (3, 36, 2048) and "row_order" not in info

# ----------------------------------------------------------------------------- stand-in releases
# The published feature releases' stand-ins (mmt_repro.standins), fetched from a stand-in mirror
# and unpacked by unpack_archive as rule unpack_input does, then imported from the folder the
# config's `src` names (resources/<input>/<unpack.into>).


def test_pysimt_butd_release_imports_one_file_per_split(standin, tmp_path):
    """pysimt's multi30k_butd_features.tar.bz2 holds <split>_obj36.npz (features (N, 36, 2048),
    boxes_and_areas (N, 36, 5)), not one .npz per image: the import finds the split's file by
    the image list's name and keeps its row order."""
    import tarfile

    butd, t1 = standin("multi30k_features_butd"), standin("multi30k_task1")
    with tarfile.open(butd["files"]["multi30k_butd_features.tar.bz2"]) as tar:
        assert "multi30k_butd_features/test_2017_mscoco_obj36.npz" in tar.getnames()
    src = butd["resources"] / "obj36"  # config: datasets.multi30k.features.butd-obj36.src
    image_list = tmp_path / "val.txt"
    image_list.write_bytes(t1["files"]["image_splits/val.txt"].read_bytes())
    boxes_out = tmp_path / "o.boxes.npy"
    info = import_pretrained("butd", src, image_list, *_out(tmp_path), out_boxes=boxes_out, max_boxes=36)
    assert info["shape"] == (SIZES["val"], 36, 2048) and info["truncated"] == 0
    with np.load(src / "valid_obj36.npz") as z:
        feats, geo = z["features"].astype(np.float32), z["boxes_and_areas"]
    store = RegionStore(tmp_path / "o.npy", boxes_out, tmp_path / "o.index.parquet")
    assert store.lengths.tolist() == [36] * SIZES["val"] and store.width.tolist() == [1] * SIZES["val"]
    np.testing.assert_allclose(store.regions(5)[0], feats[5], rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(store.regions(5)[1], geo[5, :, :4])
    g = store.geometry(5)[0]  # fractions of the image: the geometry is the release's own
    np.testing.assert_allclose(g, [*geo[5, 0, :4], geo[5, 0, 2] - geo[5, 0, 0], geo[5, 0, 3] - geo[5, 0, 1]], rtol=1e-6)
    assert "normalised to [0, 1]" in store.meta["box_format"]
    # the wrong split's file is refused by its row count
    other = tmp_path / "other.txt"
    other.write_text("a.jpg\n", encoding="utf-8")
    with pytest.raises(DataError, match=f"has {SIZES['val']} rows but"):
        import_pretrained("butd", src / "valid_obj36.npz", other, *_out(tmp_path / "x"), out_boxes=tmp_path / "x.npy")


def test_pysimt_resnet50_release_and_vatex_i3d_import_from_their_unpacked_folders(standin, tmp_path):
    r50, t1 = standin("multi30k_features_resnet50"), standin("multi30k_task1")
    image_list = tmp_path / "test_2017_mscoco.txt"
    image_list.write_bytes(t1["files"]["image_splits/test_2017_mscoco.txt"].read_bytes())
    info = import_pretrained("resnet50", r50["resources"] / "resnet50", image_list, *_out(tmp_path), layer="pool5")
    assert info["shape"] == (SIZES["test_2017_mscoco"], 1, 2048) and info["layer"] == "pool5"  # the mean of the 2 x 2 res5c grid
    assert info["source"].endswith("resnet50-256x256/test_2017_mscoco-resnet50-res5c_relu-r256-c256-l2norm.npy")
    grid = import_pretrained("resnet50", r50["resources"] / "resnet50", image_list, *_out(tmp_path, "g"), layer="res5c")
    assert grid["shape"] == (SIZES["test_2017_mscoco"], 4, 2048)
    vx, i3d = standin("vatex"), standin("vatex_i3d")
    from mmt_repro.corpora.vatex import prepare_vatex

    prepare_vatex(vx["files"]["vatex_validation_v1.0.json"], tmp_path / "vatex", "val", check_sizes=False)
    videos = tmp_path / "vatex" / "image_splits" / "val.txt"
    got = import_pretrained("vatex_i3d", i3d["resources"] / "trainval", videos, tmp_path / "v.npy",
                            tmp_path / "v.index.parquet", n_segments=32)
    assert got["shape"] == (20, 32, 1024)  # 4 videos x 5 pairs; 20-40 segments each, 32 kept
    test_names = {p.name for p in (i3d["resources"] / "public_test").glob("*.npy")}
    assert len(test_names) == 3 and not test_names & {p.name for p in (i3d["resources"] / "trainval").glob("*.npy")}


def test_lium_pool5_release_imports_every_split_by_its_lium_name(standin, tmp_path):
    """LIUM's WMT17 pool5 tarball (``resnet50-imagenet-pool5/flickr30k_ResNet50_pool5_<split>.npy``,
    LIUM's split names) through the importer of ``lium-pool5`` (config/published_features.yaml)."""
    lium, t1 = standin("multi30k_features_pool5_lium"), standin("multi30k_task1")
    folder = lium["resources"] / "pool5"
    assert sorted(p.name for p in (folder / "resnet50-imagenet-pool5").glob("*.npy")) == [
        f"flickr30k_ResNet50_pool5_{s}.npy" for s in ("test2016", "test2017", "testcoco", "train", "val")]
    for split in ("val", "test_2016_flickr", "test_2017_mscoco"):
        image_list = tmp_path / f"{split}.txt"
        image_list.write_bytes(t1["files"][f"image_splits/{split}.txt"].read_bytes())
        info = import_pretrained("resnet50", folder, image_list, *_out(tmp_path, split), layer="pool5")
        assert info["shape"] == (len(image_list.read_text(encoding="utf-8").splitlines()), 1, 2048)
        lium_name = {"val": "val", "test_2016_flickr": "test2016", "test_2017_mscoco": "testcoco"}[split]
        assert info["source"].endswith(f"resnet50-imagenet-pool5/flickr30k_ResNet50_pool5_{lium_name}.npy")
        raw = np.load(folder / "resnet50-imagenet-pool5" / f"flickr30k_ResNet50_pool5_{lium_name}.npy")
        np.testing.assert_allclose(np.load(tmp_path / f"{split}.npy")[:, 0].astype(np.float32), raw, rtol=1e-3)


def test_the_standin_i3d_arrays_have_the_released_leading_axis(standin):
    i3d = standin("vatex_i3d")["resources"] / "trainval"
    shapes = {np.load(p).shape[::2] for p in i3d.glob("*.npy")}
    assert shapes == {(1, 1024)}  # (1, n_segments, 1024), as the VATEX baseline's np.load(path)[0] expects


def test_standin_bottom_up_attention_files_import_for_every_listed_image(standin, tmp_path):
    """BertGen's 10-100-box region files (no manifest input; the feature sets' butd-regions.src):
    one .npz per stand-in image, found for Multi30k's COCO entries (``...jpg#<id>``) and Flickr8k
    names alike, each box inside its image."""
    from PIL import Image

    import yaml

    src = standin("butd_regions")["folder"]
    overlay = yaml.safe_load(open(standin("butd_regions")["written"]["config"], encoding="utf-8"))
    assert {d: v["features"]["butd-regions"]["src"] for d, v in overlay["datasets"].items() if "features" in v} == \
        {d: str(src) for d in ("multi30k", "tasviret", "flickr30k_captions", "coco_karpathy")}
    lists = {"mscoco": standin("multi30k_task1")["files"]["image_splits/test_2017_mscoco.txt"],
             "f8k": standin("flickr8k_text")["files"]["Flickr_8k.testImages.txt"]}
    images = standin("flickr30k_images")["folder"]
    for tag, image_list in lists.items():
        boxes_out = tmp_path / f"{tag}.boxes.npy"
        info = import_pretrained("butd", src, image_list, *_out(tmp_path, tag), out_boxes=boxes_out, max_boxes=100)
        store = RegionStore(tmp_path / f"{tag}.npy", boxes_out, tmp_path / f"{tag}.index.parquet")
        assert info["shape"][1:] == (100, 2048) and 10 <= store.lengths.min() <= store.lengths.max() <= 100
        assert (store.geometries(range(len(store.lengths)))[..., :4] <= 1).all()  # boxes inside the image
    first = read_lines(lists["mscoco"])[0].split("#")[0]
    with Image.open(images / first) as im, np.load(src / f"{first[:-4]}.npz") as z:
        assert (int(z["image_w"]), int(z["image_h"])) == im.size  # the region file's size is the image's
