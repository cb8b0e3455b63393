# The source-degradation probe (Caglayan et al., 2019; mmt_repro.plan.masking, docs/scoring.md): a
# test split's colour words (with their target forms) listed from a lexicon, the split's source
# in a recipe's chain with each listed word masked by one placeholder, and that text through a
# paper's BPE. translate reads it in conditions masked and masked_shuffled; score adds colour
# accuracy.


rule list_masked_words:
    input:
        source=PLAN.masking.word_list_source,
    output:
        PATHS["masked_words"],
    log:
        "results/logs/list_masked_words/{dataset}.{pair}/{split}.{words}.log",
    benchmark:
        "results/benchmarks/list_masked_words/{dataset}.{pair}/{split}.{words}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        lexicon=PLAN.masking.lexicon,
        code=code("masking", "list_masked_words.py"),
    script:
        "../scripts/list_masked_words.py"


rule mask_source:
    input:
        unpack(PLAN.masking.mask_inputs),
    output:
        PATHS["masked_text"],
    log:
        "results/logs/mask_source/{dataset}.{pair}/{split}.{chain}.{words}.{lang}.log",
    benchmark:
        "results/benchmarks/mask_source/{dataset}.{pair}/{split}.{chain}.{words}.{lang}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        wordpiece=PLAN.masking.wordpiece,
        code=code("masking", "mask_source.py"),
    script:
        "../scripts/mask_source.py"


rule apply_bpe_masked:
    input:
        unpack(PLAN.masking.bpe_inputs),
    output:
        PATHS["masked_bpe_text"],
    log:
        "results/logs/apply_bpe_masked/{paper}/{dataset}.{pair}/{split}.{chain}.{words}.{lang}.log",
    benchmark:
        "results/benchmarks/apply_bpe_masked/{paper}/{dataset}.{pair}/{split}.{chain}.{words}.{lang}.tsv"
    conda:
        ENV
    container:
        CONTAINER
    params:
        code=code("text", "apply_bpe.py"),
    script:
        "../scripts/apply_bpe.py"
