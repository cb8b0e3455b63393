"""A training run built from its job: :func:`build_run` reads what a
:class:`~mmt_repro.plan.jobs.TrainJob` names (vocabularies, corpora, feature stores, extra tasks),
builds the model, its optimiser and schedule, starts from a pre-trained checkpoint when the job
gives one, and resumes from the job's last checkpoint when that was written by the same
configuration. :func:`mmt_repro.train.trainer.fit` then trains the :class:`Run`.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..checkpoint import read_checkpoint, save_checkpoint, set_rng_state
from ..datasets.batching import ParallelData, check_feature_dim
from ..datasets.view import TrainingData, training_view
from ..device import describe_device, pick_device
from ..features.store import open_features
from ..io import DataError, read_lines
from ..models import Vocabs, build_model
from ..plan.jobs import TrainJob
from ..settings import TrainConfig, import_model_modules, make_train_config, pair_langs
from ..text.recipes import merge_subwords
from ..text.vocab import Vocab
from .graphs import step_forward
from .resume import field_defaults, inputs_fingerprint, same_configuration
from .schedules import make_scheduler, needs_epoch_length, scaled_train_config
from .step import make_optimizer

log = logging.getLogger(__name__)

__all__ = ["Run", "build_run", "configured_optimizer"]


@dataclass
class Run:
    """Everything one training run holds; :func:`~mmt_repro.train.trainer.fit` reads and
    updates it."""

    cfg: TrainConfig
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: object
    device: torch.device
    train_data: TrainingData
    val_data: ParallelData
    refs: list[str]
    tgt_vocab: Vocab
    subword: str
    vocab_info: dict
    configs: dict
    imports: list[str]
    best_checkpoint: Path
    last_checkpoint: Path
    curve: Path
    val_tasks: list = field(default_factory=list)  # (name, data, [refs per reference file]) of extra tasks
    code: str | None = None  # the code version running now (the job's `code`: mmt_repro.plan_tools.version)
    progress: dict = field(default_factory=lambda: {
        "epoch": 1, "batch_in_epoch": 0, "step": 0, "best_bleu": -1.0, "bad_epochs": 0, "history": [], "done": False})
    steps_at_start: int = 0  # updates done when this process took the run over (resumed or not)
    forward: object = None  # what the batches run through (None: the model; shape buckets on CUDA: compiled)
    step_path: str = "eager"  # which path the forward takes, for the log (mmt_repro.train.graphs)

    @property
    def best_copy(self) -> Path:  # survives Snakemake's clean-up of a failed job
        return self.last_checkpoint.with_suffix(".best.pt")

    def save_last(self) -> None:
        save_checkpoint(self.last_checkpoint, self.model, self.vocab_info, self.optimizer, self.scheduler,
                        self.progress, self.configs, imports=self.imports)


def configured_optimizer(cfg: TrainConfig, params) -> torch.optim.Optimizer:
    """The optimiser ``cfg`` names, over the parameters that require gradients."""
    return make_optimizer(cfg.optimizer, params, lr=cfg.lr, betas=cfg.adam_betas, eps=cfg.adam_eps,
                          weight_decay=cfg.weight_decay)


def _files(job: TrainJob, role: str) -> Path | None:
    value = job.inputs.get(role)
    return Path(value) if value else None


def _load_data(cfg: TrainConfig, sv, tv, job: TrainJob, train_features, val_features, langs):
    """Training and validation data, and the validation references, checked. The job's
    ``extras`` (``{name: file}``, one line per training pair) reach the model as ``batch[name]``;
    ``langs``: the pair's languages, which batches carry for multilingual models."""
    extras = {name: read_lines(path) for name, path in dict(job.extras).items()}
    train_src, train_tgt = _files(job, "train_src"), _files(job, "train_tgt")
    train_data = ParallelData(train_src, sv, train_tgt, tv, features=train_features, max_len=cfg.max_len,
                              image_list=_files(job, "train_image_list"), extras=extras or None, langs=langs)
    val_data = ParallelData(_files(job, "val_src"), sv, _files(job, "val_tgt"), tv, features=val_features, langs=langs)
    refs = read_lines(_files(job, "val_ref"))
    if len(refs) != val_data.n_examples:
        raise DataError(_files(job, "val_ref"), f"has {len(refs)} lines, validation data has {val_data.n_examples}",
                        "re-run preprocessing")
    if len(train_data) == 0:
        raise DataError(train_src or train_tgt,
                        f"no training pair is at most max_len={cfg.max_len} tokens long", "raise max_len")
    return train_data, val_data, refs


def _load_tasks(cfg: TrainConfig, sv, tv, tasks: list[dict]) -> tuple[dict[str, ParallelData], list]:
    """The extra training tasks of a multi-task system (``systems.<s>.tasks``), by name: each
    ``{"name", "pair", "src" (None for captioning), "tgt" (a file, or the caption files of a
    split), "features": (npy, index) or None}`` read with the run's vocabularies and ``max_len``;
    and the validation sets of those with ``"val": {"src", "refs", "features"}`` (decoded after
    every epoch into the curve column ``val_bleu_<name>``)."""
    out, vals = {}, []
    for task in tasks:
        src_lang, tgt_lang = pair_langs(task["pair"])
        feats = open_features(*(task.get("features") or (None, None)))
        tgt = task["tgt"]
        if isinstance(tgt, (list, tuple)):  # one file, or several captions per image
            tgt = tgt[0] if len(tgt) == 1 else list(tgt)
        data = ParallelData(task.get("src"), sv, tgt, tv,
                            features=feats, max_len=cfg.max_len, langs=(src_lang, tgt_lang))
        if len(data) == 0:
            raise DataError(task.get("src") or tgt, f"task {task['name']!r} has no training pair of at most "
                            f"max_len={cfg.max_len} tokens", "raise max_len")
        out[task["name"]] = data
        val = task.get("val")
        if val:
            vdata = ParallelData(val.get("src"), sv, features=open_features(*(val.get("features") or (None, None))),
                                 langs=(src_lang, tgt_lang))
            refs = [read_lines(r) for r in val["refs"]]
            for path, lines in zip(val["refs"], refs):
                if len(lines) != vdata.n_examples:
                    raise DataError(path, f"has {len(lines)} lines, the task's validation data has {vdata.n_examples}",
                                    "re-run preprocessing")
            vals.append((task["name"], vdata, refs))
    return out, vals


def _init_from(run: Run, init_checkpoint: Path, model_name: str) -> None:
    """Fine-tuning: start from the weights of a pre-trained checkpoint with the same vocabularies."""
    init = read_checkpoint(init_checkpoint)
    if init["vocab"] != run.vocab_info:
        raise DataError(
            init_checkpoint,
            f"pre-trained with vocabularies {init['vocab']}, fine-tuning uses {run.vocab_info}",
            "pre-train with the vocabularies of the fine-tuning data (same BPE codes and vocab files)",
        )
    own = run.model.state_dict()
    usable = {k: v for k, v in init["weights"].items() if k in own and own[k].shape == v.shape}
    if not usable:
        raise DataError(init_checkpoint, f"no parameter of {init['model']} fits {model_name}", "pre-train a compatible model")
    run.model.load_state_dict(usable, strict=False)
    fresh = sorted(k for k in own if k not in usable)
    run.configs["init_checkpoint"] = str(init_checkpoint)
    log.info(
        "fine-tuning from %s (%s, %s steps): %d of %d tensors initialised%s",
        init_checkpoint, init["model"], init["progress"].get("step"), len(usable), len(own),
        f"; fresh (not in the pre-trained model): {', '.join(fresh)}" if fresh else "",
    )


def _resume(run: Run, model_name: str) -> None:
    """Continue from the last checkpoint when it was written by this very configuration (keys
    added to the configs since then count as their defaults: :func:`same_configuration`)."""
    if not run.last_checkpoint.exists():
        return
    ckpt = read_checkpoint(run.last_checkpoint)
    defaults = {"train": field_defaults(TrainConfig), "model": field_defaults(type(run.model.config))}
    if not (ckpt["model"] == model_name and same_configuration(ckpt["train_config"], run.configs, defaults)
            and ckpt["vocab"] == run.vocab_info):
        log.warning("ignoring %s: it was written with another model, configuration or vocabulary", run.last_checkpoint)
        return
    saved, now = ckpt["progress"].get("inputs"), run.progress.get("inputs")
    if saved is not None and saved != now:  # a checkpoint written before inputs were recorded is taken as it is
        changed = sorted(p for p in set(saved) | set(now or {}) if saved.get(p) != (now or {}).get(p))
        log.warning("ignoring %s: its training inputs have changed since (%s); training afresh",
                    run.last_checkpoint, ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else ""))
        return
    run.model.load_state_dict(ckpt["weights"])
    run.optimizer.load_state_dict(ckpt["optimizer"])
    if run.scheduler is not None and ckpt["scheduler"] is not None:
        run.scheduler.load_state_dict(ckpt["scheduler"])
    run.progress = dict(ckpt["progress"], inputs=run.progress.get("inputs"))
    set_rng_state(ckpt["rng"])
    p = run.progress
    log.info("resuming from %s: epoch %d, batch %d, step %d", run.last_checkpoint, p["epoch"], p["batch_in_epoch"], p["step"])


def build_run(job: TrainJob, code: str | None = None) -> Run:
    """The run of ``job``, ready for :func:`~mmt_repro.train.trainer.fit`.

    The job's ``inputs`` name the files by role: ``src_vocab`` (absent for tasks without source
    text), ``tgt_vocab``, ``train_src``/``train_tgt``, ``val_src``/``val_tgt``, ``val_ref`` (the
    validation reference in the scoring form: hypotheses are compared after merging the
    target's ``subword`` segmentation), feature stores ``train_npy``/``train_index`` and
    ``val_npy``/``val_index`` (absent for text-only models), ``train_image_list`` (one image
    name per training sentence, looked up in the store by name) and ``init`` (a pre-trained
    checkpoint with the same vocabularies: fine-tuning; the optimiser starts afresh, parameters
    the pre-trained model lacks keep their initialisation and the log lists them). ``resources``:
    files the system declares (pretrained vectors or weights); ``imports``: extra modules that
    register the model; ``pair``: ``src-tgt`` (``im-tgt`` for captioning), carried by the
    batches as ``src_lang``/``tgt_lang``; ``tasks``: the extra training tasks of a multi-task
    system (:func:`_load_tasks`), mixed by the model's training view
    (:func:`~mmt_repro.datasets.view.training_view`).
    ``code``: the code version running (kept in the checkpoints' progress as ``trained_by`` for
    every epoch it trains)."""
    cfg = scaled_train_config(make_train_config(dict(job.train_config)))  # batch_scale k: k x the examples
    import_model_modules(list(job.imports))
    dev = pick_device(job.device)
    torch.manual_seed(cfg.seed)
    src_vocab = _files(job, "src_vocab")
    sv = Vocab.load(src_vocab) if src_vocab is not None else None
    tv = Vocab.load(_files(job, "tgt_vocab"))
    train_features = open_features(_files(job, "train_npy"), _files(job, "train_index"))
    val_features = open_features(_files(job, "val_npy"), _files(job, "val_index"))
    langs = pair_langs(job.pair) if job.pair else None
    train_data, val_data, refs = _load_data(cfg, sv, tv, job, train_features, val_features, langs)
    refs = merge_subwords(refs, job.subword)  # a wp chain's references hold pieces (others: unchanged)
    task_data, val_tasks = _load_tasks(cfg, sv, tv, list(job.tasks))
    resources = {k: Path(v) for k, v in dict(job.resources).items()}
    model = build_model(job.model, dict(job.model_config), Vocabs.of(sv, tv), resources)
    model.to(dev)
    check_feature_dim(model, train_features, val_features)
    optimizer = configured_optimizer(cfg, model.parameters())
    # the pairs, or the view the model declares (BertGen: unrolled examples of every task)
    data: TrainingData = training_view(model, train_data, task_data, cfg.shape_buckets, cfg.batch_size)
    for line in (data.describe(), data.hold_features_on(dev)):
        if line:
            log.info("%s", line)
    updates = 0
    if needs_epoch_length(cfg):
        updates = -(-len(data.train_batches(cfg.batch_size, cfg.seed, 1, by_tokens=cfg.batch_by_tokens)) // cfg.accumulate)
    run = Run(
        cfg=cfg, model=model, optimizer=optimizer, scheduler=make_scheduler(cfg, optimizer, updates), device=dev,
        train_data=data, val_data=val_data, refs=refs, tgt_vocab=tv, subword=job.subword,
        vocab_info={"src": sv.fingerprint() if sv else None, "tgt": tv.fingerprint(), "src_size": len(sv) if sv else 0,
                    "tgt_size": len(tv)},
        configs={"model": dataclasses.asdict(model.config), "train": dataclasses.asdict(cfg)},
        imports=list(job.imports), best_checkpoint=Path(job.best), last_checkpoint=Path(job.last),
        curve=Path(job.curve), val_tasks=val_tasks, code=code,
    )
    run.progress["inputs"] = inputs_fingerprint(job.inputs, job.extras, job.resources, job.tasks)
    run.forward, run.step_path = step_forward(model, cfg.shape_buckets, dev)
    init = _files(job, "init")
    if init is not None:
        _init_from(run, init, job.model)
    _resume(run, job.model)
    run.steps_at_start = run.progress["step"]
    log.info(
        "training %s on %s: %d pairs, %d parameters, device %s, batch %d%s, optimizer %s",
        job.model, _files(job, "train_src") or _files(job, "train_tgt"), len(data),
        sum(p.numel() for p in model.parameters()), dev, cfg.batch_size, " tokens" if cfg.batch_by_tokens else "",
        cfg.optimizer,
    )
    log.info("training device: %s", describe_device(dev, amp=bool(cfg.amp)))
    log.info("training step: %s", run.step_path)
    return run
