# Scoring: every metric the config lists, each with its signature.


rule score:
    input:
        hyp="results/translations/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.txt",
        ref=reference_text,
    output:
        "results/scores/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.json",
    params:
        metrics=config["scoring"]["metrics"],
        tokenize=config["scoring"]["tokenize"],
        bleu_compat=config["scoring"]["bleu_compat"],
        meteor_jar=config_path("scoring", "meteor_jar"),
        meta=score_meta,
    log:
        "results/logs/score/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.log",
    benchmark:
        "results/benchmarks/score/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.tsv"
    conda:
        "../../envs/eval.yaml"
    script:
        "../scripts/score.py"


rule dump_attention:
    input:
        unpack(attention_inputs),
    output:
        "results/attention/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.pt",
    params:
        max_len=config["decode"]["max_len"],
        batch_size=config["decode"]["batch_size"],
        device=config["device"],
    # Intra-op torch threads; Snakemake scales this down to --cores.
    threads: 2
    resources:
        mem_mb=8000,
        runtime=120,
        gpu=gpu_count,
    log:
        "results/logs/dump_attention/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.log",
    benchmark:
        "results/benchmarks/dump_attention/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.tsv"
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/dump_attention.py"


rule score_beta:
    input:
        "results/attention/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.pt",
    output:
        "results/scores/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.beta.json",
    params:
        meta=beta_meta,
    log:
        "results/logs/score_beta/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.log",
    benchmark:
        "results/benchmarks/score_beta/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.tsv"
    conda:
        "../../envs/torch.yaml"
    script:
        "../scripts/score_beta.py"
