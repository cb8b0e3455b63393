"""Rule constant_features: the same block of features for every image (images unavailable)."""

from mmt_repro.features.constant import constant_features
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    constant_features,
    image_list=snakemake.input.image_list,
    out_npy=snakemake.output.npy,
    out_index=snakemake.output.index,
    n_regions=snakemake.params.n_regions,
    dim=snakemake.params.dim,
    value=snakemake.params.value,
)
