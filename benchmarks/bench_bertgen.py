"""BertGen (Mitzalis et al. 2021): decoding and training speed, model FLOPs, and the H100-hours of
the paper's 45 epochs.

Three parts (all print min / median / max over ``--repeats``; timed figures on a shared machine
are noisy):

``decode``    sentences/s of the [MASK]-shift greedy search, every sentence of a batch at once
              (``--batch``) against one sentence at a time, on the same model, data and device;
              the outputs must be identical (printed). Real Multi30k test2016 English (lowercased,
              WordPieces learnt on Multi30k train), a random model, ``--max-len`` steps (a
              random model rarely stops, so both decode about the same number of steps).
``train``     unrolled training examples/s (forward, backward, AdamW step) with and without
              packing, the model FLOPs per step (``torch.utils.flop_counter``) and the share of
              padded positions; Multi30k En->De MMT examples with 36 random regions per image.
``estimate``  the H100-hours of BertGen's 45 epochs at 40 % MFU in bf16: model FLOPs per
              unrolled example of each of the 13 tasks at the paper's size (counted by
              ``FlopCounterMode`` on the paper-size model on the meta device, no memory), with
              the text lengths of Table 1 (average target = Augm. / Sents - 1 pieces; a source is
              the opposite direction's target) and ``--regions`` RoIs per image.

    python benchmarks/bench_bertgen.py decode --size small --sentences 200 --repeats 3
    python benchmarks/bench_bertgen.py train --size small --steps 20
    python benchmarks/bench_bertgen.py estimate
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from mmt_repro.datasets.batching import ParallelData
from mmt_repro.datasets.view import training_view
from mmt_repro.decode.loop import decode_data
from mmt_repro.models import Vocabs
from mmt_repro.models.bertgen import BertGen, BertGenConfig, Layout, parameter_count, text_ids
from mmt_repro.settings import DecodeSettings
from mmt_repro.text.vocab import Vocab
from mmt_repro.text.wordpiece import learn_wordpiece, wordpiece_lines

REPO = Path(__file__).resolve().parents[1]
MULTI30K = REPO.parent / "shared" / "datasets" / "multi30k" / "task1" / "raw"
SIZES = {
    "tiny": dict(hidden_size=64, num_layers=2, num_heads=2, ffn_size=128),
    "small": dict(hidden_size=256, num_layers=4, num_heads=4, ffn_size=1024),
    "paper": dict(hidden_size=768, num_layers=12, num_heads=12, ffn_size=3072),
}
# Table 1: task -> (source side, sentences, unrolled examples); a source's length is the
# average target length of the opposite direction (None: captioning, no source).
TABLE1 = {
    "IM->TR (Flickr8k)": (None, 13828, 263e3, True),
    "DE->EN (Multi30k)": ("EN->DE (Multi30k)", 29000, 464e3, True),
    "FR->EN (Multi30k)": ("EN->FR (Multi30k)", 29000, 464e3, True),
    "EN->FR (Multi30k)": ("FR->EN (Multi30k)", 29000, 560e3, True),
    "EN->DE (Multi30k)": ("DE->EN (Multi30k)", 29000, 582e3, True),
    "IM->EN (Flickr30k)": (None, 145000, 2.39e6, True),
    "IM->DE (Flickr30k)": (None, 145000, 2.48e6, True),
    "DE->EN (IWSLT)": ("EN->DE (IWSLT)", 158388, 3.85e6, False),
    "EN->DE (IWSLT)": ("DE->EN (IWSLT)", 158388, 4.43e6, False),
    "FR->EN (IWSLT)": ("EN->FR (IWSLT)", 163328, 4.01e6, False),
    "EN->FR (IWSLT)": ("FR->EN (IWSLT)", 163328, 4.78e6, False),
    "TR->EN (SETIMES)": ("EN->TR (SETIMES)", 185318, 6.01e6, False),
    "EN->TR (SETIMES)": ("TR->EN (SETIMES)", 185318, 8.40e6, False),
}
REFERENCE = "EN->DE (Multi30k)"
H100_BF16 = 989.4e12  # dense bf16 tensor-core peak of an H100 SXM, FLOP/s
EPOCHS, MFU = 45, 0.40


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def describe(dev: torch.device, args) -> str:
    if dev.type == "cuda":
        return f"{torch.cuda.get_device_name(dev)}{' bf16' if args.amp else ''}"
    return f"CPU, {args.threads} thread(s)"


def stats(xs: list[float]) -> str:
    return f"{min(xs):.1f} / {statistics.median(xs):.1f} / {max(xs):.1f}"


def multi30k(split: str, lang: str, n: int | None = None) -> list[str]:
    path = MULTI30K / f"{split}.{lang}.gz"
    if not path.is_file():
        raise SystemExit(f"needs {path} (../shared/datasets beside the repository)")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        lines = [line.strip().lower() for line in fh]
    return lines[:n] if n else lines


def wordpiece_data(tmp: Path, size: int) -> tuple[Vocab, Path]:
    """A WordPiece vocab.txt learnt on Multi30k train En+De (lowercased), as our Vocab."""
    for lang in ("en", "de"):
        (tmp / f"train.{lang}").write_text("\n".join(multi30k("train", lang)) + "\n", encoding="utf-8")
    learn_wordpiece([tmp / "train.en", tmp / "train.de"], tmp / "vocab.txt", size)
    return Vocab.from_wordpiece(tmp / "vocab.txt"), tmp / "vocab.txt"


def model_for(vocab: Vocab, size: str, **over) -> BertGen:
    torch.manual_seed(0)
    cfg = BertGenConfig(**SIZES[size], init="random", img_dim=2048, full_image="mean", dropout=0.0,
                        attention_dropout=0.0, **over)
    return BertGen(cfg, Vocabs.of(vocab, vocab))


class RandomRegions:
    """36 random 2048-d regions per image with random boxes (a region store in memory)."""

    def __init__(self, n: int, k: int = 36, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.arr = rng.normal(size=(n, k, 2048)).astype(np.float32)
        x1, y1 = rng.uniform(0, 0.6, size=(2, n, k))
        w, h = rng.uniform(0.05, 0.4, size=(2, n, k))
        self.geo = np.stack([x1, y1, x1 + w, y1 + h, w, h], -1).astype(np.float32)
        self.shape = self.arr.shape

    def __len__(self):
        return len(self.arr)

    def batch(self, rows):
        return self.arr[rows], np.ones(self.arr.shape[:2], dtype=bool)[rows]

    def geometry(self, row):
        return self.geo[row]


# ----------------------------------------------------------------------------- decode


def bench_decode(args) -> None:
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        vocab, vtxt = wordpiece_data(tmp, args.vocab)
        src = wordpiece_lines(multi30k("test_2016_flickr", "en", args.sentences), vtxt)
        (tmp / "src").write_text("\n".join(src) + "\n", encoding="utf-8")
        store = RandomRegions(len(src)) if args.images else None
        data = ParallelData(tmp / "src", vocab, features=store, langs=("en", "de"))
        dev = torch.device(args.device)
        model = model_for(vocab, args.size).to(dev).eval()
        one_cfg = DecodeSettings(beam_size=1, max_len=args.max_len, max_len_a=0, batch_size=1)
        many_cfg = DecodeSettings(beam_size=1, max_len=args.max_len, max_len_a=0, batch_size=args.batch)
        rates = {"one": [], "batched": []}
        outs = {}
        for _ in range(args.repeats):
            for name, cfg in (("batched", many_cfg), ("one", one_cfg)):
                t0 = time.perf_counter()
                with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=args.amp and dev.type == "cuda"):
                    outs[name] = decode_data(model, data, cfg, dev).hyps
                sync(dev)
                rates[name].append(len(src) / (time.perf_counter() - t0))
        same = sum(a == b for a, b in zip(outs["one"], outs["batched"]))
        steps = sum(min(len(h) + 1, args.max_len) for h in outs["one"]) / len(src)
        print(f"decode: {args.size} ({parameter_count(model, True) / 1e6:.1f}M parameters), {len(src)} sentences of "
              f"Multi30k test2016 En, {'36 regions per image' if args.images else 'no image'}, {steps:.1f} steps per "
              f"sentence on average, {describe(dev, args)}, {args.repeats} repeats")
        print(f"  one by one  sentences/s min/median/max: {stats(rates['one'])}")
        print(f"  batch {args.batch:<4d} sentences/s min/median/max: {stats(rates['batched'])}")
        print(f"  speed-up (median): {statistics.median(rates['batched']) / statistics.median(rates['one']):.1f}x; "
              f"identical outputs: {same}/{len(src)}")


# ----------------------------------------------------------------------------- train


def unrolled_batches(model: BertGen, data: ParallelData, batch_size: int, n: int) -> list[dict]:
    mix = training_view(model, data)
    batches = mix.train_batches(batch_size, 1, 1)
    return [mix.collate(batches[i]) for i in range(min(n, len(batches)))]


def bench_train(args) -> None:
    from torch.utils.flop_counter import FlopCounterMode

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        vocab, vtxt = wordpiece_data(tmp, args.vocab)
        n = args.steps * args.batch
        for lang, name in (("en", "src"), ("de", "tgt")):
            lines = wordpiece_lines(multi30k("train", lang, n), vtxt)
            (tmp / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        store = RandomRegions(n)
        data = ParallelData(tmp / "src", vocab, tmp / "tgt", vocab, features=store, langs=("en", "de"))
        dev = torch.device(args.device)
        for pack in (0, args.pack):
            model = model_for(vocab, args.size, pack_len=pack).to(dev)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
            batches = [{k: v.to(dev) if torch.is_tensor(v) else v for k, v in b.items()}
                       for b in unrolled_batches(model, data, args.batch, args.steps)]
            with FlopCounterMode(display=False) as fc:
                model(batches[0])["loss"].backward()
            flops = fc.get_total_flops()
            kinds = [b["lay_kind"] for b in batches]
            padded = sum(int((k == 0).sum()) for k in kinds) / sum(k.numel() for k in kinds)
            rates = []
            for _ in range(args.repeats):
                t0, done = time.perf_counter(), 0
                for b in batches:
                    with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=args.amp and dev.type == "cuda"):
                        loss = model(b)["loss"]
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    done += b["labels"].numel()
                sync(dev)
                rates.append(done / (time.perf_counter() - t0))
            print(f"train {args.size} ({describe(dev, args)}), {'packed ' + str(pack) if pack else 'one example per row'}: "
                  f"{args.batch} unrolled examples per step, examples/s min/median/max {stats(rates)}; "
                  f"model FLOPs of the first step {flops / 1e9:.2f} GFLOP ({flops / batches[0]['labels'].numel() / 1e9:.3f} "
                  f"per example); padded positions {100 * padded:.1f} %")


# ----------------------------------------------------------------------------- estimate


def example_flops(model: BertGen, src_len: int, prefix: int, regions: int) -> float:
    """Model FLOPs (forward) of one unrolled example, counted on the meta device."""
    from torch.utils.flop_counter import FlopCounterMode

    from mmt_repro.models.bertgen import layout

    text = text_ids(5, 6, 7, 8, [9] * src_len if src_len else None, [9] * prefix)
    lay = layout([text], [len(text) - 2], [0 if regions else -1], [regions + 1] if regions else [], regions + 1, 0)
    lay = lay.to("meta")
    obj = torch.empty(1, regions + 1, model.config.hidden_size, device="meta") if regions else None
    with FlopCounterMode(display=False) as fc:
        model.predict(model.hidden(lay, obj))
        if regions:  # the RoI projection of the example's regions
            model.regions(torch.empty(1, regions + 1, 2048, device="meta"), torch.empty(1, regions + 1, 6, device="meta"))
    return float(fc.get_total_flops())


def bench_estimate(args) -> None:
    from mmt_repro.models.base import Specials, VocabSpec

    reserved = {"[PAD]": 4, "[STOP]": 5, "[TO_EN]": 20, "[TO_DE]": 21, "[TO_FR]": 22, "[TO_TU]": 24, "[UNK]": 104,
                "[CLS]": 105, "[SEP]": 106, "[MASK]": 107}
    spec = VocabSpec(119547 + 4, Specials(mask=107), reserved)
    with torch.device("meta"):
        model = BertGen(BertGenConfig(init="random"), Vocabs(spec, spec))
    avg_tgt = {task: aug / sents - 1 for task, (_, sents, aug, _) in TABLE1.items()}
    total_fwd, lines = 0.0, []
    for task, (src_task, sents, aug, image) in TABLE1.items():
        n = avg_tgt[task]
        m = round(avg_tgt[src_task]) if src_task else 0
        # average over the example's prefix length t = 0..n (unrolled examples are uniform in t)
        ts = range(int(round(n)) + 1)
        flops = statistics.mean(example_flops(model, m, t, args.regions if image else 0) for t in ts)
        total_fwd += flops
        length = 3 + m + 1 + n / 2 + 2 + ((args.regions + 1) if image else 0) + 1
        lines.append(f"  {task:20s} source {m:3d}  target {n:5.1f}  mean length {length:5.1f}  "
                     f"{flops / 1e9:6.2f} GFLOP forward per example")
    # padding of the paper's step (13 examples in one padded batch), sentence lengths at their
    # task's average (real lengths vary, so this is a lower bound)
    rng = np.random.default_rng(0)
    lengths = []
    for _ in range(2000):
        row = []
        for task, (src_task, _, _, image) in TABLE1.items():
            n, m = avg_tgt[task], (round(avg_tgt[src_task]) if src_task else 0)
            row.append(3 + m + 1 + rng.integers(0, int(round(n)) + 1) + 2 + ((args.regions + 1) if image else 0) + 1)
        lengths.append(row)
    lengths = np.array(lengths)
    padded = 1 - lengths.sum(1).mean() / (lengths.shape[1] * lengths.max(1)).mean()
    steps = aug_ref = TABLE1[REFERENCE][2]
    train_flops = 3 * total_fwd  # forward + backward (2x forward)
    total = EPOCHS * steps * train_flops
    seconds = total / (MFU * H100_BF16)
    print(f"estimate: BertGen at the paper's size ({parameter_count(model) / 1e6:.1f}M parameters without word "
          f"embeddings), {args.regions} RoIs per image + the full image")
    print("\n".join(lines))
    print(f"  one step = one example of each of the 13 tasks: {total_fwd / 1e9:.1f} GFLOP forward, "
          f"{train_flops / 1e9:.1f} GFLOP with backward (x3)")
    print(f"  one epoch = {aug_ref:,.0f} steps (one pass over the unrolled Multi30k En->De MMT task)")
    print(f"  a step of 13 examples padded to its longest: at least {100 * padded:.0f} % of the positions are padding "
          f"(mean {lengths.mean():.0f}, longest {lengths.max(1).mean():.0f} on average); packing removes it")
    print(f"  {EPOCHS} epochs: {EPOCHS} x {steps:,.0f} x {train_flops / 1e9:.1f} GFLOP = {total:.3e} FLOP")
    print(f"  at {int(MFU * 100)} % MFU of an H100's {H100_BF16 / 1e12:.1f} TFLOP/s (bf16 dense): {seconds / 3600:.1f} "
          f"H100-hours (paper: ~2 V100-days per epoch, ~90 V100-days)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="part", required=True)
    d = sub.add_parser("decode")
    d.add_argument("--size", choices=SIZES, default="small")
    d.add_argument("--sentences", type=int, default=200)
    d.add_argument("--batch", type=int, default=64)
    d.add_argument("--max-len", type=int, default=20)
    d.add_argument("--images", action="store_true", help="36 random regions per image (MMT); default MT")
    t = sub.add_parser("train")
    t.add_argument("--size", choices=SIZES, default="small")
    t.add_argument("--steps", type=int, default=20)
    t.add_argument("--batch", type=int, default=64, help="unrolled examples per step")
    t.add_argument("--pack", type=int, default=512, help="packed row length compared with one example per row")
    e = sub.add_parser("estimate")
    e.add_argument("--regions", type=int, default=36, help="RoIs per image (BUTD keeps 10-100)")
    for p in (d, t):
        p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
        p.add_argument("--amp", action="store_true", help="bf16 autocast (GPU)")
        p.add_argument("--repeats", type=int, default=3)
        p.add_argument("--threads", type=int, default=torch.get_num_threads())
        p.add_argument("--vocab", type=int, default=8000, help="WordPieces learnt on Multi30k train")
    args = ap.parse_args()
    {"decode": bench_decode, "train": bench_train, "estimate": bench_estimate}[args.part](args)


if __name__ == "__main__":
    main()
