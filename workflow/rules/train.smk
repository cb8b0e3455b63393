# Training: one rule for every model of every paper, through the shared trainer.


rule train_model:
    input:
        unpack(training_inputs),
    output:
        best=f"{PATHS['model']}.best.pt",
        curve=f"{PATHS['model']}.curve.tsv",
    log:
        "results/logs/train_model/{paper}/{system}/{dataset}.{pair}.seed{seed}.log",
    benchmark:
        "results/benchmarks/train_model/{paper}/{system}/{dataset}.{pair}.seed{seed}.tsv"
    conda:
        "../../envs/torch.yaml"
    # Intra-op torch threads; Snakemake scales this down to --cores.
    threads: 4
    resources:
        mem_mb=16000,
        runtime=2880,
        gpu=gpu_count,
    params:
        model=train_model_name,
        model_config=train_model_config,
        train_config=train_train_config,
        subword=target_subword,
        resources=train_resources,
        extras=train_extra_files,
        imports=paper_imports,
        tasks=train_tasks,
        last=f"{PATHS['model']}.last.pt",
        device=config["device"],
    script:
        "../scripts/train_model.py"
