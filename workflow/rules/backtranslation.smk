# Back-translation (Calixto et al. 2017, M30k_C): a target-to-source text NMT translates the
# comparable target descriptions of the training images; the synthetic corpus pre-trains.


rule assemble_backtranslation:
    input:
        unpack(PLAN.backtranslation_jobs.inputs),
    output:
        src=f"{PATHS['backtranslation']}/synthetic.src",
        tgt=f"{PATHS['backtranslation']}/synthetic.tgt",
        images=f"{PATHS['backtranslation']}/images.txt",
    log:
        "results/logs/assemble_backtranslation/{paper}/{dataset}.{pair}.log",
    benchmark:
        "results/benchmarks/assemble_backtranslation/{paper}/{dataset}.{pair}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        job=PLAN.backtranslation_jobs.params,
        code=code("backtranslation", "run_job.py"),
    script:
        "../scripts/run_job.py"
