"""Rule generate_grounded: a grounded synthetic set (images + en/de/fr captions; `objects`: same or distinct)."""

from pathlib import Path

from mmt_repro.grounded.agreement import generate
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    generate,
    out_dir=Path(snakemake.output.images).parent,
    sizes=dict(snakemake.params.sizes),
    seed=snakemake.params.seed,
    image_size=snakemake.params.image_size,
    langs=tuple(snakemake.params.langs),
    objects=snakemake.params.objects,
)
