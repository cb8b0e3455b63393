# Corpora: fetched (Multi30k) or generated (the grounded smoke set), then checked.


rule generate_grounded:
    output:
        text=expand(
            "results/data/grounded/{split}.{lang}",
            split=dataset_splits("grounded") if "grounded" in config["datasets"] else [],
            lang=LANGS,
        ),
        image_lists=expand(
            "results/data/grounded/image_splits/{split}.txt",
            split=dataset_splits("grounded") if "grounded" in config["datasets"] else [],
        ),
        images=directory("results/data/grounded/images"),
    params:
        sizes=config["datasets"].get("grounded", {}).get("sizes"),
        seed=config["datasets"].get("grounded", {}).get("generator_seed"),
        image_size=config["datasets"].get("grounded", {}).get("image_size"),
        langs=LANGS,
    log:
        "results/logs/generate_grounded/grounded.log",
    benchmark:
        "results/benchmarks/generate_grounded/grounded.tsv"
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/generate_grounded.py"


rule fetch_multi30k:
    output:
        "results/data/multi30k/{split}.{lang}",
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
