"""Rule prepare_multi30k_comparable_image_list: the task 2 training images (one per line)."""

from mmt_repro.corpora.manifest import extra_manifests
from mmt_repro.corpora.multi30k import prepare_multi30k_comparable_image_list
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    prepare_multi30k_comparable_image_list,
    src=snakemake.input[0],
    out=snakemake.output[0],
    manifest_extra=[str(p) for p in extra_manifests(snakemake.config)],
)
