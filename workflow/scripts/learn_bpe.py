"""Rule learn_bpe: joint BPE codes over both sides of the training split."""

from mmt_repro.runtime import run_step
from mmt_repro.text.bpe import learn_bpe

run_step(
    snakemake.log[0],
    snakemake.threads,
    learn_bpe,
    inputs=[snakemake.input.src, snakemake.input.tgt],
    codes_out=snakemake.output[0],
    num_symbols=snakemake.params.symbols,
)
