"""GPU calibration: one short training run per model at its paper size on the current device.

For each model (Calixto's NMT_SRC+IMG, Hirasawa's Ours, DeepFuse, Yang's Seq2Seq soft and
Transformer hard agreement, BertGen's 13-task step) it builds the model at the size of its
``config/papers/*.yaml`` system (random weights: nothing is downloaded), makes synthetic
batches of the paper's shapes (random token ids, random features: no data files) and times
the shared trainer's update (:func:`mmt_repro.train.step.train_update`, the exact code the
trainer runs) in fp32 (TF32 matmuls, the package's GPU default) and under bf16 autocast
(``amp: true``): warm-up, then the median/min/max of ``--steps`` updates, each fenced by
``torch.cuda.synchronize()``; peak GPU memory; target tokens/s; FLOPs of one update
(``torch.utils.flop_counter.FlopCounterMode``; recurrent layers, which it does not count, are
added from their sizes and reported apart) and the MFU against the GPU's dense peak; aten ops
and host synchronisations per update; then greedy and beam-5 decoding of one batch through the
package's decoder (:func:`mmt_repro.decode.loop.decode_batch`). Random weights never emit
``<eos>``: every hypothesis runs to its length bound, so decoding times are upper bounds.

It writes the JSON calibration file after every model (a kill keeps what was measured),
prints as it goes, and never runs past ``--budget-s`` (an alarm cuts the phase that would).
It needs only torch (and transformers for BertGen): the package's text and config tools
(sacremoses, subword-nmt, jsonschema, ...) are replaced by stubs when they are not installed,
since nothing here reads text or configuration files.

    PYTHONPATH=src python3 benchmarks/gpu_calibration.py --out config/calibration/h100.json
    PYTHONPATH=src python3 benchmarks/gpu_calibration.py --check        # the device contract, bf16 fwd/bwd
    PYTHONPATH=src python3 benchmarks/gpu_calibration.py --device cpu --steps 2 --tiny --out /tmp/cpu.json
"""

from __future__ import annotations

import time

T0 = time.monotonic()  # the budget counts from here, torch's import included

import argparse
import gc
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import math
import os
import platform
import signal
import statistics
import sys
import traceback
import types
import warnings
from contextlib import contextmanager
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))

#: Third-party packages the package imports at module level for text, config and metrics work
#: that the calibration never does: stubbed when absent (the device machine has torch only).
OPTIONAL = ("sacremoses", "subword_nmt", "jieba", "jsonschema", "yaml", "pycocoevalcap", "fasttext", "snakemake",
            "sacrebleu", "systran_align", "pytorchvideo", "matplotlib")


class _Missing(Exception):
    """Stands for any name of a stubbed package: importable, subclassable, fails when used."""

    _what = "?"

    def __init__(self, *args, **kwargs):  # noqa: ARG002
        raise ImportError(f"{self._what} is not installed (the calibration runs without it)")


class _StubModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        cls = type(attr, (_Missing,), {"_what": f"{self.__name__}.{attr}"})
        setattr(self, attr, cls)
        return cls


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Submodules of a stubbed package (``subword_nmt.apply_bpe``) are stubs too."""

    def find_spec(self, name, path=None, target=None):  # noqa: ARG002
        if isinstance(sys.modules.get(name.partition(".")[0]), _StubModule):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        mod = _StubModule(spec.name)
        mod.__path__ = []
        return mod

    def exec_module(self, module):  # noqa: ARG002
        return None


def install_stubs(names=OPTIONAL) -> list[str]:
    """Stub each of ``names`` that cannot be imported; returns the stubbed names."""
    stubbed = []
    # MMT_STUB_FORCE=a,b: stub these even where installed (tries the device machine's set here)
    forced = set(filter(None, os.environ.get("MMT_STUB_FORCE", "").split(",")))
    for name in names:
        if name in sys.modules:
            continue
        try:
            found = name not in forced and importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if found:
            continue
        mod = _StubModule(name)
        mod.__path__ = []
        mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        sys.modules[name] = mod
        stubbed.append(name)
    if stubbed and not any(isinstance(f, _StubFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _StubFinder())
    return stubbed


def _import_package():
    """The package's modules the calibration uses (after transformers, which probes optional
    packages when it is imported, and the stubs)."""
    try:  # BertGen's Transformer; imported before the stubs so that its probes see the truth
        import transformers  # noqa: F401
        from transformers.models.bert import modeling_bert  # noqa: F401
    except ImportError:
        pass
    stubbed = install_stubs()
    from mmt_repro.decode.loop import decode_batch
    from mmt_repro.device import describe_device, driver_version, pick_device
    from mmt_repro.models import Vocabs, build_model
    from mmt_repro.settings import DecodeSettings
    from mmt_repro.train.step import StepSums, make_optimizer, to_device, train_update
    from mmt_repro.train.synthetic import bertgen_vocabs, model_batch, text_batch

    return types.SimpleNamespace(**locals())


# ----------------------------------------------------------------------------- the paper sizes
# Each case: the registered model and its config as in config/papers/<paper>.yaml (the system
# named), the training batch (sentences, or examples per task for BertGen), optimiser,
# vocabulary sizes, sentence lengths and features, and decoding. tests/unit/test_gpu_calibration.py
# checks the configs against the YAML files. Deliberate differences: random initialisation
# instead of pre-trained tables or weights (no downloads; the compute is the same).

CALIXTO = dict(emb_dim=620, enc_dim=1024, dec_dim=1024, att_dim=2048, dropout_enc=0.5, dropout_dec=0.5,
               dropout_out=0.5, init_state="last")
HIRASAWA = dict(emb_dim=300, enc_dim=256, dec_dim=256, dropout_emb=0.3, dropout_ctx=0.3, dropout_out=0.3,
                enc_init="random", dec_init="random", fix_dec_emb=False)
BASE_TRANSFORMER = dict(d_model=512, n_heads=8, d_ff=2048, enc_layers=6, dec_layers=6, dropout=0.1,
                        attention_dropout=0.1, label_smoothing=0.1)
YANG_S2S = dict(emb_dim=512, hidden=512, enc_layers=2, dec_layers=2, att_dim=512, dropout=0.3)
YANG_AGREE = dict(img_dim=2048, co_attention=True, subspaces=8, beta_gate=True, weighting="adaptive", lambda_fwd=0.2,
                  lambda_bwd=0.2, detach_beta=False, agreement_grad="own")
ADAM_VASWANI = dict(optimizer="adam", betas=(0.9, 0.98), eps=1e-9)

CASES = {
    "doubly_attentive.nmt_src_img": dict(
        model="doubly_attentive.nmt_src_img", paper="doubly_attentive", system="nmt_src_img",
        config={**CALIXTO, "img_dim": 1024, "img_att_dim": 1024, "dropout_img": 0.5},
        vocab=(83093, 91141), batch=40, src_len=(8, 19), tgt_len=(8, 21), img=(196, 1024), min_regions=None,
        optim=dict(optimizer="adadelta", lr=1.0), clip=1.0, paper_amp=False,
        decode=dict(max_len=80, max_len_a=2.0, max_len_b=10, batch_size=32), beams=(1, 5)),
    "emb_pred.ours": dict(
        model="emb_pred.ours", paper="emb_pred", system="ours",
        config={**HIRASAWA, "img_dim": 2048, "lambda_v": 0.01, "alpha": 0.1, "mtl": "interpolate", "shuffle_images": False,
                "jv_reduction": "matrix_mean", "jv_contrastive": "images", "margin": 0.5, "negative": "vocab", "fix_dec_emb": True},  # fixed target table, random not fastText
        vocab=(10000, 10000), batch=64, src_len=(8, 20), tgt_len=(7, 18), img=(1, 2048), min_regions=None,
        optim=dict(optimizer="adam", lr=4e-4), clip=1.0, paper_amp=False,
        decode=dict(max_len=80, batch_size=32), beams=(1,)),  # nearest-neighbour output: greedy only
    "deepfuse.deepfuse": dict(
        model="deepfuse.deepfuse", paper="deepfuse", system="deepfuse",
        config={**BASE_TRANSFORMER, "activation_dropout": 0.0, "pre_norm": False, "tie_embeddings": False,
                "share_all_embeddings": False, "img_dim": 1024, "fuse_residual": "once",
                "video_positions": "none"},
        # 4,000 target tokens a batch (padded): 96 sentences of up to 41 characters
        vocab=(20000, 3500), batch=96, src_len=(10, 24), tgt_len=(18, 40), img=(32, 1024), min_regions=16,
        optim=dict(ADAM_VASWANI, lr=6.98771e-4), clip=0.0, paper_amp=False,
        decode=dict(max_len=100, max_len_a=2.0, max_len_b=10, batch_size=32), beams=(1, 5)),
    "visual_agreement.soft": dict(
        model="visual_agreement.seq2seq", paper="visual_agreement", system="soft",
        config={**YANG_S2S, **YANG_AGREE, "agreement": "soft", "damt_gate": False},
        vocab=(10000, 10000), batch=64, src_len=(8, 20), tgt_len=(8, 20), img=(36, 2048), min_regions=None,
        optim=dict(optimizer="adam", lr=3e-4), clip=5.0, paper_amp=False,
        decode=dict(max_len=80, max_len_a=2.0, max_len_b=10, batch_size=32), beams=(1, 5)),
    "visual_agreement.t_hard": dict(
        model="visual_agreement.transformer", paper="visual_agreement", system="t_hard",
        # align_layer: the decoder block select_alignment_layer picks (a resource in the workflow)
        config={**{k: v for k, v in BASE_TRANSFORMER.items()}, **YANG_AGREE, "agreement": "hard", "align_layer": 5},
        vocab=(10000, 10000), batch=64, src_len=(8, 20), tgt_len=(8, 20), img=(36, 2048), min_regions=None,
        optim=dict(optimizer="adam", lr=3e-4), clip=5.0, paper_amp=False,
        decode=dict(max_len=80, max_len_a=2.0, max_len_b=10, batch_size=32), beams=(1, 5)),
    "bertgen.bertgen": dict(
        model="bertgen.bertgen", paper="bertgen", system="bertgen",
        config=dict(hidden_size=768, num_layers=12, num_heads=12, ffn_size=3072, img_dim=2048, full_image="mean",
                    max_regions=101, init="random"),
        vocab=(119551, 119551), batch=1, src_len=(10, 24), tgt_len=(10, 26), img=(100, 2048), min_regions=10,
        optim=dict(optimizer="adamw", lr=1.3e-5, eps=1e-6, weight_decay=1e-4), clip=10.0, paper_amp=True,
        decode=dict(max_len=150, max_len_a=0.0, max_len_b=0, batch_size=64), beams=(1,)),  # [MASK]-shift: greedy
    # --- not in the default set (--only / --all): text-only systems of the same papers
    "doubly_attentive.nmt": dict(
        model="doubly_attentive.nmt", paper="doubly_attentive", system="nmt", config=dict(CALIXTO),
        vocab=(83093, 91141), batch=80, src_len=(8, 19), tgt_len=(8, 21), img=None, min_regions=None,
        optim=dict(optimizer="adadelta", lr=1.0), clip=1.0, paper_amp=False,
        decode=dict(max_len=80, max_len_a=2.0, max_len_b=10, batch_size=32), beams=(1, 5)),
    "emb_pred.nmt": dict(
        model="emb_pred.nmt", paper="emb_pred", system="nmt", config=dict(HIRASAWA),
        vocab=(10000, 10000), batch=64, src_len=(8, 20), tgt_len=(7, 18), img=None, min_regions=None,
        optim=dict(optimizer="adam", lr=4e-4), clip=1.0, paper_amp=False,
        decode=dict(max_len=80, batch_size=32), beams=(1, 5)),
    "deepfuse.transformer": dict(
        model="transformer.nmt", paper="deepfuse", system="transformer",
        config={**BASE_TRANSFORMER, "activation_dropout": 0.0, "pre_norm": False, "tie_embeddings": False,
                "share_all_embeddings": False},
        vocab=(20000, 3500), batch=96, src_len=(10, 24), tgt_len=(18, 40), img=None, min_regions=None,
        optim=dict(ADAM_VASWANI, lr=6.98771e-4), clip=0.0, paper_amp=False,
        decode=dict(max_len=100, max_len_a=3.0, max_len_b=10, batch_size=32), beams=(1, 5)),
    "bertgen.fairseq": dict(
        model="transformer.nmt", paper="bertgen", system="fairseq",
        config=dict(d_model=512, d_ff=1024, n_heads=4, enc_layers=6, dec_layers=6, dropout=0.3, attention_dropout=0.0,
                    activation_dropout=0.0, label_smoothing=0.1, tie_embeddings=True),
        # IWSLT'14 with M-BERT WordPieces, --max-tokens 4096: 96 sentences of up to 41 pieces (+ <eos>)
        vocab=(119551, 119551), batch=96, src_len=(12, 40), tgt_len=(12, 41), img=None, min_regions=None,
        optim=dict(ADAM_VASWANI, optimizer="adamw", lr=5e-4, eps=1e-8, weight_decay=1e-4), clip=0.0, paper_amp=True,
        decode=dict(max_len=150, max_len_a=0.0, max_len_b=0, batch_size=64), beams=(1, 5)),
}
DEFAULT = ["doubly_attentive.nmt_src_img", "emb_pred.ours", "deepfuse.deepfuse", "visual_agreement.soft",
           "visual_agreement.t_hard", "bertgen.bertgen"]

#: Tiny sizes (--tiny): the same code paths in seconds on a CPU.
TINY = {
    "doubly_attentive": dict(emb_dim=8, enc_dim=8, dec_dim=8, att_dim=8),
    "doubly_attentive.img": dict(img_dim=16, img_att_dim=8),
    "emb_pred": dict(emb_dim=8, enc_dim=8, dec_dim=8),
    "emb_pred.img": dict(img_dim=16),
    "transformer": dict(d_model=16, n_heads=2, d_ff=32, enc_layers=2, dec_layers=2),
    "deepfuse.img": dict(img_dim=16),
    "visual_agreement.seq2seq": dict(emb_dim=8, hidden=8, att_dim=8, img_dim=16, subspaces=2),
    "visual_agreement.transformer": dict(d_model=16, n_heads=2, d_ff=32, enc_layers=2, dec_layers=2, img_dim=16,
                                         subspaces=2, align_layer=1),
    "bertgen": dict(hidden_size=32, num_layers=2, num_heads=4, ffn_size=64, img_dim=16, coord_freqs=4, max_regions=9),
}


def tiny_case(case: dict) -> dict:
    c = dict(case)
    cfg = dict(c["config"])
    model = c["model"]
    if model.startswith("doubly_attentive"):
        cfg.update(TINY["doubly_attentive"], **(TINY["doubly_attentive.img"] if "img_dim" in cfg else {}))
    elif model.startswith("emb_pred"):
        cfg.update(TINY["emb_pred"], **(TINY["emb_pred.img"] if "img_dim" in cfg else {}))
    elif model in ("transformer.nmt", "deepfuse.deepfuse"):
        cfg.update(TINY["transformer"], **(TINY["deepfuse.img"] if "img_dim" in cfg else {}))
    elif model in TINY:
        cfg.update(TINY[model])
    elif model.startswith("bertgen"):
        cfg.update(TINY["bertgen"])
    c["config"] = cfg
    c["vocab"] = (50, 60) if not model.startswith("bertgen") else (80, 80)
    c["batch"] = 1 if model.startswith("bertgen") else 4
    c["src_len"], c["tgt_len"] = (3, 8), (3, 8)
    if c["img"] is not None:
        c["img"] = (min(c["img"][0], 8), 16)
        c["min_regions"] = min(c["min_regions"] or 8, 4) if c["min_regions"] else None
    c["decode"] = dict(c["decode"], max_len=min(c["decode"]["max_len"], 12), batch_size=4)
    return c


# ----------------------------------------------------------------------------- peak rates
#: Dense peak TFLOPS (spec sheets, no sparsity) by GPU name: bf16 tensor, TF32 tensor, fp32.
PEAKS = [
    ("H100 PCIe", dict(bf16=756.0, tf32=378.0, fp32=51.2)),
    ("H100 NVL", dict(bf16=835.0, tf32=418.0, fp32=60.0)),
    ("H100", dict(bf16=989.4, tf32=494.7, fp32=66.9)),
    ("H200", dict(bf16=989.4, tf32=494.7, fp32=66.9)),
    ("GH200", dict(bf16=989.4, tf32=494.7, fp32=66.9)),
    ("A100", dict(bf16=312.0, tf32=156.0, fp32=19.5)),
    ("L40S", dict(bf16=362.0, tf32=183.0, fp32=91.6)),
    ("A10", dict(bf16=125.0, tf32=62.5, fp32=31.2)),
    ("L4", dict(bf16=121.0, tf32=60.0, fp32=30.3)),
    ("V100", dict(bf16=None, tf32=None, fp32=15.7)),
]


def peak_tflops(name: str | None) -> dict | None:
    for key, peaks in PEAKS:
        if name and key.lower() in name.lower():
            return dict(peaks, matched=key)
    return None


# ----------------------------------------------------------------------------- measuring


class Budget(Exception):
    """The phase ran into its time limit (an alarm)."""


_DEADLINES: list[float] = []


@contextmanager
def alarm(seconds: float):
    """Raise :class:`Budget` in this thread after ``seconds`` (SIGALRM), or at the deadline of
    an enclosing ``alarm`` if that comes first (no-op where SIGALRM is absent)."""
    now = time.monotonic()
    end = now + seconds if not _DEADLINES else min(now + seconds, _DEADLINES[-1])
    if end - now <= 0.05:
        raise Budget("no time left")
    if not hasattr(signal, "setitimer"):
        yield
        return

    def fire(signum, frame):  # noqa: ARG001
        raise Budget(f"cut by the time budget ({end - now:.0f} s)")

    old = signal.signal(signal.SIGALRM, fire)
    _DEADLINES.append(end)
    signal.setitimer(signal.ITIMER_REAL, end - now)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _DEADLINES.pop()
        signal.signal(signal.SIGALRM, old)
        if _DEADLINES:  # the enclosing deadline goes on
            signal.setitimer(signal.ITIMER_REAL, max(_DEADLINES[-1] - time.monotonic(), 0.001))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class OpCounter(torch.utils._python_dispatch.TorchDispatchMode):
    """aten operations dispatched (about the kernel launches on a GPU)."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: A002,ARG002
        self.n += 1
        return func(*args, **(kwargs or {}))


def rnn_flops(model, batches_tokens: list) -> tuple[dict, list]:
    """Forward hooks that add 2 x (input + hidden) x gates x hidden multiply-adds per token,
    direction and layer of every nn.GRU/LSTM/RNN (FlopCounterMode does not count them); x 3
    for forward + backward. Returns (a dict the hooks fill, the hook handles)."""
    counted = {"flops": 0}
    handles = []
    gates = {"GRU": 3, "LSTM": 4, "RNN": 1}

    def hook(mod, args, out):  # noqa: ARG001
        x = args[0]
        if isinstance(x, torch.nn.utils.rnn.PackedSequence):
            tokens = int(x.batch_sizes.sum())
        else:
            tokens = x.shape[0] * x.shape[1] if x.dim() == 3 else x.shape[0]
        g = gates.get(mod.mode if hasattr(mod, "mode") else type(mod).__name__, 3)
        dirs = 2 if mod.bidirectional else 1
        total = 0
        for layer in range(mod.num_layers):
            inp = mod.input_size if layer == 0 else mod.hidden_size * dirs
            total += 2 * (inp + mod.hidden_size) * g * mod.hidden_size * dirs * tokens
        counted["flops"] += 3 * total

    for m in model.modules():
        if isinstance(m, torch.nn.RNNBase):
            handles.append(m.register_forward_hook(hook))
    return counted, handles


def case_batches(ns, model, case: dict, n: int, seed: int = 0) -> list[dict]:
    return [ns.model_batch(model, case["batch"], src_len=case["src_len"], tgt_len=case["tgt_len"],
                           img_slots=case["img"][0] if case["img"] else None, min_regions=case["min_regions"],
                           langs=("en", "de"), seed=seed + i) for i in range(n)]


def target_tokens(model, batch) -> int:
    if "labels" in batch:
        return int(batch["labels"].numel())
    return int((batch["tgt_out"] != model.specials.pad).sum())


def time_training(ns, model, case, batches, device, amp: bool, steps: int, warmup: int, deadline: float) -> dict:
    opt = ns.make_optimizer(case["optim"]["optimizer"], model.parameters(), lr=case["optim"]["lr"],
                            betas=case["optim"].get("betas", (0.9, 0.999)), eps=case["optim"].get("eps", 1e-8),
                            weight_decay=case["optim"].get("weight_decay", 0.0))
    model.train()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    times, tokens = [], []
    sums = ns.StepSums()
    done = 0
    try:
        for i in range(warmup + steps):
            b = batches[i % len(batches)]
            sync(device)
            t0 = time.perf_counter()
            ns.train_update(model, opt, [b], device, amp=amp, clip_norm=case["clip"], sums=sums, step=i + 1)
            sync(device)
            dt = time.perf_counter() - t0
            if i >= warmup:
                times.append(dt)
                tokens.append(target_tokens(model, b))
            done = i + 1
            if time.monotonic() > deadline and len(times) >= 3:
                break
        read = sums.read()
    except Budget as err:
        read = {"cut": str(err)}
    except FloatingPointError as err:  # a non-finite loss: recorded, the other phases still run
        read = {"nonfinite": str(err)}
    out = {"warmup": min(done, warmup), "steps": len(times)}
    if "cut" in read:
        out["cut"] = read["cut"]
    if times:
        med = statistics.median(times)
        out.update(step_ms=dict(median=1e3 * med, min=1e3 * min(times), max=1e3 * max(times)),
                   tokens_per_step=statistics.mean(tokens), tokens_per_s=sum(tokens) / sum(times))
    if device.type == "cuda":
        out["peak_mem_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
        out["peak_reserved_gib"] = torch.cuda.max_memory_reserved(device) / 2**30
    loss = read.get("train_loss")
    out["loss"] = loss / max(read.get("n_tokens", 1), 1) if loss is not None else None
    if "nonfinite" in read:
        out["nonfinite"] = read["nonfinite"]
    return out, opt


def count_step(ns, model, case, batch, device, amp: bool, opt) -> dict:
    """FLOPs, aten ops and host synchronisations of one update."""
    from torch.utils.flop_counter import FlopCounterMode

    out = {}
    rnn, handles = rnn_flops(model, [])
    try:
        ops = OpCounter()
        with FlopCounterMode(display=False) as fc, ops:
            ns.train_update(model, opt, [batch], device, amp=amp, clip_norm=case["clip"])
        sync(device)
        out["flops_counted"] = int(fc.get_total_flops())
        out["flops_rnn_est"] = int(rnn["flops"])
        out["flops"] = out["flops_counted"] + out["flops_rnn_est"]
        out["aten_ops"] = ops.n
    finally:
        for h in handles:
            h.remove()
    if device.type == "cuda" and hasattr(torch.cuda, "set_sync_debug_mode"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                ns.train_update(model, opt, [batch], device, amp=amp, clip_norm=case["clip"])
                torch.cuda.set_sync_debug_mode("default")
            finally:
                torch.cuda.set_sync_debug_mode("default")
        syncs = [str(w.message) for w in caught if "synchroniz" in str(w.message).lower()]
        out["host_syncs"] = len(syncs)
        where = {}
        for w in caught:
            if "synchroniz" in str(w.message).lower():
                key = f"{Path(w.filename).name}:{w.lineno}"
                where[key] = where.get(key, 0) + 1
        out["host_sync_sites"] = dict(sorted(where.items(), key=lambda kv: -kv[1])[:8])
    return out


def time_decoding(ns, model, case, device, beam: int, amp: bool, seed: int = 99) -> dict:
    d = case["decode"]
    settings = ns.DecodeSettings(beam_size=beam, max_len=d["max_len"], max_len_a=d.get("max_len_a", 2.0),
                                 max_len_b=d.get("max_len_b", 10), batch_size=d["batch_size"])
    vocabs = model.vocabs
    img = case["img"]
    batch = ns.text_batch(d["batch_size"], vocabs.src.size if vocabs.src is not None else None, vocabs.tgt.size,
                          src_len=case["src_len"], tgt_len=case["tgt_len"],
                          img=(img[0], model.visual_dim or img[1]) if (img and model.uses_visual) else None,
                          min_regions=case["min_regions"], geometry=model.visual == "regions", langs=("en", "de"),
                          specials=vocabs.tgt.specials, seed=seed)
    for key in ("tgt_in", "tgt_out"):
        batch.pop(key, None)
    batch = ns.to_device(batch, device)
    model.eval()
    with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
        sync(device)
        t0 = time.perf_counter()
        ids, _ = ns.decode_batch(model, batch, settings)
        sync(device)
        dt = time.perf_counter() - t0
    n_out = sum(len(h) for h in ids)
    return {"sentences": len(ids), "seconds": dt, "sent_per_s": len(ids) / dt, "out_tokens": n_out,
            "out_tokens_per_s": n_out / dt, "max_len": d["max_len"], "batch_size": d["batch_size"]}


def build(ns, case, device):
    vocabs = (ns.bertgen_vocabs(case["vocab"][1]) if case["model"].startswith("bertgen.")
              else ns.Vocabs.sizes(*case["vocab"]))
    torch.manual_seed(0)
    if device.type == "cuda":
        try:
            with torch.device(device):  # initialise on the GPU (BertGen's and Calixto's tables in seconds)
                return ns.build_model(case["model"], case["config"], vocabs, {}).to(device)
        except Exception:  # noqa: BLE001 - fall back to the CPU build
            pass
    return ns.build_model(case["model"], case["config"], vocabs, {}).to(device)


def mfu(flops: int | None, step_ms: float | None, peak: float | None) -> float | None:
    if not flops or not step_ms or not peak:
        return None
    return flops / (step_ms / 1e3) / (peak * 1e12)


# ----------------------------------------------------------------------------- the run


def run_case(ns, key, case, device, args, deadline: float, peaks, rec: dict) -> dict:
    """Measure one model into ``rec`` (filled as it goes: an interruption keeps what was measured)."""
    rec.update({"model": case["model"], "paper": case["paper"], "system": case["system"], "config": case["config"],
                "vocab": case["vocab"], "batch": case["batch"], "optimizer": case["optim"]["optimizer"],
                "paper_amp": case["paper_amp"], "tiny": args.tiny, "train": {}, "decode": {}, "errors": []})
    t_start = time.monotonic()
    model = build(ns, case, device)
    rec["parameters"] = sum(p.numel() for p in model.parameters())
    rec["trainable"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    rec["build_s"] = time.monotonic() - t_start
    batches = case_batches(ns, model, case, 4)
    precisions = [("fp32_tf32" if device.type == "cuda" else "fp32", False), ("bf16", True)]
    span = max(deadline - time.monotonic(), 0.0)
    # each precision's timed loop stops after 30 % of the model's time (at least 3 updates)
    for name, amp in precisions:
        left = deadline - time.monotonic()
        if left <= 1:
            rec["errors"].append(f"train {name}: no time left")
            continue
        phase_end = time.monotonic() + 0.3 * span
        try:
            with alarm(left):
                res, opt = time_training(ns, model, case, batches, device, amp, args.steps, args.warmup, phase_end)
                rec["train"][name] = res  # kept if what follows is cut
                if "cut" not in res:
                    res.update(count_step(ns, model, case, batches[0], device, amp, opt))
        except Budget as err:
            rec["errors"].append(f"train {name}: {err}")
            continue
        except torch.cuda.OutOfMemoryError as err:
            rec["errors"].append(f"train {name}: out of memory: {str(err).splitlines()[0]}")
            _free(device)
            continue
        except Exception as err:  # noqa: BLE001 - recorded; the model's other phases still run
            rec["errors"].append(f"train {name}: {type(err).__name__}: {' '.join(str(err).split())[:500]}")
            print(f"  {key:32s} train {name:9s} FAILED: {rec['errors'][-1]}", flush=True)
            _free(device)
            continue
        peak = (peaks or {}).get("bf16" if amp else ("tf32" if device.type == "cuda" else "fp32"))
        res["mfu"] = mfu(res.get("flops"), (res.get("step_ms") or {}).get("median"), peak)
        res["peak_tflops_used"] = peak
        rec["train"][name] = res
        del opt
        _free(device)
        print(f"  {key:32s} train {name:9s} " + _train_line(res), flush=True)
    for amp in (False, True):
        for beam in case["beams"]:
            label = f"{'greedy' if beam == 1 else f'beam{beam}'}_{'bf16' if amp else precisions[0][0]}"
            left = deadline - time.monotonic()
            if left <= 1:
                rec["errors"].append(f"decode {label}: no time left")
                continue
            try:
                with alarm(left):
                    res = time_decoding(ns, model, case, device, beam, amp)
            except Budget as err:
                rec["errors"].append(f"decode {label}: {err}")
                continue
            except torch.cuda.OutOfMemoryError as err:
                rec["errors"].append(f"decode {label}: out of memory: {str(err).splitlines()[0]}")
                _free(device)
                continue
            except Exception as err:  # noqa: BLE001 - recorded; the next decoding still runs
                rec["errors"].append(f"decode {label}: {type(err).__name__}: {' '.join(str(err).split())[:500]}")
                print(f"  {key:32s} decode {label:16s} FAILED: {rec['errors'][-1]}", flush=True)
                _free(device)
                continue
            rec["decode"][label] = res
            print(f"  {key:32s} decode {label:16s} {res['sent_per_s']:8.1f} sent/s {res['out_tokens_per_s']:9.0f} "
                  f"tok/s ({res['sentences']} sentences, {res['seconds']:.2f} s)", flush=True)
    rec["seconds"] = time.monotonic() - t_start
    del model
    _free(device)
    return rec


def _free(device):
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _train_line(res: dict) -> str:
    ms = res.get("step_ms") or {}
    parts = [f"{ms.get('median', float('nan')):8.1f} ms/step (min {ms.get('min', float('nan')):.1f}, "
             f"max {ms.get('max', float('nan')):.1f}, n={res.get('steps', 0)})",
             f"{res.get('tokens_per_s', float('nan')):9.0f} tok/s"]
    if "peak_mem_gib" in res:
        parts.append(f"{res['peak_mem_gib']:6.2f} GiB")
    if res.get("flops"):
        parts.append(f"{res['flops'] / 1e9:8.1f} GFLOP")
    if res.get("mfu") is not None:
        parts.append(f"MFU {100 * res['mfu']:5.1f} %")
    if "aten_ops" in res:
        parts.append(f"{res['aten_ops']} ops")
    if "host_syncs" in res:
        parts.append(f"{res['host_syncs']} syncs")
    return "  ".join(parts)


def write_json(path: Path | None, data: dict) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def summary_table(results: dict) -> str:
    head = (f"{'model':32s} {'params':>8s} {'prec':>9s} {'ms/step':>9s} {'tok/s':>9s} {'GiB':>6s} "
            f"{'GFLOP':>8s} {'MFU%':>6s} {'ops':>6s} {'syncs':>5s}")
    lines = [head, "-" * len(head)]
    for key, rec in results.items():
        if not rec.get("train") and rec.get("error"):
            lines.append(f"{key:32s} FAILED: {rec['error'][:80]}")
            continue
        for prec, res in rec.get("train", {}).items():
            ms = (res.get("step_ms") or {}).get("median")
            lines.append(
                f"{key:32s} {rec.get('parameters', 0) / 1e6:7.1f}M {prec:>9s} {ms if ms is not None else float('nan'):9.1f} "
                f"{res.get('tokens_per_s', float('nan')):9.0f} {res.get('peak_mem_gib', float('nan')):6.2f} "
                f"{(res.get('flops') or 0) / 1e9:8.1f} "
                f"{100 * res['mfu'] if res.get('mfu') is not None else float('nan'):6.1f} "
                f"{res.get('aten_ops', 0):6d} {res.get('host_syncs', -1):5d}")
        for label, res in rec.get("decode", {}).items():
            lines.append(f"{'':32s} decode {label:18s} {res['sent_per_s']:8.1f} sent/s  {res['seconds']:7.2f} s")
        for err in rec.get("errors", []):
            lines.append(f"{'':32s} ! {err[:100]}")
    return "\n".join(lines)


def choose_device(ns, name: str):
    if name == "auto":
        return ns.pick_device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    return ns.pick_device(name)


def check(ns, args, device, keys) -> int:
    """The device contract and one bf16 forward/backward of every model on the device."""
    print(ns.describe_device(device, amp=True), flush=True)
    failed = 0
    for key in keys:
        case = tiny_case(CASES[key]) if args.tiny else CASES[key]
        try:
            model = build(ns, case, device)
            batch = ns.to_device(case_batches(ns, model, case, 1)[0], device)
            model.train()
            with torch.autocast(device.type, dtype=torch.bfloat16):
                out = model(batch)
            out["loss"].backward()
            sync(device)
            loss = float(out["loss"].detach())
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            ok = math.isfinite(loss) and grads and all(bool(torch.isfinite(g).all()) for g in grads)
            print(f"  {key:32s} bf16 forward/backward: loss {loss:.4f}, {len(grads)} gradients"
                  f"{'' if ok else '  NOT FINITE'}", flush=True)
            failed += not ok
            del model, out, grads
        except Exception as err:  # noqa: BLE001
            failed += 1
            print(f"  {key:32s} FAILED: {type(err).__name__}: {' '.join(str(err).split())[:300]}", flush=True)
        _free(device)
    print("check: " + ("ok" if not failed else f"{failed} model(s) failed"), flush=True)
    return 1 if failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON calibration file, written after every model (the cost plan reads config/calibration/<gpu>.json)")
    ap.add_argument("--device", default="auto", help="auto (CUDA when available) | cuda | cuda:N | cpu")
    ap.add_argument("--only", nargs="+", default=None, metavar="MODEL", help=f"models to run (of {', '.join(CASES)})")
    ap.add_argument("--all", action="store_true", help="every case, the text-only ones too")
    ap.add_argument("--steps", type=int, default=None, help="timed training updates per precision (GPU 20, CPU 2)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed updates first (GPU 3, CPU 1)")
    ap.add_argument("--budget-s", type=float, default=360.0, help="never run longer than this (default 360)")
    ap.add_argument("--tiny", action="store_true", help="tiny model sizes (a quick check of the script itself)")
    ap.add_argument("--check", action="store_true",
                    help="the device contract (a usable GPU unless --device cpu; exit 2 with the reason) and one bf16 "
                         "forward/backward per model (exit 1 if one fails)")
    args = ap.parse_args(argv)
    started = T0 if argv is None else time.monotonic()
    ns = _import_package()
    keys = args.only or (list(CASES) if args.all else DEFAULT)
    unknown = [k for k in keys if k not in CASES]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; choose from {', '.join(CASES)}")
    try:  # --check asserts the contract: a GPU unless --device cpu
        device = choose_device(ns, "cuda" if args.check and args.device == "auto" else args.device)
    except Exception as err:  # noqa: BLE001 - the device contract's message
        print(f"device: {err}", flush=True)
        return 2
    if device.type != "cuda" and not args.check:
        print("no usable CUDA GPU: measuring on the CPU (tiny step counts)", flush=True)
    cpu = device.type != "cuda"
    args.steps = args.steps if args.steps is not None else (2 if cpu else 20)
    args.warmup = args.warmup if args.warmup is not None else (1 if cpu else 3)
    if args.check:
        return check(ns, args, device, keys)
    torch.manual_seed(0)
    name = torch.cuda.get_device_name(device) if not cpu else f"CPU ({platform.processor() or platform.machine()})"
    peaks = peak_tflops(name) if not cpu else None
    meta = {
        "device_line": ns.describe_device(device), "device": str(device), "device_name": name,
        "capability": list(torch.cuda.get_device_capability(device)) if not cpu else None,
        "driver": ns.driver_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
        "threads": torch.get_num_threads(), "peak_tflops_dense": peaks, "tiny": args.tiny, "steps": args.steps,
        "warmup": args.warmup, "budget_s": args.budget_s, "stubbed": ns.stubbed, "argv": sys.argv[1:],
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host": platform.node(),
        "notes": ["synthetic batches of the paper shapes, random weights (decoding runs to the length bound)",
                  "step times fenced by torch.cuda.synchronize(); tokens = target tokens (BertGen: predicted tokens)",
                  "flops = FlopCounterMode count + recurrent layers estimated from their sizes (x3 fwd+bwd)",
                  "mfu against the dense peak of the precision (fp32_tf32 -> TF32 tensor peak, bf16 -> bf16 peak)"],
    }
    data = {"meta": meta, "models": {}}
    print(meta["device_line"], flush=True)
    print(f"models: {', '.join(keys)}; {args.warmup} warm-up + {args.steps} timed updates per precision; "
          f"budget {args.budget_s:.0f} s{'; tiny sizes' if args.tiny else ''}", flush=True)
    write_json(args.out, data)
    for i, key in enumerate(keys):
        left = args.budget_s - (time.monotonic() - started)
        if left < 2:
            data["models"][key] = {"error": "skipped: budget spent"}
            print(f"  {key:32s} skipped: budget spent", flush=True)
            continue
        share = left / (len(keys) - i)
        case = tiny_case(CASES[key]) if args.tiny else CASES[key]
        rec = data["models"][key] = {}
        try:
            with alarm(share):  # the model's share of what is left, building and cleaning up included
                run_case(ns, key, case, device, args, time.monotonic() + share, peaks, rec)
        except Budget as err:
            rec.setdefault("errors", []).append(f"stopped: {err}")
            print(f"  {key:32s} stopped: {err}", flush=True)
            _free(device)
        except Exception as err:  # noqa: BLE001 - recorded; the next model still runs
            rec.update(model=case["model"], error=f"{type(err).__name__}: {err}", traceback=traceback.format_exc()[-4000:])
            print(f"  {key:32s} FAILED: {type(err).__name__}: {' '.join(str(err).split())[:300]}", flush=True)
            _free(device)
        data["meta"]["elapsed_s"] = time.monotonic() - started
        write_json(args.out, data)
    print(summary_table(data["models"]), flush=True)
    print(f"done in {time.monotonic() - started:.0f} s" + (f"; wrote {args.out}" if args.out else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
