"""Every output path template of the workflow, defined once, and the wildcards' patterns.

Rules and the plan format these templates; nothing else spells a results/ path. Torch-free."""

from __future__ import annotations

PATHS = {
    "data_dir": "results/data/{dataset}",  # a prepared corpus's own layout below it
    "corpus": "results/data/{dataset}/{split}.{lang}",
    "image_list": "results/data/{dataset}/image_splits/{split}.txt",
    "video_list": "results/data/{dataset}/video_splits/{split}.txt",
    "images": "results/data/{dataset}/images",
    "videos": "results/data/{dataset}/videos",
    "labels": "results/data/{dataset}/labels/{split}.tsv",
    "given_boxes": "results/data/{dataset}/boxes/{split}.json",
    "corpus_stats": "results/data/stats/{dataset}.tsv",
    "stats": "results/data/stats.tsv",
    "text": "results/text/{dataset}/{split}.{chain}.{lang}",
    "caption_text": "results/text/{dataset}/{split}.{k}.{chain}.{lang}",  # caption k of each image
    "wordpiece": "results/text/wordpiece/{corpus}.{size}/vocab.txt",  # learnt offline stand-in
    "bpe_codes": "results/text/{paper}/{dataset}.{pair}/bpe.{side}.codes",
    "bpe_text": "results/text/{paper}/{dataset}.{pair}/{split}.{chain}.bpe.{lang}",
    "bpe_corpus": "results/text/{paper}/{dataset}.{pair}/corpus_{corpus}.{chain}.bpe.{lang}",
    "features": "results/features/{dataset}/{feature_set}/{split}",  # + .npy, .index.parquet, .boxes.npy
    "vocab": "results/vocab/{paper}/{dataset}.{pair}.{side}.json",
    "vocab_report": "results/data/vocab/{paper}.tsv",
    "model": "results/models/{paper}/{system}/{dataset}.{pair}.seed{seed}",  # + .best.pt, .job.json
    "translation": "results/translations/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.txt",
    "decode_stats": "results/translations/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.stats.json",
    "score": "results/scores/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.json",
    "analysis": "results/analyses/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{analysis}.json",
    "attention": "results/attention/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.pt",
    "backtranslation": "results/backtranslation/{paper}/{dataset}.{pair}",  # + /synthetic.src, .tgt, /images.txt
    "significance": "results/significance/{paper}/{table}.json",
    "word_vectors": "results/embeddings/{paper}/fasttext/{dataset}.{lang}.vec",
    "embedding_table": "results/embeddings/{paper}/{dataset}.{pair}.{lang}",  # + .npy, .json
    "align": "results/align/{paper}/{dataset}.{pair}/{split}.align",  # Pharaoh i-j, symmetrised
    "align_model": "results/align/{paper}/{dataset}.{pair}/model",  # + .fwd, .bwd (fast_align tables)
    "alignment_layer": "results/align/{paper}/{dataset}.{pair}/layer.{system}.seed{seed}.json",
    "table": "results/tables/{paper}/{table}.tsv",
    "protocols": "results/tables/{paper}/{table}.protocols.tsv",  # a translation table's protocol grid
    "protocols_legend": "results/tables/{paper}/{table}.protocols.json",
    "probe": "results/tables/{paper}/{table}.probe.tsv",  # a table's image-use probe (docs/probes.md)
    "cross_paper": "results/tables/cross_paper.tsv",  # every paper's systems under one protocol (docs/scoring.md)
    "cross_paper_legend": "results/tables/cross_paper.json",
    "figure": "results/figures/{paper}/{table}.{figure}",
    # the source-degradation probe (plan/masking.py): a test split's word list, its source masked
    # in a chain's form, and that text through a paper's BPE
    "masked_words": "results/masked/{dataset}.{pair}/{split}.{words}.tsv",
    "masked_text": "results/masked/{dataset}.{pair}/{split}.{chain}.{words}.{lang}",
    "masked_bpe_text": "results/masked/{paper}/{dataset}.{pair}/{split}.{chain}.{words}.bpe.{lang}",
}

# The wildcards' patterns (Snakemake's wildcard_constraints); a chain is
# [lc.][norm.][tok|wp|char|jieba] (mmt_repro.text.recipes.parse_chain).
WILDCARDS = {
    "dataset": "[a-z0-9_]+",
    "split": "[a-z0-9_]+",
    "lang": "[a-z]{2}",
    "pair": "[a-z]{2}-[a-z]{2}",
    "chain": r"(lc\.)?(norm\.)?(tok|wp|char|jieba)|lc\.norm|lc|norm",
    "side": "[a-z]{2}|joint",
    "analysis": "[a-z0-9_]+",
    "corpus": "[a-z0-9_]+",
    "paper": "[a-z_]+",
    "table": "[^/.]+",  # no dot: results/tables/{paper}/{table}.protocols.tsv is not a table
    "system": "[a-z0-9_]+",
    "seed": "[0-9]+",
    "condition": "congruent|shuffled|no_image|blank_zero|blank_mean|masked|masked_shuffled",
    "words": "colours",
    "k": "[0-9]+",
    "task": "[a-z0-9_]+",
}


def path(name: str, **values) -> str:
    """PATHS[name] with its placeholders filled in."""
    return PATHS[name].format(**values)


def reversed_pair(pair: str) -> str:
    src, tgt = pair.split("-")
    return f"{tgt}-{src}"
