"""Rule list_masked_words: the colours of a test split's source with their target forms."""

from mmt_repro.corpora.masked_words import list_masked_words
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    list_masked_words,
    source=snakemake.input.source,
    out=snakemake.output[0],
    src_lang=snakemake.wildcards.pair.split("-")[0],
    tgt_lang=snakemake.wildcards.pair.split("-")[1],
    lexicon_name=snakemake.params.lexicon,
    words=snakemake.wildcards.words,
)
