"""Rule tokenize: Moses punctuation normalisation and tokenisation (+ lowercasing)."""

from mmt_repro.runtime import run_step
from mmt_repro.text.moses import preprocess

run_step(
    snakemake.log[0],
    snakemake.threads,
    preprocess,
    in_path=snakemake.input[0],
    out_path=snakemake.output[0],
    lang=snakemake.wildcards.lang,
    lowercase=snakemake.params.lowercase,
)
