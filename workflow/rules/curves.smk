# Learning curves (tables of kind `curves`, e.g. BertGen's Figures 4-6): validation BLEU over
# training, read from the training curves; a table (best and last value per system) and a figure.


rule make_curves:
    input:
        PLAN.curve_files,
    output:
        table=PATHS["table"],
        png=report(
            "results/figures/{paper}/{table}.curves.png",
            caption="../report/scores_figure.rst",
            category="Figures",
            subcategory="{paper}",
        ),
        pdf="results/figures/{paper}/{table}.curves.pdf",
    log:
        "results/logs/make_curves/{paper}/{table}.log",
    benchmark:
        "results/benchmarks/make_curves/{paper}/{table}.tsv"
    wildcard_constraints:
        table=PLAN.tables_of_kind("curves"),
    localrule: True
    conda:
        "../../envs/eval.yaml"
    params:
        curves=PLAN.curve_specs,
        pair=PLAN.table_pair,
        test_set=PLAN.curve_test_set,
        note=PLAN.table_note,
    script:
        "../scripts/make_curves.py"


ruleorder: make_curves > make_table
