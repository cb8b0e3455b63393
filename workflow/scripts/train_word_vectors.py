"""Rule train_word_vectors: fastText vectors on the training text (word_vectors.source: trained)."""

from mmt_repro.runtime import run_step
from mmt_repro.text.word_vectors import train_word_vectors

run_step(
    snakemake.log[0],
    snakemake.threads,
    train_word_vectors,
    texts=[snakemake.input.text],
    out_vec=snakemake.output[0],
    workers=snakemake.threads,
    **dict(snakemake.params.settings),
)
