# Tables: one per paper and table, our numbers beside the paper's; all.tsv gathers them.


rule test_significance:
    input:
        unpack(PLAN.significance_jobs.inputs),
    output:
        PATHS["significance"],
    log:
        "results/logs/test_significance/{paper}/{table}.log",
    benchmark:
        "results/benchmarks/test_significance/{paper}/{table}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        job=PLAN.significance_jobs.params,
        code=code("significance", "run_job.py"),
    script:
        "../scripts/run_job.py"


# The protocol grid of a translation table: its translations scored under every scoring protocol
# that makes sense for its target language (mmt_repro.tables.protocols; docs/scoring.md).
rule protocol_grid:
    input:
        unpack(PLAN.protocol_jobs.inputs),
    output:
        tsv=PATHS["protocols"],
        legend=PATHS["protocols_legend"],
    log:
        "results/logs/protocol_grid/{paper}/{table}.log",
    benchmark:
        "results/benchmarks/protocol_grid/{paper}/{table}.tsv"
    wildcard_constraints:
        table=PLAN.targets.tables_of_kind("translation"),
    conda:
        ENV
    container:
        CONTAINER
    params:
        job=PLAN.protocol_jobs.params,
        code=code("protocols", "run_job.py"),
    script:
        "../scripts/run_job.py"


# A table's image-use probe (its `probe` block): each multimodal system beside its text-only
# counterpart under congruent, shuffled and blank images (mmt_repro.tables.probe; docs/probes.md).
rule make_probe_table:
    input:
        unpack(PLAN.probe_jobs.inputs),
    output:
        PATHS["probe"],
    log:
        "results/logs/make_probe_table/{paper}/{table}.log",
    benchmark:
        "results/benchmarks/make_probe_table/{paper}/{table}.tsv"
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        job=PLAN.probe_jobs.params,
        code=code("probe", "run_job.py"),
    script:
        "../scripts/run_job.py"


# The cross-paper table (the config's `cross_paper` block): every paper's systems on the same test
# sets under one protocol, beside their probe figures (mmt_repro.tables.cross_paper; docs/scoring.md).
rule make_cross_paper_table:
    input:
        unpack(PLAN.cross_paper_jobs.inputs),
    output:
        tsv=PATHS["cross_paper"],
        legend=PATHS["cross_paper_legend"],
    log:
        "results/logs/make_cross_paper_table/cross_paper.log",
    benchmark:
        "results/benchmarks/make_cross_paper_table/cross_paper.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        job=PLAN.cross_paper_jobs.params,
        code=code("cross_paper", "run_job.py"),
    script:
        "../scripts/run_job.py"


rule make_table:
    input:
        unpack(PLAN.table_jobs.inputs),
    output:
        PATHS["table"],  # in the report as HTML (rule table_html)
    log:
        "results/logs/make_table/{paper}/{table}.log",
    benchmark:
        "results/benchmarks/make_table/{paper}/{table}.tsv"
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        job=PLAN.table_jobs.params,
        code=code("tables", "run_job.py"),
    script:
        "../scripts/run_job.py"


rule gather_tables:
    input:
        PLAN.targets.all_tables(),
    output:
        tsv="results/tables/all.tsv",
        parquet="results/tables/all.parquet",
    log:
        "results/logs/gather_tables/all.log",
    benchmark:
        "results/benchmarks/gather_tables/all.tsv"
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("tables", "gather_tables.py"),
    script:
        "../scripts/gather_tables.py"


rule plot_scores:
    input:
        PATHS["table"],
    output:
        png=report(
            "results/figures/{paper}/{table}.scores.png",
            caption="../report/scores_figure.rst",
            category="Figures",
            subcategory="{paper}",
            labels={"paper": "{paper}", "table": "{table}", "figure": "scores"},
        ),
        pdf="results/figures/{paper}/{table}.scores.pdf",
    log:
        "results/logs/plot_scores/{paper}/{table}.log",
    benchmark:
        "results/benchmarks/plot_scores/{paper}/{table}.tsv"
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("report", "plot_scores.py"),
    script:
        "../scripts/plot_scores.py"


rule plot_attention:
    input:
        PLAN.figures.attention_dump,
    output:
        png=report(
            "results/figures/{paper}/{table}.attention.png",
            caption="../report/attention_figure.rst",
            category="Figures",
            subcategory="{paper}",
            labels={"paper": "{paper}", "table": "{table}", "figure": "attention"},
        ),
        pdf="results/figures/{paper}/{table}.attention.pdf",
    log:
        "results/logs/plot_attention/{paper}/{table}.log",
    benchmark:
        "results/benchmarks/plot_attention/{paper}/{table}.tsv"
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        index=PLAN.figures.sentence,
        plot=PLAN.figures.plot,
        code=code("report", "plot_attention.py"),
    script:
        "../scripts/plot_attention.py"


rule plot_rare_words:
    input:
        PATHS["table"],
    output:
        png=report(
            "results/figures/{paper}/{table}.rare_words.png",
            caption="../report/rare_words_figure.rst",
            category="Figures",
            subcategory="{paper}",
            labels={"paper": "{paper}", "table": "{table}", "figure": "rare words"},
        ),
        pdf="results/figures/{paper}/{table}.rare_words.pdf",
    log:
        "results/logs/plot_rare_words/{paper}/{table}.log",
    benchmark:
        "results/benchmarks/plot_rare_words/{paper}/{table}.tsv"
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("report", "plot_rare_words.py"),
    script:
        "../scripts/plot_rare_words.py"
