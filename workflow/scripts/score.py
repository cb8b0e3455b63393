"""Rule score: every metric of the paper's scoring block for one translation file, with signatures."""

from mmt_repro.metrics.mt import score_files
from mmt_repro.runtime import run_step

scoring = snakemake.params.scoring
run_step(
    snakemake.log[0],
    snakemake.threads,
    score_files,
    hyp=snakemake.input.hyp,
    refs=snakemake.input.ref,  # one file, or the caption files of a captioning test set
    out_json=snakemake.output[0],
    meta=dict(snakemake.params.meta),
    metrics=tuple(scoring["metrics"]),
    tokenize=scoring["tokenize"],
    bleu_compat=scoring["bleu_compat"],
    lang=scoring["meteor_lang"],
    ref_subword=snakemake.params.ref_subword,
    decode_stats=snakemake.input.decode_stats,
    meteor_jar=snakemake.params.meteor_jar,
    meteor_norm=scoring["meteor_norm"],
    ter_lowercase=scoring["ter_lowercase"],
)
