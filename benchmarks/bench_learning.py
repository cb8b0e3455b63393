"""Learning per step on real text: mean training loss every 50 updates for model variants.

Prepare the data once with the workflow (tokenised, BPE, vocabularies of config/cpu_multi30k.yaml):

    snakemake results/tables/doubly_attentive/table1.tsv --configfile config/cpu_multi30k.yaml \\
        --cores 2 --omit-from train_model

then compare variants of the text-only GRU (model config keys as JSON, plus ``lr``):

    python benchmarks/bench_learning.py '{}' '{"init_std": 0.1}' '{"dropout_dec": 0}' --steps 200

The unigram entropy of the target side is printed too: a model whose loss stays there has
learned nothing from the source or the previous words. Same seed, same batches for every
variant; run on an idle machine (it prints seconds as well).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import time
from pathlib import Path

import mmt_repro  # noqa: F401  (thread settings before torch loads)
import torch

from mmt_repro.datasets.batching import ParallelData
from mmt_repro.models import Vocabs, build_model
from mmt_repro.runtime import set_threads
from mmt_repro.text.vocab import Vocab

BASE = {"emb_dim": 256, "enc_dim": 256, "dec_dim": 256, "att_dim": 256,
        "dropout_enc": 0.3, "dropout_dec": 0.3, "dropout_out": 0.3}  # config/cpu_multi30k.yaml's nmt


def unigram_entropy(path: Path) -> float:
    counts, n = collections.Counter(), 0
    for line in path.open(encoding="utf-8"):
        tokens = [*line.split(), "</s>"]
        counts.update(tokens)
        n += len(tokens)
    return -sum(c / n * math.log(c / n) for c in counts.values())


def run(variant: dict, data: ParallelData, vocabs: Vocabs, steps: int, batch_size: int) -> None:
    opts = dict(variant)
    lr = opts.pop("lr", 1e-3)
    torch.manual_seed(1)
    model = build_model("doubly_attentive.nmt", {**BASE, **opts}, vocabs)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    total, n, started = 0.0, 0, time.time()
    for i, ids in enumerate(data.train_batches(batch_size, seed=1, epoch=1)[:steps], 1):
        loss = model(data.collate(ids))["loss"]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        total, n = total + float(loss), n + 1
        if i % 50 == 0:
            print(f"{json.dumps(variant):40s} step {i:4d} loss {total / n:.3f}  {time.time() - started:5.0f} s", flush=True)
            total, n = 0.0, 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="+", help="JSON objects of model config keys (and lr)")
    ap.add_argument("--text", type=Path, default=Path("results/text/doubly_attentive/multi30k.en-de"))
    ap.add_argument("--vocab", type=Path, default=Path("results/vocab/doubly_attentive"))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    set_threads(args.threads)
    src, tgt = args.text / "train.norm.tok.bpe.en", args.text / "train.norm.tok.bpe.de"
    for path in (src, tgt):
        if not path.is_file():
            raise SystemExit(f"{path} is missing: prepare the data first (see the docstring of {__file__})")
    sv = Vocab.load(args.vocab / "multi30k.en-de.en.json")
    tv = Vocab.load(args.vocab / "multi30k.en-de.de.json")
    data = ParallelData(src, sv, tgt, tv, max_len=80)
    print(f"unigram entropy of the target side: {unigram_entropy(tgt):.3f} nats per token")
    for variant in args.variants:
        run(json.loads(variant), data, Vocabs.of(sv, tv), args.steps, args.batch_size)


if __name__ == "__main__":
    main()
