"""Rule prepare_multi30k_image_list: the image names of one Multi30k task 1 split, checked
against the line count the run's manifest declares."""

from mmt_repro.corpora.manifest import extra_manifests
from mmt_repro.corpora.multi30k import dataset_input, prepare_multi30k_image_list
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    prepare_multi30k_image_list,
    src=snakemake.input[0],
    split=snakemake.wildcards.split,
    out=snakemake.output[0],
    manifest_extra=[str(p) for p in extra_manifests(snakemake.config)],
    input_name=dataset_input(snakemake.config["datasets"][snakemake.wildcards.dataset]),
)
