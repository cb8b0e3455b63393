# Visual features: every view the papers read (ResNet grids and pools, detector regions, I3D
# video segments, official pre-extracted files) in float16 stores that training memory-maps.
# A dataset's feature sets are named in the config; their `kind` picks the rule.


rule list_media:
    output:
        images="results/data/{dataset}/image_splits/all.txt",
        videos="results/data/{dataset}/video_splits/all.txt",
    log:
        "results/logs/list_media/{dataset}.log",
    benchmark:
        "results/benchmarks/list_media/{dataset}.tsv"
    wildcard_constraints:
        dataset=datasets_of("media"),
    localrule: True
    conda:
        "../../envs/text.yaml"
    params:
        folder=media_folder,
    script:
        "../scripts/list_media.py"


rule extract_features:
    input:
        unpack(image_inputs),
    output:
        npy=f"{PATHS['features']}.npy",
        index=f"{PATHS['features']}.index.parquet",
    log:
        "results/logs/extract_features/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/extract_features/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=feature_sets_of("grid"),
    conda:
        "../../envs/torch.yaml"
    # Intra-op torch threads for CPU extraction; Snakemake scales this down to --cores.
    threads: 4
    resources:
        mem_mb=8000,
        runtime=600,
        gpu=gpu_count,
    params:
        image_dir=image_dir,
        missing_dir_fix=missing_images_fix,
        extractor=feature_param("extractor"),
        layer=feature_param("layer"),
        weights=feature_param("weights"),
        image_size=feature_param("image_size"),
        batch_size=32,
        device=config["device"],
    script:
        "../scripts/extract_features.py"


rule extract_regions:
    input:
        unpack(region_inputs),
    output:
        npy=f"{PATHS['features']}.npy",
        boxes=f"{PATHS['features']}.boxes.npy",
        index=f"{PATHS['features']}.index.parquet",
    log:
        "results/logs/extract_regions/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/extract_regions/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=feature_sets_of("regions"),
    conda:
        "../../envs/torch.yaml"
    # Intra-op torch threads for CPU extraction; Snakemake scales this down to --cores.
    threads: 4
    resources:
        mem_mb=12000,
        runtime=1440,
        gpu=gpu_count,
    params:
        image_dir=image_dir,
        missing_dir_fix=missing_images_fix,
        backend=feature_param("backend"),
        weights=feature_param("weights"),
        max_boxes=feature_param("max_boxes"),
        min_boxes=feature_param("min_boxes", None),
        conf_thresh=feature_param("conf_thresh", 0.2),
        full_image=feature_param("full_image", False),
        min_size=feature_param("min_size", None),
        max_size=feature_param("max_size", None),
        given_boxes=given_boxes_file,
        device=config["device"],
    script:
        "../scripts/extract_regions.py"


rule extract_video:
    input:
        video_list="results/data/{dataset}/video_splits/{split}.txt",
    output:
        npy=f"{PATHS['features']}.npy",
        index=f"{PATHS['features']}.index.parquet",
    log:
        "results/logs/extract_video/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/extract_video/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=feature_sets_of("video"),
    conda:
        "../../envs/torch.yaml"
    # Intra-op torch threads for CPU extraction; Snakemake scales this down to --cores.
    threads: 4
    resources:
        mem_mb=12000,
        runtime=1440,
        gpu=gpu_count,
    params:
        video_dir=video_dir,
        weights=feature_param("weights"),
        n_segments=feature_param("n_segments"),
        frames_per_segment=feature_param("frames_per_segment", 8),
        crop_size=feature_param("crop_size", 224),
        device=config["device"],
    script:
        "../scripts/extract_video.py"


rule import_features:
    input:
        image_list="results/data/{dataset}/image_splits/{split}.txt",
    output:
        npy=f"{PATHS['features']}.npy",
        index=f"{PATHS['features']}.index.parquet",
    log:
        "results/logs/import_features/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/import_features/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=feature_sets_of("pretrained", imports="!butd"),
    conda:
        "../../envs/torch.yaml"
    params:
        kind=feature_param("import"),
        src=pretrained_source,
        layer=feature_param("layer", None),
        max_boxes=feature_param("max_boxes", 36),
        n_segments=feature_param("n_segments", None),
    script:
        "../scripts/import_features.py"


# Official bottom-up-attention region features (one .npz per image): a region store, with boxes.
rule import_regions:
    input:
        image_list="results/data/{dataset}/image_splits/{split}.txt",
    output:
        npy=f"{PATHS['features']}.npy",
        boxes=f"{PATHS['features']}.boxes.npy",
        index=f"{PATHS['features']}.index.parquet",
    log:
        "results/logs/import_regions/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/import_regions/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=feature_sets_of("pretrained", imports="butd"),
    conda:
        "../../envs/torch.yaml"
    params:
        src=pretrained_source,
        max_boxes=feature_param("max_boxes", 36),
    script:
        "../scripts/import_regions.py"


rule standardize_features:
    input:
        npy=f"{PATHS['features']}.npy",
        index=f"{PATHS['features']}.index.parquet",
        train_npy=train_feature_store("npy"),
        train_index=train_feature_store("index"),
    output:
        npy="results/features/{dataset}/{feature_set}.std/{split}.npy",
        index="results/features/{dataset}/{feature_set}.std/{split}.index.parquet",
    log:
        "results/logs/standardize_features/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/standardize_features/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=feature_sets_of("grid|video"),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/standardize_features.py"


rule standardize_regions:
    input:
        npy=f"{PATHS['features']}.npy",
        index=f"{PATHS['features']}.index.parquet",
        boxes=f"{PATHS['features']}.boxes.npy",
        train_npy=train_feature_store("npy"),
        train_index=train_feature_store("index"),
    output:
        npy="results/features/{dataset}/{feature_set}.std/{split}.npy",
        index="results/features/{dataset}/{feature_set}.std/{split}.index.parquet",
        boxes="results/features/{dataset}/{feature_set}.std/{split}.boxes.npy",
    log:
        "results/logs/standardize_regions/{dataset}/{feature_set}/{split}.log",
    benchmark:
        "results/benchmarks/standardize_regions/{dataset}/{feature_set}/{split}.tsv"
    wildcard_constraints:
        feature_set=feature_sets_of("regions"),
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/standardize_features.py"
