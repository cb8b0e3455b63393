"""Rule import_regions: official bottom-up-attention region features into a region store."""

from mmt_repro.features.pretrained import import_pretrained
from mmt_repro.runtime import run_step

p = snakemake.params
run_step(
    snakemake.log[0],
    snakemake.threads,
    import_pretrained,
    kind="butd",
    src=p.src,
    image_list=snakemake.input.image_list,
    out_npy=snakemake.output.npy,
    out_boxes=snakemake.output.boxes,
    out_index=snakemake.output.index,
    max_boxes=p.max_boxes,
)
