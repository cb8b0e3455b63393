"""Rule list_media: the image and video lists of a folder of media without captions."""

from mmt_repro.corpora.media import list_media
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    list_media,
    folder=snakemake.params.folder,
    out_images=snakemake.output.images,
    out_videos=snakemake.output.videos,
)
