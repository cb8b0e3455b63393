# mmt-repro: from raw data to result tables for five multimodal MT papers.
#
# Output path scheme (all under results/, logs and benchmarks mirror it):
#   ../resources/{input}/{file}                           inputs as fetched (config/manifest.yaml)
#   data/{dataset}/{split}.{lang}, data/{dataset}/image_splits/{split}.txt    corpora, checked
#   data/stats.tsv (+ data/stats/{dataset}.tsv)            sentences, tokens, types, OOV rate
#   data/vocab/{paper}.tsv                                 merges, vocabulary sizes, <unk> rates
#   text/{dataset}/{split}.{chain}.{lang}                  chain: [lc.][norm.](tok|wp|char) (recipes)
#   text/{paper}/{dataset}.{pair}/{split}.{chain}.bpe.{lang}, .../bpe.{joint|lang}.codes   per-paper BPE
#   vocab/{paper}/{dataset}.{pair}.{lang|joint}.json
#   features/{dataset}/{extractor}-{layer}[.std|.ctr]/{split}.npy (+ .index.parquet)
#   embeddings/{paper}/{dataset}.{pair}.{lang}.npy (+ .json), embeddings/{paper}/fasttext/{dataset}.{lang}.vec
#   models/{paper}/{system}/{dataset}.{pair}.seed{seed}.best.pt (+ .curve.tsv, .last.pt)
#   translations/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.txt
#   scores/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.json
#   attention/..., analyses/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{analysis}.json
#   tables/{paper}/{table}.tsv and tables/all.tsv (+ all.parquet)
# condition: congruent (each sentence with its image) | shuffled (images deranged) | no_image
#   (a model whose images are optional, run on the text alone) | blank_zero | blank_mean (the
#   image-use probes' blank images: tables/{paper}/{table}.probe.tsv, docs/probes.md) | masked,
#   masked_shuffled (the source's colour words masked: masked/{dataset}.{pair}/{split}[.{chain}].colours.{tsv|lang}).
#   text/{dataset}/{split}.{k}.{chain}.{lang}: caption k of each image (captioning sets);
#   figures/{paper}/{table}.curves.png: learning curves (tables of kind curves).
# The templates are defined once, in PATHS of workflow/rules/common.smk.

from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")


# The full configuration, found next to this file whatever --directory is; files given with
# --configfile (e.g. config/smoke.yaml) are merged on top of it.
configfile: Path(workflow.basedir) / "config" / "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/text.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/embeddings.smk"
include: "workflow/rules/align.smk"
include: "workflow/rules/backtranslation.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/decode.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/masking.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/curves.smk"
include: "workflow/rules/report.smk"


# Model configs are checked against their dataclasses once per real run (it imports torch;
# planning, dry runs and SLURM job steps do without).
onstart:
    onstart_check_models()


rule all:
    default_target: True
    input:
        PLAN.targets.default_targets(),
