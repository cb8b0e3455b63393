# Corpora: every external input is fetched by fetch_input (URL or local mirror, sha256 from
# config/manifest.yaml) into resources/, then prepared into checked plain-text splits under
# results/data/; the grounded sets are generated from a seed.


# One rule per layout (splits = keys of `sizes`, languages = `langs`) of the grounded datasets,
# since a rule's outputs cannot depend on its wildcards; the first is `generate_grounded`.
GROUNDED_LAYOUTS = PLAN.data.grounded_layouts("grounded")

for _k, ((_splits, _langs), _names) in enumerate(GROUNDED_LAYOUTS.items()):

    rule:
        name:
            "generate_grounded" if _k == 0 else f"generate_grounded_{_names[0]}"
        output:
            text=expand(PATHS["corpus"], split=_splits, lang=_langs, allow_missing=True),
            image_lists=expand(PATHS["image_list"], split=_splits, allow_missing=True),
            labels=expand(PATHS["labels"], split=_splits, allow_missing=True),
            boxes=expand(PATHS["given_boxes"], split=_splits, allow_missing=True),
            gold_align=[
                f"results/data/{{dataset}}/align/{_split}.{_a}-{_b}.gold"
                for _split in _splits
                for _a, _b in PLAN.data.grounded_gold_pairs(_langs)
            ],
            images=directory(PATHS["images"]),
        log:
            "results/logs/generate_grounded/{dataset}.log",
        benchmark:
            "results/benchmarks/generate_grounded/{dataset}.tsv"
        wildcard_constraints:
            dataset="|".join(re.escape(n) for n in _names),
        conda:
            ENV
        container:
            CONTAINER
        params:
            sizes=PLAN.dataset_value("sizes"),
            seed=PLAN.dataset_value("generator_seed"),
            image_size=PLAN.dataset_value("image_size"),
            langs=list(_langs),
            objects=PLAN.dataset_value("objects", "same"),
            code=code("grounded", "generate_grounded.py"),
        script:
            "../scripts/generate_grounded.py"


rule generate_comparable:
    input:
        labels=path("labels", dataset="{dataset}", split="train"),
    output:
        text=expand(
            path("corpus", dataset="{{dataset}}", split="train_c{k}", lang="{lang}"),
            k=range(1, PLAN.data.comparable_per_image + 1),
            lang=["en", "de"],
        ),
        image_lists=expand(
            path("image_list", dataset="{{dataset}}", split="train_c{k}"),
            k=range(1, PLAN.data.comparable_per_image + 1),
        ),
    log:
        "results/logs/generate_comparable/{dataset}.log",
    benchmark:
        "results/benchmarks/generate_comparable/{dataset}.tsv"
    wildcard_constraints:
        dataset=PLAN.datasets_of("grounded"),
    conda:
        ENV
    container:
        CONTAINER
    params:
        per_image=PLAN.data.comparable_per_image,
        seed=PLAN.dataset_value("generator_seed"),
        code=code("grounded", "generate_comparable.py"),
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
        input=PLAN.data.manifest_inputs,
        file=".+",
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        # where a checked file comes from decides nothing: not compared (mmt_repro.plan.data)
        mirror=PLAN.data.mirror_dir,
        local=PLAN.data.local_input_dir,
        code=code("fetch", "fetch_input.py"),
    script:
        "../scripts/fetch_input.py"


# An archive whose members jobs read as files (the manifest's `unpack`: VATEX's I3D zips, the
# pysimt feature tarballs), unpacked into resources/<input>/<into>/ beside the download; a
# feature set's `src` under that folder makes this job an input of its import.
rule unpack_input:
    input:
        archive=PLAN.data.unpack_archive,
    output:
        directory("resources/{input}/{folder}"),
    log:
        "results/logs/unpack_input/{input}/{folder}.log",
    benchmark:
        "results/benchmarks/unpack_input/{input}/{folder}.tsv"
    wildcard_constraints:
        input=PLAN.data.unpack_inputs,
        folder=PLAN.data.unpack_folders,
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        strip=PLAN.data.unpack_param("strip"),
        expect=PLAN.data.unpack_param("expect"),
        code=code("unpack", "unpack_input.py"),
    script:
        "../scripts/unpack_input.py"


# the unpacked folder resources/<input>/<into> is not a file of the input to fetch
ruleorder: unpack_input > fetch_input


# A file of the repository that a job reads (config/published_results.tsv, a paper's word list),
# copied into the run folder: jobs name the copy, by the same path wherever the checkout is, and
# the copy is redone when the file's bytes change (its sha256 param).
rule repo_file:
    output:
        "results/repo/{file}",
    log:
        "results/logs/repo_file/{file}.log",
    wildcard_constraints:
        # any relative path a config names as a repository file (plan.lookup.Lookup.run_path),
        # never one that leaves the repository
        file=r"(?!/)(?!.*\.\./).+",
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        source=PLAN.data.repo_file_source,
        sha256=PLAN.data.repo_file_sha256,
        code=code("fetch", "copy_repo_file.py"),
    script:
        "../scripts/copy_repo_file.py"


# Multi30k task 1: any split and language that datasets.<name>.splits/langs configure (checked
# against the manifest at planning, mmt_repro.corpora.multi30k.check_config); the comparable
# descriptions (train_c<k>, below) have their own rules. A split or language outside the config
# stops planning with the key and the valid values, not with a missing-input error.
MULTI30K_SPLIT = r"(?!train_c[0-9]+\.)[a-z0-9_]+"


rule prepare_multi30k:
    input:
        PLAN.data.multi30k_file("text"),
    output:
        PATHS["corpus"],
    log:
        "results/logs/prepare_multi30k/{dataset}/{split}.{lang}.log",
    benchmark:
        "results/benchmarks/prepare_multi30k/{dataset}/{split}.{lang}.tsv"
    wildcard_constraints:
        dataset=PLAN.datasets_of("multi30k"),
        split=MULTI30K_SPLIT,
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("corpora", "prepare_multi30k.py"),
    script:
        "../scripts/prepare_multi30k.py"


rule prepare_multi30k_image_list:
    input:
        PLAN.data.multi30k_file("image_list"),
    output:
        PATHS["image_list"],
    log:
        "results/logs/prepare_multi30k_image_list/{dataset}/{split}.log",
    benchmark:
        "results/benchmarks/prepare_multi30k_image_list/{dataset}/{split}.tsv"
    wildcard_constraints:
        dataset=PLAN.datasets_of("multi30k"),
        split=MULTI30K_SPLIT,
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("corpora", "prepare_multi30k_image_list.py"),
    script:
        "../scripts/prepare_multi30k_image_list.py"


rule prepare_multi30k_comparable:
    input:
        "resources/multi30k_task2/raw/train.{k}.{lang}.gz",
    output:
        path("corpus", dataset="multi30k", split="train_c{k}", lang="{lang}"),
    log:
        "results/logs/prepare_multi30k_comparable/train_c{k}.{lang}.log",
    benchmark:
        "results/benchmarks/prepare_multi30k_comparable/train_c{k}.{lang}.tsv"
    wildcard_constraints:
        k="[1-5]",
        lang="en|de",
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("corpora", "prepare_multi30k_comparable.py"),
    script:
        "../scripts/prepare_multi30k_comparable.py"


rule prepare_multi30k_comparable_image_list:
    input:
        "resources/multi30k_task2/image_splits/train_images.txt",
    output:
        path("image_list", dataset="multi30k", split="train_c{k}"),
    log:
        "results/logs/prepare_multi30k_comparable_image_list/train_c{k}.log",
    benchmark:
        "results/benchmarks/prepare_multi30k_comparable_image_list/train_c{k}.tsv"
    wildcard_constraints:
        k="[1-5]",
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("corpora", "prepare_multi30k_comparable_image_list.py"),
    script:
        "../scripts/prepare_multi30k_comparable_image_list.py"


rule prepare_wmt15:
    input:
        expand("resources/wmt15_en_de/{archive}", archive=PLAN.data.wmt15_archives),
    output:
        en=path("corpus", dataset="wmt15", split="train", lang="en"),
        de=path("corpus", dataset="wmt15", split="train", lang="de"),
    log:
        "results/logs/prepare_wmt15/wmt15.log",
    benchmark:
        "results/benchmarks/prepare_wmt15/wmt15.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("corpora", "prepare_wmt15.py"),
    script:
        "../scripts/prepare_wmt15.py"


# One rule per corpus prepared by mmt_repro.corpora.prepare (IWSLT'14, news test sets, VATEX,
# COCO captions, TasvirEt): its inputs and outputs come from corpus_plan, the same plan the
# package follows, so the two cannot drift apart.
for _dataset in PLAN.data.prepared_corpora:

    rule:
        name:
            f"prepare_{_dataset}"
        input:
            list(PLAN.data.corpus_plan_of(_dataset)[0].values()),
        output:
            [
                f"{path('data_dir', dataset=_dataset)}/{out}"
                for out in PLAN.data.corpus_plan_of(_dataset)[1]
            ],
        log:
            f"results/logs/prepare_corpus/{_dataset}.log",
        benchmark:
            f"results/benchmarks/prepare_corpus/{_dataset}.tsv"
        conda:
            ENV
        container:
            CONTAINER
        params:
            dataset=_dataset,
            settings=PLAN.dataset_config(_dataset),
            code=code("corpora", "prepare_corpus.py"),
        script:
            "../scripts/prepare_corpus.py"


rule corpus_stats:
    input:
        PLAN.data.stats_inputs,
    output:
        PATHS["corpus_stats"],
    log:
        "results/logs/corpus_stats/{dataset}.log",
    benchmark:
        "results/benchmarks/corpus_stats/{dataset}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        files=PLAN.data.stats_files,
        image_lists=PLAN.data.stats_image_lists,
        train_split=PLAN.data.stats_train_split,
        code=code("corpora", "corpus_stats.py"),
    script:
        "../scripts/corpus_stats.py"


rule gather_stats:
    input:
        expand(PATHS["corpus_stats"], dataset=config["data"]["corpora"]),
    output:
        PATHS["stats"],
    log:
        "results/logs/gather_stats/stats.log",
    benchmark:
        "results/benchmarks/gather_stats/stats.tsv"
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("corpora", "gather_stats.py"),
    script:
        "../scripts/gather_stats.py"


# Grounded video sets (DeepFuse's check): clips of moving shapes whose direction only the order
# of the frames shows; one rule per dataset, since the outputs depend on its splits.
for _name, _layout in PLAN.layout.items():
    if PLAN.dataset_config(_name)["source"] != "grounded_video":
        continue

    rule:
        name:
            f"generate_grounded_video_{_name}"
        output:
            text=expand(
                PATHS["corpus"],
                dataset=_name,
                split=_layout["splits"],
                lang=_layout["langs"],
            ),
            video_lists=expand(
                PATHS["video_list"], dataset=_name, split=_layout["splits"]
            ),
            labels=expand(PATHS["labels"], dataset=_name, split=_layout["splits"]),
            videos=directory(path("videos", dataset=_name)),
        log:
            f"results/logs/generate_grounded_video/{_name}.log",
        benchmark:
            f"results/benchmarks/generate_grounded_video/{_name}.tsv"
        conda:
            ENV
        container:
            CONTAINER
        params:
            sizes=PLAN.dataset_config(_name)["sizes"],
            seed=PLAN.dataset_config(_name)["generator_seed"],
            image_size=PLAN.dataset_config(_name).get("image_size", 40),
            n_frames=PLAN.dataset_config(_name).get("frames", 16),
            langs=list(_layout["langs"]),
            time_shuffled=dict(PLAN.dataset_config(_name).get("time_shuffled") or {}),
            code=code("grounded", "generate_grounded_video.py"),
        script:
            "../scripts/generate_grounded_video.py"
