"""Rule fetch_wmt15: Europarl v7 + Common Crawl + News Commentary v10, German-English."""

from mmt_repro.data.wmt import fetch_wmt15
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    fetch_wmt15,
    out_en=snakemake.output.en,
    out_de=snakemake.output.de,
    cache_dir=snakemake.params.cache_dir,
    mirror=snakemake.params.mirror,
)
