"""Rules table_html, all_html and data_html: a results table or a data report as HTML for the
Snakemake report (mmt_repro.tables.html)."""

from mmt_repro.runtime import run_step
from mmt_repro.tables.html import table_html, tsv_html

run_step(
    snakemake.log[0],
    snakemake.threads,
    table_html if snakemake.params.kind == "table" else tsv_html,
    **{("table_tsv" if snakemake.params.kind == "table" else "tsv"): snakemake.input[0], "out_html": snakemake.output[0]},
    title=snakemake.params.title,
    caption=snakemake.params.caption,
)
