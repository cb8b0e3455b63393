"""Rule vocab_report: merges, vocabulary sizes beside the paper's, <unk> rates per corpus."""

from mmt_repro.runtime import run_step
from mmt_repro.text.vocab import vocab_report

run_step(
    snakemake.log[0],
    snakemake.threads,
    vocab_report,
    rows=snakemake.params.rows,
    out=snakemake.output[0],
    max_len=snakemake.params.max_len,
)
