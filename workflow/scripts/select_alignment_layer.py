"""Rule select_alignment_layer: the Transformer decoder block that aligns best (Yang et al. 2020, sec. 4)."""

from mmt_repro.train.alignment_layer import select_alignment_layer
from mmt_repro.runtime import run_step

inp = snakemake.input
run_step(
    snakemake.log[0],
    snakemake.threads,
    select_alignment_layer,
    checkpoint=inp.checkpoint,
    src=inp.src,
    tgt=inp.tgt,
    src_vocab=inp.src_vocab,
    tgt_vocab=inp.tgt_vocab,
    align=inp.align,
    out_json=snakemake.output[0],
    features_npy=inp.get("features_npy"),
    features_index=inp.get("features_index"),
    device=snakemake.params.device,
)
