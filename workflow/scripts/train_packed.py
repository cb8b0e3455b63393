"""Rule train_packed_<pack>: the pack's trainings side by side, each in its own process running
what its train_model job would run (mmt_repro.execute.packed), each with its own log."""

from mmt_repro.execute.packed import run_packed
from mmt_repro.runtime import run_step

run_step(snakemake.log.pack, snakemake.threads, run_packed, members=list(snakemake.params.members),
         cores=snakemake.threads)
