# Tables: one per paper and table, our numbers beside the paper's; all.tsv gathers them.


rule make_table:
    input:
        scores=table_score_files,
        published=PUBLISHED,
    output:
        "results/tables/{paper}/{table}.tsv",
    log:
        "results/logs/make_table/{paper}/{table}.log",
    benchmark:
        "results/benchmarks/make_table/{paper}/{table}.tsv"
    localrule: True
    conda:
        "../../envs/eval.yaml"
    script:
        "../scripts/make_table.py"


rule gather_tables:
    input:
        all_tables(),
    output:
        tsv="results/tables/all.tsv",
        parquet="results/tables/all.parquet",
    log:
        "results/logs/gather_tables/all.log",
    benchmark:
        "results/benchmarks/gather_tables/all.tsv"
    localrule: True
    conda:
        "../../envs/eval.yaml"
    script:
        "../scripts/gather_tables.py"
