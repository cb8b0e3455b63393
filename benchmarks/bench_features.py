"""Feature extraction speed and feature-store reading memory.

    python benchmarks/bench_features.py                  # short default run (< 2 min on 2 CPU cores)
    python benchmarks/bench_features.py --images 16 --clips 4 --store-rows 29000   # fuller run
    python benchmarks/bench_features.py --only store --store-rows 5000 --store-shape 36 2048

Prints, for every device (CPU, and the GPU when torch.cuda is available):

* images/s of ResNet-50 res4f and pool5 at 224x224, of torchvision Faster R-CNN top-36
  regions (``--region-min-size``, 600 = the bottom-up-attention test scale), and clips/s of
  I3D (``i3d_r50``, 8x224x224 segments), all with random weights (speed does not depend on
  the weights; pretrained ones cannot be downloaded everywhere). Images are the sample COCO
  images of ``shared/datasets/sample-media`` (random ones when absent);
* the store layouts' bytes per item and their size for Multi30k / VATEX training splits;
* reading a synthetic float16 store (``--store-rows`` x ``--store-shape``) the way training
  does -- random mini-batches of rows through the memory map (``FeatureStore[row]``), never
  loading it whole -- in a fresh process, reporting rows/s and peak memory: ``VmHWM`` (peak
  resident set, which counts mapped file pages that were touched), and the peak of
  ``RssAnon`` (the process's own memory; file pages stay reclaimable page cache).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MEDIA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "sample-media"


def _images(n: int):
    from PIL import Image

    files = sorted(MEDIA.glob("*.jpg")) if MEDIA.is_dir() else []
    if files:
        base = [Image.open(f).convert("RGB") for f in files]
    else:
        rng = np.random.default_rng(0)
        base = [Image.fromarray(rng.integers(0, 255, (480, 640, 3), dtype=np.uint8)) for _ in range(3)]
    return [base[i % len(base)] for i in range(n)]


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _timed(fn, device: str, reps: int) -> float:
    fn()  # warm-up (allocations, cuDNN autotuning)
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    _sync(device)
    return (time.perf_counter() - t0) / reps


def bench_extractors(args, device: str) -> list[tuple[str, str, float, str]]:
    import torch

    from mmt_repro.features.extractors import get_extractor
    from mmt_repro.features.detectors import get_region_backend
    from mmt_repro.features.video import I3DExtractor, decode_video, segment_frames

    rows = []
    only = set(args.only)
    ims = _images(args.images)
    for layer in ("res4f", "pool5"):
        if layer not in only:
            continue
        ext = get_extractor("resnet50", layer, weights="random", image_size=224).to(device)
        t0 = time.perf_counter()
        batch = torch.stack([ext.preprocess(im) for im in ims])
        prep = (time.perf_counter() - t0) / len(ims)
        sec = _timed(lambda: ext(batch), device, args.reps)
        rows.append((device, f"resnet50 {layer}@224 (batch {len(ims)})", len(ims) / sec,
                     f"images/s; +{prep * 1000:.0f} ms/image preprocessing on CPU"))
    if "regions" in only:
        det = get_region_backend("torchvision", "random", min_size=args.region_min_size,
                                 max_size=round(args.region_min_size * 1000 / 600), proposals=300).to(device)
        few = ims[:args.region_images]
        sec = _timed(lambda: det(few, 36, 36, 0.2), device, 1)
        rows.append((device, f"fasterrcnn_resnet50_fpn_v2 top-36 @{args.region_min_size} (batch {len(few)})",
                     len(few) / sec, "images/s; 300 proposals"))
    if "i3d" in only:
        i3d = I3DExtractor("random", crop_size=224).to(device)
        clip = MEDIA / "_pBeOAMjGm8_1_18.mp4"
        if clip.is_file():
            t0 = time.perf_counter()
            frames, _ = decode_video(clip, i3d.short_side)
            dec = time.perf_counter() - t0
            rows.append((device, "PyAV decode + resize to 256 (sample clip)", len(frames) / dec, "frames/s"))
            idx, _ = segment_frames(len(frames), args.clips, 8)
            clips = torch.stack([i3d.preprocess(frames[i]) for i in idx])
        else:
            clips = torch.randn(args.clips, 3, 8, 224, 224)
        sec = _timed(lambda: i3d(clips), device, 1)
        rows.append((device, f"i3d_r50 trunk 8x224x224 (batch {args.clips})", args.clips / sec, "clips/s"))
    return rows


def store_sizes() -> list[tuple[str, int]]:
    f16 = 2
    return [
        ("resnet50-res4f@224 (196, 1024)", 196 * 1024 * f16),
        ("resnet50-pool5 (1, 2048)", 2048 * f16),
        ("torchvision regions top-36 (36, 1024) + boxes", 36 * 1024 * f16 + 36 * 16),
        ("bottom-up regions top-36 (36, 2048) + boxes", 36 * 2048 * f16 + 36 * 16),
        ("bottom-up regions 10-100 + full image (101, 2048) + boxes", 101 * 2048 * f16 + 101 * 16),
        ("i3d_r50 32 segments (32, 2048)", 32 * 2048 * f16),
        ("VATEX I3D 32 segments (32, 1024)", 32 * 1024 * f16),
    ]


def make_store(folder: Path, rows: int, L: int, D: int) -> tuple[Path, Path]:
    from mmt_repro.features.store import write_index

    npy, index = folder / "synthetic.npy", folder / "synthetic.index.parquet"
    arr = np.lib.format.open_memmap(npy, mode="w+", dtype=np.float16, shape=(rows, L, D))
    rng = np.random.default_rng(0)
    step = max(1, (64 << 20) // (L * D * 2))
    for a in range(0, rows, step):
        b = min(rows, a + step)
        arr[a:b] = rng.standard_normal((b - a, L, D), dtype=np.float32).astype(np.float16)
    arr.flush()
    del arr
    write_index(index, [f"{i:08d}.jpg" for i in range(rows)], {"shape": [rows, L, D], "dtype": "float16"})
    return npy, index


def _status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) * 1024
    return out


def read_store(npy: str, index: str, steps: int, batch: int) -> dict:
    """Runs in a fresh process: random mini-batches through FeatureStore, as the trainer reads."""
    from mmt_repro.features.store import FeatureStore

    store = FeatureStore(Path(npy), Path(index))
    store[0]  # noqa: B018 -- libraries loaded; only store pages grow from here
    start = _status()
    rng = np.random.default_rng(0)
    peak_anon = 0
    t0 = time.perf_counter()
    total = 0.0
    for step in range(steps):
        rows = rng.integers(0, len(store), batch)
        x = np.stack([store[r] for r in rows])  # (batch, L, D) float32, as batching.py builds "img"
        total += float(x[:, 0, 0].sum())
        if step % 10 == 0:
            peak_anon = max(peak_anon, _status().get("RssAnon", 0))
    sec = time.perf_counter() - t0
    end = _status()
    peak_anon = max(peak_anon, end.get("RssAnon", 0))
    return {"rows_per_s": steps * batch / sec, "seconds": sec, "start": start, "end": end, "peak_anon": peak_anon,
            "batch_bytes": int(x.nbytes)}


def bench_store(args) -> None:
    L, D = args.store_shape
    with tempfile.TemporaryDirectory(dir=args.store_dir) as tmp:
        t0 = time.perf_counter()
        npy, index = make_store(Path(tmp), args.store_rows, L, D)
        size = npy.stat().st_size
        print(f"\nsynthetic store: {args.store_rows} x ({L}, {D}) float16 = {size / 2**20:.0f} MiB "
              f"(written in {time.perf_counter() - t0:.1f}s)")
        cmd = [sys.executable, __file__, "--read-store", str(npy), str(index), "--steps", str(args.steps),
               "--batch", str(args.batch)]
        res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    mib = 2 ** 20
    print(f"random-access read, batch {args.batch}, {args.steps} steps: {res['rows_per_s']:.0f} rows/s "
          f"({res['rows_per_s'] * L * D * 2 / mib:.0f} MiB/s of float16 from the page cache)")
    print(f"  process memory: baseline RSS {res['start']['VmRSS'] / mib:.0f} MiB; peak RSS (VmHWM) "
          f"{res['end']['VmHWM'] / mib:.0f} MiB, of which touched store pages (RssFile growth) "
          f"{(res['end']['RssFile'] - res['start']['RssFile']) / mib:.0f} MiB; peak private memory (RssAnon) "
          f"{res['peak_anon'] / mib:.0f} MiB; "
          f"one float32 batch = {res['batch_bytes'] / mib:.1f} MiB; store = {size / mib:.0f} MiB")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="+", default=["res4f", "pool5", "regions", "i3d", "sizes", "store"],
                   choices=["res4f", "pool5", "regions", "i3d", "sizes", "store"])
    p.add_argument("--images", type=int, default=4, help="images per ResNet-50 batch")
    p.add_argument("--reps", type=int, default=2, help="timed ResNet-50 batches after one warm-up")
    p.add_argument("--region-images", type=int, default=2)
    p.add_argument("--region-min-size", type=int, default=600)
    p.add_argument("--clips", type=int, default=2, help="I3D segments per batch")
    p.add_argument("--store-rows", type=int, default=1000)
    p.add_argument("--store-shape", type=int, nargs=2, default=[196, 1024], metavar=("L", "D"))
    p.add_argument("--store-dir", default=None, help="where the synthetic store is written (default: $TMPDIR)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--read-store", nargs=2, metavar=("NPY", "INDEX"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.read_store:
        print(json.dumps(read_store(*args.read_store, args.steps, args.batch)))
        return
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; devices: {', '.join(devices)}"
          + (f" ({torch.cuda.get_device_name()})" if "cuda" in devices else ""))
    if set(args.only) & {"res4f", "pool5", "regions", "i3d"}:
        print(f"\n{'device':6}  {'what':62}  {'rate':>9}")
        for device in devices:
            for dev, what, rate, unit in bench_extractors(args, device):
                print(f"{dev:6}  {what:62}  {rate:9.2f}  {unit}")
    if "sizes" in args.only:
        print(f"\n{'store layout (float16 features)':58}  {'bytes/item':>10}  {'Multi30k train 29000':>20}  "
              f"{'VATEX train 25991':>17}")
        for what, nbytes in store_sizes():
            print(f"{what:58}  {nbytes:10d}  {nbytes * 29000 / 2**30:16.2f} GiB  {nbytes * 25991 / 2**30:13.2f} GiB")
    if "store" in args.only:
        bench_store(args)


if __name__ == "__main__":
    main()
