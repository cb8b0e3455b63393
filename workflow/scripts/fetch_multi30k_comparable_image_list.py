"""Rule fetch_multi30k_comparable_image_list: the images the task 2 descriptions refer to."""

from mmt_repro.data.multi30k import fetch_multi30k_comparable_image_list
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    fetch_multi30k_comparable_image_list,
    out=snakemake.output[0],
    mirror=snakemake.params.mirror,
    base_url=snakemake.params.url,
)
