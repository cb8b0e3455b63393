"""Rule center_features: subtract the training split's centroid from each feature vector."""

from mmt_repro.features.standardize import standardize_store
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    standardize_store,
    in_npy=snakemake.input.npy,
    in_index=snakemake.input.index,
    out_npy=snakemake.output.npy,
    out_index=snakemake.output.index,
    stats_from=snakemake.input.train_npy,
    scale=False,
)
