"""Per-task best checkpoints of a multi-task run (torch-free).

BertGen's Table 5 gives "best checkpoints' test set performances" (Figure 4): each MT task is
decoded with the epoch whose validation score on that task was best, not with the reference
task's best (the authors' multi-task run saves every epoch and writes no best model of its own:
docs/bertgen.md, row 19). With ``best_per_task: true`` in a system's train config, the trainer
keeps, beside the run's own best checkpoint, the weights of each extra task's best validation
BLEU in a side folder of the training job, ``<model>.task_best/<task>.pt``. The rule
``task_checkpoint`` copies one of them to ``<model>.best.<task>.pt``, the file a table's
translate jobs decode (:meth:`mmt_repro.plan.lookup.Lookup.checkpoint_of`), so Snakemake tracks
it and redoes it when the training is redone.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..io import DataError, atomic_path

__all__ = ["BEST_SUFFIX", "is_new_best", "task_best_file", "take_task_best"]

BEST_SUFFIX = ".best.pt"


def task_best_file(best_checkpoint: Path | str, task: str) -> Path:
    """``<model>.task_best/<task>.pt`` beside ``<model>.best.pt``."""
    best = Path(best_checkpoint)
    if not best.name.endswith(BEST_SUFFIX):
        raise ValueError(f"{best}: a best checkpoint's name ends with {BEST_SUFFIX}")
    return best.with_name(best.name[: -len(BEST_SUFFIX)] + ".task_best") / f"{task}.pt"


def is_new_best(progress: dict, task: str, score: float) -> bool:
    """Record ``score`` as ``task``'s best in the run's progress (saved in ``.last.pt``, so a
    resumed run compares with the best before the interruption) when it beats it."""
    bests = progress.setdefault("task_best", {})
    if score <= bests.get(task, -1.0):
        return False
    bests[task] = score
    return True


def take_task_best(best_checkpoint: Path | str, task: str, out: Path | str) -> None:
    """Copy the training run's best checkpoint of ``task`` to ``out`` (atomically)."""
    src = task_best_file(best_checkpoint, task)
    if not src.exists():
        raise DataError(src, f"the training run of {best_checkpoint} kept no best checkpoint of task {task!r}",
                        f"give the system `best_per_task: true` in its train config and a task {task!r} with "
                        "`val: true`, then re-run its train_model job (it resumes from .last.pt)")
    with atomic_path(Path(out)) as tmp:
        shutil.copyfile(src, tmp)
