"""Rule prepare_multi30k_comparable: the k-th comparable description (task 2) of every image."""

from mmt_repro.corpora.manifest import extra_manifests
from mmt_repro.corpora.multi30k import prepare_multi30k_comparable
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    prepare_multi30k_comparable,
    src=snakemake.input[0],
    k=int(snakemake.wildcards.k),
    lang=snakemake.wildcards.lang,
    out=snakemake.output[0],
    manifest_extra=[str(p) for p in extra_manifests(snakemake.config)],
)
