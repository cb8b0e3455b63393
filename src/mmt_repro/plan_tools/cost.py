"""The cost of training before the run: per training job, the updates it will run, the step time
measured on a device type (``config/calibration/<gpu>.json``, made by
benchmarks/gpu_calibration.py), the validation decoding, GPU-hours, peak GPU memory and wall
clock; the SLURM resources of ``train_model`` (host memory >= the feature stores it maps + the
model + a margin; runtime >= the estimate, capped at ``max_runtime_min`` with resume-by-retry,
and the retries that gives) and of the jobs that read or write a whole feature store. Torch-free.

Every figure says where it comes from: ``stats`` (results/data/stats on disk), ``config``
(a generated dataset's sizes), ``manifest`` (declared line counts), ``published`` (the
corpus's published size, approximate), ``wordpieces`` (target WordPieces counted by
benchmarks/bertgen_table1.py, ``config/calibration/wordpieces.tsv``), ``measured`` (the
calibration, this system at paper size), ``~<entry>`` (the calibration of another system: the
same model, the same model module, or the same architecture family, from any paper), ``est``
(an assumption named in ASSUMED)."""

from __future__ import annotations

import json
import math
import os
from functools import lru_cache
from pathlib import Path

from ..plan.features import feature_shape
from .levers import BERTGEN_K, attach_levers

#: Published training-set sizes (sentence pairs) of corpora whose files declare no line count.
PUBLISHED_SIZES = {
    "wmt15": 4_500_000,  # Europarl v7 + Common Crawl + News Commentary v10 de-en, ~4.5M (Calixto et al.: ~4.3M cleaned)
    "iwslt14": 160_000,  # fairseq prepare-iwslt14.sh: 160,239 de-en training pairs (fr-en similar)
    "newstest": 207_000,  # SETIMES2 en-tr (OPUS): 207,678 pairs
    "vatex": 129_955,  # VATEX v1.0 training: 25,991 videos x 5 parallel pairs
    "tasviret": 13_828,  # 6,914 Flickr8k images x 2 Turkish captions
    "karpathy": 566_000,  # COCO Karpathy train+restval: 113k images x 5
}
#: Published validation-set sizes (sentences) of corpora whose files declare no line count.
PUBLISHED_VAL_SIZES = {
    "iwslt14": 7_283,  # fairseq prepare-iwslt14.sh: every 23rd training pair held out, 7,283 de-en (fr-en similar)
    "vatex": 15_000,  # VATEX v1.0 validation: 3,000 videos x 5 parallel pairs
}
#: Assumptions where nothing better is known (flagged ``est``).
ASSUMED = {
    "target_tokens": 15.0,  # mean target tokens per sentence where none are counted
    "params": 200e6,  # parameters of a model no calibration entry covers
    "feature_dim": 2048,
    "batch_longest": 1.5,  # a validation batch decodes until its longest output: 1.5 x the mean length
}
#: Architecture family of a registered model key (looked up whole, then by its module, the part
#: before the dot): a step time is borrowed from the same model, then the same module and family,
#: then the same family, from any paper.
FAMILIES = {
    "doubly_attentive": "rnn", "emb_pred": "rnn", "visual_agreement.seq2seq": "rnn",
    "visual_agreement.seq2seq_text": "rnn", "deepfuse.lstm": "rnn", "deepfuse.vatex": "rnn",
    "transformer": "transformer", "deepfuse.deepfuse": "transformer", "visual_agreement.transformer": "transformer",
    "visual_agreement.transformer_text": "transformer", "bertgen": "bert",
}
#: The model_config keys that give a model's width (the decoder's), compared to pick the nearest
#: family member.
WIDTH_KEYS = ("dec_dim", "hidden", "hidden_size", "d_model")
SPARE_RETRIES = 2  # retries of a training for failures other than the time limit (node loss, pre-emption)
MIN_PER_JOB = 10.0  # start-up, data loading and checkpointing per attempt (minutes)
RUNTIME_SAFETY = 1.25  # runtime asked of SLURM: estimate x this + MIN_PER_JOB
MEM_BASE_MB = 4000  # Python, torch and the CUDA context on the host
MEM_SAFETY = 1.25
DEFAULT_MAX_RUNTIME_MIN = 2880  # 48 h, the time limit asked before issue 23
STORE_MB_PER_S = 20.0  # assumed read + write speed of a feature-store job (many small .npz files, shared disks)
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


def family(model: str) -> str | None:
    """The architecture family of a registered model key (:data:`FAMILIES`), None if unknown."""
    return FAMILIES.get(model, FAMILIES.get(model.split(".")[0]))


def _width(config: dict | None) -> float | None:
    for key in WIDTH_KEYS:
        if (config or {}).get(key):
            return float(config[key])
    return None


def calibration_entry(cal: dict, paper: str, system: str, model: str,
                      model_config: dict | None = None) -> tuple[str | None, dict | None, str]:
    """(entry name, entry, how) of the step time a job uses: this system measured (``measured``);
    else borrowed (``~entry``) from, in this order, an entry of the same registered model, of
    the same model module and architecture family (``emb_pred.imag`` from ``emb_pred.ours``), of
    the same architecture family (:data:`FAMILIES`), from any paper; within a rank the job's own
    paper first, then an entry that is visual (``img_dim``) when the job is, then the nearest
    width (:data:`WIDTH_KEYS`); else none."""
    models = cal.get("models", {})
    key = f"{paper}.{system}"
    usable = {k: m for k, m in models.items() if _prec(m, False)}  # a precision cut by the budget: not usable
    if key in usable:
        return key, usable[key], "measured"
    module, fam, width = model.split(".")[0], family(model), _width(model_config)
    visual = bool((model_config or {}).get("img_dim"))

    def rank(item):
        k, m = item
        other = m.get("model", "")
        same_family = fam is not None and family(other) == fam
        level = 0 if other == model else 1 if same_family and other.split(".")[0] == module else 2 if same_family else 3
        w = _width(m.get("config"))
        gap = abs(math.log(w / width)) if w and width else math.inf
        return level, m.get("paper") != paper, bool((m.get("config") or {}).get("img_dim")) != visual, gap, k

    ranked = sorted((item for item in usable.items() if rank(item)[0] < 3), key=rank)
    if ranked:
        k, m = ranked[0]
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


def decode_step_s(entry: dict, beam: int) -> tuple[float, int] | None:
    """(seconds of one decoding step of a batch, that batch's sentences) from the calibration's
    decode: a batch runs as many steps as its longest output; the random-weight model stops after
    0-1 tokens, so its steps are taken as 1 + the mean output length (the calibration records
    the total only)."""
    dec = entry.get("decode", {})
    for key in ((f"beam{beam}_fp32_tf32", f"beam{beam}_fp32") if beam > 1 else ()) + ("greedy_fp32_tf32", "greedy_fp32"):
        d = dec.get(key) or {}
        if d.get("sentences"):
            steps = 1.0 + float(d.get("out_tokens", 0)) / float(d["sentences"])
            return float(d["seconds"]) / steps, int(d.get("batch_size") or d["sentences"])
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


def attempts_for(estimate_min: float | None, cap: int) -> int:
    """Attempts of a training of ``estimate_min`` minutes under a time cap of ``cap`` minutes:
    each attempt runs to the cap, saves .last.pt and the next resumes from it."""
    return 1 if estimate_min is None else max(1, math.ceil(estimate_min / cap))


def retries_for(estimate_min: float | None, cap: int) -> int:
    """Retries that give a training its :func:`attempts_for` plus :data:`SPARE_RETRIES`."""
    return attempts_for(estimate_min, cap) - 1 + SPARE_RETRIES


def train_retries(plan) -> int | None:
    """train_model's rule-level retries (one number for the rule, Snakemake's ``retries:``):
    under a time cap (config ``max_runtime_min``, the GPU partition's MaxTime, set by the SLURM
    profile) :func:`retries_for` the longest training of the plan's default targets, attempts
    that resume from .last.pt; without one None (Snakemake's global ``--retries``, 0 on a
    workstation)."""
    if not plan.config.get("max_runtime_min"):
        return None
    if "_cost_retries" not in plan.__dict__:
        cap = max_runtime_min(plan)
        rows = cost_plan(plan, plan.targets.default_targets())["rows"]
        plan.__dict__["_cost_retries"] = max([retries_for(r["estimate_min"], cap) for r in rows] or [SPARE_RETRIES])
    return plan.__dict__["_cost_retries"]


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
    sets = (cfg.get("sets") or {}).get(split)
    if sets and cfg.get("input") in plan.manifest:  # a split made of named sets (newstest2016 + 2017)
        counted = {}
        for fname, f in plan.manifest[cfg["input"]].files.items():
            parts = fname.rsplit("/", 1)[-1].split(".")
            if f.lines and parts[0] in sets and lang in parts[1:]:
                counted[parts[0]] = int(f.lines)
        if len(counted) == len(sets):
            return sum(counted.values()), None, "manifest"
    source = cfg.get("source", dataset)
    if split == cfg.get("train", "train") and source in PUBLISHED_SIZES:
        return PUBLISHED_SIZES[source], None, "published"
    if split == cfg.get("val", "val") and source in PUBLISHED_VAL_SIZES:
        return PUBLISHED_VAL_SIZES[source], None, "published"
    return None, None, "unknown"


@lru_cache(maxsize=4)
def _wordpiece_counts(file: str) -> dict:
    counts = {}
    if Path(file).exists():
        lines = [ln for ln in Path(file).read_text(encoding="utf-8").splitlines() if ln and not ln.startswith("#")]
        head = lines[0].split("\t")
        for line in lines[1:]:
            r = dict(zip(head, line.split("\t")))
            counts[(r["dataset"], r["split"], r["lang"])] = (int(r["sentences"]), int(r["pieces"]))
    return counts


def wordpieces(plan, dataset: str, split: str, lang: str) -> tuple[int, int] | None:
    """(sentences, target WordPieces) of a split as benchmarks/bertgen_table1.py counted them
    (``config/calibration/wordpieces.tsv``: BertGen's recipe over the real text), None if not
    counted."""
    return _wordpiece_counts(str(Path(plan.repo) / "config" / "calibration" / "wordpieces.tsv")).get(
        (dataset, split, lang))


def mean_length(plan, paper: str, dataset: str, split: str, lang: str) -> tuple[float, str]:
    """(mean target tokens per sentence, source) of a split in the units the job's model sees:
    WordPieces counted by benchmarks/bertgen_table1.py for a WordPiece recipe (those of the
    train split stand for a split not counted), else the whitespace tokens of the corpus stats
    on disk, else :data:`ASSUMED` (``est``)."""
    recipe = plan.recipe(paper)
    if lang in recipe.langs and recipe.subword_for(lang) == "wordpiece":
        train = plan.dataset_config(dataset).get("train", "train")
        for sp in dict.fromkeys((split, train)):
            counted = wordpieces(plan, dataset, sp, lang)
            if counted:
                return counted[1] / counted[0], "wordpieces"
        return ASSUMED["target_tokens"], "est"
    rows = _stats_rows(plan, dataset)
    if (split, lang) in rows:
        n, tok = rows[(split, lang)]
        return tok / max(n, 1), "stats"
    return ASSUMED["target_tokens"], "est"


def validation_sets(plan, job) -> list[tuple[str, str, str]]:
    """(dataset, split, target language) of every set a training job decodes at each validation:
    its own validation split, then each extra task's (multi-task runs, ``val: true``)."""
    sets = [(job.dataset, plan.dataset_config(job.dataset).get("val", "val"), job.pair.split("-")[1])]
    for task in job.tasks or ():
        refs = (task.get("val") or {}).get("refs") or []
        if refs:  # results/text/<dataset>/<split>.<chain>.<lang>
            parts = refs[0].split("/")
            sets.append((parts[2], parts[3].split(".")[0], parts[3].rsplit(".", 1)[-1]))
    return sets


def training_size(plan, job) -> tuple[int | None, float | None, str, str]:
    """(sentence pairs, mean target tokens or None, size source, tokens source) of a job's
    training corpus (its reference task for multi-task runs)."""
    settings = plan.system_settings(job.paper, job.system)
    tgt = job.pair.split("-")[1]
    corpus = settings.corpus
    times = 1
    if corpus == "train":
        dataset = job.dataset
    elif corpus == "backtranslated":
        dataset, times = job.dataset, plan.backtranslation_jobs.settings(job.paper).descriptions
    else:
        dataset = corpus
    split = plan.dataset_config(dataset).get("train", "train")
    n, _, src = split_size(plan, dataset, split, tgt)
    tok, tok_src = mean_length(plan, job.paper, dataset, split, tgt)
    if times > 1:
        n, src = (None if n is None else n * times), f"{src} x{times}"
    return n, (None if tok_src == "est" else tok), src, tok_src


# ---- one job's estimate
def train_cost(plan, job, gpu: str | None = None) -> dict:
    """Updates, step time, hours, memory and SLURM resources of one TrainJob."""
    gpu = gpu or cost_gpu(plan)
    cal = calibration(plan, gpu)
    tc = job.train_config
    name, entry, how = calibration_entry(cal, job.paper, job.system, job.model, job.model_config)
    amp = bool(tc.get("amp")) and gpu != "cpu"
    n, tok, size_src, tok_src = training_size(plan, job)
    notes = []
    if tok is None:
        prec = _prec(entry or {}, amp)
        if entry and prec.get("tokens_per_step") and entry.get("batch", 0) > 1:
            tok, tok_src = float(prec["tokens_per_step"]) / float(entry["batch"]), "calibration batch"
        else:
            tok, tok_src = ASSUMED["target_tokens"], "est"
    # batch_scale k: k x batch_size examples a step (train.schedules.scaled_train_config)
    bs, acc = int(tc.get("batch_size", 80)) * int(tc.get("batch_scale", 1)), int(tc.get("accumulate", 1))
    unrolled = None
    epoch_unit = ""
    if n is None:
        batches_per_epoch = None
    elif job.model.startswith("bertgen"):
        # one example per unrolled target token (+ the stop step) of the reference task
        examples = unrolled = int(job.model_config.get("epoch_examples") or 0) or round(n * (tok + 1))
        batches_per_epoch = math.ceil(examples / bs)
        epoch_unit = f" ({examples:,} unrolled, {tok_src})"
        notes.append(f"unrolled: {n:,} sentences x {tok + 1:.2f} ({tok_src})")
    elif tc.get("batch_by_tokens"):
        batches_per_epoch = math.ceil(n * tok / bs)
        notes.append(f"{tok:.0f} tgt tok/sent ({tok_src})")
    else:
        batches_per_epoch = math.ceil(n / bs)
    epochs = int(tc.get("max_epochs", 100))
    max_steps = int(tc.get("max_steps", 0))
    per_epoch = None if batches_per_epoch is None else math.ceil(batches_per_epoch / acc)
    if per_epoch is None:
        updates = max_steps or None
        upd_src = "max_steps" if max_steps else "unknown size"
    else:
        updates = epochs * per_epoch
        upd_src = f"{epochs} ep x {per_epoch:,}{epoch_unit}"
        if max_steps and max_steps < updates:
            updates, upd_src = max_steps, "max_steps"
    ms = step_ms(entry, amp) if entry else None
    if ms is not None and how != "measured":
        # a borrowed step at a larger batch than the entry's costs at least proportionally more
        if job.model.startswith("bertgen"):
            job_tokens = bs * (1 + len(job.tasks or ()))
        else:
            job_tokens = bs if tc.get("batch_by_tokens") else bs * tok
        scale = job_tokens / float(_prec(entry, amp).get("tokens_per_step") or job_tokens)
        if scale > 1.05:
            ms, how = ms * scale, f"{how} x{scale:.1f} batch"
    if ms is not None and acc > 1:
        ms *= acc  # an update sums `accumulate` batches
    train_h = None if updates is None or ms is None else updates * ms / 3.6e6
    # validation: each validation set decoded once per epoch at its references' mean length
    val_h, val_src, val_sents = None, set(), 0
    dec = decode_step_s(entry, int(tc.get("val_beam", 1))) if entry else None
    if dec and updates is not None:
        step_s, vbs = dec[0], int(tc.get("val_batch_size", 64))
        runs = min(epochs, updates / max(per_epoch or updates, 1) + 1)
        seconds = 0.0
        for dataset, split, lang in validation_sets(plan, job):
            vn, _, _ = split_size(plan, dataset, split, lang)
            length, src = mean_length(plan, job.paper, dataset, split, lang)
            if not vn:
                val_src.add("unknown size")
                continue
            val_src.add(src)
            val_sents += vn
            seconds += math.ceil(vn / vbs) * (length * ASSUMED["batch_longest"] + 1) * step_s
        val_h = runs * seconds / 3600
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
    attempts = attempts_for(est_min, cap)
    return {
        "paper": job.paper, "system": job.system, "dataset": job.dataset, "pair": job.pair, "seed": job.seed,
        "model": job.model, "examples": n, "size_source": size_src, "updates": updates, "updates_source": upd_src,
        "step_ms": ms, "step_source": how if ms is not None else "none", "calibration_entry": name,
        "device": device_label(cal), "gpu": gpu, "precision": "bf16" if amp else ("fp32" if gpu == "cpu" else "tf32"),
        "train_h": train_h, "val_h": val_h, "val_sentences": val_sents, "val_source": "/".join(sorted(val_src)) or "none",
        "hours": hours, "gpu_hours": hours if gpu != "cpu" else None,
        "peak_gib": prec.get("peak_mem_gib"), "params": params,
        "stores_mb": sum(stores.values()) / MiB, "stores": stores, "model_mb": model_mb, "corpus_mb": corpus_mb,
        "mem_mb": mem_mb, "estimate_min": est_min, "runtime": runtime, "max_runtime_min": cap,
        "attempts": attempts, "resumable": bool(job.last), "notes": notes,
        "unrolled": unrolled, "batch_size": bs, "batch_scale": int(tc.get("batch_scale", 1)), "epochs": epochs,
        "accumulate": acc, "multi_task": bool(job.tasks),  # BertGen's unrolled epoch and step (plan_tools.levers)
    }


# ---- the jobs that read or write a whole feature store
def store_mem_mb(plan, wildcards, fit: bool = False) -> int:
    """mem_mb of a job that reads or writes the store ``{dataset}/{feature_set}/{split}`` (and,
    with ``fit``, standardising or centring on the training split, that one's): the stores'
    bytes, whose mapped pages count against the job's memory, + :data:`MEM_BASE_MB`, x
    :data:`MEM_SAFETY`."""
    mb = sum(_store_job_bytes(plan, wildcards, fit)) / MiB
    return int(math.ceil((mb * MEM_SAFETY + MEM_BASE_MB) / 1000.0) * 1000)


def store_runtime(plan, wildcards, fit: bool = False) -> int:
    """runtime (minutes) of such a job: its stores at :data:`STORE_MB_PER_S`, x
    :data:`RUNTIME_SAFETY` + :data:`MIN_PER_JOB`, at least an hour."""
    seconds = 2 * sum(_store_job_bytes(plan, wildcards, fit)) / MiB / STORE_MB_PER_S  # read, then write
    return max(60, int(math.ceil(seconds / 60 * RUNTIME_SAFETY + MIN_PER_JOB)))


def _store_job_bytes(plan, w, fit: bool) -> list[int]:
    splits = dict.fromkeys((w.split, plan.dataset_config(w.dataset).get("train", "train")) if fit else (w.split,))
    return [store_bytes(plan, f"results/features/{w.dataset}/{w.feature_set}/{sp}.npy") for sp in splits]


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


# ----------------------------------------------------------------------------- the report
def cost_plan(plan, targets, gpu: str | None = None, bertgen_k: int = BERTGEN_K) -> dict:
    """Every training job the targets need, with its cost; sums per paper and in total; the
    critical path (longest chain of runs that start from another's checkpoint); each multi-task
    BertGen run's levers (:func:`~mmt_repro.plan_tools.levers.bertgen_levers`, k = ``bertgen_k``);
    printed by :func:`~mmt_repro.plan_tools.cost_table.format_cost_plan`."""
    from .walk import training_runs

    runs, deps = training_runs(plan, targets)
    rows = [train_cost(plan, plan.train_jobs.job(w), gpu) for w in runs]
    attach_levers(plan, rows, bertgen_k)
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


def _resources(plan, wildcards) -> dict:
    cache = plan.__dict__.setdefault("_cost_resources", {})
    key = tuple(str(getattr(wildcards, k)) for k in ("paper", "system", "dataset", "pair", "seed"))
    if key not in cache:
        cache[key] = train_cost(plan, plan.train_jobs.job(wildcards))
    return cache[key]

