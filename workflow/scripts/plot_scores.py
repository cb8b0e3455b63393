"""Rule plot_scores: our scores beside the paper's, one bar chart per table."""

from mmt_repro.metrics.figures import plot_scores
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    plot_scores,
    table_tsv=snakemake.input[0],
    out_png=snakemake.output.png,
)
