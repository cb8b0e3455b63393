# The Snakemake report (`snakemake --report report.html` after a run of `all`): every results
# table, all.tsv, the data statistics and the vocabulary reports as HTML pages (a report shows
# HTML inline; a TSV only as a download), labelled by paper / table, beside the figures.


rule table_html:
    input:
        PATHS["table"],
    output:
        report(
            "results/tables/{paper}/{table}.html",
            caption="../report/table.rst",
            category="Tables",
            subcategory="{paper}",
            labels={"paper": "{paper}", "table": "{table}", "kind": "results table"},
        ),
    log:
        "results/logs/table_html/{paper}/{table}.log",
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        kind="table",
        title=lambda w: f"{w.paper} / {w.table}: ours beside the paper",
        caption="ours = mean over seeds (± sample std); paper = the published value; verdict: "
        "within two of the paper's standard deviations (±0.5 without a spread).",
        code=code("report", "render_html.py"),
    script:
        "../scripts/render_html.py"


rule all_html:
    input:
        "results/tables/all.tsv",
    output:
        report(
            "results/tables/all.html",
            caption="../report/all_table.rst",
            category="Tables",
            subcategory="all papers",
            labels={"paper": "all", "table": "all.tsv", "kind": "every table"},
        ),
    log:
        "results/logs/table_html/all.log",
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        kind="table",
        title="All tables (results/tables/all.tsv)",
        caption="Every paper's tables gathered; the same columns as each table.",
        code=code("report", "render_html.py"),
    script:
        "../scripts/render_html.py"


rule data_html:
    input:
        "results/data/{report}.tsv",
    output:
        report(
            "results/data/{report}.html",
            caption="../report/data.rst",
            category="Data",
            labels={"report": "{report}", "kind": "data report"},
        ),
    log:
        "results/logs/data_html/{report}.log",
    wildcard_constraints:
        report=r"stats|vocab/[a-z][a-z0-9_]*",
    localrule: True
    conda:
        ENV
    container:
        CONTAINER
    params:
        kind="tsv",
        title=lambda w: {"stats": "Corpora: sentences, tokens, types, OOV rate"}.get(
            w.report,
            f"Vocabularies of {w.report.split('/')[-1]}: sizes, merges, <unk> rates",
        ),
        caption="",
        code=code("report", "render_html.py"),
    script:
        "../scripts/render_html.py"
