# Text recipes (each paper's `recipe` block, mmt_repro.text.recipes): a chain of steps named in
# the file name (lc, norm, tok: Moses; wp: M-BERT WordPiece; char: Chinese characters), per-paper
# BPE (joint codes, `bpe.joint.codes`, or one per language, `bpe.<lang>.codes`), vocabularies
# (one per side, or `joint`).


rule tokenize:
    input:
        unpack(PLAN.text.tokenize_inputs),
    output:
        PATHS["text"],
    log:
        "results/logs/tokenize/{dataset}/{split}.{chain}.{lang}.log",
    benchmark:
        "results/benchmarks/tokenize/{dataset}/{split}.{chain}.{lang}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("text", "tokenize.py"),
    script:
        "../scripts/tokenize.py"


rule tokenize_captions:
    input:
        unpack(PLAN.text.tokenize_inputs),
    output:
        PATHS["caption_text"],
    log:
        "results/logs/tokenize/{dataset}/{split}.{k}.{chain}.{lang}.log",
    benchmark:
        "results/benchmarks/tokenize/{dataset}/{split}.{k}.{chain}.{lang}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("text", "tokenize.py"),
    script:
        "../scripts/tokenize.py"


rule learn_wordpiece:
    input:
        PLAN.text.wordpiece_training_text,
    output:
        PATHS["wordpiece"],
    log:
        "results/logs/learn_wordpiece/{corpus}.{size}.log",
    benchmark:
        "results/benchmarks/learn_wordpiece/{corpus}.{size}.tsv"
    wildcard_constraints:
        size="[0-9]+",
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("text", "learn_wordpiece.py"),
    script:
        "../scripts/learn_wordpiece.py"


rule learn_bpe:
    input:
        PLAN.text.bpe_training_text,
    output:
        PATHS["bpe_codes"],
    log:
        "results/logs/learn_bpe/{paper}/{dataset}.{pair}.{side}.log",
    benchmark:
        "results/benchmarks/learn_bpe/{paper}/{dataset}.{pair}.{side}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        symbols=PLAN.text.bpe_symbols,
        code=code("text", "learn_bpe.py"),
    script:
        "../scripts/learn_bpe.py"


rule apply_bpe:
    input:
        codes=PLAN.text.bpe_codes,
        text=PATHS["text"],
    output:
        PATHS["bpe_text"],
    log:
        "results/logs/apply_bpe/{paper}/{dataset}.{pair}/{split}.{chain}.{lang}.log",
    benchmark:
        "results/benchmarks/apply_bpe/{paper}/{dataset}.{pair}/{split}.{chain}.{lang}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("text", "apply_bpe.py"),
    script:
        "../scripts/apply_bpe.py"


rule build_vocab:
    input:
        PLAN.text.train_text,
    output:
        PATHS["vocab"],
    log:
        "results/logs/build_vocab/{paper}/{dataset}.{pair}.{side}.log",
    benchmark:
        "results/benchmarks/build_vocab/{paper}/{dataset}.{pair}.{side}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        min_freq=PLAN.text.vocab_min_freq,
        max_size=PLAN.text.vocab_max_size,
        wordpiece=PLAN.text.vocab_is_wordpiece,
        code=code("text", "build_vocab.py"),
    script:
        "../scripts/build_vocab.py"


rule apply_bpe_corpus:
    input:
        codes=PLAN.text.bpe_codes,
        text="results/text/{corpus}/train.{chain}.{lang}",
    output:
        PATHS["bpe_corpus"],
    log:
        "results/logs/apply_bpe_corpus/{paper}/{dataset}.{pair}/{corpus}.{chain}.{lang}.log",
    benchmark:
        "results/benchmarks/apply_bpe_corpus/{paper}/{dataset}.{pair}/{corpus}.{chain}.{lang}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("text", "apply_bpe.py"),
    script:
        "../scripts/apply_bpe.py"


ruleorder: apply_bpe_corpus > apply_bpe


# Merges, vocabulary sizes beside the paper's, and <unk> rates on every corpus a vocabulary serves.
rule vocab_report:
    input:
        PLAN.text.vocab_report_inputs,
    output:
        PATHS["vocab_report"],
    log:
        "results/logs/vocab_report/{paper}.log",
    benchmark:
        "results/benchmarks/vocab_report/{paper}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        rows=PLAN.text.vocab_report_rows,
        max_len=PLAN.text.recipe_max_len,
        code=code("text", "vocab_report.py"),
    script:
        "../scripts/vocab_report.py"
