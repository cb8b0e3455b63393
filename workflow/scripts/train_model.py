"""Rule train_model: train one system with the shared trainer (resumes from .last.pt)."""

from mmt_repro.runtime import run_step
from mmt_repro.train.trainer import train_from_files

inp = snakemake.input
run_step(
    snakemake.log[0],
    snakemake.threads,
    train_from_files,
    model_name=snakemake.params.model,
    model_config=dict(snakemake.params.model_config),
    train_config=dict(snakemake.params.train_config),
    src_vocab=inp.src_vocab,
    tgt_vocab=inp.tgt_vocab,
    train_src=inp.train_src,
    train_tgt=inp.train_tgt,
    val_src=inp.val_src,
    val_tgt=inp.val_tgt,
    val_ref=inp.val_ref,
    best_checkpoint=snakemake.output.best,
    last_checkpoint=snakemake.params.last,
    curve=snakemake.output.curve,
    train_features=(inp.get("train_npy"), inp.get("train_index")),
    val_features=(inp.get("val_npy"), inp.get("val_index")),
    device=snakemake.params.device,
    init_checkpoint=inp.get("init"),
    train_image_list=inp.get("train_image_list"),
    subword=snakemake.params.subword,
    resources=dict(snakemake.params.resources),
    imports=list(snakemake.params.imports),
    train_extras=dict(snakemake.params.extras),
    pair=snakemake.wildcards.pair,
    tasks=list(snakemake.params.tasks),
)
