"""Training and decoding speed of Calixto et al. (2017) models at the paper's sizes.

Prints training tokens/s (target tokens, forward + backward + ADADELTA step) and decoding
sentences/s (beam 12 and greedy) for the text-only NMT and NMT_SRC+IMG on the current device,
with random data of Multi30k-like lengths (13 source / 14 target tokens on average) and the
paper's vocabulary sizes (83,093 En / 91,141 De) and batch sizes (80 / 40).

    python benchmarks/bench_calixto.py [--device cuda] [--steps 5] [--vocab-scale 1.0]
"""

from __future__ import annotations

import argparse
import time

import torch

from mmt_repro.decode.search import beam_search, greedy
from mmt_repro.models import Vocabs, build_model

SRC_VOCAB, TGT_VOCAB = 83093, 91141


def batch(bsz: int, src_vocab: int, tgt_vocab: int, with_image: bool, device, gen) -> dict:
    src_len = torch.randint(8, 19, (bsz,), generator=gen)
    tgt_len = torch.randint(8, 21, (bsz,), generator=gen)
    src = torch.zeros(bsz, int(src_len.max()), dtype=torch.long)
    tgt = torch.zeros(bsz, int(tgt_len.max()) + 1, dtype=torch.long)
    for i in range(bsz):
        src[i, : src_len[i]] = torch.randint(4, src_vocab, (int(src_len[i]),), generator=gen)
        tgt[i, : tgt_len[i]] = torch.randint(4, tgt_vocab, (int(tgt_len[i]),), generator=gen)
        tgt[i, tgt_len[i]] = 2
    tgt_in = torch.cat([torch.ones(bsz, 1, dtype=torch.long), tgt[:, :-1]], 1) * (tgt != 0)
    tgt_in[:, 0] = 1
    out = {"src": src, "src_len": src_len, "tgt_in": tgt_in, "tgt_out": tgt, "ids": torch.arange(bsz),
           "img": torch.randn(bsz, 196, 1024, generator=gen) if with_image else None}
    return {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in out.items()}


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=5, help="timed training steps per model")
    ap.add_argument("--decode-batches", type=int, default=2)
    ap.add_argument("--vocab-scale", type=float, default=1.0, help="shrink vocabularies (quick CPU runs)")
    ap.add_argument("--amp", action="store_true", help="bfloat16 autocast (GPU)")
    args = ap.parse_args()
    device = torch.device(args.device)
    sv, tv = int(SRC_VOCAB * args.vocab_scale), int(TGT_VOCAB * args.vocab_scale)
    gen = torch.Generator().manual_seed(0)
    print(f"device {device} ({torch.cuda.get_device_name() if device.type == 'cuda' else torch.get_num_threads()} "
          f"{'GPU' if device.type == 'cuda' else 'CPU threads'}), vocab {sv}/{tv}")
    rows = []
    for name, bsz in (("doubly_attentive.nmt", 80), ("doubly_attentive.nmt_src_img", 40)):
        torch.manual_seed(0)
        model = build_model(name, {}, Vocabs.sizes(sv, tv)).to(device)
        n_params = sum(p.numel() for p in model.parameters())
        opt = torch.optim.Adadelta(model.parameters(), lr=1.0, rho=0.95, eps=1e-6)
        with_image = "img" in name
        data = [batch(bsz, sv, tv, with_image, device, gen) for _ in range(args.steps + 1)]
        model.train()
        tokens, elapsed = 0, 0.0
        for i, b in enumerate(data):
            sync(device)
            t0 = time.perf_counter()
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=args.amp and device.type == "cuda"):
                loss = model(b)["loss"]
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sync(device)
            if i > 0:  # the first step warms up
                elapsed += time.perf_counter() - t0
                tokens += int((b["tgt_out"] != 0).sum())
        model.eval()
        dec = {}
        for label, beam in (("greedy", 1), ("beam12", 12)):
            n, t = 0, 0.0
            for b in data[: args.decode_batches]:
                sync(device)
                t0 = time.perf_counter()
                if beam == 1:
                    greedy(model, b, max_len=80)
                else:
                    beam_search(model, b, beam, max_len=80)
                sync(device)
                t += time.perf_counter() - t0
                n += b["src"].size(0)
            dec[label] = n / t
        peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else float("nan")
        rows.append((name, n_params, bsz, tokens / elapsed, dec["greedy"], dec["beam12"], peak))
        del model, opt
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
    print(f"{'model':32s} {'params':>12s} {'batch':>5s} {'train tok/s':>12s} {'greedy sent/s':>14s} "
          f"{'beam12 sent/s':>14s} {'peak GiB':>9s}")
    for name, n, bsz, tps, g, b12, peak in rows:
        print(f"{name:32s} {n:12,d} {bsz:5d} {tps:12.0f} {g:14.1f} {b12:14.1f} {peak:9.2f}")


if __name__ == "__main__":
    main()
