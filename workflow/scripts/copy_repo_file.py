"""Rule repo_file: a file of the repository copied into the run folder, checked against the
sha256 the plan read."""

from mmt_repro.corpora.fetch import copy_repo_file
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    copy_repo_file,
    source=snakemake.params.source,
    out=snakemake.output[0],
    sha256=snakemake.params.sha256,
)
