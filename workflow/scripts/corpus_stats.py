"""Rule corpus_stats: check a prepared corpus and count it (sentences, tokens, types, OOV)."""

from mmt_repro.corpora.prepare import check_and_count
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    check_and_count,
    corpus=snakemake.wildcards.dataset,
    files=snakemake.params.files,
    image_lists=snakemake.params.image_lists,
    out_tsv=snakemake.output[0],
    train_split=snakemake.params.train_split,
)
