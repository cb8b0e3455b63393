"""Training and decoding speed, idle and beside one other CPU-bound process.

The workflow's jobs share machines: a busy workstation, a shared cluster node, or two jobs on
the 2 cores of a CI runner. This prints target tokens/s of training and sentences/s of greedy
decoding for a GRU NMT of config/cpu_multi30k.yaml's sizes (emb/hidden 256, 10k vocabularies,
batch 64, random data of Multi30k lengths). Each figure is measured under four OpenMP wait
settings: the package's (GOMP_SPINCOUNT=1000, set in mmt_repro/__init__.py), PASSIVE (no
spinning), libgomp's default (300,000 polls, then sleep) and ACTIVE. Each is measured idle and beside one busy-loop process, and every
measurement is repeated, min/median/max. The last column is idle median / loaded median. The
package's policy should keep it within 2.5x.

    python benchmarks/bench_load.py [--threads 2] [--repeats 3] [--steps 12] [--budget-s 40]

Run it on an otherwise idle machine: it adds its own load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# label -> environment of the measured process (None: unset before torch loads)
POLICIES = {
    "package": {},
    "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
    "default": {"GOMP_SPINCOUNT": None},
    "active": {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": None},
}
BUSY_LOOP = "while True: pass"


def worker(args: argparse.Namespace) -> None:
    """One measurement, in a process of its own (libgomp reads the wait policy once, at load)."""
    if args.worker == "unset":
        import torch  # torch (and libgomp) loads before mmt_repro can set GOMP_SPINCOUNT
    else:
        import mmt_repro  # noqa: F401  sets GOMP_SPINCOUNT unless the environment has it
        import torch

    from mmt_repro.decode.search import greedy
    from mmt_repro.models import Vocabs, build_model
    from mmt_repro.runtime import set_threads

    from bench_calixto import batch

    set_threads(args.threads)
    torch.manual_seed(0)
    vocab = 10000
    config = {"emb_dim": 256, "enc_dim": 256, "dec_dim": 256, "att_dim": 256}
    model = build_model("doubly_attentive.nmt", config, Vocabs.sizes(vocab, vocab))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    data = [batch(64, vocab, vocab, False, torch.device("cpu"), gen) for _ in range(args.steps + 1)]
    model.train()
    tokens, elapsed, started = 0, 0.0, time.perf_counter()
    for i, b in enumerate(data):
        t0 = time.perf_counter()
        loss = model(b)["loss"]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i > 0:  # the first step warms up
            elapsed += time.perf_counter() - t0
            tokens += int((b["tgt_out"] != 0).sum())
        if i >= 3 and time.perf_counter() - started > args.budget_s:
            break
    model.eval()
    t0 = time.perf_counter()
    with torch.no_grad():
        for b in data[:2]:
            greedy(model, b, max_len=80)
    decode_s = time.perf_counter() - t0
    print(json.dumps({"train_tok_s": tokens / elapsed, "greedy_sent_s": 128 / decode_s,
                      "threads": torch.get_num_threads()}))


def measure(policy: str, loaded: bool, args: argparse.Namespace) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    setting = POLICIES[policy]
    env.update({k: v for k, v in setting.items() if v is not None})
    mode = "unset" if "GOMP_SPINCOUNT" in setting else "package"  # unset: torch loads before mmt_repro
    cmd = [sys.executable, __file__, "--worker", mode, "--threads", str(args.threads), "--steps", str(args.steps),
           "--budget-s", str(args.budget_s)]
    load = subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) if loaded else None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True,
                             cwd=os.path.dirname(os.path.abspath(__file__)))
    finally:
        if load is not None:
            load.kill()
            load.wait()
    return json.loads(out.stdout.strip().splitlines()[-1])


def spread(values: list[float]) -> str:
    return f"{min(values):7.0f} {statistics.median(values):7.0f} {max(values):7.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12, help="timed training steps (batch 64)")
    ap.add_argument("--budget-s", type=float, default=40.0, help="stop training earlier than --steps after this")
    ap.add_argument("--policies", default=",".join(POLICIES), help=f"comma-separated subset of {', '.join(POLICIES)}")
    ap.add_argument("--worker", choices=("package", "unset"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    print(f"{os.cpu_count()} CPUs, {args.threads} torch threads, {args.repeats} repeats; load = one busy-loop process")
    print(f"{'policy':8s} {'load':6s} {'train tok/s min/med/max':>24s} {'greedy sent/s min/med/max':>26s}")
    summary = []
    for policy in args.policies.split(","):
        medians = {}
        for loaded in (False, True):
            runs = [measure(policy, loaded, args) for _ in range(args.repeats)]
            tok, sent = [r["train_tok_s"] for r in runs], [r["greedy_sent_s"] for r in runs]
            medians[loaded] = (statistics.median(tok), statistics.median(sent))
            print(f"{policy:8s} {'busy' if loaded else 'idle':6s} {spread(tok):>24s} {spread(sent):>26s}", flush=True)
        slow_train = medians[False][0] / medians[True][0]
        slow_dec = medians[False][1] / medians[True][1]
        summary.append((policy, slow_train, slow_dec))
    print("\nslow-down under load (idle median / loaded median); bound 2.5x")
    for policy, slow_train, slow_dec in summary:
        verdict = "ok" if max(slow_train, slow_dec) <= 2.5 else "OVER"
        print(f"  {policy:8s} train {slow_train:5.2f}x  greedy {slow_dec:5.2f}x  {verdict}")


if __name__ == "__main__":
    main()
