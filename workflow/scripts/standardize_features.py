"""Rules standardize_features and standardize_regions: z-score each feature dimension with
train-split statistics (a region store's boxes are copied along)."""

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
    in_boxes=snakemake.input.get("boxes"),
    out_boxes=snakemake.output.get("boxes"),
)
