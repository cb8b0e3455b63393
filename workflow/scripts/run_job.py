"""Every run-level rule (train_model, translate, dump_attention, score, analyse, make_table):
rebuild the rule's job object from its one `job` param and run it (mmt_repro.execute)."""

from mmt_repro.execute import run_job
from mmt_repro.runtime import run_step

run_step(snakemake.log[0], snakemake.threads, run_job, job=dict(snakemake.params.job), rule=snakemake.rule,
         code=snakemake.params.get("code"))
