"""BertGen's training step with shape buckets: eager unpadded, eager padded, and padded behind
CUDA graphs (``mmt_repro.train.graphs``; CUDA only), at the paper's size with synthetic 13-task
steps (``mmt_repro.train.synthetic.bertgen_batch``: one example per task, 10-100 regions per image,
no 64-position cap), each step padded to the next of ``--buckets`` (default: what
``plan_tools.levers.suggested_buckets`` gives the uncapped synthetic rows).

Prints, per variant, min / median / max step ms over ``--steps`` timed updates (after
``--warmup``, which also compiles one graph per bucket), the speed-up against eager unpadded, the
share of steps per bucket and the padded positions; ``--out`` writes them as JSON. The bucketed
factor of the cost plan is not measured until this runs on a GPU (docs/bertgen.md, "Speed
levers").

    python benchmarks/bench_bertgen_buckets.py --steps 50 --warmup 20 --out bertgen_buckets.json
    python benchmarks/bench_bertgen_buckets.py --tiny --steps 3 --warmup 1   # a CPU check of the script
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter

import torch

from mmt_repro.datasets.bertgen import bucket_width, pad_to_shape
from mmt_repro.models import build_model
from mmt_repro.plan_tools.levers import suggested_buckets
from mmt_repro.train.graphs import compiled_step, mark_step
from mmt_repro.train.step import make_optimizer, train_update
from mmt_repro.train.synthetic import BERTGEN_TASKS, bertgen_batch, bertgen_vocabs

PAPER = dict(hidden_size=768, num_layers=12, num_heads=12, ffn_size=3072, img_dim=2048, full_image="mean",
             max_regions=101, init="random")
TINY = dict(hidden_size=32, num_layers=2, num_heads=4, ffn_size=64, img_dim=16, coord_freqs=4, max_regions=9,
            full_image="mean", init="random")


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_variant(model, batches, device, amp, steps, warmup, forward=None) -> list[float]:
    opt = make_optimizer("adamw", model.parameters(), lr=1.3e-5, eps=1e-6, weight_decay=1e-4)
    times = []
    for i in range(warmup + steps):
        b = batches[i % len(batches)]
        sync(device)
        t0 = time.perf_counter()
        mark_step(forward)
        train_update(model, opt, [b], device, amp=amp, clip_norm=10.0, forward=forward)
        sync(device)
        if i >= warmup:
            times.append(1e3 * (time.perf_counter() - t0))
    return times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="a tiny model (a CPU check of the script)")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--batches", type=int, default=64, help="distinct synthetic steps cycled through")
    ap.add_argument("--buckets", type=int, nargs="*", help="row widths (default: the plan's suggestion)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", help="write the figures here (JSON)")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    cfg = TINY if args.tiny else PAPER
    torch.manual_seed(0)
    vocabs = bertgen_vocabs(200 if args.tiny else 119_551)
    model = build_model("bertgen.bertgen", dict(cfg), vocabs).to(device)
    buckets = args.buckets or suggested_buckets(cfg, {"max_len": 150}, True)
    raw = [bertgen_batch(model, regions=(2, 8) if args.tiny else (10, 100), seed=i) for i in range(args.batches)]
    rows, images = len(BERTGEN_TASKS), sum(t[2] for t in BERTGEN_TASKS)
    padded = [pad_to_shape(b, bucket_width(b["lay_tokens"].size(1), buckets), rows, images, model.specials.pad)
              for b in raw]
    real = sum(int((b["lay_kind"] != 0).sum()) for b in raw)
    shares = Counter(b["lay_tokens"].size(1) for b in padded)
    amp = device.type == "cuda"
    variants = {"eager": (raw, None), "eager_padded": (padded, None)}
    if device.type == "cuda":
        variants["graphs_padded"] = (padded, compiled_step(model, len(buckets)))
    res = {"device": str(device), "torch": torch.__version__, "tiny": args.tiny, "buckets": buckets,
           "steps_per_bucket": {str(w): n for w, n in sorted(shares.items())},
           "padded_positions_share": 1 - real / sum(b["lay_tokens"].numel() for b in padded), "variants": {}}
    model.train()
    for name, (batches, forward) in variants.items():
        t = time_variant(model, [{k: (v.to(device) if torch.is_tensor(v) else v) for k, v in b.items()} for b in batches],
                         device, amp, args.steps, args.warmup, forward)
        res["variants"][name] = {"min": min(t), "median": statistics.median(t), "max": max(t)}
    base = res["variants"]["eager"]["median"]
    print(f"{res['device']}, torch {res['torch']}, buckets {buckets}, steps per bucket {res['steps_per_bucket']}, "
          f"padded positions {100 * res['padded_positions_share']:.1f} %")
    for name, v in res["variants"].items():
        v["speed_up"] = base / v["median"]
        print(f"{name:14s} {v['min']:.1f} / {v['median']:.1f} / {v['max']:.1f} ms  x{v['speed_up']:.2f}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
