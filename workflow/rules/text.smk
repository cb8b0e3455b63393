# Text recipes (mmt_repro.text.recipes): a chain of steps named in the file name (lc, norm,
# tok: Moses; wp: M-BERT WordPiece; char: Chinese characters), per-paper BPE, vocabularies.


rule tokenize:
    input:
        unpack(tokenize_inputs),
    output:
        "results/text/{dataset}/{split}.{chain}.{lang}",
    wildcard_constraints:
        chain=TEXT_CHAIN,
    log:
        "results/logs/tokenize/{dataset}/{split}.{chain}.{lang}.log",
    benchmark:
        "results/benchmarks/tokenize/{dataset}/{split}.{chain}.{lang}.tsv"
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/tokenize.py"


rule learn_bpe:
    input:
        unpack(bpe_training_text),
    output:
        "results/text/{paper}/{dataset}.{pair}/bpe.codes",
    params:
        symbols=bpe_symbols,
    log:
        "results/logs/learn_bpe/{paper}/{dataset}.{pair}.log",
    benchmark:
        "results/benchmarks/learn_bpe/{paper}/{dataset}.{pair}.tsv"
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/learn_bpe.py"


rule apply_bpe:
    input:
        codes="results/text/{paper}/{dataset}.{pair}/bpe.codes",
        text="results/text/{dataset}/{split}.{chain}.{lang}",
    output:
        "results/text/{paper}/{dataset}.{pair}/{split}.{chain}.bpe.{lang}",
    log:
        "results/logs/apply_bpe/{paper}/{dataset}.{pair}/{split}.{chain}.{lang}.log",
    benchmark:
        "results/benchmarks/apply_bpe/{paper}/{dataset}.{pair}/{split}.{chain}.{lang}.tsv"
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/apply_bpe.py"


rule build_vocab:
    input:
        train_text,
    output:
        "results/vocab/{paper}/{dataset}.{pair}.{lang}.json",
    params:
        min_freq=vocab_min_freq,
    log:
        "results/logs/build_vocab/{paper}/{dataset}.{pair}.{lang}.log",
    benchmark:
        "results/benchmarks/build_vocab/{paper}/{dataset}.{pair}.{lang}.tsv"
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/build_vocab.py"


rule apply_bpe_corpus:
    input:
        codes="results/text/{paper}/{dataset}.{pair}/bpe.codes",
        text="results/text/{corpus}/train.{chain}.{lang}",
    output:
        "results/text/{paper}/{dataset}.{pair}/corpus_{corpus}.{chain}.bpe.{lang}",
    log:
        "results/logs/apply_bpe_corpus/{paper}/{dataset}.{pair}/{corpus}.{chain}.{lang}.log",
    benchmark:
        "results/benchmarks/apply_bpe_corpus/{paper}/{dataset}.{pair}/{corpus}.{chain}.{lang}.tsv"
    conda:
        "../../envs/text.yaml"
    script:
        "../scripts/apply_bpe.py"


ruleorder: apply_bpe_corpus > apply_bpe
