"""Rule extract_features: one split's grid/pool image features into a float16 store."""

from mmt_repro.features.grid import extract_features
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    extract_features,
    image_list=snakemake.input.image_list,
    image_dir=snakemake.params.image_dir,
    missing_dir_fix=snakemake.params.missing_dir_fix,
    out_npy=snakemake.output.npy,
    out_index=snakemake.output.index,
    extractor=snakemake.params.extractor,
    layer=snakemake.params.layer,
    weights=snakemake.params.weights,
    image_size=snakemake.params.image_size,
    batch_size=snakemake.params.batch_size,
    device=snakemake.params.device,
)
