"""Video segments: frame sampling by hand, and I3D (random weights, 112x112) on a real clip."""

from __future__ import annotations

import shutil
import sys
import urllib.error
from pathlib import Path

import numpy as np
import pytest
import torch

from mmt_repro.features.store import FeatureStore
from mmt_repro.features.video import (
    I3DExtractor,
    check_videos,
    decode_video,
    extract_video_features,
    pick_evenly,
    resolve_video,
    segment_frames,
)
from mmt_repro.io import DataError, write_lines

MEDIA = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "sample-media"
CLIP = "_pBeOAMjGm8_1_18.mp4"  # 352x288, 255 frames at 14.985 fps (17 s)
CROP = 112

needs_clip = pytest.mark.skipif(not (MEDIA / CLIP).is_file(),
                                reason=f"sample clip {CLIP} not found under {MEDIA} (shared/datasets/sample-media)")


def test_uniform_segments_by_hand():
    idx, valid = segment_frames(16, 2, 4)
    assert valid == 2 and idx.tolist() == [[1, 3, 5, 7], [9, 11, 13, 15]]
    idx, _ = segment_frames(3, 2, 2)  # a clip shorter than the segments repeats frames
    assert idx.tolist() == [[0, 1], [1, 2]]


def test_window_segments_by_hand():
    idx, valid = segment_frames(10, 4, 4, "windows")
    assert valid == 3 and idx[:3].tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 9, 9]]
    idx, valid = segment_frames(10, 2, 4, "windows")  # 3 windows, 2 slots: first and last
    assert valid == 2 and idx[:, 0].tolist() == [0, 8]
    times = np.arange(10) / 10.0  # 10 fps, resampled to 5 fps: every other frame
    idx, valid = segment_frames(10, 1, 5, "windows", times, fps=5.0)
    assert valid == 1 and idx.tolist() == [[0, 2, 4, 6, 8]]
    assert pick_evenly(5, 4).tolist() == [0, 1, 3, 4] and pick_evenly(5, 1).tolist() == [2]
    with pytest.raises(ValueError, match="uniform, windows"):
        segment_frames(10, 2, 4, "random")


def test_pytorchvideo_transforms_not_imported():
    import mmt_repro.features.video  # noqa: F401

    assert "pytorchvideo.transforms" not in sys.modules


@pytest.fixture(scope="module")
def i3d():
    return I3DExtractor("random", seed=0, crop_size=CROP)


@pytest.fixture(scope="module")
def frames():
    if not (MEDIA / CLIP).is_file():
        pytest.skip(f"sample clip {CLIP} not found under {MEDIA}")
    return decode_video(MEDIA / CLIP, round(CROP * 256 / 224))


def test_decode(frames):
    arr, times = frames
    assert arr.dtype == np.uint8 and arr.shape == (255, 128, 156, 3)  # shorter side 288 -> 128
    assert times[0] == 0 and abs(times[-1] - 254 * 1001 / 15000) < 1e-6 and (np.diff(times) > 0).all()


def test_i3d_clip_feature_is_trunk_mean(i3d, frames):
    clip = i3d.preprocess(frames[0][:8])
    assert clip.shape == (3, 8, CROP, CROP) and clip.dtype == torch.float32
    centre = frames[0][0, 8:8 + CROP, 22:22 + CROP]  # 128x156 frame, centre 112x112 crop
    torch.testing.assert_close(clip[:, 0], (torch.from_numpy(centre).permute(2, 0, 1) / 255 - 0.45) / 0.225)
    x = torch.randn(1, 3, 8, 64, 64, generator=torch.Generator().manual_seed(0))  # small input, same trunk
    feat = i3d(x)
    assert feat.shape == (1, 2048) and i3d.output_shape(5) == (5, 2048)
    with torch.no_grad():
        for block in i3d.model.blocks[:-1]:
            x = block(x)
    assert x.shape[1:] == (2048, 4, 2, 2)
    torch.testing.assert_close(feat, x.mean(dim=(2, 3, 4)))
    assert not i3d.model.training and i3d.weights_desc == "random-init seed 0"
    # random weights: every residual branch is live (pytorchvideo zero-inits their last BN scale)
    gammas = [p for n, p in i3d.model.named_parameters() if n.endswith("branch2.norm_c.weight")]
    assert len(gammas) == 16 and all(bool((g == 1).all()) for g in gammas)


@pytest.fixture
def reuse_i3d(i3d, monkeypatch):
    """extract_video_features gets the module's seeded random I3D instead of building one."""
    from mmt_repro.features import video as vd

    def same(weights, seed=0, crop_size=CROP, short_side=None):
        assert (weights, seed, crop_size, short_side) == ("random", 0, CROP, None)
        return i3d

    monkeypatch.setattr(vd, "I3DExtractor", same)
    return i3d


def _extract(tmp_path: Path, names: list[str], video_dir: Path = MEDIA, **kw):
    lst = write_lines(tmp_path / "videos.txt", names)
    npy, idx = tmp_path / "v.npy", tmp_path / "v.index.parquet"
    logs: list[str] = []
    info = extract_video_features(lst, video_dir, npy, idx, weights="random", crop_size=CROP, device="cpu",
                                  log=logs.append, **kw)
    return npy, idx, info, logs


@needs_clip
def test_video_store_uniform(reuse_i3d, frames, tmp_path):
    i3d = reuse_i3d
    npy, idx, info, logs = _extract(tmp_path, [CLIP], n_segments=2, frames_per_segment=8)
    assert info["shape"] == (1, 2, 2048) and any("clips/s" in line for line in logs)
    store = FeatureStore(npy, idx)
    assert store.key == "video" and store.names == [CLIP] and store.lengths.tolist() == [2]
    assert store.columns["n_frames"].tolist() == [255] and np.load(npy).dtype == np.float16
    assert store.meta["frames_per_segment"] == 8 and store.meta["mode"] == "uniform"
    assert store.meta["weights_desc"] == "random-init seed 0" and store.meta["crop_size"] == CROP
    seg, _ = segment_frames(255, 2, 8)
    direct = i3d(i3d.preprocess(frames[0][seg[1]]).unsqueeze(0)).numpy()  # the second segment
    np.testing.assert_allclose(store[0][1], direct[0], rtol=3e-3, atol=1e-3)
    store.check_order(tmp_path / "videos.txt")


@needs_clip
def test_video_store_windows_pads(reuse_i3d, tmp_path):
    # 17 s at 0.5 fps = 9 frames -> windows of 4: 3 windows, 4 slots -> 3 valid + 1 zero slot
    (tmp_path / "clips").mkdir()
    shutil.copy(MEDIA / CLIP, tmp_path / "clips" / "clip.mp4")
    npy, idx, info, _ = _extract(tmp_path, ["clip"], tmp_path / "clips", n_segments=4, frames_per_segment=4,
                                 mode="windows", fps=0.5, batch_size=3)
    store = FeatureStore(npy, idx)
    assert store.lengths.tolist() == [3] and store.mask(0).tolist() == [True, True, True, False]
    arr = np.load(npy)
    assert (arr[0, 3] == 0).all() and (np.abs(arr[0, :3]).sum(axis=1) > 0).all()


def test_missing_and_corrupt_videos_all_listed(tmp_path):
    (tmp_path / "bad.mp4").write_bytes(b"\x00" * 64)
    (tmp_path / "empty.webm").write_bytes(b"")
    with pytest.raises(DataError, match="4 missing or unreadable video") as err:
        _extract(tmp_path, ["gone.mp4", "bad.mp4", "empty", "gone2"], tmp_path)
    msg = str(err.value)
    assert "gone.mp4 (missing)" in msg and "gone2 (missing)" in msg and "bad.mp4 (unreadable" in msg
    assert "empty (unreadable" in msg or "empty (no video" in msg
    assert resolve_video(tmp_path, "bad") == tmp_path / "bad.mp4"
    assert not (tmp_path / "v.npy").exists() and not list(tmp_path.glob(".v.*"))


def test_weights_offline_and_local(i3d, tmp_path, monkeypatch):
    import pytorchvideo.models.hub.resnet as hub_resnet

    def offline(*args, **kwargs):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(hub_resnet, "load_state_dict_from_url", offline)
    with pytest.raises(DataError, match="i3d_r50") as err:
        I3DExtractor("kinetics400")
    assert "pre-download" in str(err.value)
    path = tmp_path / "i3d.pyth"
    torch.save({"model_state": i3d.model.state_dict()}, path)
    local = I3DExtractor(str(path), crop_size=CROP)
    assert local.weights_desc == str(path)
    assert all(torch.equal(a, b) for a, b in zip(i3d.model.state_dict().values(), local.model.state_dict().values()))
    torch.save({"conv.weight": torch.zeros(1)}, tmp_path / "bad.pth")
    with pytest.raises(DataError, match="not a pytorchvideo i3d_r50"):
        I3DExtractor(str(tmp_path / "bad.pth"))


# ----------------------------------------------------------------------------- stand-in videos
def test_standin_vatex_clips_are_found_and_decoded(standin, tmp_path):
    """The request-only VATEX clips' stand-ins: one <videoID>.mp4 per video of the stand-in JSON,
    found from the prepared video list (names without a suffix) and decoded."""
    from mmt_repro.corpora.vatex import prepare_vatex
    from mmt_repro.io import read_lines

    prepare_vatex(standin("vatex")["files"]["vatex_validation_v1.0.json"], tmp_path, "val", check_sizes=False)
    names = read_lines(tmp_path / "image_splits" / "val.txt")
    found = check_videos(names, standin("vatex_videos")["folder"])
    assert len(found) == 4 and all(p.suffix == ".mp4" for p in found.values())
    frames, times = decode_video(next(iter(found.values())), short_side=64)
    assert frames.shape == (8, 64, 114, 3) and frames.dtype == np.uint8  # 1 s at 8 fps, 640x360 resized
    assert times[1] - times[0] == pytest.approx(1 / 8, abs=1e-3)
