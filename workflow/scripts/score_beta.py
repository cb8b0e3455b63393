"""Rule score_beta: shares of target words with beta > 0.5 and > 0.8 (Calixto et al. 5.2)."""

from mmt_repro.decode.translate import beta_scores
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    beta_scores,
    dump=snakemake.input[0],
    out_json=snakemake.output[0],
    meta=dict(snakemake.params.meta),
)
