"""Rule dump_attention: greedy decoding with every step's attention weights and gates saved."""

from mmt_repro.decode.translate import dump_attention
from mmt_repro.runtime import run_step

inp = snakemake.input
run_step(
    snakemake.log[0],
    snakemake.threads,
    dump_attention,
    checkpoint=inp.checkpoint,
    src=inp.src,
    out=snakemake.output[0],
    src_vocab=inp.src_vocab,
    tgt_vocab=inp.tgt_vocab,
    features_npy=inp.get("features_npy"),
    features_index=inp.get("features_index"),
    decode=dict(snakemake.params.decode),
    direction=snakemake.params.direction,
    device=snakemake.params.device,
)
