"""Rule make_table: one paper's table, our numbers beside the published ones, with p-values."""

from mmt_repro.runtime import run_step
from mmt_repro.tables.build import make_table_from_files

run_step(
    snakemake.log[0],
    snakemake.threads,
    make_table_from_files,
    score_jsons=list(snakemake.input.scores),
    paper=snakemake.wildcards.paper,
    table=snakemake.wildcards.table,
    published=snakemake.input.published,
    out_tsv=snakemake.output[0],
    significance_json=snakemake.input.get("significance"),
    note=snakemake.params.note,
    unavailable_systems=dict(snakemake.params.unavailable),
    not_comparable=dict(snakemake.params.not_comparable),
)
