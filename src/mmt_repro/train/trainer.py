"""The one trainer every model shares.

The model supplies ``forward(batch) -> {"loss", "n_tokens", ...}`` (the contract of
:mod:`mmt_repro.models.base`); this module supplies everything else: batching, optimiser and
schedule, gradient clipping, validation BLEU after each epoch (through the one decode loop,
:mod:`mmt_repro.decode.loop`), early stopping, best and last checkpoints, exact resume, signal
handling and the training curve. Every scalar the model returns besides ``loss`` and
``n_tokens`` is averaged per target token, logged and written to the curve.

Exact resume: the last checkpoint holds the model, optimiser, scheduler, RNG states and the
data position (epoch, batches done in it). The batch order of an epoch is a pure function of
``(seed, epoch)`` (see :mod:`mmt_repro.datasets.batching`), so a run killed after any saved step and
re-run ends with the same weights as an uninterrupted run on the same device.

Speed on a GPU: an update (:mod:`mmt_repro.train.step`) never waits for the device; the loss
and token sums are read back only at ``log_every`` updates, before a checkpoint and at the end
of an epoch (a non-finite loss is reported there, with the update it happened at). The device
and its precision come from :func:`mmt_repro.device.pick_device` (TF32 matmuls on a GPU;
``amp: true`` adds bf16 autocast there).

Signals: SIGTERM and SIGUSR1 (SLURM's warning before a time limit or pre-emption) make the
trainer save the last checkpoint at the next step boundary and exit with
:data:`INTERRUPTED_EXIT_CODE`; re-running the job resumes.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..checkpoint import read_checkpoint, save_checkpoint, set_rng_state
from ..datasets.batching import ParallelData, check_feature_dim
from ..datasets.resident import ResidentFeatures, resident_choice
from ..decode.loop import decode_data, to_text
from ..device import describe_device, pick_device
from ..features.store import open_features
from ..io import DataError, atomic_path, atomic_write, read_lines
from ..metrics.mt import corpus_scores
from ..text.recipes import merge_subwords
from ..models import Vocabs, build_model
from ..settings import DecodeSettings, TrainConfig, import_model_modules, make_train_config, pair_langs
from ..text.vocab import Vocab
from .prefetch import Prefetcher, prefetch_depth
from .resume import field_defaults, same_configuration
from .step import StepSums, make_optimizer, train_update
from .task_best import is_new_best, task_best_file

log = logging.getLogger(__name__)

INTERRUPTED_EXIT_CODE = 75  # EX_TEMPFAIL: "try again", the job resumes when re-run
CURVE_COLUMNS = ["epoch", "step", "train_loss", "val_bleu", "lr", "tokens_per_s", "elapsed_s"]

__all__ = ["INTERRUPTED_EXIT_CODE", "TrainConfig", "make_train_config", "train", "train_from_files"]


def _optimizer(cfg: TrainConfig, params):
    return make_optimizer(cfg.optimizer, params, lr=cfg.lr, betas=cfg.adam_betas, eps=cfg.adam_eps,
                          weight_decay=cfg.weight_decay)


class LRFactor:
    """The factor on the base learning rate after ``i`` scheduler steps (``LambdaLR``'s lambda;
    a class so that its settings go into the checkpoint). Per-update schedules see ``i`` =
    updates done, so update ``u`` (1-based) runs at ``lr * factor(u - 1)``:

    - ``inverse_sqrt``: ``min(u / W, sqrt(W / u))`` (linear warm-up over ``W`` updates to the
      peak ``lr``, then inverse square root; Vaswani et al. 2017, eq. 3 of section 5.3);
    - ``linear``: ``u / W`` during warm-up, then ``max(0, (T - u) / (T - W))``;
    - ``epoch_decay``: ``min(1, u / W) * lr_decay ** halvings`` (no warm-up when ``W`` = 0), where
      ``halvings`` counts the epoch ends at which the trainer lowered the rate (:func:`_decay_due`).
    """

    halvings = 0  # epoch_decay: how often the rate was multiplied by ``decay`` (kept in the checkpoint)

    def __init__(self, schedule: str, warmup: int, total: int, decay: float):
        self.schedule, self.warmup, self.total, self.decay = schedule, warmup, total, decay

    def __call__(self, i: int) -> float:
        if self.schedule == "epoch_decay":
            warm = min(1.0, (i + 1) / self.warmup) if self.warmup else 1.0
            return warm * self.decay**self.halvings
        u = i + 1
        if self.warmup and u <= self.warmup:
            return u / self.warmup
        if self.schedule == "inverse_sqrt":
            return (self.warmup / u) ** 0.5
        return max(0.0, (self.total - u) / max(self.total - self.warmup, 1))


def _scheduler(cfg: TrainConfig, optimizer, updates_per_epoch: int):
    if cfg.lr_schedule == "plateau":
        return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="max", factor=cfg.lr_decay,
                                                          patience=cfg.lr_patience)
    if cfg.lr_schedule == "constant":
        return None
    total = cfg.decay_steps or round((cfg.decay_epochs or cfg.max_epochs) * max(updates_per_epoch, 1))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, LRFactor(cfg.lr_schedule, cfg.warmup_steps, total, cfg.lr_decay))


def _steps_per_update(cfg: TrainConfig) -> bool:
    """Whether the schedule moves at every update (else per epoch or on validation)."""
    return cfg.lr_schedule in ("inverse_sqrt", "linear", "epoch_decay")


def _decay_due(cfg: TrainConfig, progress: dict, epoch: int, improved: bool) -> bool:
    """epoch_decay: whether the rate is multiplied by ``lr_decay`` at the end of ``epoch``: from
    ``decay_start_epoch`` on, or (``decay_on_stall``) from the first epoch without a better val
    BLEU; once started, after every epoch (OpenNMT-py's legacy rule; the flag in ``progress``)."""
    if epoch >= cfg.decay_start_epoch or (cfg.decay_on_stall and not improved):
        progress["decay_started"] = True
    return bool(progress.get("decay_started"))


def _halve(run) -> None:
    """One more ``lr_decay`` on the rate of the next update (the schedule's position unchanged)."""
    factor = run.scheduler.lr_lambdas[0]
    factor.halvings += 1
    for group, base in zip(run.optimizer.param_groups, run.scheduler.base_lrs, strict=True):
        group["lr"] = base * factor(run.scheduler.last_epoch)


class _SignalFlag:
    """Remember SIGTERM/SIGUSR1 instead of dying mid-step."""

    def __init__(self):
        self.received: int | None = None
        self._old = {}

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGUSR1):
            try:
                self._old[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not in the main thread: leave signals alone
                pass
        return self

    def _handle(self, signum, frame):  # noqa: ARG002
        self.received = signum

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)
        return False


def _copy_atomic(src: Path, dst: Path) -> None:
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


def _write_curve(path: Path, history: list[dict]) -> None:
    extra = sorted({k for row in history for k in row} - set(CURVE_COLUMNS))
    cols = CURVE_COLUMNS + extra
    with atomic_write(path) as fh:
        fh.write("\t".join(cols) + "\n")
        for row in history:
            fh.write("\t".join(str(row.get(c, "")) for c in cols) + "\n")


@dataclass
class _Run:
    """Everything one training run holds: the parts below read and update it."""

    cfg: TrainConfig
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: object
    device: torch.device
    train_data: object
    val_data: ParallelData
    refs: list[str]
    tgt_vocab: Vocab
    subword: str
    vocab_info: dict
    configs: dict
    imports: list[str]
    best_checkpoint: Path
    last_checkpoint: Path
    curve: Path
    val_tasks: list = field(default_factory=list)  # (name, data, [refs per reference file]) of extra tasks
    code: str | None = None  # the code version running now (the job's `code`: mmt_repro.plan.version)
    progress: dict = field(default_factory=lambda: {
        "epoch": 1, "batch_in_epoch": 0, "step": 0, "best_bleu": -1.0, "bad_epochs": 0, "history": [], "done": False})

    @property
    def best_copy(self) -> Path:  # survives Snakemake's clean-up of a failed job
        return self.last_checkpoint.with_suffix(".best.pt")

    def save_last(self) -> None:
        save_checkpoint(self.last_checkpoint, self.model, self.vocab_info, self.optimizer, self.scheduler,
                        self.progress, self.configs, imports=self.imports)


def _load_data(cfg, sv, tv, files: dict, train_features, val_features, train_image_list, train_extras=None,
               langs=None):
    """Training and validation data, and the validation references, checked. ``train_extras``:
    ``{name: file}`` with one line per training pair, given to the model as ``batch[name]``;
    ``langs``: the pair's languages, which batches carry for multilingual models."""
    extras = {name: read_lines(path) for name, path in (train_extras or {}).items()}
    train_data = ParallelData(files["train_src"], sv, files["train_tgt"], tv, features=train_features,
                              max_len=cfg.max_len, image_list=train_image_list, extras=extras or None, langs=langs)
    val_data = ParallelData(files["val_src"], sv, files["val_tgt"], tv, features=val_features, langs=langs)
    refs = read_lines(files["val_ref"])
    if len(refs) != val_data.n_examples:
        raise DataError(files["val_ref"], f"has {len(refs)} lines, validation data has {val_data.n_examples}",
                        "re-run preprocessing")
    if len(train_data) == 0:
        raise DataError(files["train_src"] or files["train_tgt"],
                        f"no training pair is at most max_len={cfg.max_len} tokens long", "raise max_len")
    return train_data, val_data, refs


def _load_tasks(cfg, sv, tv, tasks: list[dict]) -> tuple[dict[str, ParallelData], list]:
    """The extra training tasks of a multi-task system (``systems.<s>.tasks``), by name: each
    ``{"name", "pair", "src" (None for captioning), "tgt" (a file, or the caption files of a
    split), "features": (npy, index) or None}`` read with the run's vocabularies and ``max_len``;
    and the validation sets of those with ``"val": {"src", "refs", "features"}`` (decoded after
    every epoch into the curve column ``val_bleu_<name>``)."""
    out, vals = {}, []
    for task in tasks:
        src_lang, tgt_lang = pair_langs(task["pair"])
        feats = open_features(*(task.get("features") or (None, None)))
        tgt = task["tgt"]
        if isinstance(tgt, (list, tuple)):  # one file, or several captions per image
            tgt = tgt[0] if len(tgt) == 1 else list(tgt)
        data = ParallelData(task.get("src"), sv, tgt, tv,
                            features=feats, max_len=cfg.max_len, langs=(src_lang, tgt_lang))
        if len(data) == 0:
            raise DataError(task.get("src") or tgt, f"task {task['name']!r} has no training pair of at most "
                            f"max_len={cfg.max_len} tokens", "raise max_len")
        out[task["name"]] = data
        val = task.get("val")
        if val:
            vdata = ParallelData(val.get("src"), sv, features=open_features(*(val.get("features") or (None, None))),
                                 langs=(src_lang, tgt_lang))
            refs = [read_lines(r) for r in val["refs"]]
            for path, lines in zip(val["refs"], refs):
                if len(lines) != vdata.n_examples:
                    raise DataError(path, f"has {len(lines)} lines, the task's validation data has {vdata.n_examples}",
                                    "re-run preprocessing")
            vals.append((task["name"], vdata, refs))
    return out, vals


def _init_from(run: _Run, init_checkpoint: Path, model_name: str) -> None:
    """Fine-tuning: start from the weights of a pre-trained checkpoint with the same vocabularies."""
    init = read_checkpoint(init_checkpoint)
    if init["vocab"] != run.vocab_info:
        raise DataError(
            init_checkpoint,
            f"pre-trained with vocabularies {init['vocab']}, fine-tuning uses {run.vocab_info}",
            "pre-train with the vocabularies of the fine-tuning data (same BPE codes and vocab files)",
        )
    own = run.model.state_dict()
    usable = {k: v for k, v in init["weights"].items() if k in own and own[k].shape == v.shape}
    if not usable:
        raise DataError(init_checkpoint, f"no parameter of {init['model']} fits {model_name}", "pre-train a compatible model")
    run.model.load_state_dict(usable, strict=False)
    fresh = sorted(k for k in own if k not in usable)
    run.configs["init_checkpoint"] = str(init_checkpoint)
    log.info(
        "fine-tuning from %s (%s, %s steps): %d of %d tensors initialised%s",
        init_checkpoint, init["model"], init["progress"].get("step"), len(usable), len(own),
        f"; fresh (not in the pre-trained model): {', '.join(fresh)}" if fresh else "",
    )


def _resume(run: _Run, model_name: str) -> None:
    """Continue from the last checkpoint when it was written by this very configuration (keys
    added to the configs since then count as their defaults: :func:`same_configuration`)."""
    if not run.last_checkpoint.exists():
        return
    ckpt = read_checkpoint(run.last_checkpoint)
    defaults = {"train": field_defaults(TrainConfig), "model": field_defaults(type(run.model.config))}
    if not (ckpt["model"] == model_name and same_configuration(ckpt["train_config"], run.configs, defaults)
            and ckpt["vocab"] == run.vocab_info):
        log.warning("ignoring %s: it was written with another model, configuration or vocabulary", run.last_checkpoint)
        return
    run.model.load_state_dict(ckpt["weights"])
    run.optimizer.load_state_dict(ckpt["optimizer"])
    if run.scheduler is not None and ckpt["scheduler"] is not None:
        run.scheduler.load_state_dict(ckpt["scheduler"])
    run.progress = ckpt["progress"]
    set_rng_state(ckpt["rng"])
    p = run.progress
    log.info("resuming from %s: epoch %d, batch %d, step %d", run.last_checkpoint, p["epoch"], p["batch_in_epoch"], p["step"])


def _amp(run: _Run) -> bool:
    """bf16 autocast: ``amp: true`` on a GPU (on the CPU training stays fp32)."""
    return bool(run.cfg.amp) and run.device.type == "cuda"


def _train_step(run: _Run, group: list[list[int]], sums: StepSums | dict, collated: list[dict] | None = None) -> None:
    """One update from the batches in ``group`` (``accumulate`` of them; lists of example ids),
    through :func:`~mmt_repro.train.step.train_update` (no host synchronisation). Adds ``loss``
    and every other scalar of ``forward`` (times n_tokens) to ``sums``: a :class:`StepSums`
    (on the device), or a plain dict of floats (read at once; tests and callers of old).

    With one batch the update minimises the model's ``loss`` as it is. With several, each
    batch's ``loss`` (a per-token mean, the contract) is weighted by its ``n_tokens`` and the
    summed gradient divided by the group's tokens: the per-token mean over the whole group,
    as if it were one batch (fairseq's ``--update-freq``). ``collated``: the group's batches
    already collated (by the :class:`~mmt_repro.train.prefetch.Prefetcher`)."""
    acc = sums if isinstance(sums, StepSums) else StepSums()
    batches = collated if collated is not None else (run.train_data.collate(ids) for ids in group)
    train_update(run.model, run.optimizer, batches, run.device,
                 amp=_amp(run), clip_norm=run.cfg.clip_norm, sums=acc, step=run.progress["step"] + 1,
                 n_batches=len(group))
    if run.scheduler is not None and _steps_per_update(run.cfg):
        run.scheduler.step()
    if not isinstance(sums, StepSums):
        for key, value in acc.read().items():
            sums[key] = sums.get(key, 0) + value


def _means(sums: dict) -> dict:
    n = max(sums.get("n_tokens", 0), 1)
    return {k: v / n for k, v in sums.items() if k != "n_tokens"}


def _run_epoch(run: _Run, flag: _SignalFlag, started: float, elapsed_before: float) -> tuple[dict, float, str | None]:
    """Train the rest of the current epoch. Returns (sums, seconds, budget stop reason or None)."""
    cfg, p = run.cfg, run.progress
    trained_by = p.setdefault("trained_by", [])  # the code versions that trained these weights
    if run.code and run.code not in trained_by:
        trained_by.append(run.code)
    batches = run.train_data.train_batches(cfg.batch_size, cfg.seed, p["epoch"], by_tokens=cfg.batch_by_tokens)
    run.model.train()
    # Sums stay on the device; they are read (one host sync) only to log, before a checkpoint
    # is saved (a non-finite loss raises there, before anything is written) and at the end.
    sums = StepSums()
    t0, first_bi = time.monotonic(), p["batch_in_epoch"]
    starts = range(first_bi, len(batches), cfg.accumulate)
    groups = [batches[start : start + cfg.accumulate] for start in starts]
    # the next updates' batches are collated (and pinned on a GPU) by a background thread
    with Prefetcher(run.train_data.collate, groups, prefetch_depth(run.device), pin=run.device.type == "cuda") as pf:
        return _train_groups(run, flag, started, elapsed_before, batches, zip(starts, groups, pf), sums, t0, first_bi)


def _train_groups(run: _Run, flag, started: float, elapsed_before: float, batches: list, todo, sums: StepSums,
                  t0: float, first_bi: int) -> tuple[dict, float, str | None]:
    """The update loop of :func:`_run_epoch` over ``todo``: (first batch index, group of id
    lists, its collated batches)."""
    cfg, p = run.cfg, run.progress
    for start, group, collated in todo:
        _train_step(run, group, sums, collated)
        bi = start + len(group) - 1
        p["step"] += 1
        p["batch_in_epoch"] = bi + 1
        if cfg.log_every and p["step"] % cfg.log_every == 0:
            now = sums.read()
            dt = time.monotonic() - t0
            left = (len(batches) - bi - 1) * dt / (bi + 1 - first_bi)
            shown = " ".join(f"{k} {v:.4f}" for k, v in _means(now).items())
            log.info("epoch %d batch %d/%d step %d %s %.0f tok/s epoch ETA %.0fs", p["epoch"], bi + 1, len(batches),
                     p["step"], shown, now["n_tokens"] / max(dt, 1e-9), left)
        if flag.received is not None:
            sums.read()
            run.save_last()
            log.warning("signal %d received: saved %s at step %d; re-run to resume", flag.received, run.last_checkpoint, p["step"])
            raise SystemExit(INTERRUPTED_EXIT_CODE)
        if cfg.checkpoint_every and p["step"] % cfg.checkpoint_every == 0:
            sums.read()
            run.save_last()
        if cfg.max_steps and p["step"] >= cfg.max_steps:
            return sums.read(), time.monotonic() - t0, "max_steps"
        if cfg.time_budget_min and elapsed_before + time.monotonic() - started >= cfg.time_budget_min * 60:
            return sums.read(), time.monotonic() - t0, "time_budget"
    return sums.read(), time.monotonic() - t0, None


def validate(run: _Run, data=None, refs: list[list[str]] | None = None) -> float:
    """Validation BLEU: decode the validation set (or ``data``), merge subwords, score against
    the references (``refs``: one list per reference file)."""
    settings = DecodeSettings(beam_size=run.cfg.val_beam, max_len=run.cfg.val_max_len, batch_size=run.cfg.val_batch_size)
    data = run.val_data if data is None else data
    hyps = to_text(decode_data(run.model, data, settings, run.device).hyps, run.tgt_vocab, run.subword)
    refs = [run.refs] if refs is None else [merge_subwords(r, run.subword) for r in refs]
    return corpus_scores(hyps, refs, metrics=("bleu",), tokenize="none")["bleu"]["value"]


def _save_best(run: _Run, path: Path, epoch: int) -> None:
    save_checkpoint(path, run.model, run.vocab_info, None, None, dict(run.progress, best_epoch=epoch), run.configs,
                    with_rng=False, imports=run.imports)


def _end_epoch(run: _Run, sums: dict, seconds: float, elapsed: float, budget_stop: str | None) -> str | None:
    """Validate, keep the best checkpoint, step the schedule, write the curve; the stop reason."""
    cfg, p = run.cfg, run.progress
    epoch = p["epoch"]
    bleu = validate(run)
    better = bleu > p["best_bleu"]
    if better:
        p["best_bleu"], p["bad_epochs"] = bleu, 0
        _save_best(run, run.best_checkpoint, epoch)
        _copy_atomic(run.best_checkpoint, run.best_copy)
    else:
        p["bad_epochs"] += 1
    if cfg.lr_schedule == "plateau":
        run.scheduler.step(bleu)
    elif cfg.lr_schedule == "epoch_decay" and _decay_due(cfg, p, epoch, better):
        _halve(run)
    means = _means(sums)
    row = {"epoch": epoch, "step": p["step"], "val_bleu": round(bleu, 2), "lr": run.optimizer.param_groups[0]["lr"],
           "tokens_per_s": round(sums.get("n_tokens", 0) / max(seconds, 1e-9), 1), "elapsed_s": round(elapsed, 1)}
    row.update({k: round(v, 5) for k, v in means.items()})
    for name, data, refs in run.val_tasks:  # the extra tasks' curves (BertGen's Figure 4), their bests
        row[f"val_bleu_{name}"] = round(score := validate(run, data, refs), 2)
        if cfg.best_per_task and is_new_best(p, name, score):
            _save_best(run, task_best_file(run.best_checkpoint, name), epoch)
    if hasattr(run.train_data, "curve_columns"):  # e.g. passes over each task (data views)
        row.update(run.train_data.curve_columns(p["step"] * cfg.accumulate, cfg.batch_size))
    p["history"].append(row)
    log.info("epoch %d done: train loss %.4f, val BLEU %.2f%s", epoch, means.get("train_loss", 0.0), bleu,
             " (best)" if better else "")
    _write_curve(run.curve, p["history"])
    p["epoch"] += 1
    p["batch_in_epoch"] = 0
    stop = budget_stop
    if stop is None and p["bad_epochs"] >= cfg.patience:
        stop = "early_stopping"
    elif stop is None and p["epoch"] > cfg.max_epochs:
        stop = "max_epochs"
    p["done"] = stop is not None
    run.save_last()
    return stop


def _loop(run: _Run) -> str:
    """Epochs until a budget, early stopping or max_epochs; returns the reason it stopped."""
    started = time.monotonic()
    elapsed_before = run.progress["history"][-1]["elapsed_s"] if run.progress["history"] else 0.0
    stop_reason = "max_epochs"
    with _SignalFlag() as flag:
        while not run.progress["done"] and run.progress["epoch"] <= run.cfg.max_epochs:
            sums, seconds, budget_stop = _run_epoch(run, flag, started, elapsed_before)
            elapsed = elapsed_before + time.monotonic() - started
            stop_reason = _end_epoch(run, sums, seconds, elapsed, budget_stop) or stop_reason
    return stop_reason


def _finish(run: _Run, stop_reason: str, steps_before: int) -> dict:
    # Snakemake deletes the outputs of a failed (e.g. cancelled) job; a resumed run restores them.
    if not run.best_checkpoint.exists() and run.best_copy.exists():
        _copy_atomic(run.best_copy, run.best_checkpoint)
    _write_curve(run.curve, run.progress["history"])
    if not run.best_checkpoint.exists():
        raise RuntimeError(f"training ended without a validation: {run.best_checkpoint} was not written")
    p = run.progress
    summary = {
        "best_val_bleu": p["best_bleu"],
        "epochs": p["epoch"] - 1,
        "steps": p["step"],
        "stop_reason": stop_reason,
        "train_target_tokens_per_epoch": run.train_data.n_target_tokens(),
        "elapsed_s": p["history"][-1]["elapsed_s"] if p["history"] else 0.0,
        # which code trained the weights, and whether this call only restored a finished run
        "trained_by_code": list(p.get("trained_by", [])),
        "restored": p["step"] == steps_before,
    }
    log.info("training finished: %s", summary)
    return summary


def train(
    model_name: str,
    model_config: dict,
    train_config: dict,
    src_vocab: Path | None,
    tgt_vocab: Path,
    train_src: Path | None,
    train_tgt: Path,
    val_src: Path | None,
    val_tgt: Path,
    val_ref: Path,
    best_checkpoint: Path,
    last_checkpoint: Path,
    curve: Path,
    train_features=None,
    val_features=None,
    device: str = "auto",
    init_checkpoint: Path | None = None,
    train_image_list: Path | None = None,
    subword: str = "none",
    resources: dict | None = None,
    imports: list[str] | tuple[str, ...] = (),
    train_extras: dict | None = None,
    pair: str | None = None,
    tasks: list[dict] | None = None,
    code: str | None = None,
) -> dict:
    """Train ``model_name`` and write ``best_checkpoint`` (best validation BLEU), the resumable
    ``last_checkpoint`` and the ``curve`` TSV.

    ``*_features``: feature stores (objects with ``len`` and ``[row] -> (L, D)``) or None for
    text-only models. ``val_ref``: the validation reference in the scoring form; hypotheses are
    compared after merging the target's ``subword`` segmentation (the recipe's). ``src_*`` may
    be None for tasks without source text. ``init_checkpoint``: start from the weights of a
    pre-trained checkpoint with the same vocabularies (fine-tuning; the optimiser starts afresh);
    parameters the pre-trained model lacks keep their initialisation, and the log lists them.
    ``train_image_list``: one image name per training sentence, looked up in ``train_features``
    by name. ``resources``: ``{name: path}`` the system declares (pretrained vectors or weights).
    ``imports``: extra modules that register the model. ``train_extras``: ``{name: file}``,
    per-example extras of the training pairs (one line each, e.g. ``align``: the word alignments
    of the align stage), in the batch as ``batch[name]`` (lists of lines). ``pair``: the language
    pair (``src-tgt``, ``im-tgt`` for captioning): batches then carry ``src_lang``/``tgt_lang``.
    ``tasks``: the extra training tasks of a multi-task system (:func:`_load_tasks`), handed to
    the model's ``wrap_training_data(data, tasks)``. ``code``: the code version running (the
    job's; kept in the checkpoints' progress as ``trained_by`` for every epoch it trains).
    Returns a summary dict."""
    cfg = make_train_config(train_config)
    import_model_modules(imports)
    dev = pick_device(device)
    torch.manual_seed(cfg.seed)
    sv = Vocab.load(src_vocab) if src_vocab is not None else None
    tv = Vocab.load(tgt_vocab)
    files = {"train_src": train_src, "train_tgt": train_tgt, "val_src": val_src, "val_tgt": val_tgt, "val_ref": val_ref}
    langs = pair_langs(pair) if pair else None
    train_data, val_data, refs = _load_data(cfg, sv, tv, files, train_features, val_features, train_image_list,
                                            train_extras, langs)
    refs = merge_subwords(refs, subword)  # a wp chain's references hold pieces (others: unchanged)
    task_data, val_tasks = _load_tasks(cfg, sv, tv, tasks or [])
    model = build_model(model_name, model_config, Vocabs.of(sv, tv), {k: Path(v) for k, v in (resources or {}).items()})
    model.to(dev)
    check_feature_dim(model, train_features, val_features)
    optimizer = _optimizer(cfg, model.parameters())
    # the model may replace the data by a view of it; extra tasks go to models that take them
    train_data = model.wrap_training_data(train_data, task_data) if task_data else model.wrap_training_data(train_data)
    if hasattr(train_data, "counts"):
        log.info("training examples per task: %s", train_data.counts())
    _make_resident(train_data, dev)
    updates = 0  # per epoch: only the linear schedule without decay_steps needs it
    if cfg.lr_schedule == "linear" and not cfg.decay_steps:
        updates = -(-len(train_data.train_batches(cfg.batch_size, cfg.seed, 1, by_tokens=cfg.batch_by_tokens)) // cfg.accumulate)
    run = _Run(
        cfg=cfg, model=model, optimizer=optimizer, scheduler=_scheduler(cfg, optimizer, updates), device=dev,
        train_data=train_data, val_data=val_data, refs=refs, tgt_vocab=tv, subword=subword,
        vocab_info={"src": sv.fingerprint() if sv else None, "tgt": tv.fingerprint(), "src_size": len(sv) if sv else 0,
                    "tgt_size": len(tv)},
        configs={"model": dataclasses.asdict(model.config), "train": dataclasses.asdict(cfg)},
        imports=list(imports), best_checkpoint=Path(best_checkpoint), last_checkpoint=Path(last_checkpoint),
        curve=Path(curve), val_tasks=val_tasks, code=code,
    )
    if init_checkpoint is not None:
        _init_from(run, Path(init_checkpoint), model_name)
    _resume(run, model_name)
    log.info(
        "training %s on %s: %d pairs, %d parameters, device %s, batch %d%s, optimizer %s",
        model_name, train_src or train_tgt, len(train_data), sum(p.numel() for p in model.parameters()), dev,
        cfg.batch_size, " tokens" if cfg.batch_by_tokens else "", cfg.optimizer,
    )
    log.info("training device: %s", describe_device(dev, amp=bool(cfg.amp)))
    steps_before = run.progress["step"]
    return _finish(run, _loop(run), steps_before)


def _make_resident(train_data, device: torch.device) -> None:
    """Hold the training set's feature store on the device when it fits (mmt_repro.datasets.resident)."""
    store = getattr(train_data, "features", None)
    if store is None or not hasattr(train_data, "resident"):
        return
    keep, why = resident_choice(store, device)
    if keep:
        t0 = time.monotonic()
        train_data.resident = ResidentFeatures(store, device)
        log.info("training features resident on %s (%s), loaded in %.1f s", device, why, time.monotonic() - t0)
    else:
        log.info("training features read from the host per batch (%s)", why)


def train_from_files(train_features=(None, None), val_features=(None, None), **kwargs) -> dict:
    """:func:`train` with feature stores given as ``(npy, index)`` paths (None: text-only)."""
    return train(
        train_features=open_features(*train_features),
        val_features=open_features(*val_features),
        **kwargs,
    )
