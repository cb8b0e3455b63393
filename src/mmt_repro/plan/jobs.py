"""One typed, frozen job object per kind of run-level job: what it reads (``files()``), what it
writes, and every setting it runs with, resolved. A rule takes its inputs and its single ``job``
param from the same object (``to_dict()``); its script rebuilds it (``from_dict()``) and hands
it to one function of :mod:`mmt_repro.execute`, which writes the job beside its output (the job
record). Torch-free."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import ClassVar


def _plain(value):
    """JSON-able copy: dicts, lists, str/int/float/bool/None (Snakemake's Namedlist -> list)."""
    if isinstance(value, dict) or (hasattr(value, "items") and hasattr(value, "keys")):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Job:
    kind: ClassVar[str] = ""

    def files(self) -> dict:
        """The job's inputs by role (a role may hold a list of files)."""
        return dict(self.inputs)

    def to_dict(self) -> dict:
        return {"kind": self.kind, **_plain(dataclasses.asdict(self))}

    @classmethod
    def from_dict(cls, data) -> Job:
        data = _plain(data)
        kind = data.pop("kind", cls.kind)
        if kind != cls.kind:
            raise ValueError(f"a {kind!r} job given to {cls.__name__} (kind {cls.kind!r})")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"{cls.__name__} has no fields {unknown}; it has {sorted(names)}")
        return cls(**data)

    def settings_hash(self) -> str:
        """sha256 (16 hex digits) of the resolved job: equal jobs, equal hash."""
        text = json.dumps(self.to_dict(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class TrainJob(Job):
    """One training run: ``results/models/<paper>/<system>/<dataset>.<pair>.seed<seed>``."""

    kind: ClassVar[str] = "train"
    paper: str
    system: str
    dataset: str
    pair: str
    seed: int
    model: str  # registry key of the model (mmt_repro.models.registry)
    model_config: dict  # the system's config on this pair (its `by_pair` overrides applied)
    train_config: dict  # the trainer's settings, seed included
    subword: str  # the target side's subword kind, merged back for validation BLEU
    resources: dict  # name -> file of every declared resource (vectors, weights, tables)
    extras: dict  # name -> file of per-example extras (word alignments)
    imports: list  # modules that register the paper's parts
    tasks: list  # extra training tasks with their files (multi-task systems)
    inputs: dict  # role -> file(s): corpus, validation, vocabularies, features, init, ...
    best: str  # outputs: the best checkpoint, the learning curve, the resumable checkpoint
    curve: str
    last: str
    record: str  # the job record written beside the checkpoint (<model>.job.json)
    device: str


@dataclass(frozen=True)
class TranslateJob(Job):
    """Decoding one test split with one checkpoint (a `reverse_of` system: its forward model's,
    backward; a `train_on` system: its one training run's) in one image condition."""

    kind: ClassVar[str] = "translate"
    paper: str
    system: str
    dataset: str
    split: str
    pair: str
    seed: int
    condition: str
    checkpoint: str  # the checkpoint actually decoded
    direction: str  # forward | backward
    decode: dict
    subword: str
    shuffle_seed: int | None
    inputs: dict
    out: str  # the translation (or the attention dump of dump_attention)
    stats: str | None
    device: str


@dataclass(frozen=True)
class ScoreJob(Job):
    """Every metric of the paper's scoring block on one translation file."""

    kind: ClassVar[str] = "score"
    meta: dict  # paper, table, system, dataset, pair, test_set, seed, condition, checkpoint
    scoring: dict
    ref_subword: str
    meteor_jar: str | None
    inputs: dict  # hyp, decode_stats, ref (list)
    out: str


@dataclass(frozen=True)
class AnalyseJob(Job):
    """One registered analysis of one run (e.g. VAD, beta shares, rare-word F-score)."""

    kind: ClassVar[str] = "analyse"
    name: str  # <paper>.<analysis>
    input_kind: str  # attention | model | translation | translation_train
    meta: dict
    imports: list
    inputs: dict
    out: str
    options: dict = dataclasses.field(default_factory=dict)  # the table's `options`, keywords of the analysis


@dataclass(frozen=True)
class TableJob(Job):
    """One paper table: our numbers beside the published ones, with the runs behind each row."""

    kind: ClassVar[str] = "table"
    paper: str
    table: str
    note: str
    unavailable: dict
    not_comparable: dict
    inputs: dict  # scores (list), published, significance
    out: str
    differences: dict = dataclasses.field(default_factory=dict)  # system -> how it differs from the paper's setting
    unavailable_rows: list = dataclasses.field(default_factory=list)  # {system, pair, test_set, metric, reason}

    def to_dict(self) -> dict:
        """As every job's, without ``unavailable_rows`` when there are none: the record (and the
        rule's params) of a table without such rows stays what it was before the field existed."""
        data = super().to_dict()
        if not self.unavailable_rows:
            data.pop("unavailable_rows")
        return data


@dataclass(frozen=True)
class SignificanceJob(Job):
    """Paired significance of each system of a table against its baseline (MultEval's tests)."""

    kind: ClassVar[str] = "significance"
    paper: str
    table: str
    translations: dict  # "system|test_set|condition|seed" -> translation file
    references: dict  # test set -> reference file
    baseline: str | dict  # one system, or system -> its baseline
    pair: str
    metrics: list
    scoring: dict
    lang: str  # METEOR's language
    meteor_jar: str | None
    ref_subword: str
    inputs: dict  # translations (list), references (list)
    out: str


@dataclass(frozen=True)
class ProtocolGridJob(Job):
    """A translation table's runs scored under every scoring protocol that makes sense for its
    target language (mmt_repro.tables.protocols): why a number differs from the paper's."""

    kind: ClassVar[str] = "protocols"
    paper: str
    table: str
    pair: str
    lang: str  # the target language
    protocols: list  # protocol ids (mmt_repro.metrics.protocols), in the grid's column order
    table_metrics: dict  # table metric -> the protocol that computes it (the paper's scoring block)
    translations: dict  # "system|test_set|condition|seed" -> translation file
    references: dict  # test set -> its reference file(s) in the scoring form
    scores: dict  # the same keys -> score file: each marked cell is checked against it
    ref_subword: str
    meteor_jar: str | None
    inputs: dict  # translations, references, scores (lists)
    out: str  # the grid (TSV)
    legend: str  # its legend and every seed's value (JSON)


@dataclass(frozen=True)
class ProbeJob(Job):
    """A table's image-use probe (mmt_repro.tables.probe): each multimodal system beside its
    text-only counterpart under congruent, shuffled and blank images."""

    kind: ClassVar[str] = "probe"
    paper: str
    table: str
    pair: str
    metric: str  # the probe's figure (bleu)
    pairs: dict  # multimodal system -> its text-only counterpart (itself: its no_image runs)
    conditions: list  # the probed systems' image conditions, in column order
    scores: dict  # "system|test_set|condition|seed" -> score file
    note: str
    inputs: dict  # scores (list)
    out: str


@dataclass(frozen=True)
class CrossPaperJob(Job):
    """The cross-paper table (mmt_repro.tables.cross_paper): every system of every paper whose runs
    translate the config's test sets of one dataset and pair, scored under one protocol, beside
    its paper's image-use probe figures."""

    kind: ClassVar[str] = "cross_paper"
    dataset: str
    bleu: str  # the BLEU protocol id (mmt_repro.metrics.protocols)
    meteor: bool  # METEOR -norm in the target language
    rows: list  # {paper, system, pair, test_set, translations: {seed: file}, references, ref_subword, probe, reason}
    meteor_jar: str | None
    inputs: dict  # translations, references, probes (lists)
    out: str  # the table (TSV)
    legend: str  # its runs, signatures and every seed's value (JSON)


@dataclass(frozen=True)
class CurvesJob(Job):
    """Learning curves of a table's systems (tables of kind curves): a table and a figure."""

    kind: ClassVar[str] = "curves"
    paper: str
    table: str
    curves: dict  # system -> {file, y, x}
    pair: str
    test_set: str
    note: str
    inputs: dict  # curves (list of <model>.curve.tsv)
    out: str
    png: str
    pdf: str


@dataclass(frozen=True)
class AlignmentModelJob(Job):
    """fast_align's forward and backward models on a paper's training text (Yang et al.)."""

    kind: ClassVar[str] = "alignment_model"
    paper: str
    dataset: str
    pair: str
    settings: dict  # iterations, favor_diagonal, optimize_tension, variational_bayes
    inputs: dict  # src, tgt
    fwd: str
    bwd: str


@dataclass(frozen=True)
class AlignJob(Job):
    """One split word-aligned with both fast_align models, symmetrised (Pharaoh i-j)."""

    kind: ClassVar[str] = "align"
    paper: str
    dataset: str
    pair: str
    split: str
    inputs: dict  # fwd, bwd, src, tgt
    out: str


@dataclass(frozen=True)
class BacktranslationJob(Job):
    """The synthetic corpus of back-translation (Calixto et al.): (synthetic source, real target,
    image) triples from the reverse model's translations of the comparable descriptions."""

    kind: ClassVar[str] = "backtranslation"
    paper: str
    dataset: str
    pair: str
    inputs: dict  # synthetic, targets, image_lists (lists), codes
    out_src: str
    out_tgt: str
    out_images: str


JOB_KINDS = {cls.kind: cls for cls in (TrainJob, TranslateJob, ScoreJob, AnalyseJob, TableJob, SignificanceJob,
                                       ProtocolGridJob, ProbeJob, CrossPaperJob, CurvesJob, AlignmentModelJob,
                                       AlignJob, BacktranslationJob)}


def job_from_dict(data) -> Job:
    """The job object of a ``to_dict()`` dict, whatever its kind."""
    kind = dict(data).get("kind")
    if kind not in JOB_KINDS:
        raise ValueError(f"unknown job kind {kind!r}; known: {', '.join(JOB_KINDS)}")
    return JOB_KINDS[kind].from_dict(data)


__all__ = ["Job", "TrainJob", "TranslateJob", "ScoreJob", "AnalyseJob", "TableJob", "SignificanceJob",
           "ProtocolGridJob", "ProbeJob", "CrossPaperJob", "CurvesJob", "AlignmentModelJob", "AlignJob", "BacktranslationJob", "JOB_KINDS",
           "job_from_dict"]
