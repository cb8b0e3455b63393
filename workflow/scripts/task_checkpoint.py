"""task_checkpoint: one extra task's best checkpoint of a multi-task training run
(mmt_repro.train.task_best)."""

from mmt_repro.runtime import run_step
from mmt_repro.train.task_best import take_task_best

run_step(snakemake.log[0], 1, take_task_best, best_checkpoint=snakemake.input[0], task=snakemake.wildcards.task,
         out=snakemake.output[0])
