# Translation of the test sets: each paper's decode block (greedy, beam, nearest-neighbour or the model's own
# search) with every trained model, with congruent or shuffled images.


rule translate:
    input:
        unpack(translate_inputs),
    output:
        translation=PATHS["translation"],
        stats=PATHS["decode_stats"],
    log:
        "results/logs/translate/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.log",
    benchmark:
        "results/benchmarks/translate/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.tsv"
    conda:
        "../../envs/torch.yaml"
    # Intra-op torch threads; Snakemake scales this down to --cores.
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=gpu_count,
    params:
        decode=decode_settings,
        subword=target_subword,
        shuffle_seed=shuffle_seed,
        direction=decode_direction,
        device=config["device"],
    script:
        "../scripts/translate.py"
