"""Rule plot_attention: image- and source-target attention with beta per word (Calixto Fig. 2),
or beta per generated word (Yang Fig. 4)."""

from mmt_repro.metrics.attention_figure import plot_attention_from_dump
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    plot_attention_from_dump,
    attention_dump=snakemake.input[0],
    index=snakemake.params.index,
    out_png=snakemake.output.png,
    kind=snakemake.params.plot,
)
