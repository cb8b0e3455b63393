# Visual features: every view the papers read (ResNet grids and pools, detector regions, I3D
# video segments, official pre-extracted files) in float16 stores that training memory-maps.
# A dataset's feature sets are named in the config; their `kind` picks the rule.


rule list_media:
    output:
        images=path("image_list", dataset="{dataset}", split="all"),
        videos=path("video_list", dataset="{dataset}", split="all"),
    log:
        "results/logs/list_media/{dataset}.log",
    benchmark:
        "results/benchmarks/list_media/{dataset}.tsv"
    wildcard_constraints:
        dataset=PLAN.datasets_of("media"),
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        folder=PLAN.features.media_folder,
        code=code("corpora", "list_media.py"),
    script:
        "../scripts/list_media.py"


rule extract_features:
    input:
        unpack(PLAN.features.image_inputs),
    output:
        npy=f"{PATHS['features']}.npy",
        index=f"{PATHS['features']}.index.parquet",
    log:
        "results/logs/extract_features/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/extract_features/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=PLAN.features.feature_sets_of("grid"),
    conda:
        ENV
    container:
        CONTAINER
    # Intra-op torch threads for CPU extraction; Snakemake scales this down to --cores.
    threads: PLAN.threads("features")
    resources:
        mem_mb=8000,
        runtime=600,
        gpu=PLAN.gpu_count,
    params:
        image_dir=PLAN.features.image_dir,
        missing_dir_fix=PLAN.features.missing_images_fix,
        extractor=PLAN.features.feature_param("extractor"),
        layer=PLAN.features.feature_param("layer"),
        weights=PLAN.features.feature_param("weights"),
        image_size=PLAN.features.feature_param("image_size"),
        batch_size=32,
        device=config["device"],
        code=code("features", "extract_features.py"),
    script:
        "../scripts/extract_features.py"


rule extract_regions:
    input:
        unpack(PLAN.features.region_inputs),
    output:
        npy=f"{PATHS['features']}.npy",
        boxes=f"{PATHS['features']}.boxes.npy",
        index=f"{PATHS['features']}.index.parquet",
    log:
        "results/logs/extract_regions/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/extract_regions/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=PLAN.features.feature_sets_of("regions"),
    conda:
        ENV
    container:
        CONTAINER
    # Intra-op torch threads for CPU extraction; Snakemake scales this down to --cores.
    threads: PLAN.threads("features")
    resources:
        mem_mb=12000,
        runtime=1440,
        gpu=PLAN.gpu_count,
    params:
        image_dir=PLAN.features.image_dir,
        missing_dir_fix=PLAN.features.missing_images_fix,
        backend=PLAN.features.feature_param("backend"),
        weights=PLAN.features.feature_param("weights"),
        max_boxes=PLAN.features.feature_param("max_boxes"),
        min_boxes=PLAN.features.feature_param("min_boxes", None),
        conf_thresh=PLAN.features.feature_param("conf_thresh", 0.2),
        full_image=PLAN.features.feature_param("full_image", False),
        min_size=PLAN.features.feature_param("min_size", None),
        max_size=PLAN.features.feature_param("max_size", None),
        given_boxes=PLAN.features.given_boxes_file,
        device=config["device"],
        code=code("features", "extract_regions.py"),
    script:
        "../scripts/extract_regions.py"


rule extract_video:
    input:
        unpack(PLAN.features.video_inputs),
    output:
        npy=f"{PATHS['features']}.npy",
        index=f"{PATHS['features']}.index.parquet",
    log:
        "results/logs/extract_video/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/extract_video/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=PLAN.features.feature_sets_of("video"),
    conda:
        ENV
    container:
        CONTAINER
    # Intra-op torch threads for CPU extraction; Snakemake scales this down to --cores.
    threads: PLAN.threads("features")
    resources:
        mem_mb=12000,
        runtime=1440,
        gpu=PLAN.gpu_count,
    params:
        video_dir=PLAN.features.video_dir,
        weights=PLAN.features.feature_param("weights"),
        n_segments=PLAN.features.feature_param("n_segments"),
        frames_per_segment=PLAN.features.feature_param("frames_per_segment", 8),
        crop_size=PLAN.features.feature_param("crop_size", 224),
        batch_size=PLAN.features.feature_param("batch_size", 8),
        device=config["device"],
        code=code("features", "extract_video.py"),
    script:
        "../scripts/extract_video.py"


rule import_features:
    input:
        unpack(PLAN.features.pretrained_inputs),
    output:
        npy=f"{PATHS['features']}.npy",
        index=f"{PATHS['features']}.index.parquet",
    log:
        "results/logs/import_features/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/import_features/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=PLAN.features.pretrained_sets(regions=False),
    conda:
        ENV
    container:
        CONTAINER
    # reads or writes a whole store (8-12 GB for 100-box regions): memory and time from its
    # size (mmt_repro.plan_tools.cost.store_mem_mb, store_runtime)
    resources:
        mem_mb=lambda wildcards: store_mem_mb(PLAN, wildcards),
        runtime=lambda wildcards: store_runtime(PLAN, wildcards),
    params:
        kind=PLAN.features.feature_param("import"),
        src=PLAN.features.pretrained_source,
        layer=PLAN.features.feature_param("layer", None),
        max_boxes=PLAN.features.feature_param("max_boxes", 36),
        n_segments=PLAN.features.feature_param("n_segments", None),
        code=code("features", "import_features.py"),
    script:
        "../scripts/import_features.py"


# The official bottom-up-attention region features (BUTD obj36): features and boxes. The
# official files' folder is an input when the workflow unpacks it (rule unpack_input).
rule import_regions:
    input:
        unpack(PLAN.features.pretrained_inputs),
    output:
        npy=f"{PATHS['features']}.npy",
        boxes=f"{PATHS['features']}.boxes.npy",
        index=f"{PATHS['features']}.index.parquet",
    log:
        "results/logs/import_regions/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/import_regions/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=PLAN.features.pretrained_sets(regions=True),
    conda:
        ENV
    container:
        CONTAINER
    # memory and time from the store's size (see import_features)
    resources:
        mem_mb=lambda wildcards: store_mem_mb(PLAN, wildcards),
        runtime=lambda wildcards: store_runtime(PLAN, wildcards),
    params:
        kind=PLAN.features.feature_param("import"),
        src=PLAN.features.pretrained_source,
        max_boxes=PLAN.features.feature_param("max_boxes", 36),
        code=code("features", "import_regions.py"),
    script:
        "../scripts/import_regions.py"


# Constant features (`kind: constant`): a stand-in where the images are not available, e.g.
# the CPU runs on real Multi30k text (no image information reaches the model).
rule constant_features:
    input:
        image_list="results/data/{dataset}/image_splits/{split}.txt",
    output:
        npy=f"{PATHS['features']}.npy",
        index=f"{PATHS['features']}.index.parquet",
    log:
        "results/logs/constant_features/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/constant_features/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=PLAN.features.feature_sets_of("constant"),
    conda:
        ENV
    container:
        CONTAINER
    # memory and time from the store's size (see import_features)
    resources:
        mem_mb=lambda wildcards: store_mem_mb(PLAN, wildcards),
        runtime=lambda wildcards: store_runtime(PLAN, wildcards),
    params:
        n_regions=PLAN.features.feature_param("max_boxes", 36),
        dim=PLAN.features.feature_param("dim", 2048),
        value=PLAN.features.feature_param("value", 0.0),
        code=code("features", "constant_features.py"),
    script:
        "../scripts/constant_features.py"


rule standardize_features:
    input:
        npy=f"{PATHS['features']}.npy",
        index=f"{PATHS['features']}.index.parquet",
        train_npy=PLAN.features.train_feature_store("npy"),
        train_index=PLAN.features.train_feature_store("index"),
    output:
        npy="results/features/{dataset}/{feature_set}.std/{split}.npy",
        index="results/features/{dataset}/{feature_set}.std/{split}.index.parquet",
    log:
        "results/logs/standardize_features/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/standardize_features/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=PLAN.features.feature_sets_of("grid|video|pretrained", "resnet50"),
    conda:
        ENV
    container:
        CONTAINER
    # memory and time from the store's size (see import_features)
    resources:
        mem_mb=lambda wildcards: store_mem_mb(PLAN, wildcards, fit=True),
        runtime=lambda wildcards: store_runtime(PLAN, wildcards, fit=True),
    params:
        code=code("features", "standardize_features.py"),
    script:
        "../scripts/standardize_features.py"


rule standardize_regions:
    input:
        npy=f"{PATHS['features']}.npy",
        index=f"{PATHS['features']}.index.parquet",
        boxes=f"{PATHS['features']}.boxes.npy",
        train_npy=PLAN.features.train_feature_store("npy"),
        train_index=PLAN.features.train_feature_store("index"),
    output:
        npy="results/features/{dataset}/{feature_set}.std/{split}.npy",
        index="results/features/{dataset}/{feature_set}.std/{split}.index.parquet",
        boxes="results/features/{dataset}/{feature_set}.std/{split}.boxes.npy",
    log:
        "results/logs/standardize_regions/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/standardize_regions/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=PLAN.features.feature_sets_of("regions"),
    conda:
        ENV
    container:
        CONTAINER
    # memory and time from the store's size (see import_features)
    resources:
        mem_mb=lambda wildcards: store_mem_mb(PLAN, wildcards, fit=True),
        runtime=lambda wildcards: store_runtime(PLAN, wildcards, fit=True),
    params:
        code=code("features", "standardize_features.py"),
    script:
        "../scripts/standardize_features.py"


# Grid stores, extracted or imported (a published ResNet-50 release, `import: resnet50`), are
# standardised or centred alike.
rule center_features:
    input:
        npy=f"{PATHS['features']}.npy",
        index=f"{PATHS['features']}.index.parquet",
        train_npy=PLAN.features.train_feature_store("npy"),
        train_index=PLAN.features.train_feature_store("index"),
    output:
        npy="results/features/{dataset}/{feature_set}.ctr/{split}.npy",
        index="results/features/{dataset}/{feature_set}.ctr/{split}.index.parquet",
    log:
        "results/logs/center_features/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/center_features/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=PLAN.features.feature_sets_of("grid|pretrained", "resnet50"),
    conda:
        ENV
    container:
        CONTAINER
    # memory and time from the store's size (see import_features)
    resources:
        mem_mb=lambda wildcards: store_mem_mb(PLAN, wildcards, fit=True),
        runtime=lambda wildcards: store_runtime(PLAN, wildcards, fit=True),
    params:
        code=code("features", "center_features.py"),
    script:
        "../scripts/center_features.py"
