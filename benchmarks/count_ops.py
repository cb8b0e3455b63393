"""aten operations dispatched by one training update, phase by phase, and what the optimiser's
implementation changes: the launch count behind a launch-bound GPU step (issue 23), counted on
any device, the CPU included.

A model of ``gpu_calibration.CASES`` (the paper's sizes; ``--narrow`` keeps every layer and
parameter tensor but shrinks widths and the vocabulary, so the same ops run in a fraction of
the time) takes one synthetic batch of the paper's shapes; ``gpu_calibration.OpCounter`` counts
the ops of the forward + backward pass, of the gradient-norm clip and of the optimiser step,
for the optimiser written three ways: torch's per-parameter loop (``forloop``: the trainer's
optimiser on a CPU before the sixth session), its multi-tensor ``foreach`` ops (the trainer's
default on a GPU before the sixth session) and the single ``fused`` kernel (what
``mmt_repro.train.step.make_optimizer`` builds now, CPU and GPU). The clip is counted both ways
(torch picks per-tensor norms on a CPU and ``foreach`` on a GPU).

Ops are counted where Python's dispatcher sees them: a ``foreach`` op is one op (on a GPU it
launches one kernel per chunk of tensors), the fused step one op (one kernel per chunk).

    python benchmarks/count_ops.py [--only bertgen.bertgen ...] [--narrow] [--device cpu] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gpu_calibration as cal  # noqa: E402  (installs nothing until called)
import torch  # noqa: E402

#: Width keys that ``--narrow`` divides by 8 (layer counts, heads and tensor counts unchanged).
WIDTHS = ("hidden_size", "ffn_size", "img_dim", "emb_dim", "enc_dim", "dec_dim", "att_dim", "img_att_dim",
          "d_model", "d_ff", "hidden")


def narrow(case: dict) -> dict:
    c = dict(case)
    cfg = dict(c["config"])
    heads = cfg.get("num_heads") or cfg.get("n_heads") or 1
    for k in WIDTHS:
        if k in cfg:
            cfg[k] = max(cfg[k] // 8, heads * 2)
    c["config"] = cfg
    c["vocab"] = tuple(min(v, 2000) for v in c["vocab"])
    if c.get("img"):
        c["img"] = (c["img"][0], cfg.get("img_dim", c["img"][1]))
    return c


def count(fn) -> int:
    ops = cal.OpCounter()
    with ops:
        fn()
    return ops.n


def one(ns, key: str, case: dict, device) -> dict:
    model = cal.build(ns, case, device)
    batch = ns.to_device(cal.case_batches(ns, model, case, 1)[0], device)
    params = [p for p in model.parameters() if p.requires_grad]
    model.train()

    def fwd_bwd():
        model.zero_grad(set_to_none=True)
        model(ns.resolve_features(batch))["loss"].backward()

    out = {"model": case["model"], "config": case["config"], "param_tensors": len(params),
           "forward_backward": count(fwd_bwd)}
    for how in ("forloop", "foreach"):
        fwd_bwd()
        out[f"clip_{how}"] = count(lambda how=how: torch.nn.utils.clip_grad_norm_(
            params, case["clip"] or 1.0, foreach=how == "foreach"))
    o = case["optim"]
    adam = torch.optim.AdamW if o["optimizer"] == "adamw" else torch.optim.Adam
    for how in ("forloop", "foreach", "fused"):
        if o["optimizer"] not in ("adam", "adamw"):
            break
        kw = {"forloop": dict(foreach=False), "foreach": dict(foreach=True), "fused": dict(fused=True)}[how]
        opt = adam(params, lr=o["lr"], betas=o.get("betas", (0.9, 0.999)), eps=o.get("eps", 1e-8),
                   weight_decay=o.get("weight_decay", 0.0), **kw)
        fwd_bwd()
        opt.step()  # the first step creates the state; count a steady one
        fwd_bwd()
        out[f"optimizer_{how}"] = count(opt.step)
        del opt
    if "optimizer_fused" in out:
        fb = out["forward_backward"]
        out["update_before_gpu"] = fb + out["clip_foreach"] + out["optimizer_foreach"]
        out["update_after_gpu"] = fb + out["clip_foreach"] + out["optimizer_fused"]
        out["update_before_cpu"] = fb + out["clip_forloop"] + out["optimizer_forloop"]
        out["update_after_cpu"] = fb + out["clip_forloop"] + out["optimizer_fused"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=["bertgen.bertgen"], metavar="MODEL",
                    help=f"models to count (of {', '.join(cal.CASES)})")
    ap.add_argument("--narrow", action="store_true", help="widths / 8, vocabulary <= 2,000: the same ops, faster")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    ns = cal._import_package()
    from mmt_repro.train.step import resolve_features

    ns.resolve_features = resolve_features
    device = torch.device(args.device)
    rows = {}
    for key in args.only:
        case = narrow(cal.CASES[key]) if args.narrow else cal.CASES[key]
        rows[key] = r = one(ns, key, case, device)
        print(f"{key}: {r['param_tensors']} parameter tensors; forward + backward {r['forward_backward']} ops; "
              f"clip {r['clip_forloop']} (per tensor) / {r['clip_foreach']} (foreach); "
              + (f"optimiser {r['optimizer_forloop']} (loop) / {r['optimizer_foreach']} (foreach) / "
                 f"{r['optimizer_fused']} (fused); one update on a GPU {r['update_before_gpu']} -> "
                 f"{r['update_after_gpu']}, on a CPU {r['update_before_cpu']} -> {r['update_after_cpu']}"
                 if "optimizer_fused" in r else "optimiser not Adam"), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"device": str(device), "narrow": args.narrow, "torch": torch.__version__,
                                         "models": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
