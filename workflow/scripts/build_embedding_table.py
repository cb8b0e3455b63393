"""Rule build_embedding_table: the vocabulary's rows of the word vectors, debiased (Mu & Viswanath 2018)."""

from mmt_repro.runtime import run_step
from mmt_repro.text.word_vectors import build_embedding_table

run_step(
    snakemake.log[0],
    snakemake.threads,
    build_embedding_table,
    vocab=snakemake.input.vocab,
    vectors=snakemake.input.vectors,
    out_npy=snakemake.output.npy,
    out_report=snakemake.output.report,
    **dict(snakemake.params.settings),
)
