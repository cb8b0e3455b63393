"""The cost of training before the run: per training job, the updates it will run, the step time
measured on a device type (``config/calibration/<gpu>.json``, made by
benchmarks/gpu_calibration.py), GPU-hours, peak GPU memory and wall clock; and the SLURM
resources of ``train_model`` (host memory >= the feature stores it maps + the model + a margin;
runtime >= the estimate, capped at ``max_runtime_min`` with resume-by-retry). Torch-free.

Every figure says where it comes from: ``stats`` (results/data/stats on disk), ``config``
(a generated dataset's sizes), ``manifest`` (declared line counts), ``published`` (the
corpus's published size, approximate), ``measured`` (the calibration, this system at paper
size), ``~<entry>`` (the calibration of another system of the same model, or of the paper),
``est`` (an assumption named in ASSUMED)."""

from __future__ import annotations

import json
import math
import os
from functools import lru_cache
from pathlib import Path

#: Published training-set sizes (sentence pairs) of corpora whose files declare no line count.
PUBLISHED_SIZES = {
    "wmt15": 4_500_000,  # Europarl v7 + Common Crawl + News Commentary v10 de-en, ~4.5M (Calixto et al.: ~4.3M cleaned)
    "iwslt14": 160_000,  # fairseq prepare-iwslt14.sh: 160,239 de-en training pairs (fr-en similar)
    "newstest": 207_000,  # SETIMES2 en-tr (OPUS): 207,678 pairs
    "vatex": 129_955,  # VATEX v1.0 training: 25,991 videos x 5 parallel pairs
    "tasviret": 13_828,  # 6,914 Flickr8k images x 2 Turkish captions
    "karpathy": 566_000,  # COCO Karpathy train+restval: 113k images x 5
}
#: Assumptions where nothing better is known (flagged ``est``).
ASSUMED = {
    "target_tokens": 15.0,  # mean target tokens per sentence (Multi30k De: ~12 words, ~15 WordPieces)
    "params": 200e6,  # parameters of a model no calibration entry covers
    "feature_dim": 2048,
}
#: Retries of a training under a time cap: the full run's longest job (BertGen) needs 8 attempts
#: of 48 h, plus two for failures of another kind (tests/unit/test_cost_plan.py).
TRAIN_RETRIES_CAPPED = 11
MIN_PER_JOB = 10.0  # start-up, data loading and checkpointing per attempt (minutes)
RUNTIME_SAFETY = 1.25  # runtime asked of SLURM: estimate x this + MIN_PER_JOB
MEM_BASE_MB = 4000  # Python, torch and the CUDA context on the host
MEM_SAFETY = 1.25
DEFAULT_MAX_RUNTIME_MIN = 2880  # 48 h, the time limit asked before issue 23
MiB = 1024 * 1024


# ----------------------------------------------------------------------------- calibration
@lru_cache(maxsize=8)
def load_calibration(file: str) -> dict:
    return json.loads(Path(file).read_text(encoding="utf-8"))


def calibration_file(repo, gpu: str) -> Path:
    return Path(repo) / "config" / "calibration" / f"{gpu}.json"


def device_label(cal: dict) -> str:
    meta = cal.get("meta", {})
    return meta.get("label") or meta.get("device_name") or meta.get("device", "?")


def calibration_entry(cal: dict, paper: str, system: str, model: str) -> tuple[str | None, dict | None, str]:
    """(entry name, entry, how): this system measured; else the same registered model of the
    paper; else a model of the paper sharing the family (``seq2seq_text`` -> ``seq2seq``); else
    the paper's first entry."""
    models = cal.get("models", {})
    key = f"{paper}.{system}"
    usable = {k: m for k, m in models.items() if _prec(m, False)}  # a precision cut by the budget: not usable
    if key in usable:
        return key, usable[key], "measured"
    same_paper = [(k, m) for k, m in usable.items() if m.get("paper") == paper]
    family = model.split(".")[-1].split("_")[0]
    for rule in (lambda m: m.get("model") == model,
                 lambda m: m.get("model", "").split(".")[-1].split("_")[0] == family,
                 lambda m: True):
        for k, m in same_paper:
            if rule(m):
                return k, m, f"~{k}"
    return None, None, "none"


def _prec(entry: dict, amp: bool) -> dict:
    """The entry's training measurement in the job's precision (bf16 autocast when ``amp``, else
    fp32/TF32), falling back to fp32 when that one was not measured."""
    train = entry.get("train", {})
    for key in (("bf16",) if amp else ()) + ("fp32_tf32", "fp32"):
        if (train.get(key) or {}).get("step_ms") and not train[key].get("cut"):
            return train[key]
    return {}


def step_ms(entry: dict, amp: bool) -> float | None:
    prec = _prec(entry, amp)
    return float(prec["step_ms"]["median"]) if prec else None


def greedy_s_per_sentence(entry: dict, beam: int) -> float | None:
    dec = entry.get("decode", {})
    for key in ((f"beam{beam}_fp32_tf32", f"beam{beam}_fp32") if beam > 1 else ()) + ("greedy_fp32_tf32", "greedy_fp32"):
        if key in dec and dec[key].get("sentences"):
            return float(dec[key]["seconds"]) / float(dec[key]["sentences"])
    return None


# ----------------------------------------------------------------------------- a plan's jobs
# Functions of a plan (``mmt_repro.plan.Plan``): the plan itself holds no cost; per-plan caches
# live in the plan's ``__dict__`` (``_cost_stats``, ``_cost_resources``).

def cost_gpu(plan) -> str:
    """The calibration that sizes SLURM resources: config ``gpu_type`` (the slurm profile
    sets it), else h100 (cpu when the run is pinned to the CPU)."""
    return str(plan.config.get("gpu_type") or ("cpu" if plan.config["device"] == "cpu" else "h100"))


def max_runtime_min(plan) -> int:
    return int(plan.config.get("max_runtime_min") or DEFAULT_MAX_RUNTIME_MIN)


def train_retries(plan) -> int | None:
    """train_model's rule-level retries: under a time cap (config ``max_runtime_min``, set by
    the SLURM profile) :data:`TRAIN_RETRIES_CAPPED`, attempts that resume from .last.pt;
    without one None (Snakemake's global ``--retries``, 0 on a workstation)."""
    return TRAIN_RETRIES_CAPPED if plan.config.get("max_runtime_min") else None


def train_mem_mb(plan, wildcards) -> int:
    """train_model's mem_mb (:func:`train_cost`)."""
    return _resources(plan, wildcards)["mem_mb"]


def train_runtime(plan, wildcards) -> int:
    """train_model's runtime in minutes (:func:`train_cost`)."""
    return _resources(plan, wildcards)["runtime"]


def calibration(plan, gpu: str | None = None) -> dict:
    file = calibration_file(plan.repo, gpu or cost_gpu(plan))
    if not file.exists():
        have = sorted(p.stem for p in file.parent.glob("*.json"))
        raise ValueError(f"no calibration for {gpu!r} ({file.name}); have: {', '.join(have)}")
    return load_calibration(str(file))


# ---- sizes
def _stats_rows(plan, dataset: str) -> dict:
    cache = plan.__dict__.setdefault("_cost_stats", {})
    if dataset not in cache:
        rows = {}
        file = Path(os.getcwd()) / "results" / "data" / "stats" / f"{dataset}.tsv"
        if file.exists():
            lines = file.read_text(encoding="utf-8").splitlines()
            head = lines[0].split("\t") if lines else []
            for line in lines[1:]:
                r = dict(zip(head, line.split("\t")))
                try:
                    rows[(r["split"], r["lang"])] = (int(r["sentences"]), int(r["tokens"]))
                except (KeyError, ValueError):
                    continue
        cache[dataset] = rows
    return cache[dataset]


def split_size(plan, dataset: str, split: str, lang: str) -> tuple[int | None, float | None, str]:
    """(sentences, mean tokens per sentence or None, source) of one split of a dataset."""
    rows = _stats_rows(plan, dataset)
    if (split, lang) in rows:
        n, tok = rows[(split, lang)]
        return n, tok / max(n, 1), "stats"
    cfg = plan.config["datasets"].get(dataset, {})
    if split in (cfg.get("sizes") or {}):
        return int(cfg["sizes"][split]), None, "config"
    inputs = [cfg.get("train_input") if split == cfg.get("train") else None, cfg.get("input")]
    for name in filter(None, inputs):
        if name not in plan.manifest:
            continue
        files = plan.manifest[name].files
        for fname, f in files.items():
            parts = fname.rsplit("/", 1)[-1].split(".")
            if f.lines and parts[0] == split and lang in parts[1:]:
                return int(f.lines), None, "manifest"
    source = cfg.get("source", dataset)
    if split == cfg.get("train", "train") and source in PUBLISHED_SIZES:
        return PUBLISHED_SIZES[source], None, "published"
    return None, None, "unknown"


def training_size(plan, job) -> tuple[int | None, float | None, str]:
    """Sentence pairs of a job's training corpus (its reference task for multi-task runs)."""
    settings = plan.system_settings(job.paper, job.system)
    tgt = job.pair.split("-")[1]
    corpus = settings.corpus
    if corpus == "train":
        return split_size(plan, job.dataset, plan.dataset_config(job.dataset)["train"], tgt)
    if corpus == "backtranslated":
        bt = plan.backtranslation_jobs.settings(job.paper)
        n, tok, src = split_size(plan, job.dataset, plan.dataset_config(job.dataset)["train"], tgt)
        return (None if n is None else n * bt.descriptions), tok, f"{src} x{bt.descriptions}"
    return split_size(plan, corpus, plan.dataset_config(corpus).get("train", "train"), tgt)


# ---- one job's estimate
def train_cost(plan, job, gpu: str | None = None) -> dict:
    """Updates, step time, hours, memory and SLURM resources of one TrainJob."""
    gpu = gpu or cost_gpu(plan)
    cal = calibration(plan, gpu)
    tc = job.train_config
    name, entry, how = calibration_entry(cal, job.paper, job.system, job.model)
    amp = bool(tc.get("amp")) and gpu != "cpu"
    n, tok, size_src = training_size(plan, job)
    notes = []
    if tok is None:
        prec = _prec(entry or {}, amp)
        if entry and prec.get("tokens_per_step") and entry.get("batch", 0) > 1:
            tok, tok_src = float(prec["tokens_per_step"]) / float(entry["batch"]), "calibration batch"
        else:
            tok, tok_src = ASSUMED["target_tokens"], "est"
    else:
        tok_src = "stats"
    bs, acc = int(tc.get("batch_size", 80)), int(tc.get("accumulate", 1))
    multitask = bool(job.tasks) and job.model.startswith("bertgen")
    if n is None:
        batches_per_epoch = None
    elif multitask or job.model.startswith("bertgen"):
        # one example per unrolled target token (+ the stop step) of the reference task
        examples = int(job.model_config.get("epoch_examples") or 0) or math.ceil(n * (tok + 1))
        batches_per_epoch = math.ceil(examples / bs)
        notes.append(f"unrolled x{tok + 1:.0f} ({tok_src})")
    elif tc.get("batch_by_tokens"):
        batches_per_epoch = math.ceil(n * tok / bs)
        notes.append(f"{tok:.0f} tgt tok/sent ({tok_src})")
    else:
        batches_per_epoch = math.ceil(n / bs)
    epochs = int(tc.get("max_epochs", 100))
    max_steps = int(tc.get("max_steps", 0))
    if batches_per_epoch is None:
        updates = max_steps or None
        upd_src = "max_steps" if max_steps else "unknown size"
    else:
        updates = epochs * math.ceil(batches_per_epoch / acc)
        upd_src = f"{epochs} ep x {math.ceil(batches_per_epoch / acc):,}"
        if max_steps and max_steps < updates:
            updates, upd_src = max_steps, "max_steps"
    ms = step_ms(entry, amp) if entry else None
    if ms is not None and acc > 1:
        ms *= acc  # an update sums `accumulate` batches
    train_h = None if updates is None or ms is None else updates * ms / 3.6e6
    # validation: greedy/beam decoding of the val split once per epoch (random weights in the
    # calibration decode to the length bound: an upper bound)
    val_h = None
    if entry and train_h is not None:
        vn, _, _ = split_size(plan, job.dataset, plan.dataset_config(job.dataset).get("val", "val"),
                              job.pair.split("-")[1])
        per = greedy_s_per_sentence(entry, int(tc.get("val_beam", 1)))
        if vn and per:
            val_h = min(epochs, updates / max(batches_per_epoch or updates, 1) + 1) * vn * per / 3600
    budget = float(tc.get("time_budget_min") or 0)
    hours = None if train_h is None else train_h + (val_h or 0.0)
    if hours is not None and budget and hours > budget / 60:
        hours, notes = budget / 60, [*notes, "time_budget_min"]
    prec = _prec(entry or {}, amp)
    params = float(entry["parameters"]) if entry and entry.get("parameters") else ASSUMED["params"]
    stores = mapped_stores(plan, job)
    corpus_mb = (n or 0) * 2 * (64 + 8 * tok) / MiB  # token-id lists of both sides in Python
    model_mb = params * 4 * 4 / MiB  # weights, gradients' host copy and two optimiser moments at save
    mem_mb = int(math.ceil((sum(stores.values()) / MiB + model_mb + corpus_mb) * MEM_SAFETY + MEM_BASE_MB))
    mem_mb = int(math.ceil(mem_mb / 1000.0) * 1000)
    est_min = None if hours is None else hours * 60 * RUNTIME_SAFETY + MIN_PER_JOB
    cap = max_runtime_min(plan)
    runtime = cap if est_min is None else int(min(math.ceil(est_min), cap))
    attempts = 1 if est_min is None else max(1, math.ceil(est_min / cap))
    return {
        "paper": job.paper, "system": job.system, "dataset": job.dataset, "pair": job.pair, "seed": job.seed,
        "model": job.model, "examples": n, "size_source": size_src, "updates": updates, "updates_source": upd_src,
        "step_ms": ms, "step_source": how if ms is not None else "none", "calibration_entry": name,
        "device": device_label(cal), "gpu": gpu, "precision": "bf16" if amp else ("fp32" if gpu == "cpu" else "tf32"),
        "train_h": train_h, "val_h": val_h, "hours": hours, "gpu_hours": hours if gpu != "cpu" else None,
        "peak_gib": prec.get("peak_mem_gib"), "params": params,
        "stores_mb": sum(stores.values()) / MiB, "stores": stores, "model_mb": model_mb, "corpus_mb": corpus_mb,
        "mem_mb": mem_mb, "estimate_min": est_min, "runtime": runtime, "max_runtime_min": cap,
        "attempts": attempts, "resumable": bool(job.last), "notes": notes,
    }


# ---- memory: the feature stores a job maps
def mapped_stores(plan, job) -> dict:
    """path -> bytes of every feature store (.npy) a training job maps: the file's size where
    it exists (relative to the working directory), else rows x slots x dim x 2 (float16)."""
    files = set()
    stack = [job.inputs, [t.get("features") for t in job.tasks]]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, str) and v.startswith("results/features/") and v.endswith(".npy"):
            files.add(v)
    return {f: store_bytes(plan, f) for f in sorted(files)}


def store_bytes(plan, file: str) -> int:
    on_disk = Path(os.getcwd()) / file
    if on_disk.exists():
        return on_disk.stat().st_size
    parts = file.split("/")  # results/features/<dataset>/<set>[.std|.ctr]/<split>[.boxes].npy
    dataset, fs_name, leaf = parts[2], parts[3].split(".")[0], parts[4]
    split = leaf.split(".")[0]
    rows, _, _ = split_size(plan, dataset, split, (plan.dataset_langs(dataset) or ["en"])[0]
                            if dataset in plan.layout else "en")
    rows = rows or 30000
    fs = plan.feature_set_config(dataset, fs_name) if fs_name in (plan.dataset_config(dataset).get("features") or {}) else {}
    slots, dim = feature_shape(fs_name, fs)
    if leaf.endswith(".boxes.npy"):
        return rows * slots * 4 * 4  # float32 boxes
    return rows * slots * dim * 2


def feature_shape(name: str, fs: dict) -> tuple[int, int]:
    """(slots, dim) of a feature set from its config (an estimate before extraction)."""
    kind = fs.get("kind", "grid")
    if fs.get("import") == "vatex_i3d" or kind == "video":
        return int(fs.get("n_segments", 32)), 1024 if fs.get("import") == "vatex_i3d" else 2048
    if fs.get("import") == "butd" or kind == "pretrained":
        return int(fs.get("max_boxes", 36)) + 1, 2048
    if kind == "regions":
        return int(fs.get("max_boxes", 36)) + int(bool(fs.get("full_image"))), 1024
    if "pool5" in name:
        return 1, 2048
    side = max(1, int(fs.get("image_size", 224)) // 16)
    return side * side, 1024


# ----------------------------------------------------------------------------- the report
def _num(x, fmt="{:,.1f}", none="?"):
    return none if x is None else fmt.format(x)


def cost_plan(plan, targets, gpu: str | None = None) -> dict:
    """Every training job the targets need, with its cost; sums per paper and in total; the
    critical path (longest chain of runs that start from another's checkpoint)."""
    from .walk import training_runs

    runs, deps = training_runs(plan, targets)
    rows = [train_cost(plan, plan.train_jobs.job(w), gpu) for w in runs]
    by_key = {(r["paper"], r["system"], r["dataset"], r["pair"], int(r["seed"])): r for r in rows}
    done: dict = {}

    def chain(key):  # hours of the longest chain ending with this run
        if key not in done:
            done[key] = (by_key[key]["hours"] or 0.0) + max([chain(d) for d in deps.get(key, ()) if d in by_key] or [0.0])
        return done[key]

    papers: dict = {}
    for r in rows:
        p = papers.setdefault(r["paper"], {"jobs": 0, "hours": 0.0, "unknown": 0, "peak_gib": 0.0})
        p["jobs"] += 1
        p["hours"] += r["hours"] or 0.0
        p["unknown"] += r["hours"] is None
        p["peak_gib"] = max(p["peak_gib"], r["peak_gib"] or 0.0)
    cal = calibration(plan, gpu)
    return {"gpu": gpu or cost_gpu(plan), "device": device_label(cal), "rows": rows, "papers": papers,
            "total_hours": sum(p["hours"] for p in papers.values()), "jobs": len(rows),
            "critical_path_h": max([chain(k) for k in by_key] or [0.0]),
            "calibration": str(calibration_file("", gpu or cost_gpu(plan)))}


def format_cost_plan(report: dict, markdown: bool = False) -> str:
    """The cost plan as a text (or Markdown) table, one line per job, then per paper and total."""
    head = ["paper", "system", "data", "seed", "examples", "updates", "step ms", "train h", "val h", "GPU-h",
            "peak GiB", "mem_mb", "runtime min", "tries"]
    lines = []
    for r in report["rows"]:
        lines.append([
            r["paper"], r["system"], f"{r['dataset']}.{r['pair']}", str(r["seed"]),
            f"{_num(r['examples'], '{:,}')} ({r['size_source']})",
            f"{_num(r['updates'], '{:,}')} ({r['updates_source']})",
            f"{_num(r['step_ms'])} ({r['step_source']}, {r['precision']})",
            _num(r["train_h"], "{:,.2f}"), _num(r["val_h"], "{:,.2f}"), _num(r["gpu_hours"], "{:,.1f}", "-"),
            _num(r["peak_gib"], "{:.2f}"), str(r["mem_mb"]), str(r["runtime"]), str(r["attempts"]),
        ])
    for paper, p in report["papers"].items():
        lines.append([f"**{paper}**" if markdown else f"= {paper}", f"{p['jobs']} jobs", "", "", "", "", "", "", "",
                      _num(p["hours"], "{:,.1f}") + (f" (+{p['unknown']} ?)" if p["unknown"] else ""),
                      _num(p["peak_gib"], "{:.2f}"), "", "", ""])
    lines.append(["**total**" if markdown else "= total", f"{report['jobs']} jobs", "", "", "", "", "", "", "",
                  _num(report["total_hours"], "{:,.1f}"), "", "", "", ""])
    legend = (f"step times: {report['calibration']} ({report['device']}); measured = this system at paper size, "
              "~entry = another system's measurement (same model or paper); examples: stats / config / manifest "
              "= counted, published = the corpus's published size (approximate); updates = max_epochs x updates "
              "per epoch (an upper bound: early stopping ends most runs sooner); val h: validation decoding per "
              "epoch from the calibration's random-weight decode (an upper bound); "
              f"critical path (unlimited GPUs): {report['critical_path_h']:,.1f} h")
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(cells) + " |" for cells in lines]
        return "\n".join(out) + "\n\n" + legend
    widths = [max(len(c[i]) for c in [head, *lines]) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in [head, *lines]]
    return "\n".join(out) + "\n" + legend


def _resources(plan, wildcards) -> dict:
    cache = plan.__dict__.setdefault("_cost_resources", {})
    key = tuple(str(getattr(wildcards, k)) for k in ("paper", "system", "dataset", "pair", "seed"))
    if key not in cache:
        cache[key] = train_cost(plan, plan.train_jobs.job(wildcards))
    return cache[key]

