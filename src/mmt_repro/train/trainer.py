"""The one trainer every model shares: ``train(job) = fit(build_run(job))``.

:func:`~mmt_repro.train.run.build_run` turns a :class:`~mmt_repro.plan.jobs.TrainJob` into a
:class:`~mmt_repro.train.run.Run` (data, model, optimiser, schedule, resumed state); :func:`fit`
trains it. The model supplies ``forward(batch) -> {"loss", "n_tokens", ...}`` (the contract of
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

import logging
import shutil
import signal
import time
from pathlib import Path

from ..checkpoint import save_checkpoint
from ..decode.loop import decode_data, to_text
from ..io import atomic_path, atomic_write
from ..metrics.mt import corpus_scores
from ..plan.jobs import TrainJob
from ..settings import DecodeSettings, TrainConfig, make_train_config
from ..text.recipes import merge_subwords
from .graphs import mark_step
from .prefetch import Prefetcher, prefetch_depth
from .run import Run, build_run
from .schedules import decay_due, halve, steps_per_update
from .step import StepSums, train_update
from .task_best import is_new_best, task_best_file

log = logging.getLogger(__name__)

INTERRUPTED_EXIT_CODE = 75  # EX_TEMPFAIL: "try again", the job resumes when re-run
CURVE_COLUMNS = ["epoch", "step", "train_loss", "val_bleu", "lr", "tokens_per_s", "elapsed_s"]

__all__ = ["INTERRUPTED_EXIT_CODE", "Run", "TrainConfig", "build_run", "fit", "make_train_config", "train"]


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


def _amp(run: Run) -> bool:
    """bf16 autocast: ``amp: true`` on a GPU (on the CPU training stays fp32)."""
    return bool(run.cfg.amp) and run.device.type == "cuda"


def _train_step(run: Run, group: list[list[int]], sums: StepSums, collated: list[dict]) -> None:
    """One update from the batches in ``group`` (``accumulate`` of them; lists of example ids),
    already collated by the :class:`~mmt_repro.train.prefetch.Prefetcher`, through
    :func:`~mmt_repro.train.step.train_update` (no host synchronisation). Adds ``loss`` and every
    other scalar of ``forward`` (times n_tokens) to ``sums`` (on the device).

    With one batch the update minimises the model's ``loss`` as it is. With several, each
    batch's ``loss`` (a per-token mean, the contract) is weighted by its ``n_tokens`` and the
    summed gradient divided by the group's tokens: the per-token mean over the whole group,
    as if it were one batch (fairseq's ``--update-freq``)."""
    mark_step(run.forward)
    train_update(run.model, run.optimizer, collated, run.device,
                 amp=_amp(run), clip_norm=run.cfg.clip_norm, sums=sums, step=run.progress["step"] + 1,
                 n_batches=len(group), forward=run.forward)
    if run.scheduler is not None and steps_per_update(run.cfg):
        run.scheduler.step()


def _means(sums: dict) -> dict:
    n = max(sums.get("n_tokens", 0), 1)
    return {k: v / n for k, v in sums.items() if k != "n_tokens"}


def _run_epoch(run: Run, flag: _SignalFlag, started: float, elapsed_before: float) -> tuple[dict, float, str | None]:
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


def _train_groups(run: Run, flag, started: float, elapsed_before: float, batches: list, todo, sums: StepSums,
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


def validate(run: Run, data=None, refs: list[list[str]] | None = None) -> float:
    """Validation BLEU: decode the validation set (or ``data``), merge subwords, score against
    the references (``refs``: one list per reference file)."""
    settings = DecodeSettings(beam_size=run.cfg.val_beam, max_len=run.cfg.val_max_len, batch_size=run.cfg.val_batch_size)
    data = run.val_data if data is None else data
    hyps = to_text(decode_data(run.model, data, settings, run.device).hyps, run.tgt_vocab, run.subword)
    refs = [run.refs] if refs is None else [merge_subwords(r, run.subword) for r in refs]
    return corpus_scores(hyps, refs, metrics=("bleu",), tokenize="none")["bleu"]["value"]


def _save_best(run: Run, path: Path, epoch: int) -> None:
    save_checkpoint(path, run.model, run.vocab_info, None, None, dict(run.progress, best_epoch=epoch), run.configs,
                    with_rng=False, imports=run.imports)


def _end_epoch(run: Run, sums: dict, seconds: float, elapsed: float, budget_stop: str | None) -> str | None:
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
    elif cfg.lr_schedule == "epoch_decay" and decay_due(cfg, p, epoch, better):
        halve(run.optimizer, run.scheduler)
    means = _means(sums)
    row = {"epoch": epoch, "step": p["step"], "val_bleu": round(bleu, 2), "lr": run.optimizer.param_groups[0]["lr"],
           "tokens_per_s": round(sums.get("n_tokens", 0) / max(seconds, 1e-9), 1), "elapsed_s": round(elapsed, 1)}
    row.update({k: round(v, 5) for k, v in means.items()})
    for name, data, refs in run.val_tasks:  # the extra tasks' curves (BertGen's Figure 4), their bests
        row[f"val_bleu_{name}"] = round(score := validate(run, data, refs), 2)
        if cfg.best_per_task and is_new_best(p, name, score):
            _save_best(run, task_best_file(run.best_checkpoint, name), epoch)
    row.update(run.train_data.curve_columns(p["step"] * cfg.accumulate, cfg.batch_size))  # BertGen: passes per task
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


def _loop(run: Run) -> str:
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


def _finish(run: Run, stop_reason: str) -> dict:
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
        "restored": p["step"] == run.steps_at_start,
    }
    log.info("training finished: %s", summary)
    return summary


def fit(run: Run) -> dict:
    """Train ``run`` until a budget, early stopping or ``max_epochs`` (from where it stands:
    a resumed run goes on), writing its best checkpoint (best validation BLEU), the resumable
    last checkpoint and the curve TSV. Returns a summary dict (``best_val_bleu``, ``epochs``,
    ``steps``, ``stop_reason``, ``trained_by_code``, ``restored``, ...)."""
    return _finish(run, _loop(run))


def train(job: TrainJob, code: str | None = None) -> dict:
    """Train the system of ``job`` (:func:`~mmt_repro.train.run.build_run`, then :func:`fit`)."""
    return fit(build_run(job, code))
