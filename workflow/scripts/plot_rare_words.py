"""Rule plot_rare_words: word F-score per training-frequency bin, one bar per system."""

from mmt_repro.metrics.figures import plot_rare_words_table
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    plot_rare_words_table,
    table_tsv=snakemake.input[0],
    out_png=snakemake.output.png,
)
