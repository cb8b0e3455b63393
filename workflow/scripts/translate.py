"""Rule translate: decode one test split with a trained checkpoint."""

from mmt_repro.decode.translate import translate
from mmt_repro.runtime import run_step

inp = snakemake.input
run_step(
    snakemake.log[0],
    snakemake.threads,
    translate,
    checkpoint=inp.checkpoint,
    src=inp.get("src"),  # none for captioning
    out=snakemake.output.translation,
    stats_out=snakemake.output.stats,
    src_vocab=inp.get("src_vocab"),
    tgt_vocab=inp.tgt_vocab,
    features_npy=inp.get("features_npy"),
    features_index=inp.get("features_index"),
    decode=dict(snakemake.params.decode),
    subword=snakemake.params.subword,
    shuffle_images_seed=snakemake.params.shuffle_seed,
    direction=snakemake.params.direction,
    device=snakemake.params.device,
    pair=snakemake.wildcards.pair,
)
