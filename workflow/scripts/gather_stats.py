"""Rule gather_stats: every corpus's stats in one table, results/data/stats.tsv."""

from mmt_repro.corpora.prepare import gather_stats
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    gather_stats,
    paths=list(snakemake.input),
    out_tsv=snakemake.output[0],
)
