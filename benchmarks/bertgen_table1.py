"""BertGen's Table 1 from the raw text: sentences and unrolled examples per training task.

Sequence unrolling gives ``n + 1`` examples for a target of ``n`` WordPieces (one per piece and
one for [STOP]); Table 1's "Augm." column counts them. This runs the paper's recipe (``lc.wp``:
lowercase, BertGen's M-BERT WordPiece vocab.txt) over the training text that
``../shared/datasets`` holds (Multi30k task 1 and task 2) and prints our counts beside the
paper's; the other corpora (TasvirEt, IWSLT, SETIMES) are not there and are listed as such.

    python benchmarks/bertgen_table1.py --vocab resources/bertgen_vocab/vocab.txt
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mmt_repro.data.unroll import unrolled_count
from mmt_repro.io import read_lines
from mmt_repro.text.recipes import apply_chain

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "datasets" / "multi30k"
# task: (paper sentences, paper unrolled, target files relative to SHARED, target language)
TASKS = {
    "Flickr8k IC IM->TR": (13828, 263e3, None, "tr"),
    "Multi30k MMT DE->EN": (29000, 464e3, ["task1/raw/train.en.gz"], "en"),
    "Multi30k MMT FR->EN": (29000, 464e3, ["task1/raw/train.en.gz"], "en"),
    "Multi30k MMT EN->FR": (29000, 560e3, ["task1/raw/train.fr.gz"], "fr"),
    "Multi30k MMT EN->DE": (29000, 582e3, ["task1/raw/train.de.gz"], "de"),
    "Flickr30k IC IM->EN": (145000, 2.39e6, [f"task2/raw/train.{k}.en.gz" for k in range(1, 6)], "en"),
    "Flickr30k IC IM->DE": (None, 2.48e6, [f"task2/raw/train.{k}.de.gz" for k in range(1, 6)], "de"),
    "IWSLT MT DE->EN": (158388, 3.85e6, None, "en"),
    "IWSLT MT EN->DE": (158388, 4.43e6, None, "de"),
    "IWSLT MT FR->EN": (163328, 4.01e6, None, "en"),
    "IWSLT MT EN->FR": (163328, 4.78e6, None, "fr"),
    "SETIMES MT TR->EN": (185318, 6.01e6, None, "en"),
    "SETIMES MT EN->TR": (185318, 8.40e6, None, "tr"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=Path, default=REPO / "resources" / "bertgen_vocab" / "vocab.txt",
                    help="BertGen's vocab.txt (manifest input bertgen_vocab)")
    args = ap.parse_args()
    print(f"{'task':22s} {'sents':>8s} {'paper':>8s} {'unrolled':>10s} {'paper':>10s} {'ratio':>6s}")
    for task, (p_sents, p_aug, files, lang) in TASKS.items():
        if files is None or not all((SHARED / f).is_file() for f in files):
            print(f"{task:22s} {'':>8s} {p_sents or '':>8} {'':>10s} {p_aug:>10,.0f}  (text not in ../shared/datasets)")
            continue
        lines = [line for f in files for line in read_lines(SHARED / f)]
        pieces = apply_chain(lines, "lc.wp", lang, wordpiece_vocab=args.vocab)
        n = unrolled_count(pieces)
        print(f"{task:22s} {len(lines):8,d} {p_sents or '':>8} {n:10,d} {p_aug:10,.0f} {n / p_aug:6.3f}")


if __name__ == "__main__":
    main()
