"""Rule fetch_multi30k_image_list: the image file names of one Multi30k split."""

from mmt_repro.data.multi30k import fetch_multi30k_image_list
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    fetch_multi30k_image_list,
    split=snakemake.wildcards.split,
    out=snakemake.output[0],
    mirror=snakemake.params.mirror,
    base_url=snakemake.params.url,
)
