"""Rule generate_comparable: task-2 style comparable descriptions of the grounded train images."""

from pathlib import Path

from mmt_repro.grounded.images import generate_comparable
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    generate_comparable,
    data_dir=Path(snakemake.input.labels).parent.parent,
    split="train",
    per_image=snakemake.params.per_image,
    seed=snakemake.params.seed,
    langs=("en", "de"),
)
