"""Rule gather_tables: results/tables/all.tsv (+ Parquet) from every per-paper table."""

from mmt_repro.runtime import run_step
from mmt_repro.tables.build import gather_tables

run_step(
    snakemake.log[0],
    snakemake.threads,
    gather_tables,
    tables=list(snakemake.input),
    out_tsv=snakemake.output.tsv,
    out_parquet=snakemake.output.parquet,
)
