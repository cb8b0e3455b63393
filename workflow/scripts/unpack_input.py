"""Rule unpack_input: a fetched archive unpacked into the folder its readers name (manifest `unpack`)."""

from mmt_repro.corpora.unpack import unpack_archive
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    unpack_archive,
    archive=snakemake.input.archive,
    out=snakemake.output[0],
    strip=snakemake.params.strip,
    expect=snakemake.params.expect,
)
