"""Our side of bench_peer.py: train or decode a matched model (the GRU or the Transformer) through
the package, in a process of its own (the same calls the train_model and translate rules make).

    run_ours.py train  --data D --out O --threads T --model NAME --model-config JSON --train-config JSON
    run_ours.py decode --data D --out O --threads T --beam K --hyp FILE
    run_ours.py decode-nocache --data D --out O --threads T --hyp FILE   # Transformer, greedy, no cache
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import time

from mmt_repro.datasets.batching import ParallelData
from mmt_repro.decode.loop import decode_data, to_text
from mmt_repro.decode.translate import load_for_decoding, translate
from mmt_repro.io import write_lines
from mmt_repro.plan.jobs import TrainJob
from mmt_repro.runtime import run_step
from mmt_repro.settings import DecodeSettings
from mmt_repro.train.trainer import train

MODEL = "doubly_attentive.nmt"  # Calixto et al.'s text-only conditional-GRU NMT (the matched GRU)


def decode_uncached(checkpoint: Path, src: Path, out: Path, src_vocab: Path, tgt_vocab: Path, decode: dict) -> dict:
    """Greedy decoding of a Transformer checkpoint that recomputes the decoder over the whole
    prefix at every step (:class:`~mmt_repro.models.transformer.UncachedDecoding`); writes the
    hypotheses and ``<out>.stats.json`` like :func:`translate`."""
    from mmt_repro.models.transformer import UncachedDecoding

    model, _, sv, tv, _, dev = load_for_decoding(checkpoint, src_vocab, tgt_vocab, device="cpu")
    data = ParallelData(src, sv)
    started = time.monotonic()
    result = decode_data(UncachedDecoding(model), data, DecodeSettings(**decode), dev)
    elapsed = time.monotonic() - started
    hyps = to_text(result.hyps, tv, "bpe")
    write_lines(out, hyps)
    info = {"sentences": len(hyps), "seconds": round(elapsed, 2), "sentences_per_s": round(len(hyps) / elapsed, 1),
            "cut_at_max_len": result.cut}
    out.with_suffix(".stats.json").write_text(json.dumps(info))
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("train", "decode", "decode-nocache"))
    ap.add_argument("--model", default=MODEL, help="registry key of the model to train")
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model-config", default="{}")
    ap.add_argument("--train-config", default="{}")
    ap.add_argument("--beam", type=int, default=1)
    ap.add_argument("--hyp", type=Path)
    args = ap.parse_args()
    d, o = args.data, args.out
    o.mkdir(parents=True, exist_ok=True)
    if args.action == "train":
        train_config = json.loads(args.train_config)
        inputs = {"src_vocab": d / "vocab.en", "tgt_vocab": d / "vocab.de", "train_src": d / "train.bpe.en",
                  "train_tgt": d / "train.bpe.de", "val_src": d / "val.bpe.en", "val_tgt": d / "val.bpe.de",
                  "val_ref": d / "val.tok.de"}
        job = TrainJob(
            paper="peer", system=args.model, dataset="peer", pair="", seed=int(train_config.get("seed", 1)),
            model=args.model, model_config=json.loads(args.model_config), train_config=train_config, subword="bpe",
            resources={}, extras={}, imports=[], tasks=[], inputs={k: str(v) for k, v in inputs.items()},
            best=str(o / "model.best.pt"), curve=str(o / "curve.tsv"), last=str(o / "model.last.pt"),
            record=str(o / "model.job.json"), device="cpu",
        )
        run_step(None, args.threads, train, job=job)
    elif args.action == "decode-nocache":
        run_step(
            None, args.threads, decode_uncached,
            checkpoint=o / "model.last.pt", src=d / "test.bpe.en", out=args.hyp, src_vocab=d / "vocab.en",
            tgt_vocab=d / "vocab.de", decode={"beam_size": 1, "max_len": 80, "batch_size": 64},
        )
    else:
        run_step(
            None, args.threads, translate,
            checkpoint=o / "model.last.pt", src=d / "test.bpe.en", out=args.hyp,
            stats_out=args.hyp.with_suffix(".stats.json"), src_vocab=d / "vocab.en", tgt_vocab=d / "vocab.de",
            decode={"beam_size": args.beam, "alpha": 1.0, "max_len": 80, "batch_size": 64}, subword="bpe",
            device="cpu",
        )


if __name__ == "__main__":
    main()
