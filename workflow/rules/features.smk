# Image features: one extractor interface, float16 stores memory-mapped by training.


rule extract_features:
    input:
        unpack(image_inputs),
    output:
        npy="results/features/{dataset}/{extractor}-{layer}/{split}.npy",
        index="results/features/{dataset}/{extractor}-{layer}/{split}.index.parquet",
    params:
        image_dir=image_dir,
        missing_dir_fix=missing_images_fix,
        weights=feature_param("weights"),
        image_size=feature_param("image_size"),
        batch_size=32,
        device=config["device"],
    # Intra-op torch threads for CPU extraction; Snakemake scales this down to --cores.
    threads: 4
    resources:
        mem_mb=8000,
        runtime=600,
        gpu=gpu_count,
    log:
        "results/logs/extract_features/{dataset}/{extractor}-{layer}/{split}.log",
    benchmark:
        "results/benchmarks/extract_features/{dataset}/{extractor}-{layer}/{split}.tsv"
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/extract_features.py"


rule standardize_features:
    input:
        npy="results/features/{dataset}/{extractor}-{layer}/{split}.npy",
        index="results/features/{dataset}/{extractor}-{layer}/{split}.index.parquet",
        train_npy=train_feature_store("npy"),
        train_index=train_feature_store("index"),
    output:
        npy="results/features/{dataset}/{extractor}-{layer}.std/{split}.npy",
        index="results/features/{dataset}/{extractor}-{layer}.std/{split}.index.parquet",
    log:
        "results/logs/standardize_features/{dataset}/{extractor}-{layer}/{split}.log",
    benchmark:
        "results/benchmarks/standardize_features/{dataset}/{extractor}-{layer}/{split}.tsv"
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/standardize_features.py"
