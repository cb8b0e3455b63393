"""Rule score: every configured metric of one translation file, with signatures."""

from mmt_repro.metrics.mt import score_files
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    score_files,
    hyp=snakemake.input.hyp,
    refs=[snakemake.input.ref],
    out_json=snakemake.output[0],
    meta=dict(snakemake.params.meta),
    metrics=tuple(snakemake.params.metrics),
    tokenize=snakemake.params.tokenize,
    bleu_compat=snakemake.params.bleu_compat,
    meteor_jar=snakemake.params.meteor_jar,
)
