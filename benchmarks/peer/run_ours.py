"""Our side of bench_peer.py: train or decode the matched GRU through the package, in a process
of its own (the same calls the train_model and translate rules make).

    run_ours.py train  --data D --out O --threads T --model-config JSON --train-config JSON
    run_ours.py decode --data D --out O --threads T --beam K --hyp FILE
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mmt_repro.decode.translate import translate
from mmt_repro.runtime import run_step
from mmt_repro.train.trainer import train_from_files

MODEL = "doubly_attentive.nmt"  # Calixto et al.'s text-only conditional-GRU NMT


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("train", "decode"))
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
        run_step(
            None, args.threads, train_from_files,
            model_name=MODEL, model_config=json.loads(args.model_config), train_config=json.loads(args.train_config),
            src_vocab=d / "vocab.en", tgt_vocab=d / "vocab.de",
            train_src=d / "train.bpe.en", train_tgt=d / "train.bpe.de",
            val_src=d / "val.bpe.en", val_tgt=d / "val.bpe.de", val_ref=d / "val.tok.de",
            best_checkpoint=o / "model.best.pt", last_checkpoint=o / "model.last.pt", curve=o / "curve.tsv",
            device="cpu", subword="bpe",
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
