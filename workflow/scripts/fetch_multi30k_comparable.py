"""Rule fetch_multi30k_comparable: the k-th task 2 description of every training image."""

from mmt_repro.data.multi30k import fetch_multi30k_comparable
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    fetch_multi30k_comparable,
    k=int(snakemake.wildcards.k),
    lang=snakemake.wildcards.lang,
    out=snakemake.output[0],
    mirror=snakemake.params.mirror,
    base_url=snakemake.params.url,
)
