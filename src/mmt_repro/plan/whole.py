"""The ``Plan`` of one configuration: the look-ups over its config, settings and manifest
(:class:`~mmt_repro.plan.lookup.Lookup`, which ``Plan`` is), one job builder per kind of
run-level job (:mod:`mmt_repro.plan.build`, one-to-one with :mod:`mmt_repro.execute`), and the
inputs of the stages that have no job object (data, features, text, word vectors, figures,
targets). Each part gets the look-ups and the other parts it reads, by name, when it is made
here; nothing calls across parts through ``self``. The rule files call the parts
(``PLAN.train_jobs.inputs``, ``PLAN.text.bpe_codes``, ...); the tools that read a plan (its
cost, the preflight, code versions, progress, listings) are functions of it in
:mod:`mmt_repro.plan_tools`."""

from __future__ import annotations

from pathlib import Path

from .build.alignment import AlignmentJobs
from .build.analyse import AnalyseJobs
from .build.backtranslation import BacktranslationJobs
from .build.cross_paper import CrossPaperJobs
from .build.curves import CurvesJobs
from .build.packed import PackedJobs
from .build.probe import ProbeJobs
from .build.protocols import ProtocolGridJobs
from .build.score import ScoreJobs
from .build.significance import SignificanceJobs
from .build.table import TableJobs
from .build.train import TrainJobs
from .build.translate import TranslateJobs
from .data import DataInputs
from .features import FeatureInputs
from .figures import FigureInputs
from .lookup import Lookup
from .masking import MaskingInputs
from .targets import Targets
from .text import TextInputs
from .vectors import WordVectorInputs


class Plan(Lookup):
    """The whole plan of one configuration (see the module docstring)."""

    def __init__(self, config: dict, repo: Path, check_names: bool = True):
        super().__init__(config, repo, check_names)
        look: Lookup = self
        # the stages without a job object: a rule's input and param functions
        self.data = DataInputs(look)  # data.smk
        self.features = FeatureInputs(look)  # features.smk
        self.text = TextInputs(look)  # text.smk
        self.vectors = WordVectorInputs(look)  # embeddings.smk
        self.figures = FigureInputs(look)  # plot_attention (tables.smk)
        self.masking = MaskingInputs(look)  # masking.smk: the masked-word lists and masked sources
        # one builder per kind of job (execute/<kind>.py)
        self.train_jobs = TrainJobs(look)
        self.translate_jobs = TranslateJobs(look)
        self.attention_jobs = TranslateJobs(look, attention=True)  # dump_attention
        self.score_jobs = ScoreJobs(look)
        self.analyse_jobs = AnalyseJobs(look, self.translate_jobs)
        self.significance_jobs = SignificanceJobs(look)
        self.table_jobs = TableJobs(look, self.vectors, self.text)
        self.protocol_jobs = ProtocolGridJobs(look)  # protocol_grid: a translation table's protocol grid
        self.probe_jobs = ProbeJobs(look)  # make_probe_table: a table's image-use probe
        self.cross_paper_jobs = CrossPaperJobs(look, self.probe_jobs)  # make_cross_paper_table
        self.curves_jobs = CurvesJobs(look)
        self.alignment_jobs = AlignmentJobs(look)
        self.backtranslation_jobs = BacktranslationJobs(look)
        self.packed_jobs = PackedJobs(look, self.train_jobs)  # packed trainings (config `packing`)
        # rule all (the cross-paper table when it has rows); the requested targets' names
        self.targets = Targets(look, self.text, self.cross_paper_jobs)


def load_plan(repo, configfiles=()) -> Plan:
    """The plan of ``repo``'s ``config/config.yaml`` with ``configfiles`` merged on top in order,
    as Snakemake's ``--configfile`` does (each path as given, relative to the working directory)."""
    from ..config import deep_update, load_yaml

    repo = Path(repo)
    config = load_yaml(repo / "config" / "config.yaml")
    for f in configfiles:
        config = deep_update(config, load_yaml(Path(f)))
    return Plan(config, repo)
