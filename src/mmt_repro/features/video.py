"""Video segment features: I3D (pytorchvideo ``i3d_r50``) over decoded clips.

DeepFuse (Wu et al., 2020) reads a video as "a sequence of segment-level features" from a
pretrained 3D CNN (I3D). :func:`extract_video_features` turns every video of a video list
into ``(n_segments, 2048)`` features:

1. decode the clip with PyAV, resizing every frame so that its shorter side is
   ``short_side`` (default ``round(crop_size * 256 / 224)``);
2. cut it into segments of ``frames_per_segment`` (T) frames (:func:`segment_frames`):

   * ``mode="uniform"`` (default): exactly ``n_segments`` equal spans of the clip, T frames
     sampled evenly inside each (a short clip repeats frames); every slot is valid;
   * ``mode="windows"``: consecutive non-overlapping windows of T frames (at ``fps`` frames
     per second when given, else at the native rate; the last window repeats its final frame),
     then ``n_segments`` of them picked evenly when there are more, or zero padding after the
     ``m`` real ones when there are fewer (the index's ``n_segments`` column holds ``m``);

3. centre-crop ``crop_size`` x ``crop_size``, scale to [0, 1], normalise with the Kinetics
   mean/std (0.45, 0.225), and run the I3D trunk (``blocks[:-1]``, i.e. without the
   classification head, whose fixed pooling only fits 8-frame 224x224 clips); the segment's
   feature is the global mean of the trunk output over time and space (2048-d).

``weights``: ``"random"`` (seeded random init with live residual branches,
:func:`live_residual_branches`; smoke tests), a local ``.pth``/``.pyth`` file
(a pytorchvideo checkpoint with ``"model_state"``, or a plain ``state_dict``), or
``"kinetics400"`` (pytorchvideo's released ``I3D_8x8_R50`` checkpoint through torch.hub's
download cache; offline without a cached copy it raises :class:`~mmt_repro.io.DataError`).
The official VATEX features are 1024-d (Inception-v1 I3D on Kinetics-600) and are imported
with ``import_pretrained("vatex_i3d", ...)`` into the same store layout.

Store: ``out_npy`` float16 ``(N, n_segments, 2048)`` (row ``i`` = line ``i`` of the video
list) and ``out_index`` Parquet with ``row``, ``video``, ``n_segments`` (valid slots),
``n_frames`` (decoded) plus metadata; written in resumable chunks like every store
(:class:`~mmt_repro.features.store.ChunkedWriter`). A video list names files relative to
``video_dir``; a name without a suffix also matches ``<name>.mp4``/``.webm``/``.mkv``/
``.avi``/``.mov``. Missing, unreadable or frameless videos raise
:class:`~mmt_repro.io.DataError` listing every one.

``pytorchvideo.models`` imports fine with torchvision 0.29; ``pytorchvideo.transforms`` does
not (``torchvision.transforms.functional_tensor`` is gone), so this module never imports it.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from mmt_repro.device import pick_device
from mmt_repro.features.extractors import FrozenModel
from mmt_repro.features.store import (
    ChunkedWriter,
    FeatureStore,
    list_problems,
    names_digest,
    raise_for_status,
    read_item_list,
    row_status,
    to_float16,
    weights_fingerprint,
    write_index,
)
from mmt_repro.io import DataError, atomic_path

_log = logging.getLogger(__name__)

KINETICS_MEAN = (0.45, 0.45, 0.45)
KINETICS_STD = (0.225, 0.225, 0.225)
VIDEO_SUFFIXES = (".mp4", ".webm", ".mkv", ".avi", ".mov")
MODES = ("uniform", "windows")


def resolve_video(video_dir: Path, name: str) -> Path | None:
    """The file of a video-list entry: ``video_dir/name``, else ``name`` + a known suffix."""
    path = Path(video_dir) / name
    if path.is_file():
        return path
    if not path.suffix or path.suffix.lower() not in VIDEO_SUFFIXES:
        for suffix in VIDEO_SUFFIXES:
            cand = path.with_name(path.name + suffix)
            if cand.is_file():
                return cand
    return None


def check_videos(names: list[str], video_dir: Path) -> dict[str, Path]:
    """Every video must exist and open with a video stream; list ALL that do not."""
    import av

    found: dict[str, Path] = {}
    problems: list[str] = []
    for name in names:
        path = resolve_video(video_dir, name)
        if path is None:
            problems.append(f"{name} (missing)")
            continue
        try:
            with av.open(str(path)) as container:
                if not container.streams.video:
                    problems.append(f"{name} (no video stream)")
                    continue
        except (av.FFmpegError, OSError, ValueError) as err:
            problems.append(f"{name} (unreadable: {err})")
            continue
        found[name] = path
    if problems:
        raise DataError(video_dir, list_problems("missing or unreadable", problems, video_dir, what="video"),
                        "fetch those videos again, or remove them from the video list and the parallel text files")
    return found


def decode_video(path: Path, short_side: int) -> tuple[np.ndarray, np.ndarray]:
    """All frames of the first video stream as ``(F, H, W, 3)`` uint8 RGB with the shorter side
    resized to ``short_side``, and their times in seconds ``(F,)``. Raises ValueError/av errors."""
    import av

    frames, times = [], []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        rate = float(stream.average_rate) if stream.average_rate else 25.0
        size = None
        for i, frame in enumerate(container.decode(stream)):
            if size is None:
                w, h = frame.width, frame.height
                s = short_side / min(w, h)
                size = (max(short_side, round(w * s)), max(short_side, round(h * s)))
            frames.append(frame.to_ndarray(format="rgb24", width=size[0], height=size[1]))
            times.append(frame.time if frame.time is not None else i / rate)
    if not frames:
        raise ValueError("no decodable frames")
    return np.stack(frames), np.asarray(times, dtype=np.float64)


def pick_evenly(m: int, k: int) -> np.ndarray:
    """``k`` indices spread evenly over ``0..m-1`` (first and last included when k > 1)."""
    if k <= 1:
        return np.zeros(max(k, 0), dtype=np.int64) + (m - 1) // 2
    return np.round(np.linspace(0, m - 1, k)).astype(np.int64)


def segment_frames(n_frames: int, n_segments: int, frames_per_segment: int, mode: str = "uniform",
                   times: np.ndarray | None = None, fps: float | None = None) -> tuple[np.ndarray, int]:
    """Frame indices ``(n_segments, T)`` of each segment slot and the number of valid slots
    (see the module docstring; invalid slots repeat index 0 and are zeroed by the caller)."""
    S, T = int(n_segments), int(frames_per_segment)
    if n_frames < 1 or S < 1 or T < 1:
        raise ValueError(f"need frames, segments and frames per segment >= 1 (got {n_frames}, {S}, {T})")
    if mode == "uniform":
        edges = np.linspace(0.0, n_frames, S + 1)
        span = (edges[1:] - edges[:-1])[:, None]
        idx = np.floor(edges[:-1, None] + (np.arange(T)[None, :] + 0.5) * span / T).astype(np.int64)
        return np.clip(idx, 0, n_frames - 1), S
    if mode != "windows":
        raise ValueError(f"unknown segment mode {mode!r}; valid modes: {', '.join(MODES)}")
    seq = np.arange(n_frames)
    if fps is not None:
        if times is None or len(times) != n_frames:
            raise ValueError("windows at a given fps need the frame times")
        t0 = float(times[0])
        n_out = max(1, int(math.floor((float(times[-1]) - t0) * fps)) + 1)
        targets = t0 + np.arange(n_out) / float(fps)
        seq = np.clip(np.searchsorted(times, targets + 1e-9, side="right") - 1, 0, n_frames - 1)
    m = (len(seq) + T - 1) // T
    padded = np.concatenate([seq, np.full(m * T - len(seq), seq[-1], dtype=seq.dtype)]).reshape(m, T)
    if m >= S:
        return padded[pick_evenly(m, S)], S
    out = np.zeros((S, T), dtype=np.int64)
    out[:m] = padded
    return out, m


class I3DExtractor(FrozenModel):
    """pytorchvideo ``i3d_r50`` trunk; a clip batch ``(B, 3, T, H, W)`` -> ``(B, 2048)``."""

    name = "i3d_r50"
    feature_dim = 2048

    def __init__(self, weights: str = "random", seed: int = 0, crop_size: int = 224, short_side: int | None = None):
        if crop_size < 32:
            raise ValueError(f"crop_size {crop_size} is too small for i3d_r50 (use >= 32)")
        self.crop_size = int(crop_size)
        self.short_side = int(short_side or round(crop_size * 256 / 224))
        if self.short_side < self.crop_size:
            raise ValueError(f"short_side {self.short_side} is smaller than crop_size {self.crop_size}")
        self._freeze(*_build_i3d(weights, seed))

    def output_shape(self, n_segments: int) -> tuple[int, int]:
        return int(n_segments), self.feature_dim

    def preprocess(self, frames: np.ndarray) -> torch.Tensor:
        """``(T, H, W, 3)`` uint8 frames (shorter side already ``short_side``) -> ``(3, T, C, C)``."""
        x = torch.from_numpy(np.ascontiguousarray(frames))
        H, W = x.shape[1:3]
        c = self.crop_size
        if min(H, W) < c:
            raise ValueError(f"frames of {W}x{H} are smaller than the crop {c}x{c}")
        top, left = (H - c) // 2, (W - c) // 2
        x = x[:, top:top + c, left:left + c].permute(3, 0, 1, 2).float().div_(255.0)
        mean = torch.tensor(KINETICS_MEAN).view(3, 1, 1, 1)
        std = torch.tensor(KINETICS_STD).view(3, 1, 1, 1)
        return (x - mean) / std

    def __call__(self, clips: torch.Tensor) -> torch.Tensor:
        if clips.dim() == 4:
            clips = clips.unsqueeze(0)
        with torch.inference_mode():
            x = clips.to(self.device, dtype=torch.float32)
            for block in self.model.blocks[:-1]:
                x = block(x)
            return x.mean(dim=(2, 3, 4))


def live_residual_branches(model: torch.nn.Module) -> int:
    """Set the scale of the last BatchNorm of every residual branch (``branch2.norm_c``) to 1.

    pytorchvideo initialises it to 0 ("zero-init residual", a trick for training from
    scratch), so an *untrained* i3d_r50 is its stem plus the 1x1x1 shortcut projections: the
    3D convolutions of all 16 residual branches add nothing. Its pooled features then lose the
    direction of motion: on the grounded video set (16 frames, 32 px) a linear probe reads the
    direction from 24 % of clips (chance) with the branches off and 99.5 % with them live.
    Random weights are for checks only, so the branches are live. Returns how many were set."""
    n = 0
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("branch2.norm_c.weight"):
                param.fill_(1.0)
                n += 1
    return n


def _build_i3d(weights: str, seed: int):
    with warnings.catch_warnings():  # pytorchvideo's import-time torch.jit.script FutureWarning
        warnings.simplefilter("ignore", FutureWarning)
        from pytorchvideo.models.hub import i3d_r50

    key = str(weights)
    if key.lower() in ("kinetics400", "kinetics", "pretrained"):
        try:
            model = i3d_r50(pretrained=True)
        except Exception as err:  # URLError, OSError, ...
            cache = Path(torch.hub.get_dir()) / "checkpoints"
            raise DataError(
                "pytorchvideo i3d_r50 (I3D_8x8_R50.pyth)",
                f"could not load the pretrained I3D weights ({type(err).__name__}: {err})",
                "pre-download them on a machine with network access (python -c \"from pytorchvideo.models.hub "
                f"import i3d_r50; i3d_r50(pretrained=True)\") and copy the .pyth file into {cache} (or set "
                "TORCH_HOME), or set weights to a local checkpoint path; weights: random gives untrained "
                "features for smoke tests",
            ) from err
        return model, "pytorchvideo i3d_r50 Kinetics-400"
    if key.lower() in ("random", "random-init", "none"):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            model = i3d_r50(pretrained=False)
        live_residual_branches(model)
        return model, f"random-init seed {int(seed)}"
    from mmt_repro.features.detectors import _load_state_dict, _load_strict

    path = Path(key)
    state = _load_state_dict(path, "i3d_r50", "set weights to 'kinetics400', 'random' or the path of an "
                             "i3d_r50 checkpoint (pytorchvideo .pyth with model_state, or a state_dict)")
    model = i3d_r50(pretrained=False)
    head = [k for k in model.state_dict() if k.startswith("blocks.6.")]
    if not any(k in state for k in head):  # a trunk-only checkpoint: keep the random head
        state = dict(state, **{k: v for k, v in model.state_dict().items() if k in head})
    _load_strict(model, state, path, "pytorchvideo i3d_r50")
    return model, str(path)


def extract_video_features(
    video_list: Path,
    video_dir: Path,
    out_npy: Path,
    out_index: Path,
    weights: str = "kinetics400",
    n_segments: int = 32,
    frames_per_segment: int = 8,
    crop_size: int = 224,
    short_side: int | None = None,
    mode: str = "uniform",
    fps: float | None = None,
    batch_size: int = 8,
    chunk_size: int = 64,
    seed: int = 0,
    device: str = "auto",
    log: Callable[[str], None] = _log.info,
    missing_dir_fix: str = "set the dataset's video folder in the config",
) -> dict:
    """I3D segment features of every video of ``video_list`` into a video store (module docstring).

    ``batch_size`` segments (of one or several videos) go through the network at once;
    ``chunk_size`` videos make one resumable chunk. Returns a summary dict (n_videos, shape, weights_desc, seconds,
    clips_per_s, videos_per_s, resumed_chunks).
    """
    if not video_dir:
        raise DataError(video_list, "no video folder is configured for these videos", missing_dir_fix)
    if mode not in MODES:
        raise ValueError(f"unknown segment mode {mode!r}; valid modes: {', '.join(MODES)}")
    video_list, video_dir = Path(video_list), Path(video_dir)
    out_npy, out_index = Path(out_npy), Path(out_index)
    names = read_item_list(video_list, "video")
    paths = check_videos(names, video_dir)
    dev = str(pick_device(device))
    ext = I3DExtractor(weights, seed=seed, crop_size=crop_size, short_side=short_side).to(dev)
    n, (S, D) = len(names), ext.output_shape(n_segments)
    T = int(frames_per_segment)
    log(f"[video] {ext.name} weights: {ext.weights_desc}; {S} segments ({mode}) of {T} frames at "
        f"{crop_size}x{crop_size}{f', {fps} fps' if fps else ''} -> ({S}, {D}) per video; {n} videos; device {dev}")
    settings = {"extractor": ext.name, "weights": str(weights), "weights_desc": ext.weights_desc, "n_segments": S,
                "frames_per_segment": T, "crop_size": int(crop_size), "short_side": ext.short_side, "mode": mode,
                "fps": None if fps is None else float(fps), "seed": int(seed)}
    fingerprint = dict(settings, weights=weights_fingerprint(weights), names=names_digest(names),
                       video_dir=str(video_dir.resolve()))
    arrays = {"features": (out_npy, (n, S, D), "float16"), "n_segments": (None, (n,), "int32"),
              "n_frames": (None, (n,), "int32"), "status": (None, (n,), "uint8")}
    t0 = time.perf_counter()
    undecodable: list[str] = []
    clips_now = videos_now = 0
    with atomic_path(out_index) as tmp_index, ChunkedWriter(out_npy, arrays, chunk_size, fingerprint, log=log,
                                                            tag="video", what="videos") as w:
        A = w.arrays
        for _, a, b in w.pending():
            # Segments of consecutive videos share batches (a 1-segment video alone would run the
            # network on batches of one); each chunk's rows are finished before the next chunk.
            todo: list[tuple[int, int, torch.Tensor]] = []  # (row, slot, clip) waiting for a batch
            outs: dict[int, np.ndarray] = {}

            def run_batch():
                feats = ext(torch.stack([clip for _, _, clip in todo])).float().cpu().numpy()
                if feats.shape != (len(todo), D):
                    raise DataError(out_npy, f"I3D returned {feats.shape} for {len(todo)} clips, expected "
                                    f"{(len(todo), D)}", "fix the extractor")
                for (r, slot, _), f in zip(todo, feats):
                    outs[r][slot] = f
                todo.clear()

            for row in range(a, b):
                name = names[row]
                try:
                    frames, times = decode_video(paths[name], ext.short_side)
                except Exception as err:  # av.FFmpegError, ValueError, MemoryError...
                    undecodable.append(f"{name} (cannot decode: {type(err).__name__}: {err})")
                    continue
                if undecodable:
                    continue  # keep going only to collect every bad video
                idx, valid = segment_frames(len(frames), S, T, mode, times, fps)
                outs[row] = np.zeros((S, D), dtype=np.float32)
                A["n_segments"][row] = valid
                A["n_frames"][row] = len(frames)
                for j in range(valid):
                    todo.append((row, j, ext.preprocess(frames[idx[j]])))
                    if len(todo) >= batch_size:
                        run_batch()
                clips_now += valid
                videos_now += 1
            if todo and not undecodable:
                run_batch()
            for row, out in outs.items():
                A["status"][row] = row_status(out[None])[0]
                A["features"][row] = to_float16(out)
        if undecodable:
            raise DataError(video_dir, list_problems("undecodable", undecodable, video_dir, what="video"),
                            "fetch those videos again, or remove them from the video list")
        raise_for_status(np.asarray(A["status"]), names, out_npy, "video",
                         f"check the I3D weights ({ext.weights_desc}) and the videos")
        seconds = time.perf_counter() - t0
        valid_counts, n_frames = np.array(A["n_segments"]), np.array(A["n_frames"])
        meta = dict(settings, kind="video", shape=[n, S, D], dtype="float16", video_list=str(video_list),
                    torch_version=torch.__version__)
        write_index(tmp_index, names, meta, key="video", columns={"n_segments": valid_counts, "n_frames": n_frames})
        resumed = w.resumed
        w.commit()
    cps, vps = clips_now / max(seconds, 1e-9), videos_now / max(seconds, 1e-9)
    log(f"[video] wrote {out_npy} ({n}, {S}, {D}) float16 in {seconds:.1f}s, {cps:.2f} clips/s, {vps:.3f} videos/s"
        + (f" ({resumed} chunks resumed)" if resumed else ""))
    return {"n_videos": n, "shape": (n, S, D), "weights_desc": ext.weights_desc, "device": dev, "seconds": seconds,
            "clips_per_s": cps, "videos_per_s": vps, "resumed_chunks": resumed,
            "npy": str(out_npy), "index": str(out_index)}


def open_video_store(npy: Path, index: Path) -> FeatureStore:
    """A video store (``lengths`` = valid segments per video)."""
    return FeatureStore(npy, index)
