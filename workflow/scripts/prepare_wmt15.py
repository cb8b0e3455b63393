"""Rule prepare_wmt15: Europarl v7 + Common Crawl + News Commentary v10, German-English."""

from mmt_repro.corpora.wmt import prepare_wmt15
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    prepare_wmt15,
    archives=list(snakemake.input),
    out_en=snakemake.output.en,
    out_de=snakemake.output.de,
)
