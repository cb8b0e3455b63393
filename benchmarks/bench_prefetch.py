"""Training speed with and without batches collated by a background thread (MMT_PREFETCH).

Trains Calixto et al.'s NMT_SRC+IMG (the model whose batches carry the most data: a 196 x 1024
float16 feature grid per sentence, read from a memory-mapped store) on a synthetic corpus of
Multi30k-like lengths for ``--steps`` updates with prefetching off (0) and on (``--depth``),
alternating, and prints training target tok/s min / median / max of ``--repeats`` runs each.
The same updates are made either way (tests/unit/test_prefetch.py). Run it on an otherwise idle
machine; on a GPU the default depth is 2, on the CPU 0 (mmt_repro.train.prefetch).

    python benchmarks/bench_prefetch.py [--device cpu] [--steps 60] [--repeats 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def corpus(d: Path, n: int, vocab: int, rng) -> None:
    from mmt_repro.text.vocab import Vocab

    words = [f"w{i}" for i in range(vocab)]
    for side, (lo, hi) in (("src", (8, 19)), ("tgt", (8, 21))):
        lines = [" ".join(words[int(k)] for k in rng.integers(0, vocab, int(rng.integers(lo, hi)))) for _ in range(n)]
        (d / f"train.{side}").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (d / f"val.{side}").write_text("\n".join(lines[:64]) + "\n", encoding="utf-8")
        Vocab.build([d / f"train.{side}"]).save(d / f"{side}.json")


def indexed(npy: Path) -> tuple[Path, Path]:
    """The feature store of ``npy`` (N, L, D): its index written beside it, as the workflow's are."""
    from mmt_repro.features.store import write_index

    shape = np.load(npy, mmap_mode="r").shape
    index = npy.with_suffix(".index.parquet")
    write_index(index, [f"{k}.jpg" for k in range(shape[0])], {"shape": list(shape)})
    return npy, index


def one(d: Path, feats: tuple[Path, Path], val_feats: tuple[Path, Path], steps: int, depth: int, device: str) -> float:
    from mmt_repro.plan.jobs import TrainJob
    from mmt_repro.train.trainer import train

    os.environ["MMT_PREFETCH"] = str(depth)
    out = Path(tempfile.mkdtemp(dir=d))
    model = dict(emb_dim=620, enc_dim=1000, dec_dim=1000, att_dim=2000, img_dim=1024, img_att_dim=1024,
                 dropout_enc=0.0, dropout_dec=0.0, dropout_out=0.0, dropout_img=0.0)
    inputs = {"src_vocab": d / "src.json", "tgt_vocab": d / "tgt.json", "train_src": d / "train.src",
              "train_tgt": d / "train.tgt", "val_src": d / "val.src", "val_tgt": d / "val.tgt", "val_ref": d / "val.tgt",
              "train_npy": feats[0], "train_index": feats[1], "val_npy": val_feats[0], "val_index": val_feats[1]}
    job = TrainJob(
        paper="bench", system="prefetch", dataset="synthetic", pair="", seed=1, model="doubly_attentive.nmt_src_img",
        model_config=model, train_config=dict(optimizer="adadelta", batch_size=40, max_steps=steps, max_epochs=1,
                                              log_every=10, val_max_len=2),
        subword="none", resources={}, extras={}, imports=[], tasks=[], inputs={k: str(v) for k, v in inputs.items()},
        best=str(out / "b.pt"), curve=str(out / "c.tsv"), last=str(out / "l.pt"), record=str(out / "b.job.json"),
        device=device,
    )
    started = time.monotonic()
    train(job)
    return time.monotonic() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        n = args.steps * 40 + 64
        corpus(d, n, 4000, rng)
        store = np.lib.format.open_memmap(d / "feats.npy", mode="w+", dtype=np.float16, shape=(n, 196, 1024))
        store[:] = rng.standard_normal((n, 196, 1024), dtype=np.float32).astype(np.float16)
        store.flush()
        np.save(d / "val_feats.npy", store[:64])
        feats, val_feats = indexed(d / "feats.npy"), indexed(d / "val_feats.npy")
        tokens = sum(len(line.split()) + 1 for line in (d / "train.tgt").read_text().splitlines()[: args.steps * 40])
        rates: dict[int, list[float]] = {0: [], args.depth: []}
        for rep in range(args.repeats):
            for depth in ((0, args.depth) if rep % 2 == 0 else (args.depth, 0)):
                seconds = one(d, feats, val_feats, args.steps, depth, args.device)
                rates[depth].append(tokens / seconds)
                print(f"repeat {rep + 1}: prefetch {depth}: {seconds:.1f} s, {tokens / seconds:.0f} tok/s", flush=True)
    print(f"\n{args.device}, {args.threads} thread(s), {args.steps} updates of 40 sentences (+ start-up and one tiny "
          "validation), tok/s min / median / max:")
    for depth, values in rates.items():
        print(f"  prefetch {depth}: {min(values):.0f} / {statistics.median(values):.0f} / {max(values):.0f}")
    ratio = statistics.median(rates[args.depth]) / statistics.median(rates[0])
    print(f"  on / off: {ratio:.2f}")


if __name__ == "__main__":
    main()
