"""Rule tokenize: one text file through a recipe chain (lc, norm, tok, wp, char)."""

from mmt_repro.runtime import run_step
from mmt_repro.text.recipes import prepare_text

run_step(
    snakemake.log[0],
    snakemake.threads,
    prepare_text,
    in_path=snakemake.input.text,
    out_path=snakemake.output[0],
    chain=snakemake.wildcards.chain,
    lang=snakemake.wildcards.lang,
    wordpiece_vocab=snakemake.input.get("wordpiece_vocab"),
)
