"""Rule apply_bpe: segment one tokenised file with the paper's BPE codes."""

from mmt_repro.runtime import run_step
from mmt_repro.text.bpe import apply_bpe

run_step(
    snakemake.log[0],
    snakemake.threads,
    apply_bpe,
    codes=snakemake.input.codes,
    in_path=snakemake.input.text,
    out_path=snakemake.output[0],
)
