"""Launch-bound training steps on a GPU: eager vs ``torch.compile`` vs a fused optimiser.

The H100 calibration (``benchmarks/calibration/h100.json``) found every model launch-bound
(BertGen's 835-GFLOP step at 3 % MFU, about 2,300 aten ops an update). This measures, for the
cases named (``gpu_calibration.CASES``, paper sizes, synthetic batches of the paper's shapes),
the shared trainer's update (:func:`mmt_repro.train.step.train_update`) in three variants:
eager (what the trainer runs), the model wrapped in ``torch.compile`` (default mode; compile time
reported apart, the warm-up steps absorb it), and eager with ``fused=True`` Adam/AdamW; the
``*_fixed`` variants train on one batch shape every step (``eager_fixed``, ``compile_fixed``,
``cudagraphs_fixed``: ``mode="reduce-overhead"``, the step replayed as CUDA graphs), the upper
bound of what padding batches to a few fixed shapes would buy. Same
batches, same precision as the paper's config (``paper_amp``); median/min/max step ms of
``--steps`` timed updates after ``--warmup``. Prints as it goes and writes ``--out`` (JSON).

    PYTHONPATH=src python3 benchmarks/gpu_compile.py --cases bertgen.bertgen deepfuse.deepfuse --out c.json
    PYTHONPATH=src python3 benchmarks/gpu_compile.py --device cpu --tiny --steps 2 --warmup 1   # the code path
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gpu_calibration as cal  # noqa: E402  (installs nothing until called)
import torch  # noqa: E402


def variant(ns, case, device, how: str, steps: int, warmup: int, budget_s: float) -> dict:
    model = cal.build(ns, case, device)
    amp = bool(case["paper_amp"]) and device.type == "cuda"
    batches = cal.case_batches(ns, model, case, 4)
    if how.endswith("_fixed"):  # one batch shape every step: the upper bound of shape bucketing
        batches = batches[:1]
    make = ns.make_optimizer
    if how == "fused_optimizer":
        def fused(name, params, **kw):
            opt = make(name, params, **kw)
            if isinstance(opt, (torch.optim.Adam, torch.optim.AdamW)) and device.type == "cuda":
                keep = {k: opt.defaults[k] for k in ("lr", "betas", "eps", "weight_decay")}
                opt = type(opt)(opt.param_groups[0]["params"], **keep, fused=True)
            return opt
        ns.make_optimizer = fused
    if how in ("compile", "compile_fixed"):
        target = torch.compile(model)
    elif how == "cudagraphs_fixed":  # compiled and replayed as CUDA graphs (one launch per graph)
        target = torch.compile(model, mode="reduce-overhead")
    else:
        target = model
    t0 = time.monotonic()
    try:
        with cal.alarm(budget_s):
            res, _ = cal.time_training(ns, target, case, batches, device, amp, steps, warmup,
                                       deadline=time.monotonic() + budget_s)
    except cal.Budget as err:
        res = {"cut": str(err)}
    finally:
        ns.make_optimizer = make
    res["wall_s"] = time.monotonic() - t0
    res["amp"] = amp
    del model, target
    cal._free(device)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["bertgen.bertgen", "deepfuse.deepfuse"])
    ap.add_argument("--variants", nargs="+", default=["eager", "fused_optimizer", "compile"])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=6)
    ap.add_argument("--budget-s", type=float, default=60.0, help="per variant")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    ns = cal._import_package()
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    results = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
               "torch": torch.__version__, "steps": args.steps, "warmup": args.warmup, "cases": {}}
    for key in args.cases:
        case = cal.tiny_case(cal.CASES[key]) if args.tiny else cal.CASES[key]
        results["cases"][key] = {}
        for how in args.variants:
            try:
                res = variant(ns, case, device, how, args.steps, args.warmup, args.budget_s)
            except Exception as err:  # noqa: BLE001 - one variant's failure is a finding, the rest run
                res = {"error": f"{type(err).__name__}: {err}"[:400]}
            results["cases"][key][how] = res
            ms = res.get("step_ms", {})
            print(f"{key:28s} {how:16s} " + (f"{ms['median']:7.1f} ms/step (min {ms['min']:.1f}, max {ms['max']:.1f},"
                                            f" n={res['steps']}) wall {res['wall_s']:.0f} s amp={res['amp']}"
                                            if ms else json.dumps(res)[:300]), flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        eager = results["cases"][key].get("eager", {}).get("step_ms", {}).get("median")
        for how, res in results["cases"][key].items():
            med = res.get("step_ms", {}).get("median")
            if eager and med and how != "eager":
                print(f"  {key} {how}: {eager / med:.2f}x eager", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
