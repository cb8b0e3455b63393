"""Rule import_regions: official pre-extracted region features (BUTD obj36) with their boxes."""

from mmt_repro.features.pretrained import import_pretrained
from mmt_repro.runtime import run_step

p = snakemake.params
run_step(
    snakemake.log[0],
    snakemake.threads,
    import_pretrained,
    kind=p.kind,
    src=p.src,
    image_list=snakemake.input.image_list,
    out_npy=snakemake.output.npy,
    out_index=snakemake.output.index,
    out_boxes=snakemake.output.boxes,
    max_boxes=p.max_boxes,
)
