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
    assert info["shape"] == (12, 36, 2048) and info["truncated"] == 0
    with np.load(src / "val_obj36.npz") as z:
        feats, geo = z["features"].astype(np.float32), z["boxes_and_areas"]
    store = RegionStore(tmp_path / "o.npy", boxes_out, tmp_path / "o.index.parquet")
    assert store.lengths.tolist() == [36] * 12 and store.width.tolist() == [1] * 12
    np.testing.assert_allclose(store.regions(5)[0], feats[5], rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(store.regions(5)[1], geo[5, :, :4])
    g = store.geometry(5)[0]  # fractions of the image: the geometry is the release's own
    np.testing.assert_allclose(g, [*geo[5, 0, :4], geo[5, 0, 2] - geo[5, 0, 0], geo[5, 0, 3] - geo[5, 0, 1]], rtol=1e-6)
    assert "fractions of the image" in store.meta["box_format"]
    # the wrong split's file is refused by its row count
    other = tmp_path / "other.txt"
    other.write_text("a.jpg\n", encoding="utf-8")
    with pytest.raises(DataError, match="has 12 rows but"):
        import_pretrained("butd", src / "val_obj36.npz", other, *_out(tmp_path / "x"), out_boxes=tmp_path / "x.npy")


def test_pysimt_resnet50_release_and_vatex_i3d_import_from_their_unpacked_folders(standin, tmp_path):
    r50, t1 = standin("multi30k_features_resnet50"), standin("multi30k_task1")
    image_list = tmp_path / "test_2017_mscoco.txt"
    image_list.write_bytes(t1["files"]["image_splits/test_2017_mscoco.txt"].read_bytes())
    info = import_pretrained("resnet50", r50["resources"] / "resnet50" / "r50-avgp-224-l2", image_list,
                             *_out(tmp_path), layer="pool5")
    assert info["shape"] == (8, 1, 2048) and info["layer"] == "pool5"
    vx, i3d = standin("vatex"), standin("vatex_i3d")
    from mmt_repro.corpora.vatex import prepare_vatex

    prepare_vatex(vx["files"]["vatex_validation_v1.0.json"], tmp_path / "vatex", "val", check_sizes=False)
    videos = tmp_path / "vatex" / "image_splits" / "val.txt"
    got = import_pretrained("vatex_i3d", i3d["resources"] / "trainval", videos, tmp_path / "v.npy",
                            tmp_path / "v.index.parquet", n_segments=32)
    assert got["shape"] == (20, 32, 1024)  # 4 videos x 5 pairs; 20-40 segments each, 32 kept
    test_names = {p.name for p in (i3d["resources"] / "public_test").glob("*.npy")}
    assert len(test_names) == 3 and not test_names & {p.name for p in (i3d["resources"] / "trainval").glob("*.npy")}


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
