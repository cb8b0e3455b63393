"""Rule make_curves: the learning curves of a table's systems, as a table and a figure."""

from mmt_repro.runtime import run_step
from mmt_repro.tables.curves import make_curves

run_step(
    snakemake.log[0],
    snakemake.threads,
    make_curves,
    curves=dict(snakemake.params.curves),
    paper=snakemake.wildcards.paper,
    table=snakemake.wildcards.table,
    pair=snakemake.params.pair,
    test_set=snakemake.params.test_set,
    out_tsv=snakemake.output.table,
    out_png=snakemake.output.png,
    out_pdf=snakemake.output.pdf,
    note=snakemake.params.note,
)
