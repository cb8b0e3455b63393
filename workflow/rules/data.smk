# Corpora: every external input is fetched by fetch_input (URL or local mirror, sha256 from
# config/manifest.yaml) into resources/, then prepared into checked plain-text splits under
# results/data/; the grounded sets are generated from a seed.


# One rule per layout (splits = keys of `sizes`, languages = `langs`) of the grounded datasets,
# since a rule's outputs cannot depend on its wildcards; the first is `generate_grounded`.
GROUNDED_LAYOUTS = {}
for _name, _layout in DATASET_LAYOUT.items():
    if dataset_config(_name)["source"] == "grounded":
        GROUNDED_LAYOUTS.setdefault(
            (tuple(_layout["splits"]), tuple(_layout["langs"])), []
        ).append(_name)

for _k, ((_splits, _langs), _names) in enumerate(GROUNDED_LAYOUTS.items()):

    rule:
        name:
            "generate_grounded" if _k == 0 else f"generate_grounded_{_names[0]}"
        output:
            text=expand(
                "results/data/{{dataset}}/{split}.{lang}", split=_splits, lang=_langs
            ),
            image_lists=expand(
                "results/data/{{dataset}}/image_splits/{split}.txt", split=_splits
            ),
            labels=expand("results/data/{{dataset}}/labels/{split}.tsv", split=_splits),
            boxes=expand("results/data/{{dataset}}/boxes/{split}.json", split=_splits),
            gold_align=[
                f"results/data/{{dataset}}/align/{_split}.{_a}-{_b}.gold"
                for _split in _splits
                for _a, _b in grounded_gold_pairs(_langs)
            ],
            images=directory("results/data/{dataset}/images"),
        log:
            "results/logs/generate_grounded/{dataset}.log",
        benchmark:
            "results/benchmarks/generate_grounded/{dataset}.tsv"
        wildcard_constraints:
            dataset="|".join(re.escape(n) for n in _names),
        conda:
            "../../envs/torch.yaml"
        params:
            sizes=dataset_value("sizes"),
            seed=dataset_value("generator_seed"),
            image_size=dataset_value("image_size"),
            langs=list(_langs),
        script:
            "../scripts/generate_grounded.py"


rule generate_comparable:
    input:
        labels="results/data/{dataset}/labels/train.tsv",
    output:
        text=expand(
            "results/data/{{dataset}}/train_c{k}.{lang}",
            k=range(1, COMPARABLE_PER_IMAGE + 1),
            lang=["en", "de"],
        ),
        image_lists=expand(
            "results/data/{{dataset}}/image_splits/train_c{k}.txt",
            k=range(1, COMPARABLE_PER_IMAGE + 1),
        ),
    log:
        "results/logs/generate_comparable/{dataset}.log",
    benchmark:
        "results/benchmarks/generate_comparable/{dataset}.tsv"
    wildcard_constraints:
        dataset=datasets_of("grounded"),
    conda:
        "../../envs/torch.yaml"
    params:
        per_image=COMPARABLE_PER_IMAGE,
        seed=dataset_value("generator_seed"),
    script:
        "../scripts/generate_comparable.py"


rule fetch_input:
    output:
        "resources/{input}/{file}",
    log:
        "results/logs/fetch_input/{input}/{file}.log",
    benchmark:
        "results/benchmarks/fetch_input/{input}/{file}.tsv"
    wildcard_constraints:
        input=MANIFEST_INPUTS,
        file=".+",
    localrule: True
    conda:
        "../../envs/text.yaml"
    params:
        mirror=config_path("inputs", "mirror"),
        local=local_input_dir,
    script:
        "../scripts/fetch_input.py"


# Multi30k task 1: any split and language that datasets.<name>.splits/langs configure (checked
# against the manifest at planning, mmt_repro.data.multi30k.check_config); the comparable
# descriptions (train_c<k>, below) have their own rules. A split or language outside the config
# stops planning with the key and the valid values, not with a missing-input error.
MULTI30K_SPLIT = r"(?!train_c[0-9]+\.)[a-z0-9_]+"


rule prepare_multi30k:
    input:
        multi30k_file("text"),
    output:
        "results/data/{dataset}/{split}.{lang}",
    log:
        "results/logs/prepare_multi30k/{dataset}/{split}.{lang}.log",
    benchmark:
        "results/benchmarks/prepare_multi30k/{dataset}/{split}.{lang}.tsv"
    wildcard_constraints:
        dataset=datasets_of("multi30k"),
        split=MULTI30K_SPLIT,
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/prepare_multi30k.py"


rule prepare_multi30k_image_list:
    input:
        multi30k_file("image_list"),
    output:
        "results/data/{dataset}/image_splits/{split}.txt",
    log:
        "results/logs/prepare_multi30k_image_list/{dataset}/{split}.log",
    benchmark:
        "results/benchmarks/prepare_multi30k_image_list/{dataset}/{split}.tsv"
    wildcard_constraints:
        dataset=datasets_of("multi30k"),
        split=MULTI30K_SPLIT,
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/prepare_multi30k_image_list.py"


rule prepare_multi30k_comparable:
    input:
        "resources/multi30k_task2/raw/train.{k}.{lang}.gz",
    output:
        "results/data/multi30k/train_c{k}.{lang}",
    log:
        "results/logs/prepare_multi30k_comparable/train_c{k}.{lang}.log",
    benchmark:
        "results/benchmarks/prepare_multi30k_comparable/train_c{k}.{lang}.tsv"
    wildcard_constraints:
        k="[1-5]",
        lang="en|de",
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/prepare_multi30k_comparable.py"


rule prepare_multi30k_comparable_image_list:
    input:
        "resources/multi30k_task2/image_splits/train_images.txt",
    output:
        "results/data/multi30k/image_splits/train_c{k}.txt",
    log:
        "results/logs/prepare_multi30k_comparable_image_list/train_c{k}.log",
    benchmark:
        "results/benchmarks/prepare_multi30k_comparable_image_list/train_c{k}.tsv"
    wildcard_constraints:
        k="[1-5]",
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/prepare_multi30k_comparable_image_list.py"


rule prepare_wmt15:
    input:
        expand("resources/wmt15_en_de/{archive}", archive=WMT15_ARCHIVES),
    output:
        en="results/data/wmt15/train.en",
        de="results/data/wmt15/train.de",
    log:
        "results/logs/prepare_wmt15/wmt15.log",
    benchmark:
        "results/benchmarks/prepare_wmt15/wmt15.tsv"
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/prepare_wmt15.py"


# One rule per corpus prepared by mmt_repro.data.prepare (IWSLT'14, news test sets, VATEX,
# COCO captions, TasvirEt): its inputs and outputs come from corpus_plan, the same plan the
# package follows, so the two cannot drift apart.
for _dataset in PREPARED_CORPORA:

    rule:
        name:
            f"prepare_{_dataset}"
        input:
            list(corpus_plan_of(_dataset)[0].values()),
        output:
            [f"results/data/{_dataset}/{out}" for out in corpus_plan_of(_dataset)[1]],
        log:
            f"results/logs/prepare_corpus/{_dataset}.log",
        benchmark:
            f"results/benchmarks/prepare_corpus/{_dataset}.tsv"
        conda:
            "../../envs/text.yaml"
        params:
            dataset=_dataset,
            settings=dataset_config(_dataset),
        script:
            "../scripts/prepare_corpus.py"


rule corpus_stats:
    input:
        stats_inputs,
    output:
        "results/data/stats/{dataset}.tsv",
    log:
        "results/logs/corpus_stats/{dataset}.log",
    benchmark:
        "results/benchmarks/corpus_stats/{dataset}.tsv"
    conda:
        "../../envs/text.yaml"
    params:
        files=stats_files,
        image_lists=stats_image_lists,
        train_split=stats_train_split,
    script:
        "../scripts/corpus_stats.py"


rule gather_stats:
    input:
        expand("results/data/stats/{dataset}.tsv", dataset=config["data"]["corpora"]),
    output:
        "results/data/stats.tsv",
    log:
        "results/logs/gather_stats/stats.log",
    benchmark:
        "results/benchmarks/gather_stats/stats.tsv"
    localrule: True
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/gather_stats.py"
