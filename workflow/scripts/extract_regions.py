"""Rule extract_regions: detector boxes and their pooled features (top-K or a box range)."""

from mmt_repro.features.regions import extract_regions
from mmt_repro.runtime import run_step

p = snakemake.params
run_step(
    snakemake.log[0],
    snakemake.threads,
    extract_regions,
    image_list=snakemake.input.image_list,
    image_dir=p.image_dir,
    missing_dir_fix=p.missing_dir_fix,
    out_npy=snakemake.output.npy,
    out_boxes=snakemake.output.boxes,
    out_index=snakemake.output.index,
    backend=p.backend,
    weights=p.weights,
    max_boxes=p.max_boxes,
    min_boxes=p.min_boxes,
    conf_thresh=p.conf_thresh,
    full_image=p.full_image,
    min_size=p.min_size,
    max_size=p.max_size,
    given_boxes=p.given_boxes,
    device=p.device,
)
