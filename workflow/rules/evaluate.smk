# Scoring: every metric the config lists, each with its signature.


rule score:
    input:
        hyp=PATHS["translation"],
        decode_stats=PATHS["decode_stats"],
        ref=reference_text,
    output:
        PATHS["score"],
    log:
        "results/logs/score/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.log",
    benchmark:
        "results/benchmarks/score/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.tsv"
    conda:
        "../../envs/eval.yaml"
    params:
        scoring=scoring,
        ref_subword=reference_subword,
        meteor_jar=config_path("tools", "meteor_jar"),
        meta=score_meta,
    script:
        "../scripts/score.py"


rule dump_attention:
    input:
        unpack(translate_inputs),
    output:
        PATHS["attention"],
    log:
        "results/logs/dump_attention/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.log",
    benchmark:
        "results/benchmarks/dump_attention/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.tsv"
    conda:
        "../../envs/torch.yaml"
    # Intra-op torch threads; Snakemake scales this down to --cores.
    threads: 2
    resources:
        mem_mb=8000,
        runtime=120,
        gpu=gpu_count,
    params:
        decode=decode_settings,
        direction=decode_direction,
        device=config["device"],
    script:
        "../scripts/dump_attention.py"


rule analyse:
    input:
        unpack(analysis_inputs),
    output:
        PATHS["analysis"],
    log:
        "results/logs/analyse/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{analysis}.log",
    benchmark:
        "results/benchmarks/analyse/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{analysis}.tsv"
    conda:
        "../../envs/torch.yaml"
    params:
        name=analysis_name,
        inputs=analysis_input_kind,
        meta=analysis_meta,
        imports=paper_imports,
    script:
        "../scripts/analyse.py"
