"""Rule align: one split word-aligned with both fast_align models, symmetrised (Pharaoh i-j)."""

from mmt_repro.runtime import run_step
from mmt_repro.text.align import align_files

run_step(
    snakemake.log[0],
    snakemake.threads,
    align_files,
    fwd=snakemake.input.fwd,
    bwd=snakemake.input.bwd,
    src=snakemake.input.src,
    tgt=snakemake.input.tgt,
    out=snakemake.output[0],
)
