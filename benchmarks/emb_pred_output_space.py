"""Why Hirasawa et al.'s "Ours - Images" misses at the paper's setting: its output space, measured.

Ours decodes by the nearest neighbour (cosine) of a predicted vector among the rows of a fixed
target embedding table. The paper's table holds the fastText Common Crawl vectors; ours holds
fastText vectors trained on Multi30k's 29k training sentences (the cc files cannot be fetched
here). This script reads a run folder of ``config/paper_multi30k_fr_en.yaml`` and prints:

1. how crowded the table is: per training-frequency band, the share of words whose nearest other
   row lies within cosine 0.9 / 0.95 (sub-word vectors of a small corpus put a compound seen once,
   ``ice-climbing``, on top of its head word, ``climbing``);
2. the rare words each system writes (training count <= 4): how many sentence-word pairs, how
   many are wrong (not in the reference), and how many of the wrong ones have a reference word
   within cosine 0.9 (a near-duplicate row won the nearest-neighbour search);
3. every word written beyond the reference (bag of words, per sentence): how many, and how many
   stand where a missing reference word has a row within cosine 0.9 (``her`` for ``his``);
4. a decoding diagnostic, not the paper's method: the same Ours checkpoint decoded greedily with
   the rows of words seen at most K times in training set to zero (K = 0 is the plain decoding),
   scored with the plan's BLEU (multi-bleu). If the crowded rare rows are what costs, BLEU rises.

    python benchmarks/emb_pred_output_space.py --workdir runs/paper_multi30k_fr_en --seed 1 \\
        --mask 0 1 4 --split test_2016_flickr

Each decode runs on one CPU thread (~1-2 minutes for 1,000 sentences). ``--vector-epochs 5 25 50``
instead trains the English substitute vectors again with each number of fastText epochs (the
config's settings otherwise; 5 is what the paper-setting run used; ~45 s for 5 epochs on one
thread), builds each debiased table, and prints the same crowding figures and a few pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parent.parent
if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))


def crowding(table, counts, bands=((1, 4), (5, 99), (100, None))):
    """Per band of training counts: words, share with another row at cosine >= 0.9 / 0.95, median
    (NaN for an empty band); and the cosine matrix, its diagonal set to -2."""
    import numpy as np

    unit = table / np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-9)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -2.0)
    nearest = sims.max(1)
    rows = []
    for lo, hi in bands:
        m = (counts >= lo) & ((counts <= hi) if hi is not None else True)
        near = nearest[m]
        rows.append({"band": f"{lo}-{hi}" if hi else f">={lo}", "words": int(m.sum()),
                     "cos>=0.9": float((near >= 0.9).mean()) if near.size else float("nan"),
                     "cos>=0.95": float((near >= 0.95).mean()) if near.size else float("nan"),
                     "median": float(np.median(near)) if near.size else float("nan")})
    return rows, sims


def rare_outputs(hyps, refs, train_counts: Counter, index: dict, sims, max_count: int = 4) -> dict:
    """Rare words written (sentence-word pairs), wrong ones, wrong ones near a reference word."""
    written = wrong = near = 0
    for h, r in zip(hyps, refs):
        ref_words = set(r.split())
        for w in set(h.split()):
            if not 0 < train_counts[w] <= max_count:
                continue
            written += 1
            if w in ref_words:
                continue
            wrong += 1
            if w in index and any(sims[index[w], index[x]] >= 0.9 for x in ref_words if x in index):
                near += 1
    return {"written": written, "wrong": wrong, "wrong_near_ref": near}


def near_substitutions(hyps, refs, index: dict, sims, threshold: float = 0.9) -> dict:
    """Words written beyond the reference (per sentence, counted with multiplicity) and those of
    them whose row lies within ``threshold`` cosine of a reference word the output misses
    (``sims``: :func:`crowding`'s cosine matrix; a written word is never among the missed ones)."""
    extra_n = near_n = 0
    pairs = Counter()
    for h, r in zip(hyps, refs):
        hc, rc = Counter(h.split()), Counter(r.split())
        missing = [m for m in rc - hc if m in index]
        for word, n in (hc - rc).items():
            extra_n += n
            if word not in index or not missing:
                continue
            cos, ref_word = max((float(sims[index[word], index[m]]), m) for m in missing)
            if cos >= threshold:
                near_n += n
                pairs[(ref_word, word)] += n
    return {"extra": extra_n, "near": near_n, "pairs": pairs.most_common(8)}


PAIRS = (("his", "her"), ("two", "three"), ("are", "three"), ("with", "within"), ("man", "woman"), ("dog", "cat"),
         ("climbing", "ice-climbing"), ("red", "blue"), ("boy", "girl"))


def vector_epochs(plan, epochs: list[int], counts, out_dir: Path) -> None:
    """Train the English substitute vectors with each number of epochs; print crowding and pairs."""
    import time

    import numpy as np

    from mmt_repro.text.vocab import Vocab
    from mmt_repro.text.word_vectors import build_embedding_table, train_word_vectors

    w = SimpleNamespace(paper="emb_pred", dataset="multi30k", pair="fr-en", lang="en")
    settings = plan.vectors.training(w)
    vocab_file = plan.vectors.table_vocab(w)
    tokens = Vocab.load(vocab_file).tokens
    index = {t: i for i, t in enumerate(tokens)}
    for epoch in epochs:
        vec, npy = out_dir / f"en.epoch{epoch}.vec", out_dir / f"en.epoch{epoch}.npy"
        started = time.monotonic()
        train_word_vectors([plan.vectors.training_text(w)], vec, **{**settings, "epoch": epoch})
        seconds = time.monotonic() - started
        report = out_dir / f"en.epoch{epoch}.json"
        build_embedding_table(vocab_file, vec, npy, report, **plan.vectors.table_settings(w))
        bands, sims = crowding(np.load(npy), counts)
        print(f"  {epoch} epochs ({seconds:.0f} s): " + "; ".join(
            f"count {b['band']}: cos>=0.95 {b['cos>=0.95']:.1%}, >=0.9 {b['cos>=0.9']:.1%}, median {b['median']:.3f}"
            for b in bands))
        pairs = [f"{a}/{b} {sims[index[a], index[b]]:.2f}" for a, b in PAIRS if a in index and b in index]
        print("    " + ", ".join(pairs))


def masked_decode(job: dict, counts, k: int, out: Path) -> list[str]:
    """Decode ``job`` (a plan translate job, paths relative to the cwd) with the target-table rows of
    words seen at most ``k`` times in training zeroed (``k`` = 0: unchanged)."""
    import torch

    import mmt_repro.decode.translate as dt

    original = dt.load_for_decoding

    def load(*a, **kw):
        model, ckpt, sv, tv, feats, dev = original(*a, **kw)
        table = model.target_table().detach().clone()
        rare = torch.tensor((counts > 0) & (counts <= k)) if k else torch.zeros(len(counts), dtype=torch.bool)
        table[rare.to(table.device)] = 0.0
        model.target_table = lambda: table
        return model, ckpt, sv, tv, feats, dev

    dt.load_for_decoding = load
    try:
        inp = job["inputs"]
        dt.translate(checkpoint=inp["checkpoint"], src=inp["src"], out=out, src_vocab=inp["src_vocab"],
                     tgt_vocab=inp["tgt_vocab"], decode=dict(job["decode"]), subword=job["subword"], device="cpu",
                     pair=job["pair"])
    finally:
        dt.load_for_decoding = original
    return out.read_text(encoding="utf-8").splitlines()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", required=True, help="run folder of config/paper_multi30k_fr_en.yaml")
    ap.add_argument("--configfile", nargs="+", default=[str(REPO / "config/paper_multi30k_fr_en.yaml")])
    ap.add_argument("--seed", default="1")
    ap.add_argument("--split", default="test_2016_flickr")
    ap.add_argument("--mask", type=int, nargs="*", default=[0, 1, 4], help="training counts to mask at decoding")
    ap.add_argument("--out", default=None, help="folder for the masked decodings (default: a temporary one)")
    ap.add_argument("--vector-epochs", type=int, nargs="*", default=[],
                    help="train the English vectors with these epochs and print their crowding (instead of 1-4)")
    args = ap.parse_args(argv)

    import numpy as np
    import torch

    from gpu_paper_run import _plan  # beside this script: config.yaml with the overlays merged
    from mmt_repro.io import read_lines
    from mmt_repro.metrics.mt import multibleu
    from mmt_repro.text.vocab import Vocab

    torch.set_num_threads(1)
    plan = _plan(args.configfile)
    work = Path(args.workdir).resolve()
    w = SimpleNamespace(paper="emb_pred", system="ours_text", dataset="multi30k", pair="fr-en", seed=args.seed,
                        split=args.split, condition="congruent")
    job = plan.translate_jobs.job(w).to_dict()
    train_job = plan.train_jobs.job(SimpleNamespace(**{k: v for k, v in vars(w).items() if k not in ("split", "condition")}))
    res = train_job.to_dict()["resources"]
    tgt_train = train_job.inputs["train_tgt"]
    tgt_lang = "en"
    ref_file = plan.score_jobs.job(w).to_dict()["inputs"]["ref"][0]  # Multi30k: one reference

    out_arg = Path(args.out).resolve() if args.out else None  # before the chdir
    os.chdir(work)
    vocab = Vocab.load(job["inputs"]["tgt_vocab"])
    train_counts = Counter(t for line in read_lines(tgt_train) for t in line.split())
    counts = np.array([train_counts.get(t, 0) for t in vocab.tokens])
    if args.vector_epochs:
        out_dir = out_arg or Path(tempfile.mkdtemp(prefix="emb_pred_vectors."))
        print(f"English substitute vectors by fastText epochs (vectors and tables in {out_dir}):")
        vector_epochs(plan, args.vector_epochs, counts, out_dir)
        return 0
    table = np.load(res["tgt_emb"])
    bands, sims = crowding(table, counts)
    print(f"target table {res['tgt_emb']} ({table.shape[0]} x {table.shape[1]}, {tgt_lang}): nearest other row")
    for b in bands:
        print(f"  training count {b['band']:>7}: {b['words']:5d} words, cos>=0.9 {b['cos>=0.9']:.1%}, "
              f"cos>=0.95 {b['cos>=0.95']:.1%}, median {b['median']:.3f}")
    refs = read_lines(ref_file)
    index = {t: i for i, t in enumerate(vocab.tokens)}
    print(f"rare words written on {args.split} (training count <= 4; sentence-word pairs), seed {args.seed}:")
    for system in ("nmt_pre", "ours_text"):
        hyp_file = plan.translate_jobs.job(SimpleNamespace(**{**vars(w), "system": system})).out
        if not Path(hyp_file).exists():
            print(f"  {system}: {hyp_file} not translated yet")
            continue
        hyps = read_lines(hyp_file)
        r = rare_outputs(hyps, refs, train_counts, index, sims)
        print(f"  {system:9s}: {r['written']} written, {r['wrong']} wrong, {r['wrong_near_ref']} of the wrong "
              f"with a reference word at cosine >= 0.9")
        n = near_substitutions(hyps, refs, index, sims)
        share = n["near"] / max(n["extra"], 1)
        print(f"  {system:9s}: {n['extra']} words beyond the reference, {n['near']} ({share:.1%}) where a missing "
              f"reference word is within cosine 0.9; most often (reference, written): {n['pairs']}")
    if not Path(job["inputs"]["checkpoint"]).exists():
        print(f"{job['inputs']['checkpoint']}: not trained yet; no decoding diagnostic")
        return 0
    out_dir = out_arg or Path(tempfile.mkdtemp(prefix="emb_pred_mask."))
    print(f"greedy decoding of {args.split} with rare rows zeroed (diagnostic, not the paper's method):")
    for k in args.mask:
        hyps = masked_decode(job, counts, k, out_dir / f"mask{k}.txt")
        bleu = multibleu(hyps, [refs])
        masked = int(((counts > 0) & (counts <= k)).sum()) if k else 0
        print(f"  rows of words seen <= {k} times zeroed ({masked} rows): BLEU {bleu['value']:.2f}")
    print(json.dumps({"out": str(out_dir)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
