# Pretrained word vectors (a paper's `word_vectors` block; Hirasawa et al. 2019): the official
# files (a manifest input, fetched) or fastText vectors trained here on the training text, made
# into a vocabulary-sized, debiased table that a system declares as a resource.


rule train_word_vectors:
    input:
        text=PLAN.vectors.training_text,
    output:
        PATHS["word_vectors"],
    log:
        "results/logs/train_word_vectors/{paper}/{dataset}.{lang}.log",
    benchmark:
        "results/benchmarks/train_word_vectors/{paper}/{dataset}.{lang}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    # One fastText thread: the vectors are then a function of the text and the settings.
    threads: 1
    resources:
        mem_mb=8000,
        runtime=120,
    params:
        settings=PLAN.vectors.training,
        code=code("embeddings", "train_word_vectors.py"),
    script:
        "../scripts/train_word_vectors.py"


rule build_embedding_table:
    input:
        vocab=PLAN.vectors.table_vocab,
        vectors=PLAN.vectors.vectors_file,
    output:
        npy=f"{PATHS['embedding_table']}.npy",
        report=f"{PATHS['embedding_table']}.json",
    log:
        "results/logs/build_embedding_table/{paper}/{dataset}.{pair}.{lang}.log",
    benchmark:
        "results/benchmarks/build_embedding_table/{paper}/{dataset}.{pair}.{lang}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        settings=PLAN.vectors.table_settings,
        code=code("embeddings", "build_embedding_table.py"),
    script:
        "../scripts/build_embedding_table.py"
