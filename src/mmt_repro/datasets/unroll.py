"""Sequence unrolling and the multi-task mix (BertGen, Mitzalis et al. 2021, eq. 1 and section 3),
as lazy views of :class:`~mmt_repro.datasets.batching.ParallelData`.

:class:`UnrolledData` -- "BertGen explicitly unrolls the example n times, forming n new training
examples": a sentence whose target has ``n`` tokens gives ``n + 1`` examples ``(i, t)``,
``t = 0..n``; example ``(i, t)`` sees the first ``t`` target tokens and predicts token ``t``, or
``[STOP]`` at ``t = n`` (the released code appends one example for [STOP]). Nothing is copied:
an example is a flat index, mapped to ``(sentence, t)`` through the cumulative example counts
(:meth:`UnrolledData.locate`), so the unrolled corpus costs one integer per sentence.

:class:`MultiTaskData` -- "one example per task" per step, and "one BertGen epoch [is] a single
pass over all of the training data for the Multi30k En->De MMT task ... the reference task":
each step takes ``batch_size`` unrolled examples of every task; an epoch is one pass over the
first task's examples; every other task runs through its own shuffled passes, continuing from
epoch to epoch (the released MultiTaskDataLoader restarts a finished loader). With
``epoch_examples`` an epoch is that many reference examples instead, and the reference task
streams through its passes like the others (validation more often).

The order is a pure function of ``(seed, epoch)`` (as :meth:`ParallelData.train_batches`), so a
resumed run sees what an uninterrupted one sees: the reference task's pass ``e`` and, for task
``k``, the steps ``(e - 1) * S .. e * S - 1`` of its endless stream of passes, pass ``p``
shuffled by ``(seed, k, p)``. Within a pass, examples are shuffled, sorted by text length in
pools of 50 batches (less padding) and the batches shuffled.

:func:`mmt_repro.text.positions.seq_len_cap` -- the authors' dataset code caps an example of an image task at
``seq_len`` text + region positions (64 in their training runs): regions go first, and once the
text passes ``seq_len / 2`` positions it is cut too, its [MASK] and label with it (BertGen's
``image_seq_len``; the function's docstring says how). With the cap on, the examples of an
image task are not sorted by length within a pool (every capped row has about ``seq_len``
positions, and sorting would gather the label-less examples into whole batches).

A batch (what :meth:`MultiTaskData.train_batches` lists) is an int array ``(n, 2)`` of
``(task, example)``; :meth:`MultiTaskData.collate` hands ``(data, sentence, t)`` triples to its
builder (BertGen's :class:`mmt_repro.datasets.bertgen.UnrolledBatches`), which lays out the input.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

POOL = 50  # batches per length-sorted pool


class UnrolledData:
    """The unrolled examples of one :class:`~mmt_repro.datasets.batching.ParallelData` (module
    docstring); ``len`` = examples, ``sentences`` = the data's kept sentence ids."""

    def __init__(self, data, sort_by_length: bool = True):
        if data.tgt is None:
            raise ValueError("sequence unrolling needs target text")
        self.data = data
        self.sort_by_length = bool(sort_by_length)  # within pools of batches (less padding)
        self.sentences = np.asarray(data.indices, dtype=np.int64)
        counts = np.array([len(data.tgt[i]) + 1 for i in self.sentences], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(counts)])
        src = np.array([len(data.src[i]) if data.src is not None else 0 for i in self.sentences], dtype=np.int64)
        self._src_len = src

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def locate(self, k: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        """``(sentence ids, t)`` of flat example indices ``k``."""
        k = np.asarray(k, dtype=np.int64)
        j = np.searchsorted(self.offsets, k, side="right") - 1
        return self.sentences[j], k - self.offsets[j]

    def text_length(self, k: np.ndarray) -> np.ndarray:
        """Source tokens + target prefix of examples ``k`` (what their rows grow with)."""
        j = np.searchsorted(self.offsets, np.asarray(k, dtype=np.int64), side="right") - 1
        return self._src_len[j] + (np.asarray(k) - self.offsets[j])

    def n_target_tokens(self) -> int:
        return len(self)

    def pass_batches(self, batch_size: int, seed: int) -> _Pass:
        """One shuffled pass over the examples in batches (length-sorted within pools, unless
        ``sort_by_length`` is off)."""
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(self))
        pool = batch_size * POOL
        for start in range(0, len(order), pool) if self.sort_by_length else ():
            chunk = order[start : start + pool]
            order[start : start + pool] = chunk[np.argsort(self.text_length(chunk), kind="stable")]
        return _Pass(order, rng.permutation(-(-len(order) // batch_size)), batch_size)


class _Pass:
    """A pass's batches without one array per batch (the paper's batches hold one example, and a
    task has up to 8.4M): batch ``j`` is the slice ``perm[j]`` of size ``batch_size`` of
    ``order`` (pools hold whole batches, so only the very last one is shorter)."""

    def __init__(self, order: np.ndarray, perm: np.ndarray, batch_size: int):
        self.order, self.perm, self.batch_size = order, perm, batch_size

    def __len__(self) -> int:
        return len(self.perm)

    def __getitem__(self, j: int) -> np.ndarray:
        start = int(self.perm[j]) * self.batch_size
        return self.order[start : start + self.batch_size]


class _Batches(Sequence):
    """The epoch's batches, made on demand (the reference task's steps can number hundreds of
    thousands): ``batches[s]`` is the int array ``(n, 2)`` of step ``s``, slices give lists."""

    def __init__(self, mix: MultiTaskData, batch_size: int, seed: int, epoch: int):
        self.mix, self.batch_size, self.seed, self.epoch = mix, batch_size, seed, epoch
        self.steps = mix.steps_per_epoch(batch_size)
        # one pass over the reference per epoch; with mix.epoch_examples, its passes stream too
        self.ref = None if mix.epoch_examples else mix.tasks[0][1].pass_batches(batch_size, _seed(seed, 0, epoch))
        self._passes: dict[tuple[int, int], _Pass] = {}

    def __len__(self) -> int:
        return self.steps

    def _task_batch(self, k: int, step: int) -> np.ndarray:
        if k == 0 and self.ref is not None:
            return self.ref[step]
        view = self.mix.tasks[k][1]
        per_pass = math.ceil(len(view) / self.batch_size)
        g = (self.epoch - 1) * self.steps + step  # global step of this task's stream
        p, j = divmod(g, per_pass)
        if (k, p) not in self._passes:
            self._passes = {key: v for key, v in self._passes.items() if key[0] != k}  # keep one pass per task
            self._passes[(k, p)] = view.pass_batches(self.batch_size, _seed(self.seed, k, p + 1))
        return self._passes[(k, p)][j]

    def __getitem__(self, s):
        if isinstance(s, slice):
            return [self[i] for i in range(*s.indices(len(self)))]
        if s < 0:
            s += len(self)
        if not 0 <= s < len(self):
            raise IndexError(f"step {s} of an epoch of {len(self)}")
        parts = []
        for k in range(len(self.mix.tasks)):
            b = self._task_batch(k, s)
            parts.append(np.stack([np.full_like(b, k), b], 1))
        return np.concatenate(parts)


def _seed(seed: int, task: int, n: int) -> int:
    return (seed * 1_000_003 + task) * 100_003 + n


class MultiTaskData:
    """Tasks (``{name: ParallelData}``, the reference first) unrolled and mixed per step (module
    docstring); ``builder.collate(items)`` makes a batch of ``(data, sentence, t)``
    triples. Stands in for the training :class:`ParallelData` in the shared trainer."""

    def __init__(self, tasks: dict, builder, epoch_examples: int = 0):
        if not tasks:
            raise ValueError("no training task")
        # the builder's seq_len cap (BertGen's image_seq_len; 0 or absent: off) turns the length
        # sort off for the tasks with images (module docstring)
        capped = int(getattr(builder, "image_seq_len", 0) or 0) > 0
        self.tasks = [(name, UnrolledData(data, sort_by_length=not (capped and data.features is not None)))
                      for name, data in tasks.items()]
        self.builder = builder
        self.epoch_examples = int(epoch_examples)  # 0: an epoch is one pass over the reference task

    def steps_per_epoch(self, batch_size: int) -> int:
        """One pass over the reference task's examples, or ``epoch_examples`` of them (shorter
        epochs: validation more often, e.g. a bounded CPU run)."""
        return math.ceil((self.epoch_examples or len(self)) / batch_size)

    def __len__(self) -> int:
        """Unrolled examples of the reference task (one epoch's worth, per task)."""
        return len(self.tasks[0][1])

    def counts(self) -> dict[str, dict[str, int]]:
        """Sentences and unrolled examples of every task (BertGen's Table 1: Sents, Augm.)."""
        return {name: {"sentences": len(v.sentences), "unrolled": len(v)} for name, v in self.tasks}

    def describe(self) -> str | None:
        return f"training examples per task: {self.counts()}"

    def hold_features_on(self, device) -> str | None:  # noqa: ARG002
        """The tasks' stores stay on the host: BertGen's batches read the rows of several
        stores per step (:func:`~mmt_repro.datasets.feature_reads.read_task_images`)."""
        if not any(view.data.features is not None for _, view in self.tasks):
            return None
        return "training features read from the host per batch (a multi-task view)"

    def curve_columns(self, batches: int, batch_size: int) -> dict[str, float]:
        """``passes_<task>``: passes over each task's unrolled examples after ``batches`` steps
        of ``batch_size`` examples per task (BertGen's Figure 4 plots against them)."""
        return {f"passes_{name}": round(batches * batch_size / max(len(v), 1), 4) for name, v in self.tasks}

    def n_target_tokens(self) -> int:
        """Predicted tokens per epoch: one per unrolled example, of every task."""
        return len(self) * len(self.tasks)

    def train_batches(self, batch_size: int, seed: int, epoch: int, by_tokens: bool = False) -> _Batches:
        if by_tokens:
            raise ValueError("unrolled training counts examples: batch_size is examples per task and step "
                             "(batch_by_tokens is not supported)")
        return _Batches(self, batch_size, seed, epoch)

    def collate(self, ids) -> dict:
        ids = np.asarray(ids)
        items = []
        for k in np.unique(ids[:, 0]):
            view = self.tasks[int(k)][1]
            sent, t = view.locate(ids[ids[:, 0] == k, 1])
            items += [(view.data, int(i), int(j)) for i, j in zip(sent, t)]
        return self.builder.collate(items)


def unrolled_count(lines: list[str]) -> int:
    """Examples of a target side after unrolling: ``sum(n_i + 1)`` over its lines (whitespace
    tokens; BertGen's Table 1 'Augm.' column counts WordPieces)."""
    return sum(len(line.split()) + 1 for line in lines)
