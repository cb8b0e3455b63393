"""Rule learn_wordpiece: a small WordPiece vocab.txt learnt on a corpus's lowercased training text
(the offline stand-in for M-BERT's 119,547 pieces)."""

from mmt_repro.runtime import run_step
from mmt_repro.text.wordpiece import learn_wordpiece

run_step(
    snakemake.log[0],
    snakemake.threads,
    learn_wordpiece,
    inputs=list(snakemake.input),
    out=snakemake.output[0],
    vocab_size=int(snakemake.wildcards.size),
)
