"""Rule learn_alignment: fast_align's forward and backward models on a paper's training text."""

from mmt_repro.runtime import run_step
from mmt_repro.text.align import learn_alignment

settings = dict(snakemake.params.settings)
run_step(
    snakemake.log[0],
    snakemake.threads,
    learn_alignment,
    src=snakemake.input.src,
    tgt=snakemake.input.tgt,
    fwd_out=snakemake.output.fwd,
    bwd_out=snakemake.output.bwd,
    iterations=settings["iterations"],
    favor_diagonal=settings["favor_diagonal"],
    optimize_tension=settings["optimize_tension"],
    variational_bayes=settings["variational_bayes"],
)
