"""Fetched archives unpacked by rule unpack_input (mmt_repro.corpora.unpack): the official member
layouts, idempotence, resuming, and the errors for a corrupt archive or a missing member; the
plan putting the unpack job upstream of the import; the preflight asking for no hand step.

Member layouts the small archives copy (looked up in public code, not in the archives):
- VATEX I3D ``trainval.zip``: ``trainval/<videoID>.npy``, one (1, n_segments, 1024) array per video
  (the baseline's ``load_video_features`` reads ``np.load(path)[0]``; the import takes either shape).
  The VATEX baseline's README (vmt) runs ``unzip trainval.zip`` in ``vatex_features/`` and reads
  ``vatex_features/trainval/<videoID>.npy``; video ids are ``<YouTube id>_<start>_<end>``, e.g.
  ``_2zXAtOKXm0_000004_000014``.
- pysimt's BUTD release ``multi30k_butd_features.tar.bz2``: top folder ``multi30k_butd_features/``
  (ImperialNLP/pysimt data/multi30k/prepare.sh: ``tar xvf butd.tar.bz2; mv multi30k_butd_features
  butd``), holding ``<split>_obj36.npz`` (its scripts read ``features/butd/test_2017_flickr_obj36.npz``;
  val is ``valid_obj36.npz``), each with the keys pysimt's ObjectDetectionsDataset reads: ``features``
  (n, regions, 2048), ``boxes_and_areas`` (n, regions, k), ``order`` (n,).
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path
from types import SimpleNamespace as W

import numpy as np
import pytest

from mmt_repro.config import deep_update, load_yaml
from mmt_repro.corpora.manifest import load_manifest
from mmt_repro.corpora.unpack import LISTING, unpack_archive
from mmt_repro.io import DataError

REPO = Path(__file__).resolve().parents[2]
VIDEOS = ["_2zXAtOKXm0_000004_000014", "-0udK4I3Ke4_000030_000040", "zzit5b_-ukg_000001_000011"]
SPLITS = ["train", "valid", "test_2016_flickr"]  # as the BUTD release names them


def npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def vatex_zip(path: Path, videos=VIDEOS, top="trainval") -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{top}/", b"")
        for k, vid in enumerate(videos):
            zf.writestr(f"{top}/{vid}.npy", npy_bytes(np.full((k + 2, 1024), k, dtype=np.float32)))
    return path


def butd_tar(path: Path) -> Path:
    with tarfile.open(path, "w:bz2") as tar:
        for split in SPLITS:
            data = npz_bytes(features=np.full((2, 36, 8), SPLITS.index(split), dtype=np.float32),
                             boxes_and_areas=np.full((2, 36, 5), 0.25, dtype=np.float32), order=np.arange(2))
            info = tarfile.TarInfo(f"multi30k_butd_features/{split}_obj36.npz")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_vatex_trainval_zip_unpacks_into_one_npy_per_video(tmp_path):
    out = tmp_path / "resources" / "vatex_i3d" / "trainval"
    info = unpack_archive(vatex_zip(tmp_path / "trainval.zip"), out, strip="trainval/", expect="*.npy")
    assert sorted(p.name for p in out.glob("*.npy")) == sorted(f"{v}.npy" for v in VIDEOS)
    assert info["members"] == 3 and info["written"] == 3 and not info["already"]
    assert np.load(out / f"{VIDEOS[2]}.npy").shape == (4, 1024)
    assert not (tmp_path / "resources" / "vatex_i3d" / "trainval.part").exists()
    # the importer reads the unpacked folder as it read a hand-unpacked one
    from mmt_repro.features.pretrained import import_pretrained

    lst = tmp_path / "val.txt"
    lst.write_text("\n".join(VIDEOS) + "\n", encoding="utf-8")
    got = import_pretrained("vatex_i3d", out, lst, tmp_path / "f.npy", tmp_path / "f.index.parquet", n_segments=3)
    assert got["shape"] == (3, 3, 1024)


def test_the_butd_tarball_loses_its_top_folder_and_a_second_run_does_nothing(tmp_path):
    archive, out = butd_tar(tmp_path / "multi30k_butd_features.tar.bz2"), tmp_path / "obj36"
    unpack_archive(archive, out, strip="multi30k_butd_features", expect="*.npz")
    assert sorted(p.name for p in out.iterdir()) == sorted([LISTING, *(f"{s}_obj36.npz" for s in SPLITS)])
    with np.load(out / "valid_obj36.npz") as z:
        assert z["features"].shape == (2, 36, 8)
    mtime = (out / "valid_obj36.npz").stat().st_mtime_ns
    again = unpack_archive(archive, out, strip="multi30k_butd_features", expect="*.npz")
    assert again["already"] and again["written"] == 0 and (out / "valid_obj36.npz").stat().st_mtime_ns == mtime
    # import_regions reads the unpacked folder: the project's split val is the release's valid
    from mmt_repro.features.pretrained import import_pretrained

    lst = tmp_path / "val.txt"
    lst.write_text("1000092795.jpg\n10002456.jpg\n", encoding="utf-8")
    got = import_pretrained("butd", out, lst, tmp_path / "f.npy", tmp_path / "f.index.parquet",
                            out_boxes=tmp_path / "f.boxes.npy", max_boxes=36)
    assert got["shape"] == (2, 36, 8) and (np.load(tmp_path / "f.npy") == SPLITS.index("valid")).all()


def test_an_interrupted_unpack_resumes_and_keeps_the_members_already_written(tmp_path):
    archive, out = vatex_zip(tmp_path / "trainval.zip"), tmp_path / "trainval"
    unpack_archive(archive, out, strip="trainval/", expect="*.npy")
    # as a killed job leaves it: the part folder (same archive) with one member complete
    out.rename(tmp_path / "trainval.part")
    (tmp_path / "trainval.part" / LISTING).write_text((tmp_path / "trainval.part" / LISTING).read_text().split("\n")[0])
    (tmp_path / "trainval.part" / f"{VIDEOS[1]}.npy").unlink()
    info = unpack_archive(archive, out, strip="trainval/", expect="*.npy")
    assert (info["kept"], info["written"]) == (2, 1) and len(list(out.glob("*.npy"))) == 3


def test_a_truncated_archive_is_a_data_error_naming_it_and_the_fix_and_keeps_the_folder(tmp_path):
    archive = butd_tar(tmp_path / "multi30k_butd_features.tar.bz2")
    out = tmp_path / "obj36"
    unpack_archive(archive, out, strip="multi30k_butd_features/", expect="*.npz")
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(DataError, match="corrupt or truncated") as err:
        unpack_archive(archive, out, strip="multi30k_butd_features/", expect="*.npz")
    assert str(archive) in str(err.value) and "fetch_input fetches it again" in str(err.value)
    assert len(list(out.glob("*.npz"))) == 3  # what was built is not lost
    broken_zip = tmp_path / "trainval.zip"
    broken_zip.write_bytes(vatex_zip(tmp_path / "ok.zip").read_bytes()[:-40])
    with pytest.raises(DataError, match="corrupt or truncated"):
        unpack_archive(broken_zip, tmp_path / "t", strip="trainval/", expect="*.npy")


def test_a_missing_folder_or_expected_member_names_the_archive_and_the_manifest_key(tmp_path):
    archive = vatex_zip(tmp_path / "trainval.zip", top="val")
    with pytest.raises(DataError, match=r"no member under 'trainval/'.*top-level entries: val") as err:
        unpack_archive(archive, tmp_path / "trainval", strip="trainval/", expect="*.npy")
    assert "unpack.strip" in str(err.value) and str(archive) in str(err.value)
    with pytest.raises(DataError, match=r"missing expected members: .* matches '\*.npz'") as err:
        unpack_archive(archive, tmp_path / "val", strip="val/", expect="*.npz")
    assert "unpack.expect" in str(err.value)
    assert not (tmp_path / "val").exists() and not (tmp_path / "trainval").exists()
    with pytest.raises(DataError, match="does not exist"):
        unpack_archive(tmp_path / "none.zip", tmp_path / "x")


def test_a_member_that_leaves_the_folder_is_refused(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("trainval/../../escape.npy", b"x")
    with pytest.raises(DataError, match="outside the unpacked folder"):
        unpack_archive(archive, tmp_path / "out" / "trainval", strip="trainval/", expect="*.npy")
    assert not (tmp_path / "escape.npy").exists()


def test_the_manifest_declares_the_unpack_of_each_feature_archive(tmp_path):
    m = load_manifest()
    assert m["vatex_i3d"].file("trainval.zip").unpack == {"into": "trainval", "strip": "trainval/", "expect": "*.npy"}
    assert m["vatex_i3d"].file("public_test.zip").unpack["into"] == "public_test"
    assert m["multi30k_features_butd"].file("multi30k_butd_features.tar.bz2").unpack == {
        "into": "obj36", "strip": "multi30k_butd_features/", "expect": "*.npz"}
    assert m["multi30k_features_resnet50"].file("multi30k_resnet50_features.tar.bz2").unpack["into"] == "resnet50"
    assert m["multi30k_task1"].file("raw/train.en.gz").unpack is None
    clash = tmp_path / "m.yaml"
    clash.write_text("inputs:\n  vatex_i3d:\n    files:\n      other.zip: {sha256: null, unpack: {into: trainval}}\n",
                     encoding="utf-8")
    with pytest.raises(DataError, match="unpacks into trainval twice"):
        load_manifest(extra=[clash])


@pytest.fixture(scope="module")
def full():
    from mmt_repro.plan import Plan

    return Plan(load_yaml(REPO / "config" / "config.yaml"), REPO)


@pytest.mark.parametrize("dataset,feature_set,split,folder,archive", [
    ("vatex", "vatex-i3d", "val", "resources/vatex_i3d/trainval", "resources/vatex_i3d/trainval.zip"),
    ("multi30k", "butd-obj36", "train", "resources/multi30k_features_butd/obj36",
     "resources/multi30k_features_butd/multi30k_butd_features.tar.bz2"),
])
def test_the_plan_puts_the_unpack_job_upstream_of_the_import(full, dataset, feature_set, split, folder, archive):
    w = W(dataset=dataset, feature_set=feature_set, split=split)
    inputs = full.features.pretrained_inputs(w)
    assert inputs == {"image_list": f"results/data/{dataset}/image_splits/{split}.txt", "src": folder}
    assert full.features.pretrained_source(w) == folder  # read in the run folder, where the rule writes it
    _, inp, into = folder.split("/")
    assert full.data.unpack_archive(W(input=inp, folder=into)) == archive  # ... from the fetched archive
    assert __import__("re").fullmatch(full.data.unpack_folders, into)
    assert not __import__("re").fullmatch(full.data.unpack_folders, Path(archive).name)


def test_a_src_unpacked_elsewhere_is_read_as_it_is(tmp_path):
    from mmt_repro.plan import Plan

    config = deep_update(load_yaml(REPO / "config" / "config.yaml"),
                         {"datasets": {"vatex": {"features": {"vatex-i3d": {"src": str(tmp_path)}}}}})
    plan = Plan(config, REPO)
    w = W(dataset="vatex", feature_set="vatex-i3d", split="val")
    assert "src" not in plan.features.pretrained_inputs(w) and plan.features.pretrained_source(w) == str(tmp_path)


def test_an_image_folder_the_workflow_unpacks_is_an_input_of_the_extraction(tmp_path):
    from mmt_repro.plan import Plan

    config = deep_update(load_yaml(REPO / "config" / "config.yaml"),
                         {"datasets": {"multi30k": {"images": "resources/mscoco_images/val2014"}}})
    plan = Plan(config, REPO)
    w = W(dataset="multi30k", feature_set="resnet50-res4f", split="test_2017_mscoco")
    assert plan.features.image_inputs(w)["images"] == "resources/mscoco_images/val2014"
    assert plan.features.image_dir(w) == "resources/mscoco_images/val2014"
    assert plan.data.unpack_archive(W(input="mscoco_images", folder="val2014")) == "resources/mscoco_images/val2014.zip"


def test_the_preflight_asks_for_no_hand_unpack_but_for_the_archive(tmp_path):
    from mmt_repro.plan_tools.preflight import preflight

    base = load_yaml(REPO / "config" / "config.yaml")
    targets = ["results/features/vatex/vatex-i3d/val.npy", "results/features/multi30k/butd-obj36/train.npy"]
    result = preflight(base, REPO, targets, workdir=tmp_path)
    assert result.problems == [], result.problems
    (tmp_path / "mirror" / "vatex").mkdir(parents=True)
    result = preflight(deep_update(base, {"inputs": {"mirror": str(tmp_path / "mirror")}}), REPO, targets[:1],
                       workdir=tmp_path)
    [problem] = [p for p in result.problems if "vatex_i3d" in p]
    assert "file(s) of input 'vatex_i3d'" in problem and "trainval.zip" in problem
    assert not [p for p in result.problems if "unpack" in p]
