"""Rule test_significance: p-values of each system against the table's baseline."""

from mmt_repro.runtime import run_step
from mmt_repro.tables.significance import table_significance

run_step(
    snakemake.log[0],
    snakemake.threads,
    table_significance,
    translations=dict(snakemake.params.translations),
    references=dict(snakemake.params.references),
    baseline=snakemake.params.baseline,
    pair=snakemake.params.pair,
    out_json=snakemake.output[0],
    metrics=tuple(snakemake.params.metrics),
    n_samples=snakemake.params.scoring["significance_samples"],
    tokenize=snakemake.params.scoring["tokenize"],
    seeds=snakemake.params.scoring["significance_seeds"],
    ter_lowercase=snakemake.params.scoring["ter_lowercase"],
    meteor_norm=snakemake.params.scoring["meteor_norm"],
    lang=snakemake.params.lang,
    meteor_jar=snakemake.params.meteor_jar,
    ref_subword=snakemake.params.ref_subword,
)
