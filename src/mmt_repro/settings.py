"""Per-paper settings: ``config/papers/<paper>.yaml`` as checked dataclasses (torch-free).

A paper file has these blocks; each is checked here, with unknown keys named:

==================  =========================================================================
``description``     one line
``imports``         extra Python modules to import before building a model (models kept
                    outside the package register themselves on import; a list, default [])
``recipe``          text preparation, :class:`mmt_repro.text.recipes.Recipe`
``decode``          :class:`DecodeSettings`, the paper's decoding; a system may override
                    any key in its own ``decode`` block (e.g. the back-translation beam)
``scoring``         :class:`ScoringSettings`: metrics, BLEU variant and tokenisation, METEOR
                    language, the shuffled-image seed
``backtranslation`` :class:`BacktranslationSettings`, only for papers that back-translate
``align``           :class:`AlignSettings`, only for papers whose models read word alignments
                    (the DAG's alignment stage, ``workflow/rules/align.smk``)
``systems``         ``<name>:`` :class:`SystemSettings` (model key, visual input, model and
                    training configs (:class:`TrainConfig`), corpus, init_from, declared
                    resources, feature options, decode, per-example extras, per-pair
                    overrides, or ``reverse_of``: the backward direction of another system's
                    checkpoint)
``word_vectors``    :class:`WordVectorSettings`, only for papers that read pretrained word
                    vectors (the official files, or vectors trained in the workflow)
==================  =========================================================================

Planning (the Snakefile) reads these without importing torch: it needs the visual input of a
system (``visual``) and never builds a model, and this module imports no model.
:func:`mmt_repro.model_configs.check_model_configs` validates every ``model_config`` against the
model's dataclass and ``visual`` against the model class; it imports the models (torch), so the
workflow runs it once at the start of a real run (``onstart``).
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import ConfigError, deep_update, load_yaml, make_dataclass_config
from .io import unknown_name
from .text.recipes import Recipe

VISUAL_KINDS = ("none", "grid", "regions", "video")


#: The "source language" of captioning: a pair ``im-<lang>`` has no source text, only images.
IMAGE_SOURCE = "im"


def pair_langs(pair: str) -> tuple[str | None, str]:
    """``(source language or None for captioning, target language)`` of a pair ``src-tgt``."""
    src, tgt = pair.split("-")
    return (None if src == IMAGE_SOURCE else src), tgt


OPTIMIZERS = ("adadelta", "adam", "adamw")
# When the learning rate changes: never; on a validation plateau; per update (inverse_sqrt,
# linear: warm-up then decay); per epoch (epoch_decay).
LR_SCHEDULES = ("constant", "plateau", "inverse_sqrt", "linear", "epoch_decay")


@dataclass
class TrainConfig:
    """Training hyperparameters (shared by every model)."""

    optimizer: str = "adadelta"  # adadelta | adam | adamw (Adam with decoupled weight decay)
    lr: float = 1.0  # learning rate (ADADELTA's conventional 1.0); the peak of a warm-up schedule
    adam_betas: list[float] = field(default_factory=lambda: [0.9, 0.999])  # Adam/AdamW (beta1, beta2)
    adam_eps: float = 1e-8  # Adam/AdamW epsilon (ADADELTA keeps its own 1e-6)
    weight_decay: float = 0.0  # L2 penalty (adadelta, adam) or decoupled weight decay (adamw)
    batch_size: int = 80  # sentences per batch, or target tokens when batch_by_tokens
    batch_by_tokens: bool = False  # batch_size counts target tokens instead of sentences
    accumulate: int = 1  # batches whose gradients are summed into one update (gradient accumulation)
    max_len: int = 80  # drop training pairs with more tokens than this on either side
    max_epochs: int = 100  # hard limit on epochs
    max_steps: int = 0  # hard limit on updates (0: none)
    time_budget_min: float = 0.0  # stop after this many minutes of training (0: none)
    patience: int = 20  # early stopping: epochs without a better validation BLEU
    clip_norm: float = 1.0  # gradient norm clipping (0: off)
    # constant | plateau (times lr_decay when val BLEU stalls for lr_patience epochs) |
    # inverse_sqrt (linear warm-up to lr over warmup_steps updates, then lr * sqrt(warmup / step):
    # Vaswani et al.'s eq. with lr = d_model^-0.5 warmup^-0.5) | linear (warm-up, then linear decay
    # to 0 at decay_steps) | epoch_decay (times lr_decay after every epoch from decay_start_epoch
    # on, or from the first epoch without a better validation BLEU with decay_on_stall)
    lr_schedule: str = "constant"
    lr_patience: int = 2  # plateau schedule: epochs without improvement before lowering lr
    lr_decay: float = 0.5  # plateau and epoch_decay: factor applied to lr
    warmup_steps: int = 0  # inverse_sqrt, linear, epoch_decay: updates of linear warm-up from 0 to lr
    decay_start_epoch: int = 1  # epoch_decay: the first epoch after which lr is multiplied by lr_decay
    decay_on_stall: bool = False  # epoch_decay: start earlier, at the first epoch without a better val BLEU
    decay_steps: int = 0  # linear: the update at which lr reaches 0 (0: decay_epochs x updates per epoch)
    decay_epochs: float = 0.0  # linear without decay_steps: the epoch at whose end lr reaches 0 (0: max_epochs)
    val_beam: int = 1  # beam size for validation decoding (1: greedy)
    val_max_len: int = 80  # maximum length of validation translations
    val_batch_size: int = 64  # sentences per validation batch
    seed: int = 1  # seeds dropout, initialisation and batch order
    amp: bool = False  # bfloat16 autocast on a GPU (ignored on CPU)
    log_every: int = 50  # log progress every this many updates
    checkpoint_every: int = 0  # also save the last checkpoint every this many updates (0: per epoch)
    # multi-task runs: also keep each extra task's best checkpoint by its validation BLEU (tasks with
    # `val: true`), decoded by that task's tables (mmt_repro.train.task_best)
    best_per_task: bool = False
    # BertGen (opt-in): batches padded to the next of these row widths (text + regions + [END]), the step's
    # rows and images, so a step has one of a few shapes (CUDA graphs on a GPU: train.graphs); []: off
    shape_buckets: list[int] = field(default_factory=list)
    # k examples per task a step (BertGen's option, a deviation): batch_size x k, lr x k, warmup_steps and
    # decay_steps / k (mmt_repro.train.schedules.scaled_train_config); 1: the config as it is
    batch_scale: int = 1

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; valid: {', '.join(OPTIMIZERS)}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"unknown lr_schedule {self.lr_schedule!r}; valid: {', '.join(LR_SCHEDULES)}")
        if self.lr_schedule == "inverse_sqrt" and self.warmup_steps < 1:
            raise ValueError("lr_schedule inverse_sqrt needs warmup_steps >= 1")
        if self.accumulate < 1:
            raise ValueError(f"accumulate must be >= 1, got {self.accumulate}")
        if self.decay_epochs < 0:
            raise ValueError(f"decay_epochs must be >= 0 (0: max_epochs), got {self.decay_epochs}")
        if len(self.adam_betas) != 2:
            raise ValueError(f"adam_betas needs two values (beta1, beta2), got {self.adam_betas}")
        if self.batch_scale < 1:
            raise ValueError(f"batch_scale must be >= 1 (1: the config as it is), got {self.batch_scale}")
        buckets = list(self.shape_buckets)
        if any(int(w) < 1 for w in buckets) or buckets != sorted(set(buckets)):
            raise ValueError(f"shape_buckets must be increasing positive row widths, got {buckets}")


def make_train_config(values: dict | None) -> TrainConfig:
    return make_dataclass_config(TrainConfig, values, "training config")



METRICS = ("bleu", "bleu_lc", "bleu_1ref", "meteor", "chrf3", "ter", "cider")
BLEU_TOKENIZERS = ("none", "13a", "intl", "zh", "char")


@dataclass
class DecodeSettings:
    """How a system's test translations are decoded."""

    beam_size: int = 12  # 1: greedy search
    alpha: float = 1.0  # length normalisation of finished hypotheses: score / length ** alpha
    max_len: int = 80  # most target tokens per hypothesis
    # ... and at most max_len_a * source tokens + max_len_b (0: max_len only), so that a model
    # that loops stops near the source's length, not at max_len (fairseq's max_len_a/b;
    # JoeyNMT bounds by 1.5x the source). Multi30k En-De (whitespace words): no training or
    # test2016 pair has a German side longer than 2n + 10 for n English words (at most 2.0x).
    max_len_a: float = 2.0
    max_len_b: int = 10
    batch_size: int = 32  # sentences per decoding batch

    def __post_init__(self):
        if self.beam_size < 1 or self.max_len < 1 or self.batch_size < 1 or self.max_len_a < 0 or self.max_len_b < 0:
            raise ValueError(f"beam_size, max_len and batch_size must be >= 1, got {dataclasses.asdict(self)}")


@dataclass
class ScoringSettings:
    """How a paper scores its translations."""

    metrics: list[str] = field(default_factory=lambda: ["bleu"])  # of METRICS
    tokenize: str = "none"  # sacreBLEU tokeniser; none = the text is tokenised already (multi-bleu style)
    bleu_compat: str = "multi-bleu"  # multi-bleu (multi-bleu.perl-compatible) | sacrebleu
    meteor_lang: str | None = None  # METEOR language; None = the target language
    significance_metrics: list[str] = field(default_factory=lambda: ["bleu", "ter"])  # paired tests vs baseline
    shuffle_seed: int = 1234  # derangement of the images in the incongruent-image condition
    meteor_norm: bool = True  # pass Meteor's -norm (tokenise, normalise, lowercase); MultEval does not
    ter_lowercase: bool = False  # TER on lowercased text (MultEval's TER lowercases)
    significance_samples: int = 1000  # approximate-randomisation shuffles (MultEval's default: 10,000)
    # first: each system's first seed against the baseline's (sacreBLEU's paired test);
    # all: every seed of both at once, MultEval's stratified approximate randomisation
    # (mmt_repro.metrics.multeval), which also gives METEOR p-values
    significance_seeds: str = "first"

    def __post_init__(self):
        bad = [m for m in [*self.metrics, *self.significance_metrics] if m not in METRICS]
        if bad:
            raise ValueError(f"unknown metric(s) {bad}; valid: {', '.join(METRICS)}")
        if self.tokenize not in BLEU_TOKENIZERS:
            raise ValueError(f"unknown BLEU tokenize {self.tokenize!r}; valid: {', '.join(BLEU_TOKENIZERS)}")
        if self.bleu_compat not in ("multi-bleu", "sacrebleu"):
            raise ValueError(f"unknown bleu_compat {self.bleu_compat!r}; valid: multi-bleu, sacrebleu")
        if self.significance_seeds not in ("first", "all"):
            raise ValueError(f"unknown significance_seeds {self.significance_seeds!r}; valid: first, all")
        if self.significance_samples < 1:
            raise ValueError(f"significance_samples must be >= 1, got {self.significance_samples}")
        if self.significance_seeds == "first" and "meteor" in self.significance_metrics:
            raise ValueError("METEOR p-values need significance_seeds: all (sufficient statistics, "
                             "mmt_repro.metrics.multeval); sacreBLEU's paired test has no METEOR")


@dataclass
class BacktranslationSettings:
    """Back-translation of comparable target descriptions (Calixto et al. 2017's M30k_C)."""

    reverse_system: str  # the target-to-source system that translates them
    descriptions: int = 5  # comparable descriptions per training image that are back-translated
    seed: int = 1  # seed of the reverse model used for every back-translation


@dataclass
class AlignSettings:
    """The alignment stage: fast_align on the paper's training text, both directions,
    symmetrised (:mod:`mmt_repro.text.align`)."""

    tool: str = "fast_align"  # the aligner (fast_align, through the systran-align binding)
    iterations: int = 5  # EM iterations of each direction (fast_align's default -I 5)
    favor_diagonal: bool = True  # fast_align -d: the diagonal prior
    optimize_tension: bool = True  # fast_align -o: learn the diagonal tension
    variational_bayes: bool = True  # fast_align -v: Dirichlet prior on the translation table

    def __post_init__(self):
        if self.tool != "fast_align":
            raise ValueError(f"unknown aligner {self.tool!r}; valid: fast_align")
        if self.iterations < 1:
            raise ValueError(f"iterations must be >= 1, got {self.iterations}")


#: Per-example extras a system may ask the trainer for (``extras``): name -> what it is.
EXTRAS = {"align": "the word alignment of each training pair (Pharaoh line, source index first; the align stage)"}
DIRECTIONS = ("forward", "backward")


@dataclass
class TaskSettings:
    """An extra training task of a multi-task system (BertGen trains one model on 13 tasks)."""

    dataset: str  # a configured dataset
    pair: str  # src-tgt, or im-<tgt> for captioning (images only)
    # give the task its dataset's images: None = where a table of the paper names features for
    # that dataset (IWSLT has none: text only); True = required; False = never (an MT task)
    images: bool | None = None
    split: str = ""  # training split (default: the dataset's `train`)
    val: bool = False  # also decode its validation split after every epoch (curve column val_bleu_<task>)

    def __post_init__(self):
        parts = str(self.pair).split("-")
        if len(parts) != 2 or not all(len(p) == 2 and p.isalpha() and p.islower() for p in parts):
            raise ValueError(f"task pair {self.pair!r}: write src-tgt (two-letter codes), or {IMAGE_SOURCE}-<tgt> "
                             "for captioning")


@dataclass
class SystemSettings:
    """One system of a paper's table."""

    model: str  # registry key of the model, <paper>.<name>
    description: str = ""
    visual: str = "none"  # the model's visual input: none | grid | regions | video
    model_config: dict = field(default_factory=dict)  # the model's dataclass config (checked)
    train: dict = field(default_factory=dict)  # TrainConfig keys
    decode: dict = field(default_factory=dict)  # DecodeSettings keys overriding the paper's
    corpus: str = "train"  # train | backtranslated | a configured dataset used as text only
    init_from: str | None = None  # system whose best checkpoint this one starts from
    # name -> file (a DAG input) given to the model; the path may name the run's {paper},
    # {system}, {dataset}, {pair}, {src} and {tgt} (e.g. a vocabulary-sized table built in the DAG)
    resources: dict = field(default_factory=dict)
    # processing of the table's feature set changed for this system, e.g. {center: false}
    # (Hirasawa et al.'s "- Debias": the same features without the centroid subtracted)
    feature_options: dict = field(default_factory=dict)
    extras: list = field(default_factory=list)  # per-example extras the model reads in training (EXTRAS)
    by_pair: dict = field(default_factory=dict)  # pair -> {model_config: {...}, train: {...}} merged on top
    # The backward direction of another system: no training of its own; its translations decode
    # that system's checkpoint of the reversed pair (model trained on en-de -> this system on de-en)
    # with direction "backward" (the model must list it in its `directions`).
    reverse_of: str | None = None
    # Another decoding of a system's own checkpoint (same pair, forward) with this system's
    # `decode` settings, e.g. the softmax baselines of Hirasawa et al. with beam 6 beside greedy;
    # trains nothing of its own.
    decode_of: str | None = None
    # {dataset, pair}: the one training run whose model every table of this system decodes with
    # (multi-task and zero-shot systems); None: a model per table dataset and pair
    train_on: dict | None = None
    tasks: dict = field(default_factory=dict)  # name -> TaskSettings keys: extra training tasks

    def for_pair(self, pair: str) -> tuple[dict, dict]:
        """(model_config, train) of this system on language pair ``pair`` (``by_pair`` applied)."""
        over = self.by_pair.get(pair) or {}
        return {**self.model_config, **(over.get("model_config") or {})}, {**self.train, **(over.get("train") or {})}

    def task_settings(self) -> dict[str, TaskSettings]:
        return {name: TaskSettings(**values) for name, values in self.tasks.items()}


#: Feature-set keys a system may change in ``feature_options`` (processing of the extracted
#: store, not the extraction itself).
FEATURE_OPTION_KEYS = ("center", "standardize")
#: Placeholders a resource path may use.
RESOURCE_WILDCARDS = ("paper", "system", "dataset", "pair", "src", "tgt", "seed")


@dataclass
class WordVectorTraining:
    """fastText settings of vectors trained in the workflow (``word_vectors.source: trained``)."""

    model: str = "cbow"  # cbow | skipgram
    epoch: int = 5  # passes over the text
    min_count: int = 1  # words seen fewer times get no vector of their own
    minn: int = 5  # shortest character n-gram (0 with maxn 0: no sub-words)
    maxn: int = 5  # longest character n-gram
    ws: int = 5  # context window
    neg: int = 10  # negative samples
    lr: float = 0.05  # learning rate
    bucket: int = 2_000_000  # hash buckets of the character n-grams

    def __post_init__(self):
        if self.model not in ("cbow", "skipgram"):
            raise ValueError(f"word_vectors.train.model {self.model!r}; valid: cbow, skipgram")


@dataclass
class WordVectorSettings:
    """Pretrained word vectors of a paper: where they come from and how the vocabulary-sized
    table (``results/embeddings/<paper>/...``) is made from them."""

    source: str = "official"  # official: the files of manifest input `input`; trained: fastText trained here
    input: str = "fasttext_cc"  # manifest input holding the official vectors
    file: str = "cc.{lang}.300.vec.gz"  # file of one language in that input
    dim: int = 300  # vector size (the official files' size; the trained vectors' size)
    # training text of trained vectors: the training split of the dataset, in the paper's chain
    train: WordVectorTraining = field(default_factory=WordVectorTraining)
    center: bool = True  # subtract the mean vector (Mu & Viswanath 2018)
    n_components: int = 5  # top principal components removed (Mu & Viswanath 2018)
    normalize: bool = True  # unit-length rows

    def __post_init__(self):
        if isinstance(self.train, dict):
            self.train = make_dataclass_config(WordVectorTraining, self.train, "word_vectors.train")
        if self.source not in ("official", "trained"):
            raise ValueError(f"word_vectors.source {self.source!r}; valid: official, trained")
        if "{lang}" not in self.file:
            raise ValueError(f"word_vectors.file {self.file!r} must name the language as {{lang}}")


@dataclass(frozen=True)
class CorpusPart:
    """One file set a paper's vocabulary is learnt on (:meth:`PaperSettings.vocabulary_corpora`)."""

    corpus: str  # the system's `corpus`: train | backtranslated | a dataset name
    dataset: str | None  # the dataset whose files these are (None: the table's own dataset)
    split: str  # train, train_c3, ...
    langs: tuple[str, ...]  # the languages with real text in this part


@dataclass
class PaperSettings:
    paper: str
    path: Path
    recipe: Recipe
    systems: dict[str, SystemSettings]
    decode: DecodeSettings
    scoring: ScoringSettings
    backtranslation: BacktranslationSettings | None = None
    description: str = ""
    imports: list[str] = field(default_factory=list)
    word_vectors: WordVectorSettings | None = None
    align: AlignSettings | None = None

    def system(self, name: str) -> SystemSettings:
        if name not in self.systems:
            raise unknown_name("system", name, self.systems, f"paper {self.paper} (systems in {self.path})")
        return self.systems[name]

    def decode_for(self, system: str) -> DecodeSettings:
        """The paper's decoding with the system's own ``decode`` keys applied."""
        return dataclasses.replace(self.decode, **self.system(system).decode)

    def systems_needed(self, names) -> list[str]:
        """``names`` and every system they need: what they start from (``init_from``, followed
        transitively) and the back-translation model of a system trained on the back-translated
        corpus. In first-seen order."""
        seen: list[str] = []
        todo = list(names)
        while todo:
            name = todo.pop(0)
            if name in seen:
                continue
            seen.append(name)
            system = self.system(name)
            if system.init_from:
                todo.append(system.init_from)
            if system.reverse_of:  # decodes that system's checkpoint backward
                todo.append(system.reverse_of)
            if system.decode_of:  # decodes that system's checkpoint with other decoding settings
                todo.append(system.decode_of)
            if system.corpus == "backtranslated" and self.backtranslation is not None:
                todo.append(self.backtranslation.reverse_system)
        return seen

    def vocabulary_corpora(self, systems, train_split: str, pair: str) -> list[CorpusPart]:
        """The real text every one of ``systems`` (and what they need, :meth:`systems_needed`)
        trains on, for ``pair`` on a dataset whose training split is ``train_split``: the
        paper's subword codes and vocabularies are learnt on all of it, so that every system of
        the paper on that dataset (pre-training, back-translation and fine-tuning included)
        shares one vocabulary (Calixto et al. 2017: "all models use a common vocabulary").

        - ``train``: the dataset's training split, both languages;
        - ``backtranslated``: the comparable target descriptions (``train_c1`` ..
          ``train_c<descriptions>``, the target language of ``pair``): the real side; the
          synthetic source is made by the reverse model, with these very codes and vocabulary;
        - another dataset (e.g. ``wmt15``): its training split, both languages.
        """
        src, tgt = pair.split("-")
        parts: list[CorpusPart] = []
        for name in self.systems_needed(systems):
            corpus = self.system(name).corpus
            if corpus == "train":
                new = [CorpusPart("train", None, train_split, (src, tgt))]
            elif corpus == "backtranslated":
                if self.backtranslation is None:
                    raise ConfigError(f"{self.path}: system '{name}' trains on the back-translated corpus but the "
                                      "paper has no `backtranslation` block")
                new = [CorpusPart("backtranslated", None, f"train_c{k}", (tgt,))
                       for k in range(1, self.backtranslation.descriptions + 1)]
            else:
                new = [CorpusPart(corpus, corpus, "train", (src, tgt))]
            parts.extend(p for p in new if p not in parts)
        return parts or [CorpusPart("train", None, train_split, (src, tgt))]


_TOP_KEYS = ("description", "imports", "recipe", "decode", "scoring", "backtranslation", "align", "systems",
             "word_vectors")


def _block(cls, values, where: str):
    try:
        return make_dataclass_config(cls, values, "setting")
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}: {err}") from err


def with_variants(raw_systems: dict, override_systems: dict) -> dict:
    """The overrides' systems with every new ``variant_of`` system spelled out: a system that an
    overlay adds (a name the settings file does not have) must say ``variant_of: <system>``; it is
    that system's block with the variant's keys merged in (``train: {batch_size: 32}`` changes one
    setting). Any other unknown name stays as it is (a typo: reported by the caller)."""
    out = {}
    for name, block in (override_systems or {}).items():
        if isinstance(block, dict) and block.get("variant_of") is not None:
            base = block["variant_of"]
            if name in raw_systems:
                raise ConfigError(f"system '{name}' exists already: override it without variant_of")
            if base not in raw_systems:
                raise ConfigError(f"system '{name}': variant_of names unknown system {base!r}; systems: "
                                  f"{', '.join(sorted(raw_systems))}")
            rest = {k: v for k, v in block.items() if k != "variant_of"}
            block = deep_update(raw_systems[base], {"description": f"{base}, varied: {sorted(rest)}", **rest})
        out[name] = block
    return out


def load_paper(paper: str, path: str | Path, overrides: dict | None = None) -> PaperSettings:
    """``path`` (``config/papers/<paper>.yaml``) read and checked with ``overrides`` merged in: ``variant_of`` makes
    a new system (:func:`with_variants`); ``every_system`` is merged into every system, under its own override."""
    path = Path(path)
    raw = load_yaml(path)
    raw_systems = raw.get("systems") or {}
    overrides = dict(overrides or {})
    every = overrides.pop("every_system", None)
    if every:  # one block merged into every system, under each system's own override
        named = dict(overrides.get("systems") or {})
        decodes_only = {n for n, b in {**raw_systems, **named}.items()
                        if isinstance(b, dict) and (b.get("reverse_of") or b.get("decode_of"))}
        decoding = {k: v for k, v in every.items() if k not in _TRAINS_ONLY}  # e.g. its decode block
        overrides["systems"] = {name: deep_update(decoding if name in decodes_only else every, named.get(name) or {})
                                for name in [*raw_systems, *(n for n in named if n not in raw_systems)]}
    for name, block in (overrides.get("systems") or {}).items():
        if name not in raw_systems and not (isinstance(block, dict) and block.get("variant_of") is not None):
            raise ConfigError(f"override for unknown system '{name}' of {paper}; systems in {path}: "
                              f"{', '.join(sorted(raw_systems))} (a new system says variant_of: <system>)")
    if overrides.get("systems"):
        overrides["systems"] = with_variants(raw_systems, overrides["systems"])
    data = deep_update(raw, overrides)
    source = path
    path = Path(f"{path} (+ papers.{paper}.overrides)") if overrides else path
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key(s) {unknown}; valid: {', '.join(_TOP_KEYS)}")
    if "recipe" not in data:
        raise ConfigError(f"{path}: no 'recipe' block (how the paper prepares its text); see docs/adding_a_paper.md")
    try:
        recipe = Recipe.from_dict(paper, data["recipe"])
    except ValueError as err:
        raise ConfigError(f"{path}: recipe: {err}") from err
    systems = {}
    blocks = data.get("systems") or {}
    for name, block in blocks.items():
        where = f"{path}: system '{name}'"
        block = _reverse_block(name, block, blocks, where)
        system = _block(SystemSettings, block, where)
        if system.visual not in VISUAL_KINDS:
            raise ConfigError(f"{where}: visual {system.visual!r}; valid: {', '.join(VISUAL_KINDS)}")
        try:
            make_train_config(system.train)
            for pair, over in system.by_pair.items():
                bad = sorted(set(over or {}) - {"model_config", "train"})
                if bad:
                    raise ValueError(f"by_pair.{pair}: unknown key(s) {bad}; valid: model_config, train")
                make_train_config(system.for_pair(pair)[1])
            _block(DecodeSettings, system.decode, f"{where} decode")
        except ValueError as err:
            raise ConfigError(f"{where}: {err}") from err
        bad = sorted(set(system.feature_options) - set(FEATURE_OPTION_KEYS))
        if bad:
            raise ConfigError(f"{where}: unknown feature_options key(s) {bad}; valid: {', '.join(FEATURE_OPTION_KEYS)}")
        for res_name, res_path in system.resources.items():
            try:
                str(res_path).format(**{k: k for k in RESOURCE_WILDCARDS})
            except (KeyError, IndexError, ValueError) as err:
                raise ConfigError(f"{where}: resource {res_name} {res_path!r} names an unknown placeholder ({err}); "
                                  f"valid: {', '.join('{' + k + '}' for k in RESOURCE_WILDCARDS)}") from err
        unknown_extras = sorted(set(system.extras) - set(EXTRAS))
        if unknown_extras:
            raise ConfigError(f"{where}: unknown extras {unknown_extras}; valid: {', '.join(EXTRAS)}")
        if "align" in system.extras and data.get("align") is None:
            raise ConfigError(f"{where}: reads word alignments (extras: [align]) but {path} has no `align` block")
        for task, values in (system.tasks or {}).items():
            _block(TaskSettings, values, f"{where} task '{task}'")
        if system.train_on is not None and (not isinstance(system.train_on, dict)
                                            or sorted(system.train_on) != ["dataset", "pair"]):
            raise ConfigError(f"{where}: train_on must be {{dataset: <name>, pair: <src-tgt>}}, got {system.train_on!r}")
        systems[name] = system
    for name, system in systems.items():
        if system.init_from and system.init_from not in systems:
            raise ConfigError(f"{path}: system '{name}' is initialised from unknown system '{system.init_from}'")
    bt = data.get("backtranslation")
    wv = data.get("word_vectors")
    al = data.get("align")
    settings = PaperSettings(
        paper=paper,
        path=source,
        recipe=recipe,
        systems=systems,
        decode=_block(DecodeSettings, data.get("decode"), f"{path}: decode"),
        scoring=_block(ScoringSettings, data.get("scoring"), f"{path}: scoring"),
        backtranslation=None if bt is None else _block(BacktranslationSettings, bt, f"{path}: backtranslation"),
        description=data.get("description", ""),
        imports=list(data.get("imports") or []),
        word_vectors=None if wv is None else _block(WordVectorSettings, wv, f"{path}: word_vectors"),
        align=None if al is None else _block(AlignSettings, al, f"{path}: align"),
    )
    if settings.backtranslation and settings.backtranslation.reverse_system not in systems:
        raise ConfigError(f"{path}: backtranslation.reverse_system {settings.backtranslation.reverse_system!r} "
                          f"is not a system; systems: {', '.join(systems)}")
    return settings


# the keys of a system block that a reverse_of / decode_of system must not have: it trains nothing
_TRAINS_ONLY = ("model", "visual", "model_config", "train", "corpus", "init_from", "resources", "extras", "by_pair")


def _reverse_block(name: str, block: dict, blocks: dict, where: str) -> dict:
    """A ``reverse_of`` system (the backward direction of another system's checkpoint) or a
    ``decode_of`` system (another decoding of it) takes model, visual input and model config
    from that system; it trains nothing of its own."""
    block = dict(block or {})
    keys = [k for k in ("reverse_of", "decode_of") if block.get(k) is not None]
    if not keys:
        return block
    if len(keys) > 1:
        raise ConfigError(f"{where}: give reverse_of or decode_of, not both")
    key = keys[0]
    target = block[key]
    if target not in blocks:
        raise ConfigError(f"{where}: {key} names unknown system {target!r}; systems: {', '.join(blocks)}")
    if (blocks[target] or {}).get("reverse_of") or (blocks[target] or {}).get("decode_of"):
        raise ConfigError(f"{where}: {key} {target!r}, which decodes another system itself; name the one that trains")
    own = sorted(set(block) & set(_TRAINS_ONLY))
    if own:
        raise ConfigError(f"{where}: a {key} system decodes {target!r}'s checkpoint and trains nothing; "
                          f"drop {own}")
    src = blocks[target] or {}
    copied = ("model", "visual", "model_config") + (("feature_options",) if key == "decode_of" else ())
    for k in copied:
        if k in src:
            block[k] = src[k]
    return block


def import_model_modules(modules: list[str] | tuple[str, ...] = ()) -> None:
    """Import the extra modules a paper declares (``imports``): models and analyses kept outside
    the package register themselves on import. The package's own models register on ``import
    mmt_repro.models`` (done by whatever builds a model: :mod:`mmt_repro.checkpoint`, the
    trainer, :mod:`mmt_repro.model_configs`); settings never import them (torch-free)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as err:
            raise ConfigError(f"cannot import model module {name!r} ({err}); it must be importable (installed or "
                              "on PYTHONPATH)") from err


def as_plain(obj: Any) -> Any:
    """Dataclass -> dict (for rule params), leaving other values as they are."""
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else obj
