"""Training hyperparameters shared by every model (torch-free, so that planning can check them)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass
class TrainConfig:
    """Training hyperparameters (shared by every model)."""

    optimizer: str = "adadelta"  # adadelta | adam
    lr: float = 1.0  # learning rate (ADADELTA's conventional 1.0)
    weight_decay: float = 0.0  # L2 penalty passed to the optimiser
    batch_size: int = 80  # sentences per batch, or target tokens when batch_by_tokens
    batch_by_tokens: bool = False  # batch_size counts target tokens instead of sentences
    max_len: int = 80  # drop training pairs with more tokens than this on either side
    max_epochs: int = 100  # hard limit on epochs
    max_steps: int = 0  # hard limit on updates (0: none)
    time_budget_min: float = 0.0  # stop after this many minutes of training (0: none)
    patience: int = 20  # early stopping: epochs without a better validation BLEU
    clip_norm: float = 1.0  # gradient norm clipping (0: off)
    lr_schedule: str = "constant"  # constant | plateau (halve lr when val BLEU stalls)
    lr_patience: int = 2  # plateau schedule: epochs without improvement before halving
    val_beam: int = 1  # beam size for validation decoding (1: greedy)
    val_max_len: int = 80  # maximum length of validation translations
    val_batch_size: int = 64  # sentences per validation batch
    seed: int = 1  # seeds dropout, initialisation and batch order
    amp: bool = False  # bfloat16 autocast on a GPU (ignored on CPU)
    log_every: int = 50  # log progress every this many updates
    checkpoint_every: int = 0  # also save the last checkpoint every this many updates (0: per epoch)

    def __post_init__(self):
        if self.optimizer not in ("adadelta", "adam"):
            raise ValueError(f"unknown optimizer {self.optimizer!r}; valid: adadelta, adam")
        if self.lr_schedule not in ("constant", "plateau"):
            raise ValueError(f"unknown lr_schedule {self.lr_schedule!r}; valid: constant, plateau")


def make_dataclass_config(cls, values: dict | None, what: str):
    """``cls(**values)`` after rejecting unknown keys with the list of valid ones."""
    values = dict(values or {})
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ValueError(f"unknown {what} key(s) {unknown}; valid keys: {', '.join(sorted(fields))}")
    return cls(**values)


def make_train_config(values: dict | None) -> TrainConfig:
    return make_dataclass_config(TrainConfig, values, "training config")
