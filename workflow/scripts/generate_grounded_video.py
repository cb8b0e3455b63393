"""Rule generate_grounded_video: a grounded synthetic video set (clips + captions)."""

from pathlib import Path

from mmt_repro.grounded.video import generate_grounded_video
from mmt_repro.runtime import run_step

p = snakemake.params
run_step(
    snakemake.log[0],
    snakemake.threads,
    generate_grounded_video,
    out_dir=Path(snakemake.output.videos).parent,
    sizes=dict(p.sizes),
    seed=p.seed,
    image_size=p.image_size,
    n_frames=p.n_frames,
    langs=tuple(p.langs),
    time_shuffled=dict(p.time_shuffled),
)
