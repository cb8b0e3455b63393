# Helper functions shared by the rules: config validation, per-paper settings, and the input
# functions that turn wildcards into paths. No rule lives here.

import re
import sys
from pathlib import Path

from mmt_repro.config import ConfigError, paper_settings, validate_config
from mmt_repro.data.fetch import request_only_error
from mmt_repro.data.manifest import load_manifest
from mmt_repro.data.prepare import SOURCES as CORPUS_SOURCES
from mmt_repro.data.prepare import corpus_plan, text_outputs
from mmt_repro.data.wmt import WMT15_ARCHIVES as WMT15_ARCHIVE_NAMES
from mmt_repro.io import DataError
from mmt_repro.text.recipes import recipe_for
from mmt_repro.text.wordpiece import WORDPIECE_VOCAB_INPUT
from mmt_repro.models.registry import is_multimodal

REPO = Path(workflow.basedir)
LANGS = ["en", "de", "fr"]
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
    SETTINGS = {
        paper: paper_settings(repo_path(block["settings"]), block.get("overrides"))
        for paper, block in config["papers"].items()
    }
except (ConfigError, DataError) as err:
    sys.exit(f"mmt-repro: {err}")


MANIFEST = load_manifest(REPO / "config" / "manifest.yaml")
MANIFEST_INPUTS = "|".join(sorted(MANIFEST, key=len, reverse=True))
WMT15_ARCHIVES = list(WMT15_ARCHIVE_NAMES)
# Datasets made by mmt_repro.data.prepare (one generated rule each, see data.smk).
PREPARED_CORPORA = [name for name, ds in config["datasets"].items() if ds["source"] in CORPUS_SOURCES]
GROUNDED_SPLITS = ["train", "val", "test"]
MULTI30K_SPLITS = "train|val|test_2016_flickr|test_2017_flickr|test_2017_mscoco"
COMPARABLE_PER_IMAGE = config["backtranslation"]["descriptions"]


def datasets_of(source):
    """A wildcard pattern matching the configured datasets of one source."""
    names = [name for name, cfg in config["datasets"].items() if cfg["source"] == source]
    return "|".join(names) if names else "(?!)"


def dataset_value(key):
    def get(wildcards):
        return dataset_config(wildcards.dataset)[key]

    return get


wildcard_constraints:
    dataset="[a-z0-9_]+",
    split="[a-z0-9_]+",
    lang="[a-z]{2}",
    pair="[a-z]{2}-[a-z]{2}",
    chain="(lc\.)?norm\.tok",
    paper="[a-z_]+",
    system="[a-z0-9_]+",
    seed="[0-9]+",
    condition="congruent|shuffled",


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
        raise ValueError(f"unknown dataset {dataset!r}; configured: {', '.join(config['datasets'])}")
    return config["datasets"][dataset]


def dataset_splits(dataset):
    cfg = dataset_config(dataset)
    return list(cfg["sizes"]) if cfg["source"] == "grounded" else list(cfg["splits"])


def recipe(paper):
    return SETTINGS[paper]["recipe"]


def text_chain(paper):
    """The Moses step chain of a paper's text recipe, as it appears in file names."""
    return "lc.norm.tok" if recipe(paper).get("lowercase") else "norm.tok"


def system_settings(paper, system):
    systems = SETTINGS[paper]["systems"]
    if system not in systems:
        raise ValueError(f"unknown system {system!r} for {paper}; valid: {', '.join(systems)}")
    return systems[system]


def multimodal(paper, system):
    return is_multimodal(system_settings(paper, system)["model"])


def paper_features(paper, dataset):
    """The feature set a paper uses on a dataset (one per paper and dataset)."""
    names = {t.get("features") for p, _, t in enabled_tables() if p == paper and t["dataset"] == dataset}
    names.discard(None)
    if len(names) > 1:
        raise ValueError(f"{paper} uses several feature sets on {dataset}: {sorted(names)}; use one")
    if not names:
        raise ValueError(f"no table of {paper} on {dataset} names its 'features'")
    return names.pop()


def feature_files(dataset, feature_set, split):
    """npy and index of a split's features, standardised when the config asks for it."""
    std = ".std" if feature_set_config(dataset, feature_set).get("standardize") else ""
    stem = f"results/features/{dataset}/{feature_set}{std}/{split}"
    return {"npy": f"{stem}.npy", "index": f"{stem}.index.parquet"}


def bpe_text(paper, dataset, pair, split, lang):
    return f"results/text/{paper}/{dataset}.{pair}/{split}.{text_chain(paper)}.bpe.{lang}"


def table_runs(paper, table):
    """(system, test_set, seed, condition) of every run a table needs; the shuffled-image
    condition exists only for multimodal systems."""
    t = config["papers"][paper]["tables"][table]
    runs = []
    for system in t["systems"]:
        conditions = ["congruent"]
        if t.get("shuffled_images") and multimodal(paper, system):
            conditions.append("shuffled")
        for test_set in t["test_sets"]:
            for seed in t["seeds"]:
                for condition in conditions:
                    runs.append((system, test_set, seed, condition))
    return runs


def run_stem(paper, table, system, test_set, seed, condition):
    t = config["papers"][paper]["tables"][table]
    return f"{paper}/{system}/{t['dataset']}.{test_set}.{t['pair']}.seed{seed}.{condition}"


def table_kind(paper, table):
    return config["papers"][paper]["tables"][table].get("kind", "translation")


def table_scores(paper, table):
    """Score files of a table: translation scores, or beta-gate shares for attention tables."""
    if table_kind(paper, table) == "attention":
        t = config["papers"][paper]["tables"][table]
        return [
            f"results/scores/{paper}/{system}/{t['dataset']}.{test_set}.{t['pair']}.seed{seed}.beta.json"
            for system in t["systems"] for test_set in t["test_sets"] for seed in t["seeds"]
        ]
    return [f"results/scores/{run_stem(paper, table, *run)}.json" for run in table_runs(paper, table)]


def all_tables():
    return [f"results/tables/{paper}/{table}.tsv" for paper, table, _ in enabled_tables()]


def all_figures():
    """A scores figure per table, and the attention figure of attention tables."""
    figures = [f"results/figures/{paper}/{table}.scores.png" for paper, table, _ in enabled_tables()]
    figures += [
        f"results/figures/{paper}/{table}.attention.png"
        for paper, table, _ in enabled_tables()
        if table_kind(paper, table) == "attention"
    ]
    return figures


# ---------------------------------------------------------------- input functions for rules
def corpus_plan_of(dataset):
    """(inputs by role, outputs under results/data/<dataset>/) of a prepared corpus."""
    return corpus_plan(dataset, dataset_config(dataset), MANIFEST)


def stats_files(wildcards):
    """"split|lang" -> text file of every split of a corpus, for corpus_stats."""
    return corpus_text_files(wildcards.dataset)


def recipe_targets():
    """Every corpus of `data.corpora` through the text chain of each paper that reads it
    (`data.recipes`; chains from mmt_repro.text.recipes), e.g. text/multi30k/val.lc.norm.tok.en."""
    targets = set()
    for paper, datasets in config["data"].get("recipes", {}).items():
        rec = recipe_for(paper)
        for ds in datasets:
            if ds not in config["data"]["corpora"]:
                continue
            for key in corpus_text_files(ds):
                split, lang = key.split("|")
                if lang in rec.langs:
                    targets.add(f"results/text/{ds}/{split}.{rec.chain_for(lang)}.{lang}")
    return sorted(targets)


def corpus_text_files(ds):
    cfg = dataset_config(ds)
    if cfg["source"] in CORPUS_SOURCES:
        names = text_outputs(ds, cfg, MANIFEST)
    elif cfg["source"] == "grounded":
        names = [f"{s}.{lang}" for s in GROUNDED_SPLITS for lang in LANGS]
    elif cfg["source"] == "wmt15":
        names = ["train.en", "train.de"]
    else:
        names = [f"{s}.{lang}" for s in cfg["splits"] for lang in cfg.get("langs", LANGS)]
    files = {"|".join(name.rsplit(".", 1)): f"results/data/{ds}/{name}" for name in names}
    if not files and cfg["source"] in CORPUS_SOURCES:  # an image split without captions: count images
        for out in corpus_plan_of(ds)[1]:
            files[f"{Path(out).stem}|images"] = f"results/data/{ds}/{out}"
    return files


def stats_image_lists(wildcards):
    """split -> image list, for the corpora that have one per split (Multi30k, grounded)."""
    cfg = dataset_config(wildcards.dataset)
    if cfg["source"] not in ("multi30k", "grounded"):
        return {}
    splits = {key.split("|")[0] for key in corpus_text_files(wildcards.dataset)}
    return {s: f"results/data/{wildcards.dataset}/image_splits/{s}.txt" for s in sorted(splits)}


def stats_inputs(wildcards):
    return [*stats_files(wildcards).values(), *stats_image_lists(wildcards).values()]


def stats_train_split(wildcards):
    return dataset_config(wildcards.dataset).get("train", "train")


def local_input_dir(wildcards):
    """The per-input local folder (`inputs.local.<input>`), resolved; None when unset."""
    return config_path("inputs", "local", wildcards.input)


# A tokenisation chain in a file name: [lc.][norm.][tok|wp|char] (mmt_repro.text.recipes.parse_chain)
TEXT_CHAIN = r"(lc\.)?(norm\.)?(tok|wp|char)|lc\.norm|lc|norm"


def tokenize_inputs(wildcards):
    """The prepared text, plus BertGen's WordPiece vocabulary for chains with the wp step."""
    inputs = {"text": f"results/data/{wildcards.dataset}/{wildcards.split}.{wildcards.lang}"}
    if wildcards.chain.endswith("wp"):
        inputs["wordpiece_vocab"] = f"resources/{WORDPIECE_VOCAB_INPUT}/vocab.txt"
    return inputs


def bpe_training_text(wildcards):
    """Both sides of the training split, in the paper's tokenisation chain (joint BPE)."""
    src, tgt = wildcards.pair.split("-")
    train = dataset_config(wildcards.dataset)["train"]
    stem = f"results/text/{wildcards.dataset}/{train}.{text_chain(wildcards.paper)}"
    return {"src": f"{stem}.{src}", "tgt": f"{stem}.{tgt}"}


def bpe_symbols(wildcards):
    return recipe(wildcards.paper)["bpe_symbols"]


def vocab_min_freq(wildcards):
    return recipe(wildcards.paper).get("min_freq", 1)


def train_text(wildcards):
    train = dataset_config(wildcards.dataset)["train"]
    return bpe_text(wildcards.paper, wildcards.dataset, wildcards.pair, train, wildcards.lang)


def gpu_count(wildcards):
    """One GPU for heavy jobs unless the run is pinned to the CPU."""
    return 0 if config["device"] == "cpu" else 1


def training_inputs(wildcards):
    """Training corpus (the dataset's train split, the back-translated corpus or a pre-training
    corpus), validation data, vocabularies, features and, for fine-tuning, the pre-trained model."""
    paper, ds, pair = wildcards.paper, wildcards.dataset, wildcards.pair
    src, tgt = pair.split("-")
    cfg = dataset_config(ds)
    train, val = cfg["train"], cfg["val"]
    settings = system_settings(paper, wildcards.system)
    corpus = settings.get("corpus", "train")
    if corpus == "train":
        train_src, train_tgt = bpe_text(paper, ds, pair, train, src), bpe_text(paper, ds, pair, train, tgt)
    elif corpus == "backtranslated":
        stem = f"results/backtranslation/{paper}/{ds}.{pair}"
        train_src, train_tgt = f"{stem}/synthetic.src", f"{stem}/synthetic.tgt"
    else:
        stem = f"results/text/{paper}/{ds}.{pair}/corpus_{corpus}.{text_chain(paper)}.bpe"
        train_src, train_tgt = f"{stem}.{src}", f"{stem}.{tgt}"
    inputs = {
        "train_src": train_src,
        "train_tgt": train_tgt,
        "val_src": bpe_text(paper, ds, pair, val, src),
        "val_tgt": bpe_text(paper, ds, pair, val, tgt),
        "val_ref": f"results/text/{ds}/{val}.{text_chain(paper)}.{tgt}",
        "src_vocab": f"results/vocab/{paper}/{ds}.{pair}.{src}.json",
        "tgt_vocab": f"results/vocab/{paper}/{ds}.{pair}.{tgt}.json",
    }
    if settings.get("init_from"):
        inputs["init"] = f"results/models/{paper}/{settings['init_from']}/{ds}.{pair}.seed{wildcards.seed}.best.pt"
    if multimodal(paper, wildcards.system):
        if corpus not in ("train", "backtranslated"):
            raise ValueError(f"{paper}.{wildcards.system}: corpus {corpus!r} has no images for a multimodal model")
        feats = paper_features(paper, ds)
        for split, key in ((train, "train"), (val, "val")):
            files = feature_files(ds, feats, split)
            inputs[f"{key}_npy"], inputs[f"{key}_index"] = files["npy"], files["index"]
        if corpus == "backtranslated":
            inputs["train_image_list"] = f"results/backtranslation/{paper}/{ds}.{pair}/images.txt"
    return inputs


def backtranslation_inputs(wildcards):
    """The reverse model's translations of the k comparable target files, the real target side
    with BPE, the images each line describes, and the BPE codes of the pair."""
    paper, ds, pair = wildcards.paper, wildcards.dataset, wildcards.pair
    src, tgt = pair.split("-")
    bt = config["backtranslation"]
    ks = range(1, COMPARABLE_PER_IMAGE + 1)
    return {
        "synthetic": [
            f"results/translations/{paper}/{bt['reverse_system']}/{ds}.train_c{k}.{tgt}-{src}.seed{bt['seed']}.congruent.txt"
            for k in ks
        ],
        "targets": [bpe_text(paper, ds, pair, f"train_c{k}", tgt) for k in ks],
        "image_lists": [f"results/data/{ds}/image_splits/train_c{k}.txt" for k in ks],
        "codes": f"results/text/{paper}/{ds}.{pair}/bpe.codes",
    }


def decode_beam_size(wildcards):
    """Back-translation decodes with its own beam; everything else with decode.beam_size."""
    if wildcards.system == config["backtranslation"]["reverse_system"]:
        return config["backtranslation"]["beam_size"]
    return config["decode"]["beam_size"]


def train_model_name(wildcards):
    return system_settings(wildcards.paper, wildcards.system)["model"]


def train_model_config(wildcards):
    return system_settings(wildcards.paper, wildcards.system).get("model_config", {})


def train_train_config(wildcards):
    cfg = dict(system_settings(wildcards.paper, wildcards.system).get("train", {}))
    cfg["seed"] = int(wildcards.seed)
    return cfg


def translate_inputs(wildcards):
    paper, ds, pair = wildcards.paper, wildcards.dataset, wildcards.pair
    src, tgt = pair.split("-")
    inputs = {
        "checkpoint": f"results/models/{paper}/{wildcards.system}/{ds}.{pair}.seed{wildcards.seed}.best.pt",
        "src": bpe_text(paper, ds, pair, wildcards.split, src),
        "src_vocab": f"results/vocab/{paper}/{ds}.{pair}.{src}.json",
        "tgt_vocab": f"results/vocab/{paper}/{ds}.{pair}.{tgt}.json",
    }
    if multimodal(paper, wildcards.system):
        files = feature_files(ds, paper_features(paper, ds), wildcards.split)
        inputs["features_npy"], inputs["features_index"] = files["npy"], files["index"]
    elif getattr(wildcards, "condition", "congruent") == "shuffled":
        raise ValueError(f"{paper}.{wildcards.system} reads no images: no shuffled-image condition")
    return inputs


def shuffle_seed(wildcards):
    return config["scoring"]["shuffle_seed"] if wildcards.condition == "shuffled" else None


def reference_text(wildcards):
    tgt = wildcards.pair.split("-")[1]
    return f"results/text/{wildcards.dataset}/{wildcards.split}.{text_chain(wildcards.paper)}.{tgt}"


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


def table_score_files(wildcards):
    return table_scores(wildcards.paper, wildcards.table)


def image_inputs(wildcards):
    """The split's image list, plus the image folder when the workflow makes it."""
    inputs = {"image_list": f"results/data/{wildcards.dataset}/image_splits/{wildcards.split}.txt"}
    if dataset_config(wildcards.dataset)["source"] == "grounded":
        inputs["images"] = f"results/data/{wildcards.dataset}/images"
    return inputs


def image_dir(wildcards):
    """Where the images are: the generated folder, or the configured (request-only) one."""
    cfg = dataset_config(wildcards.dataset)
    if cfg["source"] == "grounded":
        return f"results/data/{wildcards.dataset}/images"
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
        raise ValueError(f"feature set {feature_set!r} is not configured for {dataset}; configured: {', '.join(sets)}")
    return sets[feature_set]


def feature_sets_of(kind):
    """A wildcard pattern matching the configured feature sets of one kind, across datasets."""
    names = sorted({
        name
        for ds in config["datasets"].values()
        for name, fs in (ds.get("features") or {}).items()
        if fs.get("kind", "grid") == kind
    })
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
            raise ValueError(f"feature set {wildcards.feature_set} of {wildcards.dataset} needs the key {key!r}")
        return default

    return get


def media_folder(wildcards):
    return config_path("datasets", wildcards.dataset, "images")


def video_dir(wildcards):
    return config_path("datasets", wildcards.dataset, "videos") or ""


def pretrained_source(wildcards):
    src = feature_set_config(wildcards.dataset, wildcards.feature_set).get("src")
    return str(repo_path(src)) if src else ""


def train_feature_store(kind):
    def get(wildcards):
        train = dataset_config(wildcards.dataset)["train"]
        ext = "npy" if kind == "npy" else "index.parquet"
        return f"results/features/{wildcards.dataset}/{wildcards.feature_set}/{train}.{ext}"

    return get


def table_config(wildcards):
    return config["papers"][wildcards.paper]["tables"][wildcards.table]


def significance_translation_map(wildcards):
    """``"system|test_set|condition|seed"`` -> translation file, for every run of the table."""
    return {
        f"{system}|{test_set}|{condition}|{seed}": f"results/translations/{run_stem(wildcards.paper, wildcards.table, system, test_set, seed, condition)}.txt"
        for system, test_set, seed, condition in table_runs(wildcards.paper, wildcards.table)
    }


def significance_translations(wildcards):
    return sorted(significance_translation_map(wildcards).values())


def significance_reference_map(wildcards):
    t = table_config(wildcards)
    tgt = t["pair"].split("-")[1]
    return {
        test_set: f"results/text/{t['dataset']}/{test_set}.{text_chain(wildcards.paper)}.{tgt}"
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
    # METEOR p-values would need Meteor's per-segment statistics (MultEval): not computed yet.
    return [m for m in config["scoring"]["metrics"] if m in ("bleu", "ter")]


def table_note(wildcards):
    return table_config(wildcards).get("note", "")


def table_unavailable(wildcards):
    return dict(table_config(wildcards).get("unavailable", {}))


def make_table_inputs(wildcards):
    inputs = {"scores": table_scores(wildcards.paper, wildcards.table), "published": PUBLISHED}
    if table_kind(wildcards.paper, wildcards.table) == "translation":
        inputs["significance"] = f"results/significance/{wildcards.paper}/{wildcards.table}.json"
    return inputs


def attention_inputs(wildcards):
    """The same inputs as a translation (checkpoint, source, vocabularies, features)."""
    return translate_inputs(wildcards)


def beta_meta(wildcards):
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


def attention_dump_for_figure(wildcards):
    t = table_config(wildcards)
    system, test_set, seed = t["systems"][0], t["test_sets"][0], t["seeds"][0]
    return f"results/attention/{wildcards.paper}/{system}/{t['dataset']}.{test_set}.{t['pair']}.seed{seed}.pt"


def figure_sentence(wildcards):
    return table_config(wildcards).get("sentence", 0)
