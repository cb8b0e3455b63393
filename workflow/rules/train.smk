# Training: one rule for every model of every paper, through the shared trainer. The job object
# (mmt_repro.plan.TrainJob) gives the inputs and the one `job` param; `code` is the hash of the
# package code it runs, the trainer and its own model's module (a change there re-runs it). The
# job record lands beside the checkpoint.


rule train_model:
    input:
        unpack(PLAN.train_jobs.inputs),
    output:
        **resume_state_outputs(),
        best=checkpoint_output(f"{PATHS['model']}.best.pt"),
        curve=f"{PATHS['model']}.curve.tsv",
        record=f"{PATHS['model']}.job.json",
    log:
        "results/logs/train_model/{paper}/{system}/{dataset}.{pair}.seed{seed}.log",
    benchmark:
        "results/benchmarks/train_model/{paper}/{system}/{dataset}.{pair}.seed{seed}.tsv"
    # Trainings go after every other ready job (priority -1 if begun, -2 if new; the rest 0), so
    # the short jobs (data, decoding, scoring, tables) are not held up behind hours of training,
    # and a re-run resumes what it had begun before it starts a new one
    # (mmt_repro.plan.build.train: TrainJobs.priority).
    priority: PLAN.train_jobs.priority
    # Under a time cap (max_runtime_min, set by the SLURM profile) a training killed at its limit
    # saves .last.pt and the retry continues from it: retries are attempts, not repeats. The full
    # run's longest job (BertGen's 13-task run, ~287 H100-hours) needs 8 attempts of 48 h
    # (`python -m mmt_repro plan`, "tries"); without a cap: the global --retries (None).
    retries: train_retries(PLAN)
    conda:
        ENV
    container:
        CONTAINER
    # Intra-op torch threads; Snakemake scales this down to --cores.
    threads: PLAN.threads("train")
    # host memory >= the feature stores it maps + the model + a margin; runtime >= the estimate
    # from the calibration (`python -m mmt_repro plan`), capped at max_runtime_min: a longer run
    # resumes from .last.pt on the profile's retries (mmt_repro.plan_tools.cost)
    resources:
        mem_mb=lambda wildcards: train_mem_mb(PLAN, wildcards),
        runtime=lambda wildcards: train_runtime(PLAN, wildcards),
        gpu=PLAN.gpu_count,
    params:
        job=PLAN.train_jobs.params,
        code=code("train", "run_job.py"),
    script:
        "../scripts/run_job.py"


# Packed trainings (config `packing`; off by default, then no rule here): one job trains a pack's
# members side by side on one GPU allocation, each in its own process running what its
# train_model job runs, with that job's log; it writes the members' outputs at train_model's
# paths (a rule without wildcards goes before train_model for them), so nothing downstream
# tells them apart. Its own rule per pack, not a group of train_model jobs: a group sums its
# jobs' gpu resources. Resources from the pack's cost (mmt_repro.plan_tools.packing.pack_cost:
# host memory of every member, runtime of the longest at its packed step time); partition and
# the like from the profile's train_model entry (train_model_site_resources).
for PACK in PACKS:

    rule:
        name:
            PACK.rule
        input:
            **PLAN.packed_jobs.inputs(PACK),
        output:
            **PACK.outputs(),
        log:
            **PACK.member_logs(),
            pack=PACK.log,
        benchmark:
            PACK.benchmark
        priority: PLAN.packed_jobs.priority(PACK)
        retries: train_retries(PLAN)
        conda:
            ENV
        container:
            CONTAINER
        # each member gets threads.train torch threads (the job: members x that, --cpus-per-task)
        threads: len(PACK.members) * PLAN.threads("train")
        resources:
            **train_model_site_resources(),
            mem_mb=pack_mem_mb(PLAN, PACK),
            runtime=pack_runtime(PLAN, PACK),
            gpu=PLAN.gpu_count(),
        params:
            members=PLAN.packed_jobs.params(PACK, code("train", "run_job.py")),
            code=code("train_packed", "train_packed.py"),
        script:
            "../scripts/train_packed.py"


# A multi-task run's best checkpoint for one extra task (`best_per_task: true`: BertGen's Table 5
# decodes each MT task with its own best epoch). The training job keeps them in
# <model>.task_best/; this copies the one a table decodes, so Snakemake tracks it and redoes it
# with its training (mmt_repro.train.task_best).
rule task_checkpoint:
    input:
        f"{PATHS['model']}.best.pt",
    output:
        checkpoint_output(f"{PATHS['model']}.best.{{task}}.pt"),
    log:
        "results/logs/task_checkpoint/{paper}/{system}/{dataset}.{pair}.seed{seed}.{task}.log",
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("task_checkpoint", "task_checkpoint.py"),
    script:
        "../scripts/task_checkpoint.py"
