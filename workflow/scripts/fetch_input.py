"""Rule fetch_input: one file of a manifest input, from the local mirror or its URLs, checked
(the run's manifest: config/manifest.yaml + the files listed in inputs.manifest_extra)."""

from mmt_repro.corpora.fetch import fetch_input_file
from mmt_repro.corpora.manifest import extra_manifests
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    fetch_input_file,
    input_name=snakemake.wildcards.input,
    file_name=snakemake.wildcards.file,
    out=snakemake.output[0],
    mirror_root=snakemake.params.mirror,
    local_dir=snakemake.params.local,
    manifest_extra=[str(p) for p in extra_manifests(snakemake.config)],
)
