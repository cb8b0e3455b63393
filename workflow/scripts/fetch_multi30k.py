"""Rule fetch_multi30k: one Multi30k task 1 text file, from the mirror or the official URL."""

from mmt_repro.data.multi30k import fetch_multi30k
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    fetch_multi30k,
    split=snakemake.wildcards.split,
    lang=snakemake.wildcards.lang,
    out=snakemake.output[0],
    mirror=snakemake.params.mirror,
    base_url=snakemake.params.url,
)
