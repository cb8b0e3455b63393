"""BertGen's Table 1 from the raw text: sentences and unrolled examples per training task.

Sequence unrolling gives ``n + 1`` examples for a target of ``n`` WordPieces (one per piece and
one for [STOP]); Table 1's "Augm." column counts them. This runs the paper's recipe (``lc.wp``:
lowercase, BertGen's M-BERT WordPiece vocab.txt) over the training text that
``../shared/datasets`` holds (Multi30k task 1 and task 2) and prints our counts beside the
paper's; the other corpora (TasvirEt, IWSLT, SETIMES) are not there and are listed as such.

Then, for the image tasks whose text is there, what the authors' 64-position cap does to those
unrolled examples (``image_seq_len``, :func:`~mmt_repro.text.positions.seq_len_cap`; docs/bertgen.md,
deviation 27): the share whose text is cut, losing its [MASK] and label, and the regions left,
for an image of ``--regions`` slots (the whole image included: 101 = BUTD's 100 boxes, the most,
11 = its 10, the fewest; the features are not here, so their per-image counts are not known).

    python benchmarks/bertgen_table1.py --vocab resources/bertgen_vocab/vocab.txt
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from mmt_repro.datasets.unroll import unrolled_count
from mmt_repro.io import read_lines
from mmt_repro.text.positions import seq_len_cap
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
# MMT tasks: source text (files relative to SHARED, language); captioning has none
SOURCES = {
    "Multi30k MMT DE->EN": (["task1/raw/train.de.gz"], "de"),
    "Multi30k MMT FR->EN": (["task1/raw/train.fr.gz"], "fr"),
    "Multi30k MMT EN->FR": (["task1/raw/train.en.gz"], "en"),
    "Multi30k MMT EN->DE": (["task1/raw/train.en.gz"], "en"),
}
IMAGE_TASKS = ("Flickr8k IC IM->TR", *SOURCES, "Flickr30k IC IM->EN", "Flickr30k IC IM->DE")


def cap_effect(src_len: np.ndarray, tgt_len: np.ndarray, seq_len: int, regions: int) -> dict[str, float]:
    """What the cap does to the unrolled examples of sentences with ``src_len`` source and
    ``tgt_len`` target pieces (example ``t``: ``[lang] [CLS] x [SEP] y_<t [MASK] [SEP]``,
    ``len(x) + t + 5`` positions) beside ``regions`` region slots."""
    counts = tgt_len + 1
    first = np.repeat(np.cumsum(counts) - counts, counts)
    t = np.arange(int(counts.sum())) - first
    text = np.repeat(src_len, counts) + t + 5
    t_keep, r_keep = seq_len_cap(text, np.full_like(text, regions), seq_len)
    cut = t_keep < text
    return {"examples": len(text), "mask_cut": float(cut.mean()), "regions_cut": float((r_keep < regions).mean()),
            "regions_left": float(r_keep.mean()),
            "sentences_hit": float(np.add.reduceat(cut, np.cumsum(counts) - counts).astype(bool).mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=Path, default=REPO / "resources" / "bertgen_vocab" / "vocab.txt",
                    help="BertGen's vocab.txt (manifest input bertgen_vocab)")
    ap.add_argument("--seq-len", type=int, default=64,
                    help="the authors' cap on text + region positions of an image task's example (0: skip)")
    ap.add_argument("--regions", default="101,11", help="region slots per image, comma-separated")
    args = ap.parse_args()
    cache: dict[tuple, list[str]] = {}

    def pieces(files, lang) -> list[str]:  # lc.wp lines (each file read and tokenised once)
        if (tuple(files), lang) not in cache:
            lines = [line for f in files for line in read_lines(SHARED / f)]
            cache[tuple(files), lang] = apply_chain(lines, "lc.wp", lang, wordpiece_vocab=args.vocab)
        return cache[tuple(files), lang]

    def lengths(files, lang) -> np.ndarray:  # pieces per line
        return np.array([len(p.split()) for p in pieces(files, lang)], dtype=np.int64)

    def present(files) -> bool:
        return files is not None and all((SHARED / f).is_file() for f in files)

    print(f"{'task':22s} {'sents':>8s} {'paper':>8s} {'unrolled':>10s} {'paper':>10s} {'ratio':>6s}")
    for task, (p_sents, p_aug, files, lang) in TASKS.items():
        if not present(files):
            print(f"{task:22s} {'':>8s} {p_sents or '':>8} {'':>10s} {p_aug:>10,.0f}  (text not in ../shared/datasets)")
            continue
        lines = pieces(files, lang)
        n = unrolled_count(lines)
        print(f"{task:22s} {len(lines):8,d} {p_sents or '':>8} {n:10,d} {p_aug:10,.0f} {n / p_aug:6.3f}")
    if args.seq_len <= 0:
        return
    regions = [int(r) for r in args.regions.split(",")]
    print(f"\nthe authors' cap of {args.seq_len} text + region positions, image tasks "
          "(mask cut: text cut, its [MASK] and label gone; regions: slots kept of the image's)")
    head = "".join(f" {f'mask cut@{r}':>11s} {f'sents@{r}':>9s} {f'reg cut@{r}':>10s} {f'reg left@{r}':>11s}"
                   for r in regions)
    print(f"{'task':22s} {'unrolled':>10s}{head}")
    for task in IMAGE_TASKS:
        files, lang = TASKS[task][2], TASKS[task][3]
        src = SOURCES.get(task)
        if not present(files) or (src is not None and not present(src[0])):
            print(f"{task:22s} {'':>10s}  (text not in ../shared/datasets)")
            continue
        tgt_len = lengths(files, lang)
        src_len = lengths(*src) if src is not None else np.zeros_like(tgt_len)
        cells = [cap_effect(src_len, tgt_len, args.seq_len, r) for r in regions]
        row = "".join(f" {c['mask_cut']:11.1%} {c['sentences_hit']:9.1%} {c['regions_cut']:10.1%}"
                      f" {c['regions_left']:7.1f}/{r:<3d}" for c, r in zip(cells, regions))
        print(f"{task:22s} {cells[0]['examples']:10,d}{row}")


if __name__ == "__main__":
    main()
