"""Rule build_vocab: the vocabulary of one side of the (BPE-segmented) training split."""

from mmt_repro.runtime import run_step
from mmt_repro.text.vocab import build_vocab_file

run_step(
    snakemake.log[0],
    snakemake.threads,
    build_vocab_file,
    inputs=[snakemake.input[0]],
    out=snakemake.output[0],
    min_freq=snakemake.params.min_freq,
)
