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
        meta=score_meta,
    log:
        "results/logs/score/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.log",
    benchmark:
        "results/benchmarks/score/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.tsv"
    conda:
        "../../envs/eval.yaml"
    script:
        "../scripts/score.py"
