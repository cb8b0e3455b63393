"""Rule prepare_multi30k: one Multi30k task 1 text file, decompressed and checked."""

from mmt_repro.data.multi30k import prepare_multi30k
from mmt_repro.runtime import run_step

run_step(
    snakemake.log[0],
    snakemake.threads,
    prepare_multi30k,
    src=snakemake.input[0],
    split=snakemake.wildcards.split,
    lang=snakemake.wildcards.lang,
    out=snakemake.output[0],
)
