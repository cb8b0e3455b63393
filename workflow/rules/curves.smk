# Learning curves (tables of kind `curves`, e.g. BertGen's Figures 4-6): validation BLEU over
# training, read from the training curves; a table (best and last value per system) and a figure.


rule make_curves:
    input:
        unpack(PLAN.curves_jobs.inputs),
    output:
        table=PATHS["table"],
        png=report(
            "results/figures/{paper}/{table}.curves.png",
            caption="../report/curves_figure.rst",
            category="Figures",
            subcategory="{paper}",
            labels={
                "paper": "{paper}",
                "table": "{table}",
                "figure": "learning curves",
            },
        ),
        pdf="results/figures/{paper}/{table}.curves.pdf",
    log:
        "results/logs/make_curves/{paper}/{table}.log",
    benchmark:
        "results/benchmarks/make_curves/{paper}/{table}.tsv"
    wildcard_constraints:
        table=PLAN.targets.tables_of_kind("curves"),
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        job=PLAN.curves_jobs.params,
        code=code("curves", "run_job.py"),
    script:
        "../scripts/run_job.py"


ruleorder: make_curves > make_table
