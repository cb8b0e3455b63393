"""Batches built off the training thread: a background thread collates the next update's
batches (and pins them on a GPU) while the current update runs, so that the device does not
wait for Python data work (issue 23, "Feeding the GPU").

Collating is a pure function of the example ids (no random generator is drawn: batch order
and masking are seeded per epoch, :mod:`mmt_repro.datasets.batching`), so a run with prefetching
makes the same updates, bit for bit, as one without (``tests/unit/test_prefetch.py``), and
exact resume is unaffected: nothing the checkpoint saves is touched by the thread.

Depth: ``MMT_PREFETCH`` (updates collated ahead) or, unset, 2 on a GPU and 0 on the CPU. On a
CPU the collating thread competes with the training thread for the interpreter lock and, on
a small machine, for the cores the other jobs use; ``benchmarks/bench_prefetch.py`` measures
both settings.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence

import torch

_DONE = object()


def prefetch_depth(device: torch.device) -> int:
    """Updates collated ahead: ``MMT_PREFETCH`` if set, else 2 on a GPU and 0 elsewhere."""
    value = os.environ.get("MMT_PREFETCH", "").strip()
    if value:
        try:
            depth = int(value)
        except ValueError as err:
            raise ValueError(f"MMT_PREFETCH={value!r}: give a whole number of updates (0 = off)") from err
        if depth < 0:
            raise ValueError(f"MMT_PREFETCH={value!r}: give 0 or more")
        return depth
    return 2 if device.type == "cuda" else 0


def _pin(batch: dict) -> dict:
    return {k: (v.pin_memory() if isinstance(v, torch.Tensor) and v.device.type == "cpu" else v)
            for k, v in batch.items()}


class Prefetcher:
    """Iterate over ``groups`` (each a list of batches of example ids) as lists of collated
    batches. ``depth`` 0 collates on the caller's thread, as before; otherwise a daemon thread
    keeps up to ``depth`` collated groups in a queue (pinned when ``pin``). An error in the
    thread is raised in the caller at the group it concerns. Use as a context manager (or call
    :meth:`close`) so that a loop left early (a signal, a step or time limit) stops the thread."""

    def __init__(self, collate: Callable[[list], dict], groups: Sequence[list], depth: int = 0, pin: bool = False):
        self.collate, self.groups, self.depth, self.pin = collate, groups, depth, pin
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._queue: queue.Queue | None = None

    def _build(self, group: list) -> list[dict]:
        batches = [self.collate(ids) for ids in group]
        return [_pin(b) for b in batches] if self.pin else batches

    def _work(self) -> None:
        try:
            for group in self.groups:
                if self._stop.is_set():
                    return
                item = self._build(group)
                while not self._stop.is_set():
                    try:
                        self._queue.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as err:  # handed to the consumer, raised there
            self._put_final(err)
            return
        self._put_final(_DONE)

    def _put_final(self, item) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def __iter__(self) -> Iterator[list[dict]]:
        if self.depth <= 0:
            for group in self.groups:
                yield self._build(group)
            return
        self._queue = queue.Queue(maxsize=self.depth)
        self._thread = threading.Thread(target=self._work, name="mmt-prefetch", daemon=True)
        self._thread.start()
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> Prefetcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
