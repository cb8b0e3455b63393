# Word alignment (the DAG's alignment stage, between the text recipe and training): fast_align's
# forward and backward models on a paper's training text, then every split aligned with both and
# symmetrised (mmt_repro.text.align). Papers with an `align` block in their settings use it
# (Yang et al. 2020: hard visual agreement, eq. 14, and VAD's unique pairs, eq. 22).


rule learn_alignment:
    input:
        unpack(PLAN.alignment_jobs.model_inputs),
    output:
        fwd=f"{PATHS['align_model']}.fwd",
        bwd=f"{PATHS['align_model']}.bwd",
    log:
        "results/logs/learn_alignment/{paper}/{dataset}.{pair}.log",
    benchmark:
        "results/benchmarks/learn_alignment/{paper}/{dataset}.{pair}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        job=PLAN.alignment_jobs.model_params,
        code=code("alignment", "run_job.py"),
    script:
        "../scripts/run_job.py"


rule align:
    input:
        unpack(PLAN.alignment_jobs.inputs),
    output:
        PATHS["align"],
    log:
        "results/logs/align/{paper}/{dataset}.{pair}/{split}.log",
    benchmark:
        "results/benchmarks/align/{paper}/{dataset}.{pair}/{split}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        job=PLAN.alignment_jobs.params,
        code=code("alignment", "run_job.py"),
    script:
        "../scripts/run_job.py"


# Yang et al. 2020, section 4: the Transformer's decoder block "which performs the best in word
# alignment", measured on validation data against the alignment above; systems with agreement
# read the choice as their resource `alignment_layer`.
rule select_alignment_layer:
    input:
        unpack(PLAN.alignment_jobs.layer_selection_inputs),
    output:
        "results/align/{paper}/{dataset}.{pair}/layer.{system}.seed{seed}.json",
    log:
        "results/logs/select_alignment_layer/{paper}/{system}/{dataset}.{pair}.seed{seed}.log",
    benchmark:
        "results/benchmarks/select_alignment_layer/{paper}/{system}/{dataset}.{pair}.seed{seed}.tsv"
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
        device=config["device"],
        code=code("layer_choice", "select_alignment_layer.py"),
    script:
        "../scripts/select_alignment_layer.py"
