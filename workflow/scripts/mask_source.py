"""Rule mask_source: a test split's source with its listed words masked by the placeholder."""

from mmt_repro.metrics.masked_words import mask_file
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    mask_file,
    text=snakemake.input.text,
    words=snakemake.input.words,
    out=snakemake.output[0],
    wordpiece=snakemake.params.wordpiece,
)
