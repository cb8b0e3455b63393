"""Rule build_vocab: the vocabulary of one side (or both, joint) of the training split as the model reads it."""

from mmt_repro.runtime import run_step
from mmt_repro.text.vocab import build_vocab_file

run_step(
    snakemake.log[0],
    snakemake.threads,
    build_vocab_file,
    inputs=list(snakemake.input),
    out=snakemake.output[0],
    min_freq=snakemake.params.min_freq,
    max_size=snakemake.params.max_size,
    wordpiece=snakemake.params.wordpiece,
)
