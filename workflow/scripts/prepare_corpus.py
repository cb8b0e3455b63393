"""Rule prepare_<dataset>: one corpus from its fetched inputs (mmt_repro.corpora.prepare)."""

from mmt_repro.corpora.prepare import prepare_corpus_files
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    prepare_corpus_files,
    name=snakemake.params.dataset,
    settings=snakemake.params.settings,
    input_paths=list(snakemake.input),
    output_paths=list(snakemake.output),
)
