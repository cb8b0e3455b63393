# Corpora: fetched (Multi30k task 1 and 2, WMT'15) or generated (the grounded sets), checked.


rule generate_grounded:
    output:
        text=expand("results/data/{{dataset}}/{split}.{lang}", split=GROUNDED_SPLITS, lang=LANGS),
        image_lists=expand("results/data/{{dataset}}/image_splits/{split}.txt", split=GROUNDED_SPLITS),
        labels=expand("results/data/{{dataset}}/labels/{split}.tsv", split=GROUNDED_SPLITS),
        images=directory("results/data/{dataset}/images"),
    wildcard_constraints:
        dataset=datasets_of("grounded"),
    params:
        sizes=dataset_value("sizes"),
        seed=dataset_value("generator_seed"),
        image_size=dataset_value("image_size"),
        langs=LANGS,
    log:
        "results/logs/generate_grounded/{dataset}.log",
    benchmark:
        "results/benchmarks/generate_grounded/{dataset}.tsv"
    conda:
        "../../envs/torch.yaml"
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
    wildcard_constraints:
        dataset=datasets_of("grounded"),
    params:
        per_image=COMPARABLE_PER_IMAGE,
        seed=dataset_value("generator_seed"),
    log:
        "results/logs/generate_comparable/{dataset}.log",
    benchmark:
        "results/benchmarks/generate_comparable/{dataset}.tsv"
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/generate_comparable.py"


rule fetch_multi30k:
    output:
        "results/data/multi30k/{split}.{lang}",
    wildcard_constraints:
        split=MULTI30K_SPLITS,
    params:
        mirror=config_path("datasets", "multi30k", "mirror"),
        url=config["datasets"].get("multi30k", {}).get("url"),
    log:
        "results/logs/fetch_multi30k/{split}.{lang}.log",
    benchmark:
        "results/benchmarks/fetch_multi30k/{split}.{lang}.tsv"
    localrule: True
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/fetch_multi30k.py"


rule fetch_multi30k_image_list:
    output:
        "results/data/multi30k/image_splits/{split}.txt",
    wildcard_constraints:
        split=MULTI30K_SPLITS,
    params:
        mirror=config_path("datasets", "multi30k", "mirror"),
        url=config["datasets"].get("multi30k", {}).get("url"),
    log:
        "results/logs/fetch_multi30k_image_list/{split}.log",
    benchmark:
        "results/benchmarks/fetch_multi30k_image_list/{split}.tsv"
    localrule: True
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/fetch_multi30k_image_list.py"


rule fetch_multi30k_comparable:
    output:
        "results/data/multi30k/train_c{k}.{lang}",
    wildcard_constraints:
        k="[1-5]",
        lang="en|de",
    params:
        mirror=config_path("datasets", "multi30k", "mirror"),
        url=config["datasets"].get("multi30k", {}).get("url"),
    log:
        "results/logs/fetch_multi30k_comparable/train_c{k}.{lang}.log",
    benchmark:
        "results/benchmarks/fetch_multi30k_comparable/train_c{k}.{lang}.tsv"
    localrule: True
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/fetch_multi30k_comparable.py"


rule fetch_multi30k_comparable_image_list:
    output:
        "results/data/multi30k/image_splits/train_c{k}.txt",
    wildcard_constraints:
        k="[1-5]",
    params:
        mirror=config_path("datasets", "multi30k", "mirror"),
        url=config["datasets"].get("multi30k", {}).get("url"),
    log:
        "results/logs/fetch_multi30k_comparable_image_list/train_c{k}.log",
    benchmark:
        "results/benchmarks/fetch_multi30k_comparable_image_list/train_c{k}.tsv"
    localrule: True
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/fetch_multi30k_comparable_image_list.py"


rule fetch_wmt15:
    output:
        en="results/data/wmt15/train.en",
        de="results/data/wmt15/train.de",
    params:
        mirror=config_path("datasets", "wmt15", "mirror"),
        cache_dir="resources/wmt15",
    log:
        "results/logs/fetch_wmt15/wmt15.log",
    benchmark:
        "results/benchmarks/fetch_wmt15/wmt15.tsv"
    localrule: True
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/fetch_wmt15.py"
