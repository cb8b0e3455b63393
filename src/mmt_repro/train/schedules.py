"""Learning-rate schedules of the shared trainer (``train_config.lr_schedule``).

- ``constant``: the base rate throughout;
- ``plateau``: ``ReduceLROnPlateau`` on validation BLEU (factor ``lr_decay``, ``lr_patience``);
- ``inverse_sqrt``, ``linear``, ``epoch_decay``: a ``LambdaLR`` whose factor is
  :class:`LRFactor` (warm-up, then the schedule's decay), stepped after every update;
  ``epoch_decay`` also lowers the rate at epoch ends (:func:`decay_due`, :func:`halve`).

``batch_scale`` k (:func:`scaled_train_config`): k times the examples a step, the rate times k,
the warm-up and ``decay_steps`` divided by k (BertGen's option, the authors' linear rule).
"""

from __future__ import annotations

import dataclasses

import torch

from ..settings import TrainConfig

__all__ = ["LRFactor", "decay_due", "halve", "make_scheduler", "scaled_train_config", "steps_per_update"]


class LRFactor:
    """The factor on the base learning rate after ``i`` scheduler steps (``LambdaLR``'s lambda;
    a class so that its settings go into the checkpoint). Per-update schedules see ``i`` =
    updates done, so update ``u`` (1-based) runs at ``lr * factor(u - 1)``:

    - ``inverse_sqrt``: ``min(u / W, sqrt(W / u))`` (linear warm-up over ``W`` updates to the
      peak ``lr``, then inverse square root; Vaswani et al. 2017, eq. 3 of section 5.3);
    - ``linear``: ``u / W`` during warm-up, then ``max(0, (T - u) / (T - W))``;
    - ``epoch_decay``: ``min(1, u / W) * lr_decay ** halvings`` (no warm-up when ``W`` = 0), where
      ``halvings`` counts the epoch ends at which the trainer lowered the rate (:func:`decay_due`).
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


def make_scheduler(cfg: TrainConfig, optimizer, updates_per_epoch: int):
    """The scheduler of ``cfg.lr_schedule`` (None for ``constant``). ``updates_per_epoch``:
    only the ``linear`` schedule without ``decay_steps`` needs it (its length in updates)."""
    if cfg.lr_schedule == "plateau":
        return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="max", factor=cfg.lr_decay,
                                                          patience=cfg.lr_patience)
    if cfg.lr_schedule == "constant":
        return None
    total = cfg.decay_steps or round((cfg.decay_epochs or cfg.max_epochs) * max(updates_per_epoch, 1))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, LRFactor(cfg.lr_schedule, cfg.warmup_steps, total, cfg.lr_decay))


def needs_epoch_length(cfg: TrainConfig) -> bool:
    """Whether :func:`make_scheduler` needs the number of updates per epoch."""
    return cfg.lr_schedule == "linear" and not cfg.decay_steps


def steps_per_update(cfg: TrainConfig) -> bool:
    """Whether the schedule moves at every update (else per epoch or on validation)."""
    return cfg.lr_schedule in ("inverse_sqrt", "linear", "epoch_decay")


def decay_due(cfg: TrainConfig, progress: dict, epoch: int, improved: bool) -> bool:
    """epoch_decay: whether the rate is multiplied by ``lr_decay`` at the end of ``epoch``: from
    ``decay_start_epoch`` on, or (``decay_on_stall``) from the first epoch without a better val
    BLEU; once started, after every epoch (OpenNMT-py's legacy rule; the flag in ``progress``)."""
    if epoch >= cfg.decay_start_epoch or (cfg.decay_on_stall and not improved):
        progress["decay_started"] = True
    return bool(progress.get("decay_started"))


def halve(optimizer, scheduler) -> None:
    """One more ``lr_decay`` on the rate of the next update (the schedule's position unchanged)."""
    factor = scheduler.lr_lambdas[0]
    factor.halvings += 1
    for group, base in zip(optimizer.param_groups, scheduler.base_lrs, strict=True):
        group["lr"] = base * factor(scheduler.last_epoch)


def scaled_train_config(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` at ``batch_scale`` k: ``batch_size`` x k examples (per task, for BertGen), the
    peak ``lr`` x k, ``warmup_steps`` and ``decay_steps`` / k (rounded; the same examples seen
    during warm-up and before the decay ends); ``batch_scale`` stays k. The learning rate follows
    the authors' linear rule, ``base_lr = TRAIN.LR * batch_size`` with ``batch_size`` the
    examples of a step (ImperialNLP/BertGen, ``LanguageGeneration/function/train.py`` L207-211).
    k = 1 returns ``cfg`` itself. Apply it once (the trainer does, in ``build_run``)."""
    k = int(cfg.batch_scale)
    if k == 1:
        return cfg
    return dataclasses.replace(cfg, batch_size=cfg.batch_size * k, lr=cfg.lr * k,
                               warmup_steps=round(cfg.warmup_steps / k), decay_steps=round(cfg.decay_steps / k))

