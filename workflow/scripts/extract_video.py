"""Rule extract_video: I3D segment features of every video of a split."""

from mmt_repro.features.video import extract_video_features
from mmt_repro.runtime import run_step

p = snakemake.params
run_step(
    snakemake.log[0],
    snakemake.threads,
    extract_video_features,
    video_list=snakemake.input.video_list,
    video_dir=p.video_dir,
    out_npy=snakemake.output.npy,
    out_index=snakemake.output.index,
    weights=p.weights,
    n_segments=p.n_segments,
    frames_per_segment=p.frames_per_segment,
    crop_size=p.crop_size,
    batch_size=p.batch_size,
    device=p.device,
)
