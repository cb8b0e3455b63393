"""Rule prepare_multi30k: one Multi30k task 1 text file, decompressed and checked against the
line count the run's manifest (config/manifest.yaml + inputs.manifest_extra) declares."""

from mmt_repro.corpora.manifest import extra_manifests
from mmt_repro.corpora.multi30k import dataset_input, prepare_multi30k
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    prepare_multi30k,
    src=snakemake.input[0],
    split=snakemake.wildcards.split,
    lang=snakemake.wildcards.lang,
    out=snakemake.output[0],
    manifest_extra=[str(p) for p in extra_manifests(snakemake.config)],
    input_name=dataset_input(snakemake.config["datasets"][snakemake.wildcards.dataset]),
)
