# Translation of the test sets: each paper's decode block (greedy, beam, nearest-neighbour or the
# model's own search) with every trained model, with congruent or shuffled images
# (mmt_repro.plan.TranslateJob; the decode stats carry the job record).


rule translate:
    input:
        unpack(PLAN.translate_jobs.inputs),
    output:
        translation=PATHS["translation"],
        stats=PATHS["decode_stats"],
    log:
        "results/logs/translate/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.log",
    benchmark:
        "results/benchmarks/translate/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    # Intra-op torch threads; Snakemake scales this down to --cores.
    threads: PLAN.threads("decode")
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=PLAN.gpu_count,
    params:
        job=PLAN.translate_jobs.params,
        code=code("translate", "run_job.py"),
    script:
        "../scripts/run_job.py"
