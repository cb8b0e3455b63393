"""Rule prepare_multi30k_image_list: the image names of one Multi30k task 1 split, checked."""

from mmt_repro.data.multi30k import prepare_multi30k_image_list
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    prepare_multi30k_image_list,
    src=snakemake.input[0],
    split=snakemake.wildcards.split,
    out=snakemake.output[0],
)
