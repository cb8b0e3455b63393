"""Rule analyse: one registered analysis of one run (e.g. Calixto et al.'s beta shares)."""

from mmt_repro.runtime import run_step
from mmt_repro.tables.analyses import run_analysis

run_step(
    snakemake.log[0],
    snakemake.threads,
    run_analysis,
    name=snakemake.params.name,
    inputs=snakemake.params.inputs,
    files=dict(snakemake.input),
    out_json=snakemake.output[0],
    meta=dict(snakemake.params.meta),
    imports=list(snakemake.params.imports),
)
