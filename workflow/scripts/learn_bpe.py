"""Rule learn_bpe: BPE codes over the training split of one language, or of both (joint)."""

from mmt_repro.runtime import run_step
from mmt_repro.text.bpe import learn_bpe

run_step(
    snakemake.log[0],
    snakemake.threads,
    learn_bpe,
    inputs=list(snakemake.input),
    codes_out=snakemake.output[0],
    num_symbols=snakemake.params.symbols,
)
