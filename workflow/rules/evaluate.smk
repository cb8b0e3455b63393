# Scoring (every metric the paper's scoring block lists, each with its signature), attention
# dumps and registered analyses: one job object each (mmt_repro.plan.jobs), run by run_job.py.


rule score:
    input:
        unpack(PLAN.score_jobs.inputs),
    output:
        PATHS["score"],
    log:
        "results/logs/score/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.log",
    benchmark:
        "results/benchmarks/score/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        job=PLAN.score_jobs.params,
        code=code("score", "run_job.py"),
    script:
        "../scripts/run_job.py"


rule dump_attention:
    input:
        unpack(PLAN.attention_jobs.inputs),
    output:
        PATHS["attention"],
    log:
        "results/logs/dump_attention/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.log",
    benchmark:
        "results/benchmarks/dump_attention/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    # Intra-op torch threads; Snakemake scales this down to --cores.
    threads: PLAN.threads("decode")
    resources:
        mem_mb=8000,
        runtime=120,
        gpu=PLAN.gpu_count,
    params:
        job=PLAN.attention_jobs.params,
        code=code("translate", "run_job.py"),
    script:
        "../scripts/run_job.py"


rule analyse:
    input:
        unpack(PLAN.analyse_jobs.inputs),
    output:
        PATHS["analysis"],
    log:
        "results/logs/analyse/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{analysis}.log",
    benchmark:
        "results/benchmarks/analyse/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{analysis}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        job=PLAN.analyse_jobs.params,
        code=code("analyse", "run_job.py"),
    script:
        "../scripts/run_job.py"
