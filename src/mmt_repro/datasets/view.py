"""What the shared trainer asks of its training data, whatever the paper (a typed protocol).

A plain split is a :class:`~mmt_repro.datasets.batching.ParallelData`; BertGen's training data
is its multi-task view of unrolled examples (:class:`~mmt_repro.datasets.unroll.MultiTaskData`,
batches laid out by :mod:`mmt_repro.datasets.bertgen`). :func:`training_view` picks the view a
model declares (``training_examples``). The trainer calls the protocol's methods only, on
either, and never probes for one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class TrainingData(Protocol):
    def __len__(self) -> int:
        """Training examples of one epoch (pairs, or unrolled examples of the reference task)."""

    def n_target_tokens(self) -> int:
        """Target tokens an epoch predicts."""

    def train_batches(self, batch_size: int, seed: int, epoch: int, by_tokens: bool = False) -> Sequence:
        """The epoch's batches in order (example ids each): a pure function of ``(seed, epoch)``,
        so a resumed run sees the same batches."""

    def collate(self, ids) -> dict:
        """One batch of tensors (the model contract of :mod:`mmt_repro.models.base`)."""

    def curve_columns(self, batches: int, batch_size: int) -> dict[str, float]:
        """Columns of the learning curve after ``batches`` batches (BertGen: passes over each
        task); empty for a plain split."""

    def describe(self) -> str | None:
        """A line for the log about the data's make-up (examples per task), or None."""

    def hold_features_on(self, device: torch.device) -> str | None:
        """Hold the training feature store on ``device`` when it fits
        (:mod:`mmt_repro.datasets.resident`); returns what was done, for the log (None: no
        store)."""


def training_view(model, data, tasks: dict | None = None, shape_buckets=(), batch_size: int = 0) -> TrainingData:
    """The training data as ``model`` is fed: the split's pairs (``data``, a
    :class:`~mmt_repro.datasets.batching.ParallelData`), or for a model with
    ``training_examples = "unrolled"`` (BertGen) the unrolled multi-task view of ``data`` and
    the extra ``tasks`` (``{name: ParallelData}``, :func:`mmt_repro.datasets.bertgen.unrolled_view`).
    ``shape_buckets``: the training config's, for ``batch_size`` examples (per task) a step
    (BertGen's padded shapes). Refuses extra tasks or shape buckets for a model of pairs, and a
    model not ready to train (``model.ready_to_train()``)."""
    model.ready_to_train()
    if model.training_examples == "unrolled":
        from .bertgen import unrolled_view

        return unrolled_view(model, data, tasks, shape_buckets, batch_size)
    if shape_buckets:
        raise ValueError(f"{model.registry_name}: shape_buckets pads BertGen's unrolled batches; "
                         "drop it for a model of pairs")
    if model.training_examples != "pairs":
        raise ValueError(f"{model.registry_name}: training_examples = {model.training_examples!r}; "
                         "valid: pairs, unrolled")
    if tasks:
        raise ValueError(f"{model.registry_name} takes no extra training tasks ({', '.join(tasks)}): "
                         "drop the system's `tasks`")
    return data
