# Helper functions shared by the rules: config validation, per-paper settings, and the input
# functions that turn wildcards into paths. No rule lives here.

import re
import sys
from pathlib import Path

from mmt_repro.config import ConfigError, validate_config
from mmt_repro.data.fetch import request_only_error
from mmt_repro.data.manifest import load_manifest
from mmt_repro.data.prepare import SOURCES as CORPUS_SOURCES
from mmt_repro.data.prepare import corpus_plan, text_outputs
from mmt_repro.data.wmt import WMT15_ARCHIVES as WMT15_ARCHIVE_NAMES
from mmt_repro.io import DataError
from mmt_repro.settings import IMAGE_SOURCE, as_plain, load_paper
from mmt_repro.text.wordpiece import WORDPIECE_VOCAB_INPUT

REPO = Path(workflow.basedir)
PUBLISHED = str(REPO / "config" / "published_results.tsv")  # the papers' numbers


def repo_path(path):
    """Paths in the config are relative to the repository unless absolute."""
    path = Path(path)
    return path if path.is_absolute() else REPO / path


def config_path(*keys):
    """A path from the config (None when unset), resolved against the repository."""
    value = config
    for key in keys:
        value = (value or {}).get(key)
    return str(repo_path(value)) if value else None


try:
    validate_config(config, REPO / "config" / "schema.yaml")
    # Per-paper settings (config/papers/<paper>.yaml + the config's overrides), checked without
    # torch; model configs are checked against their dataclasses by `onstart` (Snakefile).
    SETTINGS = {
        paper: load_paper(paper, repo_path(block["settings"]), block.get("overrides"))
        for paper, block in config["papers"].items()
    }
except (ConfigError, DataError) as err:
    sys.exit(f"mmt-repro: {err}")


# Every output path template, defined once; rules and input functions format these.
PATHS = {
    "data_dir": "results/data/{dataset}",  # a prepared corpus's own layout below it
    "corpus": "results/data/{dataset}/{split}.{lang}",
    "image_list": "results/data/{dataset}/image_splits/{split}.txt",
    "video_list": "results/data/{dataset}/video_splits/{split}.txt",
    "images": "results/data/{dataset}/images",
    "videos": "results/data/{dataset}/videos",
    "labels": "results/data/{dataset}/labels/{split}.tsv",
    "given_boxes": "results/data/{dataset}/boxes/{split}.json",
    "corpus_stats": "results/data/stats/{dataset}.tsv",
    "stats": "results/data/stats.tsv",
    "text": "results/text/{dataset}/{split}.{chain}.{lang}",
    "caption_text": "results/text/{dataset}/{split}.{k}.{chain}.{lang}",  # caption k of each image
    "wordpiece": "results/text/wordpiece/{corpus}.{size}/vocab.txt",  # learnt offline stand-in
    "bpe_codes": "results/text/{paper}/{dataset}.{pair}/bpe.{side}.codes",
    "bpe_text": "results/text/{paper}/{dataset}.{pair}/{split}.{chain}.bpe.{lang}",
    "bpe_corpus": "results/text/{paper}/{dataset}.{pair}/corpus_{corpus}.{chain}.bpe.{lang}",
    "features": "results/features/{dataset}/{feature_set}/{split}",  # + .npy, .index.parquet, .boxes.npy
    "vocab": "results/vocab/{paper}/{dataset}.{pair}.{side}.json",
    "vocab_report": "results/data/vocab/{paper}.tsv",
    "model": "results/models/{paper}/{system}/{dataset}.{pair}.seed{seed}",
    "translation": "results/translations/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.txt",
    "decode_stats": "results/translations/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.stats.json",
    "score": "results/scores/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{condition}.json",
    "analysis": "results/analyses/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.{analysis}.json",
    "attention": "results/attention/{paper}/{system}/{dataset}.{split}.{pair}.seed{seed}.pt",
    "backtranslation": "results/backtranslation/{paper}/{dataset}.{pair}",  # + /synthetic.src, .tgt, /images.txt
    "significance": "results/significance/{paper}/{table}.json",
    "word_vectors": "results/embeddings/{paper}/fasttext/{dataset}.{lang}.vec",
    "embedding_table": "results/embeddings/{paper}/{dataset}.{pair}.{lang}",  # + .npy, .json
    "align": "results/align/{paper}/{dataset}.{pair}/{split}.align",  # Pharaoh i-j, symmetrised
    "align_model": "results/align/{paper}/{dataset}.{pair}/model",  # + .fwd, .bwd (fast_align tables)
    "table": "results/tables/{paper}/{table}.tsv",
    "figure": "results/figures/{paper}/{table}.{figure}",
}


def path(name, **values):
    return PATHS[name].format(**values)


def onstart_check_models(log=None):
    """Real runs (not dry runs, not SLURM job steps): every system's model config against its
    model's dataclass, once, before any job starts (imports torch)."""
    from mmt_repro.settings import check_model_configs

    try:
        for settings in SETTINGS.values():
            check_model_configs(settings)
    except ConfigError as err:
        sys.exit(f"mmt-repro: {err}")


# config/manifest.yaml plus the extra manifests the config lists (`inputs.manifest_extra`).
MANIFEST = load_manifest(REPO / "config" / "manifest.yaml", config=config)
MANIFEST_INPUTS = "|".join(sorted(MANIFEST, key=len, reverse=True))
WMT15_ARCHIVES = list(WMT15_ARCHIVE_NAMES)
# Datasets made by mmt_repro.data.prepare (one generated rule each, see data.smk).
PREPARED_CORPORA = [
    name for name, ds in config["datasets"].items() if ds["source"] in CORPUS_SOURCES
]
# Splits and languages of the Multi30k and grounded datasets: data, not code. The config declares
# them (datasets.<name>.splits/langs; grounded: the keys of `sizes`), the manifest declares the
# released Multi30k files; an unknown split or language stops planning naming the key and the
# valid values (mmt_repro.data.layout). {dataset: {"splits": [...], "langs": [...]}}
try:
    from mmt_repro.data.layout import dataset_layout

    DATASET_LAYOUT = dataset_layout(config, MANIFEST)
except (ConfigError, DataError) as err:
    sys.exit(f"mmt-repro: {err}")
# Comparable descriptions generated per grounded training image: as many as any paper
# back-translates (Multi30k task 2 has 5 per image).
COMPARABLE_PER_IMAGE = max(
    [s.backtranslation.descriptions for s in SETTINGS.values() if s.backtranslation]
    or [1]
)


def grounded_gold_pairs(langs):
    """The language pairs the grounded generator writes gold alignments for (langs order)."""
    from mmt_repro.data.grounded import gold_pairs

    return gold_pairs(langs)


def datasets_of(source):
    """A wildcard pattern matching the configured datasets of one source."""
    names = [
        name for name, cfg in config["datasets"].items() if cfg["source"] == source
    ]
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def dataset_value(key):
    def get(wildcards):
        return dataset_config(wildcards.dataset)[key]

    return get


wildcard_constraints:
    dataset="[a-z0-9_]+",
    split="[a-z0-9_]+",
    lang="[a-z]{2}",
    pair="[a-z]{2}-[a-z]{2}",
    chain=r"(lc\.)?(norm\.)?(tok|wp|char|jieba)|lc\.norm|lc|norm",
    side="[a-z]{2}|joint",
    analysis="[a-z0-9_]+",
    corpus="[a-z0-9_]+",
    paper="[a-z_]+",
    system="[a-z0-9_]+",
    seed="[0-9]+",
    condition="congruent|shuffled|no_image",
    k="[0-9]+",


def enabled_tables():
    """(paper, table, table config) for every table the config switches on."""
    return [
        (paper, name, table)
        for paper, block in config["papers"].items()
        for name, table in block["tables"].items()
        if table.get("enabled", True)
    ]


def dataset_config(dataset):
    if dataset not in config["datasets"]:
        raise ValueError(
            f"unknown dataset {dataset!r}; configured: {', '.join(config['datasets'])}"
        )
    return config["datasets"][dataset]


def dataset_splits(dataset):
    """The configured splits of a dataset (Multi30k and grounded: checked at planning)."""
    if dataset in DATASET_LAYOUT:
        return list(DATASET_LAYOUT[dataset]["splits"])
    cfg = dataset_config(dataset)
    return list(cfg.get("splits") or cfg.get("sets") or [])


def dataset_langs(dataset):
    """The configured languages of a Multi30k or grounded dataset (checked at planning)."""
    if dataset not in DATASET_LAYOUT:
        raise ValueError(
            f"dataset {dataset!r} has no planned languages; planned: {', '.join(DATASET_LAYOUT)}"
        )
    return list(DATASET_LAYOUT[dataset]["langs"])


def recipe(paper):
    return SETTINGS[paper].recipe


def system_settings(paper, system):
    try:
        return SETTINGS[paper].system(system)
    except ConfigError as err:
        raise ValueError(str(err)) from None


def multimodal(paper, system):
    return system_settings(paper, system).visual != "none"


def paper_features(paper, dataset, required=True):
    """The feature set a paper uses on a dataset (one per paper and dataset); None when no table
    of the paper on that dataset names one and it is not ``required`` (a text-only test set,
    e.g. IWSLT, for a multimodal multi-task model)."""
    names = {
        t.get("features")
        for p, _, t in enabled_tables()
        if p == paper and t["dataset"] == dataset
    }
    names.discard(None)
    if len(names) > 1:
        raise ValueError(
            f"{paper} uses several feature sets on {dataset}: {sorted(names)}; use one"
        )
    if not names:
        if not required:
            return None
        raise ValueError(f"no table of {paper} on {dataset} names its 'features'")
    return names.pop()


def feature_files(dataset, feature_set, split, options=None):
    """npy and index of a split's features, standardised (`.std`) or centred on the training
    split's centroid (`.ctr`) when the feature set asks for it; `options` (a system's
    `feature_options`) change those keys for one system."""
    fs = dict(feature_set_config(dataset, feature_set), **(options or {}))
    suffix = ".std" if fs.get("standardize") else ".ctr" if fs.get("center") else ""
    stem = path(
        "features", dataset=dataset, feature_set=f"{feature_set}{suffix}", split=split
    )
    files = {"npy": f"{stem}.npy", "index": f"{stem}.index.parquet"}
    if fs.get("kind", "grid") == "regions" or fs.get("import") == "butd":
        # region stores: detected, given or imported (BUTD) boxes
        files["boxes"] = f"{stem}.boxes.npy"
    return files


def canonical_pair(paper, dataset, pair):
    """The orientation that names a language pair's codes, vocabularies and subword text: the
    pair as the paper's tables on `dataset` write it (en-de also for the de-en back-translation
    model), so that both directions share one set of files."""
    rev = "-".join(reversed(pair.split("-")))
    pairs = {
        t["pair"]
        for p, _, t in enabled_tables()
        if p == paper and t["dataset"] == dataset
    }
    return rev if rev in pairs and pair not in pairs else pair


def system_feature_options(paper, system):
    """The system's changes to its table's feature set (e.g. {center: false})."""
    return dict(system_settings(paper, system).feature_options)


def model_text(paper, dataset, pair, split, lang):
    """The text a paper's model reads: the recipe's chain, then its BPE where the recipe has BPE
    for this language (per-paper codes); word-, WordPiece- and character-level text is the
    shared tokenised file itself."""
    rec = recipe(paper)
    chain = rec.chain_for(lang)
    if rec.subword_for(lang) == "bpe":
        return path(
            "bpe_text",
            paper=paper,
            dataset=dataset,
            pair=canonical_pair(paper, dataset, pair),
            split=split,
            chain=chain,
            lang=lang,
        )
    return path("text", dataset=dataset, split=split, chain=chain, lang=lang)


def reference_file(paper, dataset, split, lang):
    """The reference in the scoring form: the recipe's chain without subwords."""
    return path(
        "text",
        dataset=dataset,
        split=split,
        chain=recipe(paper).chain_for(lang),
        lang=lang,
    )


def vocab_side(paper, lang):
    return "joint" if recipe(paper).joint_vocab else lang


def vocab_file(paper, dataset, pair, lang):
    return path(
        "vocab",
        paper=paper,
        dataset=dataset,
        pair=canonical_pair(paper, dataset, pair),
        side=vocab_side(paper, lang),
    )


def bpe_side(paper, lang):
    return "joint" if recipe(paper).joint_bpe else lang


def table_runs(paper, table):
    """(system, test_set, seed, condition) of every run a table needs; the shuffled-image and
    no-image conditions exist only for multimodal systems (no_image: the model's text-only use,
    e.g. BertGen's MT task, for models whose images are optional)."""
    t = config["papers"][paper]["tables"][table]
    runs = []
    for system in t["systems"]:
        conditions = ["congruent"]
        if t.get("shuffled_images") and multimodal(paper, system):
            conditions.append("shuffled")
        if t.get("no_image") and multimodal(paper, system):
            conditions.append("no_image")
        for test_set in t["test_sets"]:
            for seed in t["seeds"]:
                for condition in conditions:
                    runs.append((system, test_set, seed, condition))
    return runs


def run_file(kind, paper, table, system, test_set, seed, condition):
    """The translation or score file of one run of a table."""
    t = config["papers"][paper]["tables"][table]
    return path(
        kind,
        paper=paper,
        system=system,
        dataset=t["dataset"],
        split=test_set,
        pair=t["pair"],
        seed=seed,
        condition=condition,
    )


def table_kind(paper, table):
    """translation (scores of translations) or analysis (a registered analysis per run)."""
    return config["papers"][paper]["tables"][table].get("kind", "translation")


def table_scores(paper, table):
    """Score files of a table: translation scores, or the analysis's per-run results."""
    t = config["papers"][paper]["tables"][table]
    if table_kind(paper, table) == "analysis":
        return [
            path(
                "analysis",
                paper=paper,
                system=system,
                dataset=t["dataset"],
                split=test_set,
                pair=t["pair"],
                seed=seed,
                analysis=t["analysis"],
            )
            for system in t["systems"]
            for test_set in t["test_sets"]
            for seed in t["seeds"]
        ]
    return [run_file("score", paper, table, *run) for run in table_runs(paper, table)]


def all_tables():
    return [
        path("table", paper=paper, table=table) for paper, table, _ in enabled_tables()
    ]


def all_figures():
    """A scores figure per table, and the attention figure of tables with a `figure` block."""
    figures = [
        path("figure", paper=paper, table=table, figure="scores.png")
        for paper, table, _ in enabled_tables()
    ]
    figures += [
        path("figure", paper=paper, table=table, figure="attention.png")
        for paper, table, t in enabled_tables()
        if t.get("figure")
    ]
    figures += [
        path("figure", paper=paper, table=table, figure=f"{t['plot']}.png")
        for paper, table, t in enabled_tables()
        if t.get("plot")
    ] + [
        path("figure", paper=paper, table=table, figure="curves.png")
        for paper, table, t in enabled_tables()
        if t.get("kind") == "curves"
    ]
    return figures


# ---------------------------------------------------------------- input functions for rules
def corpus_plan_of(dataset):
    """(inputs by role, outputs under results/data/<dataset>/) of a prepared corpus."""
    return corpus_plan(dataset, dataset_config(dataset), MANIFEST)


def stats_files(wildcards):
    """ "split|lang" -> text file of every split of a corpus, for corpus_stats."""
    return corpus_text_files(wildcards.dataset)


def recipe_targets():
    """Every corpus of `data.corpora` through the text chain of each paper that reads it
    (`data.recipes`; each paper's recipe block), e.g. text/multi30k/val.lc.norm.tok.en.
    """
    targets = set()
    for paper, datasets in config["data"].get("recipes", {}).items():
        if paper not in SETTINGS:
            raise ValueError(
                f"data.recipes names paper {paper!r}, which is not under `papers`; valid: {', '.join(SETTINGS)}"
            )
        rec = recipe(paper)
        for ds in datasets:
            if ds not in config["data"]["corpora"]:
                continue
            for key in corpus_text_files(ds):
                split, lang = key.split("|")
                if lang in rec.langs:
                    targets.add(
                        path(
                            "text",
                            dataset=ds,
                            split=split,
                            chain=rec.chain_for(lang),
                            lang=lang,
                        )
                    )
    return sorted(targets)


def corpus_text_files(ds):
    cfg = dataset_config(ds)
    if cfg["source"] in CORPUS_SOURCES:
        names = text_outputs(ds, cfg, MANIFEST)
    elif (
        ds in DATASET_LAYOUT
    ):  # Multi30k and grounded: the configured splits x languages
        names = [
            f"{s}.{lang}" for s in dataset_splits(ds) for lang in dataset_langs(ds)
        ]
    elif cfg["source"] == "wmt15":
        names = ["train.en", "train.de"]
    else:
        names = [
            f"{s}.{lang}"
            for s in cfg.get("splits", [])
            for lang in cfg.get("langs", [])
        ]
    files = {
        "|".join(name.rsplit(".", 1)): path(
            "corpus",
            dataset=ds,
            split=name.rsplit(".", 1)[0],
            lang=name.rsplit(".", 1)[1],
        )
        for name in names
    }
    if (
        not files and cfg["source"] in CORPUS_SOURCES
    ):  # an image split without captions: count images
        for out in corpus_plan_of(ds)[1]:
            files[f"{Path(out).stem}|images"] = f"{path('data_dir', dataset=ds)}/{out}"
    return files


def stats_image_lists(wildcards):
    """split -> image list, for the corpora that have one per split (Multi30k, grounded)."""
    cfg = dataset_config(wildcards.dataset)
    if cfg["source"] not in ("multi30k", "grounded"):
        return {}
    splits = {key.split("|")[0] for key in corpus_text_files(wildcards.dataset)}
    return {
        s: path("image_list", dataset=wildcards.dataset, split=s)
        for s in sorted(splits)
    }


def stats_inputs(wildcards):
    return [*stats_files(wildcards).values(), *stats_image_lists(wildcards).values()]


def stats_train_split(wildcards):
    return dataset_config(wildcards.dataset).get("train", "train")


def local_input_dir(wildcards):
    """The per-input local folder (`inputs.local.<input>`), resolved; None when unset."""
    return config_path("inputs", "local", wildcards.input)


# A tokenisation chain in a file name: [lc.][norm.][tok|wp|char|jieba] (mmt_repro.text.recipes.parse_chain)
TEXT_CHAIN = r"(lc\.)?(norm\.)?(tok|wp|char|jieba)|lc\.norm|lc|norm"


def tokenize_inputs(wildcards):
    """The prepared text (caption k of each image for tokenize_captions), plus the WordPiece
    vocabulary for chains with the wp step."""
    k = getattr(wildcards, "k", None)
    split = wildcards.split if k is None else f"{wildcards.split}.{k}"
    inputs = {
        "text": path(
            "corpus", dataset=wildcards.dataset, split=split, lang=wildcards.lang
        )
    }
    if wildcards.chain.endswith("wp"):
        inputs["wordpiece_vocab"] = wordpiece_vocab_file()
    return inputs


def vocabulary_corpora(paper, ds, pair):
    """The real text a paper's systems train on for `pair` on dataset `ds` (either direction):
    every system of its enabled tables there and what they start from or back-translate with
    (mmt_repro.settings.PaperSettings.vocabulary_corpora). Codes and vocabularies are learnt on
    all of it, so every system of the paper on `ds` shares them."""
    rev = "-".join(reversed(pair.split("-")))
    train = dataset_config(ds)["train"]
    by_pair = {}
    for p, _, t in enabled_tables():
        if p == paper and t["dataset"] == ds and t["pair"] in (pair, rev):
            by_pair.setdefault(t["pair"], []).extend(t["systems"])
    parts = []
    for table_pair, systems in by_pair.items() or [(pair, [])]:
        for part in SETTINGS[paper].vocabulary_corpora(systems, train, table_pair):
            if part not in parts:
                parts.append(part)
    return parts


def vocab_report_rows(wildcards):
    """For results/data/vocab/{paper}.tsv: one row per vocabulary side and corpus it serves
    (every corpus of vocabulary_corpora, plus the synthetic back-translated pairs), on each
    (dataset, pair) of the paper's enabled tables."""
    paper = wildcards.paper
    rec = recipe(paper)
    published = dict(rec.published_vocab)
    rows, seen = [], set()
    # the vocabularies the paper's models are trained with: a table's own (dataset, pair), or a
    # `train_on` system's one training run; captioning pairs (im-<lang>) have no source side
    runs = []
    for p, _, t in enabled_tables():
        if p != paper:
            continue
        for system in t["systems"]:
            ds, pair = model_location(paper, system, t["dataset"], t["pair"])
            if not is_captioning(pair) and (ds, pair, t) not in runs:
                runs.append((ds, pair, t))
    for ds, table_pair, t in runs:
        pair = canonical_pair(paper, ds, table_pair)
        if (ds, pair) in seen:
            continue
        seen.add((ds, pair))
        src, tgt = pair.split("-")
        for lang in (src, tgt):
            base = dict(
                dataset=ds,
                pair=pair,
                lang=lang,
                vocab=vocab_file(paper, ds, pair, lang),
                published_size=published.get(lang),
                codes=(
                    path(
                        "bpe_codes",
                        paper=paper,
                        dataset=ds,
                        pair=pair,
                        side=bpe_side(paper, lang),
                    )
                    if rec.subword_for(lang) == "bpe"
                    else None
                ),
            )
            for part in vocabulary_corpora(paper, ds, pair):
                if lang in part.langs:
                    own = part.dataset is None
                    rows.append(
                        dict(
                            base,
                            corpus=part.corpus,
                            split=part.split,
                            text=(
                                model_text(paper, ds, pair, part.split, lang)
                                if own
                                else corpus_text(paper, ds, pair, part.corpus, lang)
                            ),
                            words=path(
                                "text",
                                dataset=part.dataset or ds,
                                split=part.split,
                                chain=rec.chain_for(lang),
                                lang=lang,
                            ),
                        )
                    )
            uses_bt = any(
                system_settings(paper, s).corpus == "backtranslated"
                for s in SETTINGS[paper].systems_needed(t["systems"])
            )
            if uses_bt:
                stem = path("backtranslation", paper=paper, dataset=ds, pair=t["pair"])
                side = "src" if lang == t["pair"].split("-")[0] else "tgt"
                rows.append(
                    dict(
                        base,
                        corpus="backtranslated",
                        split=f"synthetic.{side}",
                        text=f"{stem}/synthetic.{side}",
                    )
                )
    return rows


def recipe_max_len(wildcards):
    return recipe(wildcards.paper).max_len


def vocab_report_inputs(wildcards):
    files = []
    for row in vocab_report_rows(wildcards):
        for key in ("vocab", "codes", "text", "words"):
            if row.get(key) and row[key] not in files:
                files.append(row[key])
    return files


def vocab_report_targets():
    """results/data/vocab/{paper}.tsv of every paper with an enabled table."""
    return [
        path("vocab_report", paper=paper)
        for paper in sorted({p for p, _, _ in enabled_tables()})
    ]


def wordpiece_vocab_file():
    """The vocab.txt of the wp step: the recipe's ``wordpiece_vocab`` (the manifest input
    bertgen_vocab, or one learnt by learn_wordpiece); every paper with wp must agree, since the
    tokenised text is shared."""
    files = {
        rec.wordpiece_vocab
        for rec in (s.recipe for s in SETTINGS.values())
        if rec.subword == "wordpiece"
    }
    if len(files) > 1:
        raise ValueError(
            f"papers with the wp step name different WordPiece vocabularies: {sorted(files)}; use one"
        )
    return files.pop() if files else f"resources/{WORDPIECE_VOCAB_INPUT}/vocab.txt"


def wordpiece_training_text(wildcards):
    """What learn_wordpiece learns on: the lowercased training split of the corpus, in every
    language of the wp recipes that the corpus has."""
    ds = wildcards.corpus
    langs = {
        lang
        for s in SETTINGS.values()
        if s.recipe.subword == "wordpiece"
        for lang in s.recipe.langs
    }
    have = [lang for lang in dataset_langs(ds) if lang in langs]
    train = dataset_config(ds)["train"]
    return [
        path("text", dataset=ds, split=train, chain="lc", lang=lang) for lang in have
    ]


def vocab_is_wordpiece(wildcards):
    """Whether build_vocab reads the WordPiece vocab.txt (the recipe's wp step) as it is."""
    return recipe(wildcards.paper).subword == "wordpiece"


def bpe_training_text(wildcards):
    """The real text of every language these codes cover, in the paper's chain, from every
    corpus the paper's systems train on (vocabulary_corpora): both BPE sides for joint codes
    (`recipe.joint_bpe`), else the one language."""
    paper, ds = wildcards.paper, wildcards.dataset
    rec = recipe(paper)
    langs = [
        lang for lang in wildcards.pair.split("-") if rec.subword_for(lang) == "bpe"
    ]
    if wildcards.side != "joint":
        langs = [wildcards.side]
    return [
        path(
            "text",
            dataset=part.dataset or ds,
            split=part.split,
            chain=rec.chain_for(lang),
            lang=lang,
        )
        for part in vocabulary_corpora(paper, ds, wildcards.pair)
        for lang in part.langs
        if lang in langs
    ]


def bpe_symbols(wildcards):
    return recipe(wildcards.paper).bpe_symbols


def vocab_min_freq(wildcards):
    return recipe(wildcards.paper).min_freq


def vocab_max_size(wildcards):
    return recipe(wildcards.paper).vocab_size


def bpe_codes(wildcards):
    side = bpe_side(wildcards.paper, wildcards.lang)
    return path(
        "bpe_codes",
        paper=wildcards.paper,
        dataset=wildcards.dataset,
        pair=wildcards.pair,
        side=side,
    )


def train_text(wildcards):
    """The training text a vocabulary is built on: one side, or both for a joint vocabulary;
    for a WordPiece recipe the vocab.txt itself (the pre-trained model's rows)."""
    paper, ds, pair = wildcards.paper, wildcards.dataset, wildcards.pair
    if vocab_is_wordpiece(wildcards):
        return [wordpiece_vocab_file()]
    langs = pair.split("-") if wildcards.side == "joint" else [wildcards.side]
    return [
        (
            model_text(paper, ds, pair, part.split, lang)
            if part.dataset is None
            else corpus_text(paper, ds, pair, part.corpus, lang)
        )
        for part in vocabulary_corpora(paper, ds, pair)
        for lang in part.langs
        if lang in langs
    ]


def gpu_count(wildcards):
    """One GPU for heavy jobs unless the run is pinned to the CPU."""
    return 0 if config["device"] == "cpu" else 1


def corpus_text(paper, ds, pair, corpus, lang):
    """A text-only pre-training corpus (another dataset's training split) in the paper's form."""
    rec = recipe(paper)
    chain = rec.chain_for(lang)
    if rec.subword_for(lang) == "bpe":
        return path(
            "bpe_corpus",
            paper=paper,
            dataset=ds,
            pair=canonical_pair(paper, ds, pair),
            corpus=corpus,
            chain=chain,
            lang=lang,
        )
    return path("text", dataset=corpus, split="train", chain=chain, lang=lang)


def training_inputs(wildcards):
    """Training corpus (the dataset's train split, the back-translated corpus or a pre-training
    corpus), validation data, vocabularies, features, declared resources and, for fine-tuning,
    the pre-trained model."""
    paper, ds, pair = wildcards.paper, wildcards.dataset, wildcards.pair
    src, tgt = pair.split("-")
    cfg = dataset_config(ds)
    train, val = cfg["train"], cfg["val"]
    settings = system_settings(paper, wildcards.system)
    if settings.reverse_of:
        raise ValueError(
            f"{paper}.{wildcards.system} is the backward direction of {settings.reverse_of} "
            f"(reverse_of): it has no training of its own; train {settings.reverse_of} on {tgt}-{src}"
        )
    corpus = settings.corpus
    if corpus == "train":
        train_src, train_tgt = model_text(paper, ds, pair, train, src), model_text(
            paper, ds, pair, train, tgt
        )
    elif corpus == "backtranslated":
        stem = path("backtranslation", paper=paper, dataset=ds, pair=pair)
        train_src, train_tgt = f"{stem}/synthetic.src", f"{stem}/synthetic.tgt"
    else:
        train_src, train_tgt = corpus_text(paper, ds, pair, corpus, src), corpus_text(
            paper, ds, pair, corpus, tgt
        )
    inputs = {
        "train_src": train_src,
        "train_tgt": train_tgt,
        "val_src": model_text(paper, ds, pair, val, src),
        "val_tgt": model_text(paper, ds, pair, val, tgt),
        "val_ref": reference_file(paper, ds, val, tgt),
        "src_vocab": vocab_file(paper, ds, pair, src),
        "tgt_vocab": vocab_file(paper, ds, pair, tgt),
        **resource_files(wildcards),
        **{f"extra_{k}": v for k, v in train_extra_files(wildcards).items()},
        **task_inputs(wildcards),
    }
    if settings.init_from:
        model = path(
            "model",
            paper=paper,
            system=settings.init_from,
            dataset=ds,
            pair=pair,
            seed=wildcards.seed,
        )
        inputs["init"] = f"{model}.best.pt"
    # a multimodal system trained once for many tables (train_on) trains on text alone where no
    # table of the paper names features for its dataset (a visual-optional model's MT run)
    feats = None
    if multimodal(paper, wildcards.system):
        feats = paper_features(paper, ds, required=not settings.train_on)
    if feats is not None:
        if corpus not in ("train", "backtranslated"):
            raise ValueError(
                f"{paper}.{wildcards.system}: corpus {corpus!r} has no images for a multimodal model"
            )
        options = system_feature_options(paper, wildcards.system)
        for split, key in ((train, "train"), (val, "val")):
            for kind, file in feature_files(ds, feats, split, options).items():
                inputs[f"{key}_{kind}"] = (
                    file  # train_npy, train_index (+ train_boxes), ...
                )
        if corpus == "backtranslated":
            inputs["train_image_list"] = (
                f"{path('backtranslation', paper=paper, dataset=ds, pair=pair)}/images.txt"
            )
    return inputs


def run_path(value, wildcards):
    """A configured input path that may name the run's {paper}, {system}, {dataset}, {pair},
    {src}, {tgt} and {seed}: results/ and resources/ paths are the workflow's own; any other
    relative path is a file of the repository (e.g. config/visual_agreement/visual_words.tsv).
    """
    values = {
        k: getattr(wildcards, k)
        for k in ("paper", "system", "dataset", "pair", "seed")
        if hasattr(wildcards, k)
    }
    if "pair" in values:
        values["src"], values["tgt"] = values["pair"].split("-")
    value = str(value).format_map(values)
    if value.startswith(("results/", "resources/")):
        return value
    return str(repo_path(value))


def resource_paths(wildcards):
    """name -> file of every resource the system declares (pretrained vectors or weights,
    e.g. resources/<input>/<file> of a manifest input, or a table the workflow builds), with
    the run's placeholders filled in (run_path)."""
    settings = system_settings(wildcards.paper, wildcards.system)
    return {
        name: run_path(value, wildcards) for name, value in settings.resources.items()
    }


def resource_files(wildcards):
    """`resource_<name>` -> file of every resource the system declares."""
    return {
        f"resource_{name}": value for name, value in resource_paths(wildcards).items()
    }


def train_resources(wildcards):
    """name -> file, as the trainer takes them (the same files as the rule's inputs)."""
    return resource_paths(wildcards)


def align_file(paper, dataset, pair, split):
    """The symmetrised word alignment of one split (the align stage)."""
    if SETTINGS[paper].align is None:
        raise ValueError(
            f"{paper} has no `align` block in {SETTINGS[paper].path}: no alignment stage"
        )
    return path("align", paper=paper, dataset=dataset, pair=pair, split=split)


def align_settings(wildcards):
    settings = SETTINGS[wildcards.paper].align
    if settings is None:
        raise ValueError(
            f"{wildcards.paper} has no `align` block in {SETTINGS[wildcards.paper].path}"
        )
    return as_plain(settings)


def alignment_text(side, split=None):
    """The text the align stage reads: the model's text of one side of the pair (the recipe's
    tokens or subwords), of `split` (default: the wildcard's split; "train": the dataset's).
    """

    def get(wildcards):
        ds, pair = wildcards.dataset, wildcards.pair
        lang = pair.split("-")[0 if side == "src" else 1]
        name = wildcards.split if split is None else dataset_config(ds)[split]
        return model_text(wildcards.paper, ds, pair, name, lang)

    return get


def layer_selection_inputs(wildcards):
    """The system's checkpoint with the validation split (both sides in the model's form, its
    features and its word alignment)."""
    paper, ds, pair = wildcards.paper, wildcards.dataset, wildcards.pair
    src, tgt = pair.split("-")
    val = dataset_config(ds)["val"]
    model = path(
        "model",
        paper=paper,
        system=wildcards.system,
        dataset=ds,
        pair=pair,
        seed=wildcards.seed,
    )
    inputs = {
        "checkpoint": f"{model}.best.pt",
        "src": model_text(paper, ds, pair, val, src),
        "tgt": model_text(paper, ds, pair, val, tgt),
        "src_vocab": vocab_file(paper, ds, pair, src),
        "tgt_vocab": vocab_file(paper, ds, pair, tgt),
        "align": align_file(paper, ds, pair, val),
    }
    if multimodal(paper, wildcards.system):
        for kind, file in feature_files(ds, paper_features(paper, ds), val).items():
            inputs[f"features_{kind}"] = file
    return inputs


def train_extra_files(wildcards):
    """name -> file of every per-example extra the system reads in training (the trainer's
    `train_extras`; the same files as the rule's `extra_<name>` inputs)."""
    settings = system_settings(wildcards.paper, wildcards.system)
    train = dataset_config(wildcards.dataset)["train"]
    files = {}
    for name in settings.extras:  # mmt_repro.settings.EXTRAS
        if name == "align":
            files[name] = align_file(
                wildcards.paper, wildcards.dataset, wildcards.pair, train
            )
    return files


def paper_imports(wildcards):
    return list(SETTINGS[wildcards.paper].imports)


def reference_subword(wildcards):
    """What to undo on the reference before scoring: WordPiece when the chain has the wp step
    (the reference file then holds pieces); BPE and characters never reach reference files.
    """
    return "wordpiece" if target_subword(wildcards) == "wordpiece" else "none"


def table_reference_subword(wildcards):
    tgt = table_config(wildcards)["pair"].split("-")[1]
    return (
        "wordpiece"
        if recipe(wildcards.paper).subword_for(tgt) == "wordpiece"
        else "none"
    )


def target_subword(wildcards):
    """The recipe's subword kind on the target side, merged back before scoring."""
    return recipe(wildcards.paper).subword_for(wildcards.pair.split("-")[1])


def backtranslation(paper):
    bt = SETTINGS[paper].backtranslation
    if bt is None:
        raise ValueError(
            f"{paper} has no `backtranslation` block in {SETTINGS[paper].path}"
        )
    return bt


def backtranslation_inputs(wildcards):
    """The reverse model's translations of the k comparable target files, the real target side
    in the paper's form, the images each line describes, and the BPE codes of the pair.
    """
    paper, ds, pair = wildcards.paper, wildcards.dataset, wildcards.pair
    src, tgt = pair.split("-")
    bt = backtranslation(paper)
    ks = range(1, bt.descriptions + 1)
    return {
        "synthetic": [
            path(
                "translation",
                paper=paper,
                system=bt.reverse_system,
                dataset=ds,
                split=f"train_c{k}",
                pair=f"{tgt}-{src}",
                seed=bt.seed,
                condition="congruent",
            )
            for k in ks
        ],
        "targets": [model_text(paper, ds, pair, f"train_c{k}", tgt) for k in ks],
        "image_lists": [
            path("image_list", dataset=ds, split=f"train_c{k}") for k in ks
        ],
        "codes": path(
            "bpe_codes",
            paper=paper,
            dataset=ds,
            pair=canonical_pair(paper, ds, pair),
            side=bpe_side(paper, src),
        ),
    }


def decode_settings(wildcards):
    """The paper's decode block with the system's own keys applied (e.g. the back-translation beam)."""
    return as_plain(SETTINGS[wildcards.paper].decode_for(wildcards.system))


def task_files(paper, system, name, task):
    """Training files of one extra task of a multi-task system (``systems.<s>.tasks``): its
    source text (none for captioning), target text (every caption file for captioning sets)
    and, when it takes images, the features of its training split."""
    ds, pair = task.dataset, task.pair
    split = task.split or dataset_config(ds)["train"]
    src, tgt = pair.split("-")
    files = {}
    if not is_captioning(pair):
        files["src"] = model_text(paper, ds, pair, split, src)
    if is_captioning(pair) and dataset_config(ds).get("captions_per_image"):
        files["tgt"] = caption_files(paper, ds, split, tgt)
    else:
        files["tgt"] = [model_text(paper, ds, pair, split, tgt)]
    fs = None
    if task.images is not False and multimodal(paper, system):
        fs = paper_features(paper, ds, required=False)
        if fs is None and (task.images or is_captioning(pair)):
            raise ValueError(
                f"{paper}.{system} task {name!r}: no table of {paper} on {ds} names its features"
            )
    if fs is not None:
        for kind, file in feature_files(ds, fs, split).items():
            files[kind] = file
    elif is_captioning(pair):
        raise ValueError(
            f"{paper}.{system} task {name!r} captions images: it needs images"
        )
    if task.val:  # its validation split, decoded after every epoch (a curve per task)
        val = dataset_config(ds).get("val") or "valid"
        if not is_captioning(pair):
            files["val_src"] = model_text(paper, ds, pair, val, src)
        files["val_ref"] = reference_files(paper, ds, val, tgt)
        if "npy" in files:
            for kind, file in feature_files(ds, paper_features(paper, ds), val).items():
                files[f"val_{kind}"] = file
    return files


def task_inputs(wildcards):
    """``task_<name>_<src|tgt|npy|index|boxes>`` -> file(s) of every extra training task."""
    settings = system_settings(wildcards.paper, wildcards.system)
    inputs = {}
    for name, task in settings.task_settings().items():
        for kind, file in task_files(
            wildcards.paper, wildcards.system, name, task
        ).items():
            inputs[f"task_{name}_{kind}"] = file
    return inputs


def train_tasks(wildcards):
    """The extra training tasks as the trainer takes them (the same files as task_inputs)."""
    settings = system_settings(wildcards.paper, wildcards.system)
    tasks = []
    for name, task in settings.task_settings().items():
        f = task_files(wildcards.paper, wildcards.system, name, task)
        tasks.append(
            {
                "name": name,
                "pair": task.pair,
                "src": f.get("src"),
                "tgt": list(f["tgt"]),
                "features": [f["npy"], f["index"]] if "npy" in f else None,
                "val": (
                    None
                    if "val_ref" not in f
                    else {
                        "src": f.get("val_src"),
                        "refs": list(f["val_ref"]),
                        "features": (
                            [f["val_npy"], f["val_index"]] if "val_npy" in f else None
                        ),
                    }
                ),
            }
        )
    return tasks


def train_model_name(wildcards):
    return system_settings(wildcards.paper, wildcards.system).model


def train_model_config(wildcards):
    """The system's model config on this pair (its `by_pair` overrides applied)."""
    return system_settings(wildcards.paper, wildcards.system).for_pair(wildcards.pair)[
        0
    ]


def train_train_config(wildcards):
    cfg = dict(
        system_settings(wildcards.paper, wildcards.system).for_pair(wildcards.pair)[1]
    )
    cfg["seed"] = int(wildcards.seed)
    return cfg


def reversed_pair(pair):
    src, tgt = pair.split("-")
    return f"{tgt}-{src}"


def decoded_model(wildcards):
    """(system, pair, direction) of the checkpoint a run decodes: the system's own, or for a
    `reverse_of` system its forward system's checkpoint of the reversed pair, backward.
    """
    settings = system_settings(wildcards.paper, wildcards.system)
    if settings.reverse_of:
        return settings.reverse_of, reversed_pair(wildcards.pair), "backward"
    return wildcards.system, wildcards.pair, "forward"


def decode_direction(wildcards):
    return decoded_model(wildcards)[2]


def is_captioning(pair):
    """A pair ``im-<lang>``: images in, captions out (no source text)."""
    return pair.split("-")[0] == IMAGE_SOURCE


def model_location(paper, system, dataset, pair):
    """(dataset, pair) of the training run whose checkpoint decodes ``system`` on ``dataset`` and
    ``pair``: the system's ``train_on`` (one model for every table: multi-task and zero-shot
    systems, which need a joint vocabulary), else the table's own."""
    on = system_settings(paper, system).train_on
    if not on:
        return dataset, pair
    if not recipe(paper).joint_vocab:
        raise ValueError(
            f"{paper}.{system} decodes every table with the model trained on {on}: its recipe needs "
            "joint_vocab: true (one vocabulary for every language)"
        )
    return on["dataset"], on["pair"]


def run_features(paper, system, dataset, split, condition="congruent"):
    """Feature files (npy, index, boxes) a run gives the model: none for text-only systems and
    the no-image condition; the system's feature_options apply; a system trained elsewhere (``train_on``) runs text-only on a
    dataset where no table of the paper names features (e.g. BertGen on IWSLT)."""
    if not multimodal(paper, system) or condition == "no_image":
        return {}
    fs = paper_features(
        paper, dataset, required=not system_settings(paper, system).train_on
    )
    options = system_feature_options(paper, system)
    return {} if fs is None else feature_files(dataset, fs, split, options)


def translate_inputs(wildcards):
    """Checkpoint, source text in the model's form, vocabularies and features of a run; a
    `reverse_of` system reads its forward system's checkpoint, text and vocabularies of the
    reversed pair (the files that model was trained with); a `train_on` system the checkpoint
    and vocabularies of its one training run; a captioning pair (im-<lang>) no source text.
    """
    paper, ds = wildcards.paper, wildcards.dataset
    src, tgt = wildcards.pair.split("-")
    condition = getattr(wildcards, "condition", "congruent")
    system, pair, _ = decoded_model(wildcards)
    m_ds, m_pair = model_location(paper, system, ds, pair)
    model = path(
        "model",
        paper=paper,
        system=system,
        dataset=m_ds,
        pair=m_pair,
        seed=wildcards.seed,
    )
    inputs = {
        "checkpoint": f"{model}.best.pt",
        "tgt_vocab": vocab_file(paper, m_ds, m_pair, tgt),
    }
    if not is_captioning(pair):
        inputs["src"] = model_text(paper, ds, pair, wildcards.split, src)
        inputs["src_vocab"] = vocab_file(paper, m_ds, m_pair, src)
    feats = run_features(paper, wildcards.system, ds, wildcards.split, condition)
    for kind, file in feats.items():  # features_npy, features_index (+ features_boxes)
        inputs[f"features_{kind}"] = file
    if not multimodal(paper, wildcards.system) and condition in (
        "shuffled",
        "no_image",
    ):
        raise ValueError(
            f"{paper}.{wildcards.system} reads no images: no {condition} condition"
        )
    if is_captioning(pair) and not feats:
        raise ValueError(
            f"{paper}.{system} captions {ds} ({pair}) but has no features there: name them in the table"
        )
    return inputs


def shuffle_seed(wildcards):
    return (
        SETTINGS[wildcards.paper].scoring.shuffle_seed
        if wildcards.condition == "shuffled"
        else None
    )


def scoring(wildcards):
    """The paper's scoring block (metrics, BLEU variant and tokenisation, METEOR language)."""
    return as_plain(SETTINGS[wildcards.paper].scoring)


def reference_text(wildcards):
    """The reference(s) of a run in the scoring form: one file, or every caption file of a
    captioning test set (``captions_per_image``)."""
    return reference_files(
        wildcards.paper,
        wildcards.dataset,
        wildcards.split,
        wildcards.pair.split("-")[1],
    )


def reference_files(paper, dataset, split, lang):
    k = dataset_config(dataset).get("captions_per_image")
    if not k:
        return [reference_file(paper, dataset, split, lang)]
    return caption_files(paper, dataset, split, lang)


def caption_files(paper, dataset, split, lang):
    """The k caption files of a split (line i of each: a caption of image i) in the recipe's
    chain (captions are word- or WordPiece-level text, never BPE)."""
    rec = recipe(paper)
    if rec.subword_for(lang) == "bpe":
        raise ValueError(
            f"{paper}: captions are not BPE-segmented per paper; use a word or wp chain"
        )
    k = dataset_config(dataset).get("captions_per_image") or 0
    return [
        path(
            "caption_text",
            dataset=dataset,
            split=split,
            k=j,
            chain=rec.chain_for(lang),
            lang=lang,
        )
        for j in range(1, k + 1)
    ]


def score_meta(wildcards):
    """Scores belong to a run, not to a table: several tables may share one (table "")."""
    return {
        "paper": wildcards.paper,
        "table": "",
        "system": wildcards.system,
        "dataset": wildcards.dataset,
        "pair": wildcards.pair,
        "test_set": wildcards.split,
        "seed": int(wildcards.seed),
        "condition": wildcards.condition,
    }


def image_inputs(wildcards):
    """The split's image list, plus the image folder when the workflow makes it."""
    inputs = {
        "image_list": path(
            "image_list", dataset=wildcards.dataset, split=wildcards.split
        )
    }
    if dataset_config(wildcards.dataset)["source"] == "grounded":
        inputs["images"] = path("images", dataset=wildcards.dataset)
    return inputs


def region_inputs(wildcards):
    """The split's images (as image_inputs), plus the given boxes when the set has `boxes: given`."""
    inputs = image_inputs(wildcards)
    fs = feature_set_config(wildcards.dataset, wildcards.feature_set)
    if fs.get("boxes", "detected") == "given":
        inputs["given_boxes"] = path(
            "given_boxes", dataset=wildcards.dataset, split=wildcards.split
        )
    return inputs


def given_boxes_file(wildcards, input):
    return input.get("given_boxes")


def image_dir(wildcards):
    """Where the images are: the generated folder, or the configured (request-only) one."""
    cfg = dataset_config(wildcards.dataset)
    if cfg["source"] == "grounded":
        return path("images", dataset=wildcards.dataset)
    return config_path("datasets", wildcards.dataset, "images") or ""


def missing_images_fix(wildcards):
    """Where to get the images of a dataset (the manifest's request-only entry, when declared)."""
    name = dataset_config(wildcards.dataset).get("images_input")
    if name:
        err = request_only_error(MANIFEST.input(name))
        return f"{err.problem}; {err.fix}"
    return f"set datasets.{wildcards.dataset}.images to the folder holding the images"


def feature_set_config(dataset, feature_set):
    sets = dataset_config(dataset).get("features", {})
    if feature_set not in sets:
        raise ValueError(
            f"feature set {feature_set!r} is not configured for {dataset}; configured: {', '.join(sets)}"
        )
    return sets[feature_set]


def feature_sets_of(kinds, imports=None):
    """A wildcard pattern matching the configured feature sets of some kinds ("grid",
    "grid|video"), across datasets; for ``pretrained`` sets, only those importing one of
    ``imports`` ("butd") or, with ``imports="!butd"``, all but those."""
    wanted = kinds.split("|")

    def picked(fs):
        if imports is None or fs.get("kind", "grid") != "pretrained":
            return True
        if imports.startswith("!"):
            return fs.get("import") not in imports[1:].split("|")
        return fs.get("import") in imports.split("|")

    names = sorted(
        {
            name
            for ds in config["datasets"].values()
            for name, fs in (ds.get("features") or {}).items()
            if fs.get("kind", "grid") in wanted and picked(fs)
        }
    )
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def pretrained_sets(regions):
    """A wildcard pattern matching the configured pretrained feature sets that are (regions=True)
    or are not region stores: BUTD `obj36` imports write boxes beside the features."""
    names = sorted(
        {
            name
            for ds in config["datasets"].values()
            for name, fs in (ds.get("features") or {}).items()
            if fs.get("kind", "grid") == "pretrained"
            and (fs.get("import") == "butd") == regions
        }
    )
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def feature_param(key, default=KeyError):
    """A feature-set setting; grid sets default extractor/layer to their name `extractor-layer`."""

    def get(wildcards):
        fs = feature_set_config(wildcards.dataset, wildcards.feature_set)
        if key in fs:
            return fs[key]
        if key in ("extractor", "layer") and fs.get("kind", "grid") == "grid":
            return wildcards.feature_set.split("-")[0 if key == "extractor" else 1]
        if default is KeyError:
            raise ValueError(
                f"feature set {wildcards.feature_set} of {wildcards.dataset} needs the key {key!r}"
            )
        return default

    return get


def media_folder(wildcards):
    return config_path("datasets", wildcards.dataset, "images")


def video_dir(wildcards):
    """Where the videos are: the generated folder of a grounded video set, or the configured one."""
    if dataset_config(wildcards.dataset)["source"] == "grounded_video":
        return path("videos", dataset=wildcards.dataset)
    return config_path("datasets", wildcards.dataset, "videos") or ""


def video_inputs(wildcards):
    """The split's video list, plus the video folder when the workflow makes it."""
    inputs = {
        "video_list": path(
            "video_list", dataset=wildcards.dataset, split=wildcards.split
        )
    }
    if dataset_config(wildcards.dataset)["source"] == "grounded_video":
        inputs["videos"] = path("videos", dataset=wildcards.dataset)
    return inputs


def pretrained_source(wildcards):
    src = feature_set_config(wildcards.dataset, wildcards.feature_set).get("src")
    return str(repo_path(src)) if src else ""


def train_feature_store(kind):
    def get(wildcards):
        train = dataset_config(wildcards.dataset)["train"]
        ext = "npy" if kind == "npy" else "index.parquet"
        stem = path(
            "features",
            dataset=wildcards.dataset,
            feature_set=wildcards.feature_set,
            split=train,
        )
        return f"{stem}.{ext}"

    return get


def table_config(wildcards):
    return config["papers"][wildcards.paper]["tables"][wildcards.table]


def significance_translation_map(wildcards):
    """``"system|test_set|condition|seed"`` -> translation file, for every run of the table."""
    return {
        f"{system}|{test_set}|{condition}|{seed}": run_file(
            "translation",
            wildcards.paper,
            wildcards.table,
            system,
            test_set,
            seed,
            condition,
        )
        for system, test_set, seed, condition in table_runs(
            wildcards.paper, wildcards.table
        )
    }


def significance_translations(wildcards):
    return sorted(significance_translation_map(wildcards).values())


def significance_reference_map(wildcards):
    t = table_config(wildcards)
    tgt = t["pair"].split("-")[1]
    return {
        test_set: reference_file(wildcards.paper, t["dataset"], test_set, tgt)
        for test_set in t["test_sets"]
    }


def significance_references(wildcards):
    return sorted(significance_reference_map(wildcards).values())


def table_baseline(wildcards):
    """One baseline system, or a map system -> baseline (as a plain dict for the script)."""
    t = table_config(wildcards)
    baseline = t.get("baseline", t["systems"][0])
    return dict(baseline) if isinstance(baseline, dict) else baseline


def table_pair(wildcards):
    return table_config(wildcards)["pair"]


def significance_metrics(wildcards):
    metrics = SETTINGS[wildcards.paper].scoring.significance_metrics
    return [m for m in metrics if m in SETTINGS[wildcards.paper].scoring.metrics]


def table_target_lang(wildcards):
    """METEOR's language for a table: the scoring block's, else the pair's target."""
    return (
        SETTINGS[wildcards.paper].scoring.meteor_lang
        or table_config(wildcards)["pair"].split("-")[1]
    )


def tables_of_kind(kind):
    """A wildcard pattern matching the enabled tables of one kind (e.g. curves)."""
    names = sorted({table for _, table, t in enabled_tables() if t.get("kind") == kind})
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def curve_specs(wildcards):
    """system -> {file, y, x} of a curves table: each system's training curve (seed: the
    table's first) and its columns for the table's task: val_bleu against epoch, or, for a
    system trained elsewhere (train_on), the validation curve of its task on the table's dataset
    and pair (val_bleu_<task> against passes_<task>)."""
    paper, t = wildcards.paper, table_config(wildcards)
    specs = {}
    for system in t["systems"]:
        m_ds, m_pair = model_location(paper, system, t["dataset"], t["pair"])
        model = path(
            "model",
            paper=paper,
            system=system,
            dataset=m_ds,
            pair=m_pair,
            seed=t["seeds"][0],
        )
        y, x = "val_bleu", "epoch"
        if (m_ds, m_pair) != (t["dataset"], t["pair"]):
            tasks = [
                name
                for name, task in system_settings(paper, system).task_settings().items()
                if task.dataset == t["dataset"] and task.pair == t["pair"] and task.val
            ]
            if not tasks:
                raise ValueError(
                    f"{paper}.{system} has no task on {t['dataset']} {t['pair']} with `val: true`: "
                    f"table {wildcards.table} has no curve to plot for it"
                )
            y, x = f"val_bleu_{tasks[0]}", f"passes_{tasks[0]}"
        specs[system] = {"file": f"{model}.curve.tsv", "y": y, "x": x}
    return specs


def curve_test_set(wildcards):
    return table_config(wildcards)["test_sets"][0]


def curve_files(wildcards):
    return sorted({spec["file"] for spec in curve_specs(wildcards).values()})


def table_note(wildcards):
    return table_config(wildcards).get("note", "")


# Tables built in the workflow from pretrained word vectors (the word_vectors block of a paper).
EMBEDDING_TABLES = "results/embeddings/"


def uses_word_vectors(paper, system):
    """Does the system read a table built from the paper's pretrained word vectors?"""
    return any(
        str(value).startswith(EMBEDDING_TABLES)
        for value in system_settings(paper, system).resources.values()
    )


def table_not_comparable(wildcards):
    """system -> why its rows get no delta: a table marked `comparable: false` (its runs differ
    from the paper's set-up; the table's note says how), or vectors trained here instead of the
    paper's."""
    paper = wildcards.paper
    t = table_config(wildcards)
    if t.get("comparable", True) is False:
        return {system: "no delta: not the paper's set-up" for system in t["systems"]}
    wv = SETTINGS[paper].word_vectors
    if wv is None or wv.source != "trained":
        return {}
    reason = (
        f"word vectors: fastText {wv.train.model} {wv.dim}-d trained here on the training text, "
        f"not the official {wv.input} vectors"
    )
    return {
        system: reason
        for system in table_config(wildcards)["systems"]
        if uses_word_vectors(paper, system)
    }


def word_vectors(paper):
    wv = SETTINGS[paper].word_vectors
    if wv is None:
        raise ValueError(
            f"{paper} has no `word_vectors` block in {SETTINGS[paper].path}"
        )
    return wv


def word_vector_file(wildcards):
    """The official vectors of the language (a manifest input) or those trained here."""
    wv = word_vectors(wildcards.paper)
    if wv.source == "official":
        return f"resources/{wv.input}/{wv.file.format(lang=wildcards.lang)}"
    return path(
        "word_vectors",
        paper=wildcards.paper,
        dataset=wildcards.dataset,
        lang=wildcards.lang,
    )


def word_vector_text(wildcards):
    """Training text of vectors trained here: the dataset's training split in the paper's chain."""
    ds = wildcards.dataset
    return path(
        "text",
        dataset=ds,
        split=dataset_config(ds)["train"],
        chain=recipe(wildcards.paper).chain_for(wildcards.lang),
        lang=wildcards.lang,
    )


def word_vector_training(wildcards):
    wv = word_vectors(wildcards.paper)
    return dict(as_plain(wv.train), dim=wv.dim)


def embedding_table_settings(wildcards):
    wv = word_vectors(wildcards.paper)
    return {
        "n_components": wv.n_components,
        "center": wv.center,
        "normalize": wv.normalize,
        "dim": wv.dim,
    }


def embedding_vocab(wildcards):
    return vocab_file(
        wildcards.paper, wildcards.dataset, wildcards.pair, wildcards.lang
    )


def table_unavailable(wildcards):
    return dict(table_config(wildcards).get("unavailable", {}))


def make_table_inputs(wildcards):
    inputs = {
        "scores": table_scores(wildcards.paper, wildcards.table),
        "published": PUBLISHED,
    }
    # a paper without significance tests (empty significance_metrics) needs none
    kind = table_kind(wildcards.paper, wildcards.table)
    if kind == "translation" and significance_metrics(wildcards):
        inputs["significance"] = path(
            "significance", paper=wildcards.paper, table=wildcards.table
        )
    return inputs


def analysis_inputs(wildcards):
    """What a registered analysis reads: the attention dump, translation and reference, or the
    model (checkpoint, the split's text on both sides in the model's form, vocabularies,
    features, and the split's word alignment where the paper has an align stage); plus the
    table's `files` (paths may name the run's {paper}, {dataset}, {pair} and {seed})."""
    t = analysis_table(wildcards)
    values = dict(
        paper=wildcards.paper,
        system=wildcards.system,
        dataset=wildcards.dataset,
        split=wildcards.split,
        pair=wildcards.pair,
        seed=wildcards.seed,
    )
    extra = {k: run_path(v, wildcards) for k, v in (t.get("files") or {}).items()}
    kind = t.get("inputs", "attention")
    if kind == "attention":
        return {"attention": path("attention", **values), **extra}
    if kind == "model":
        inputs = translate_inputs(wildcards)
        system, pair, _ = decoded_model(wildcards)
        paper, ds = wildcards.paper, wildcards.dataset
        inputs["tgt"] = model_text(
            paper, ds, pair, wildcards.split, wildcards.pair.split("-")[1]
        )
        if SETTINGS[paper].align is not None:
            inputs["align"] = align_file(paper, ds, pair, wildcards.split)
        return {**inputs, **extra}
    files = {
        "hyp": path("translation", condition="congruent", **values),
        "ref": reference_text(wildcards),
        **extra,
    }
    if kind == "translation_train":  # + the target side of the training corpus
        ds, tgt = wildcards.dataset, wildcards.pair.split("-")[1]
        files["train"] = reference_file(
            wildcards.paper, ds, dataset_config(ds)["train"], tgt
        )
    return files


def analysis_table(wildcards):
    """The (first) enabled analysis table of this paper that names this analysis, preferring
    one on the run's dataset and pair that lists its system (tables may give their own `files`).
    """
    tables = [
        t
        for paper, _, t in enabled_tables()
        if paper == wildcards.paper
        and t.get("kind") == "analysis"
        and t["analysis"] == wildcards.analysis
    ]
    for t in tables:
        if (
            t["dataset"] == wildcards.dataset
            and t["pair"] == wildcards.pair
            and wildcards.system in t["systems"]
        ):
            return t
    for t in tables:
        return t
    raise ValueError(
        f"no enabled analysis table of {wildcards.paper} names analysis {wildcards.analysis!r}"
    )


def analysis_name(wildcards):
    return f"{wildcards.paper}.{wildcards.analysis}"


def analysis_input_kind(wildcards):
    return analysis_table(wildcards).get("inputs", "attention")


def analysis_meta(wildcards):
    return {
        "paper": wildcards.paper,
        "table": "",
        "system": wildcards.system,
        "dataset": wildcards.dataset,
        "pair": wildcards.pair,
        "test_set": wildcards.split,
        "seed": int(wildcards.seed),
        "condition": "congruent",
    }


def figure_block(wildcards):
    """The table's `figure` block: which system, test set, seed and sentence the figure shows."""
    t = table_config(wildcards)
    fig = t.get("figure")
    if not fig:
        raise ValueError(
            f"table {wildcards.paper}.{wildcards.table} has no `figure` block (system, test_set, seed, sentence)"
        )
    return fig


def attention_dump_for_figure(wildcards):
    t, fig = table_config(wildcards), figure_block(wildcards)
    return path(
        "attention",
        paper=wildcards.paper,
        system=fig["system"],
        dataset=t["dataset"],
        split=fig["test_set"],
        pair=t["pair"],
        seed=fig["seed"],
    )


def figure_sentence(wildcards):
    return figure_block(wildcards).get("sentence", 0)


def figure_plot(wildcards):
    """What the attention figure draws: `attention` (source and image attention with beta,
    Calixto et al. Fig. 2) or `beta` (beta per generated word, Yang et al. Fig. 4)."""
    return figure_block(wildcards).get("plot", "attention")


def multi30k_file(kind):
    """The fetched task 1 file (resources/<input>/...) of the wildcards' split (and language)."""
    from mmt_repro.data import multi30k

    def get(wildcards):
        ds, split = wildcards.dataset, wildcards.split
        key = f"datasets.{ds}"
        if split not in dataset_splits(ds):
            raise ConfigError(
                f"{key}.splits: split {split!r} is not configured; valid values: "
                f"{', '.join(dataset_splits(ds))} (add it there, and its files to the manifest)"
            )
        inp = dataset_config(ds).get("input") or multi30k.TASK1_INPUT
        if kind == "image_list":
            return f"resources/{inp}/{multi30k.image_list_file(split)}"
        if wildcards.lang not in dataset_langs(ds):
            raise ConfigError(
                f"{key}.langs: language {wildcards.lang!r} is not configured; valid values: "
                f"{', '.join(dataset_langs(ds))}"
            )
        return f"resources/{inp}/{multi30k.text_file(split, wildcards.lang)}"

    return get
