"""The one trainer every model shares.

The model supplies ``forward(batch) -> {"loss", "n_tokens", ...}`` (and the shared decoder
interface for validation); this module supplies everything else: batching, optimiser and
schedule, gradient clipping, validation BLEU after each epoch, early stopping, best and last
checkpoints, exact resume, signal handling and the training curve.

Exact resume: the last checkpoint holds the model, optimiser, scheduler, RNG states and the
data position (epoch, batches done in it). The batch order of an epoch is a pure function of
``(seed, epoch)`` (see :mod:`mmt_repro.data.batching`), so a run killed after any saved step and
re-run ends with the same weights as an uninterrupted run on the same device.

Signals: SIGTERM and SIGUSR1 (SLURM's warning before a time limit or pre-emption) make the
trainer save the last checkpoint at the next step boundary and exit with
:data:`INTERRUPTED_EXIT_CODE`; re-running the job resumes.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ..data.batching import ParallelData, check_feature_dim, move
from ..decode.search import beam_search, greedy
from ..io import DataError, atomic_path, atomic_write, read_lines
from ..metrics.mt import corpus_scores
from ..models import build_model
from ..text.bpe import merge_bpe
from ..text.vocab import Vocab
from .checkpoint import read_checkpoint, save_checkpoint, set_rng_state

log = logging.getLogger(__name__)

INTERRUPTED_EXIT_CODE = 75  # EX_TEMPFAIL: "try again", the job resumes when re-run


@dataclass
class TrainConfig:
    """Training hyperparameters (shared by every model)."""

    optimizer: str = "adadelta"  # adadelta | adam
    lr: float = 1.0  # learning rate (ADADELTA's conventional 1.0)
    weight_decay: float = 0.0  # L2 penalty passed to the optimiser
    batch_size: int = 80  # sentences per batch, or target tokens when batch_by_tokens
    batch_by_tokens: bool = False  # batch_size counts target tokens instead of sentences
    max_len: int = 80  # drop training pairs with more tokens than this on either side
    max_epochs: int = 100  # hard limit on epochs
    max_steps: int = 0  # hard limit on updates (0: none)
    time_budget_min: float = 0.0  # stop after this many minutes of training (0: none)
    patience: int = 20  # early stopping: epochs without a better validation BLEU
    clip_norm: float = 1.0  # gradient norm clipping (0: off)
    lr_schedule: str = "constant"  # constant | plateau (halve lr when val BLEU stalls)
    lr_patience: int = 2  # plateau schedule: epochs without improvement before halving
    val_beam: int = 1  # beam size for validation decoding (1: greedy)
    val_max_len: int = 80  # maximum length of validation translations
    val_batch_size: int = 64  # sentences per validation batch
    seed: int = 1  # seeds dropout, initialisation and batch order
    amp: bool = False  # bfloat16 autocast on a GPU (ignored on CPU)
    log_every: int = 50  # log progress every this many updates
    checkpoint_every: int = 0  # also save the last checkpoint every this many updates (0: per epoch)


def make_train_config(values: dict | None) -> TrainConfig:
    values = dict(values or {})
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ValueError(f"unknown training config key(s) {unknown}; valid keys: {', '.join(sorted(fields))}")
    return TrainConfig(**values)


def pick_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _optimizer(cfg: TrainConfig, params):
    if cfg.optimizer == "adadelta":
        return torch.optim.Adadelta(params, lr=cfg.lr, rho=0.95, eps=1e-6, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    raise ValueError(f"unknown optimizer {cfg.optimizer!r}; valid: adadelta, adam")


def _scheduler(cfg: TrainConfig, optimizer):
    if cfg.lr_schedule == "constant":
        return None
    if cfg.lr_schedule == "plateau":
        return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="max", factor=0.5, patience=cfg.lr_patience)
    raise ValueError(f"unknown lr_schedule {cfg.lr_schedule!r}; valid: constant, plateau")


class _SignalFlag:
    """Remember SIGTERM/SIGUSR1 instead of dying mid-step."""

    def __init__(self):
        self.received: int | None = None
        self._old = {}

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGUSR1):
            try:
                self._old[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not in the main thread: leave signals alone
                pass
        return self

    def _handle(self, signum, frame):  # noqa: ARG002
        self.received = signum

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)
        return False


def translate_data(model, data: ParallelData, tgt_vocab: Vocab, beam: int, max_len: int, batch_size: int, device) -> list[str]:
    """Decode every sentence of ``data`` in order; returns token strings (BPE still applied)."""
    model.eval()
    out: list[str] = []
    for batch in data.eval_batches(batch_size):
        batch = move(batch, device)
        if beam <= 1:
            hyps, _ = greedy(model, batch, max_len, Vocab.bos_id, Vocab.eos_id)
        else:
            hyps = beam_search(model, batch, beam, max_len, Vocab.bos_id, Vocab.eos_id)
        out.extend(" ".join(tgt_vocab.decode(h)) for h in hyps)
    return out


def _copy_atomic(src: Path, dst: Path) -> None:
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


def _write_curve(path: Path, history: list[dict]) -> None:
    cols = ["epoch", "step", "train_loss", "val_bleu", "lr", "tokens_per_s", "elapsed_s"]
    with atomic_write(path) as fh:
        fh.write("\t".join(cols) + "\n")
        for row in history:
            fh.write("\t".join(str(row.get(c, "")) for c in cols) + "\n")


def train(
    model_name: str,
    model_config: dict,
    train_config: dict,
    src_vocab: Path,
    tgt_vocab: Path,
    train_src: Path,
    train_tgt: Path,
    val_src: Path,
    val_tgt: Path,
    val_ref: Path,
    best_checkpoint: Path,
    last_checkpoint: Path,
    curve: Path,
    train_features=None,
    val_features=None,
    device: str = "auto",
    init_checkpoint: Path | None = None,
    train_image_list: Path | None = None,
) -> dict:
    """Train ``model_name`` and write ``best_checkpoint`` (best validation BLEU), the resumable
    ``last_checkpoint`` and the ``curve`` TSV. ``*_features`` are feature stores (objects with
    ``len`` and ``[row] -> (L, D)``) or None for text-only models. ``val_ref`` is the validation
    reference in the scoring tokenisation (BPE merged). ``init_checkpoint``: start from the
    weights of a pre-trained checkpoint with the same vocabularies (fine-tuning; the optimiser
    starts afresh); parameters the pre-trained model lacks (the image attention when a text-only
    model was pre-trained) keep their initialisation, and the log lists them. ``train_image_list``: one image name per training sentence, looked
    up in ``train_features`` by name (for corpora with several sentences per image). Returns a
    summary dict."""
    cfg = make_train_config(train_config)
    dev = pick_device(device)
    torch.manual_seed(cfg.seed)
    sv, tv = Vocab.load(src_vocab), Vocab.load(tgt_vocab)
    train_data = ParallelData(
        train_src, sv, train_tgt, tv, features=train_features, max_len=cfg.max_len, image_list=train_image_list
    )
    val_data = ParallelData(val_src, sv, val_tgt, tv, features=val_features)
    refs = read_lines(val_ref)
    if len(refs) != len(val_data.src):
        raise DataError(val_ref, f"has {len(refs)} lines, validation source has {len(val_data.src)}", "re-run preprocessing")
    if len(train_data) == 0:
        raise DataError(train_src, f"no training pair is at most max_len={cfg.max_len} tokens long", "raise max_len")

    model = build_model(model_name, model_config, len(sv), len(tv)).to(dev)
    check_feature_dim(model, train_features, val_features)
    optimizer = _optimizer(cfg, model.parameters())
    scheduler = _scheduler(cfg, optimizer)
    vocab_info = {"src": sv.fingerprint(), "tgt": tv.fingerprint(), "src_size": len(sv), "tgt_size": len(tv)}
    configs = {"model": dataclasses.asdict(model.config), "train": dataclasses.asdict(cfg)}
    progress = {"epoch": 1, "batch_in_epoch": 0, "step": 0, "best_bleu": -1.0, "bad_epochs": 0, "history": [], "done": False}

    if init_checkpoint is not None:
        init = read_checkpoint(init_checkpoint)
        if init["vocab"] != vocab_info:
            raise DataError(
                init_checkpoint,
                f"pre-trained with vocabularies {init['vocab']}, fine-tuning uses {vocab_info}",
                "pre-train with the vocabularies of the fine-tuning data (same BPE codes and vocab files)",
            )
        own = model.state_dict()
        usable = {k: v for k, v in init["weights"].items() if k in own and own[k].shape == v.shape}
        if not usable:
            raise DataError(init_checkpoint, f"no parameter of {init['model']} fits {model_name}", "pre-train a compatible model")
        model.load_state_dict(usable, strict=False)
        fresh = sorted(k for k in own if k not in usable)
        configs["init_checkpoint"] = str(init_checkpoint)
        log.info(
            "fine-tuning from %s (%s, %s steps): %d of %d tensors initialised%s",
            init_checkpoint, init["model"], init["progress"].get("step"), len(usable), len(own),
            f"; fresh (not in the pre-trained model): {', '.join(fresh)}" if fresh else "",
        )

    last_checkpoint = Path(last_checkpoint)
    best_copy = last_checkpoint.with_suffix(".best.pt")  # survives Snakemake's clean-up of a failed job
    if last_checkpoint.exists():
        ckpt = read_checkpoint(last_checkpoint)
        same = (
            ckpt["model"] == model_name
            and ckpt["train_config"] == configs
            and ckpt["vocab"] == vocab_info
        )
        if same:
            model.load_state_dict(ckpt["weights"])
            optimizer.load_state_dict(ckpt["optimizer"])
            if scheduler is not None and ckpt["scheduler"] is not None:
                scheduler.load_state_dict(ckpt["scheduler"])
            progress = ckpt["progress"]
            set_rng_state(ckpt["rng"])
            log.info("resuming from %s: epoch %d, batch %d, step %d", last_checkpoint, progress["epoch"], progress["batch_in_epoch"], progress["step"])
        else:
            log.warning("ignoring %s: it was written with another model, configuration or vocabulary", last_checkpoint)

    def save_last():
        save_checkpoint(last_checkpoint, model, vocab_info, optimizer, scheduler, progress, configs)

    log.info(
        "training %s on %s: %d pairs, %d parameters, device %s, batch %d%s, optimizer %s",
        model_name, train_src, len(train_data), sum(p.numel() for p in model.parameters()), dev,
        cfg.batch_size, " tokens" if cfg.batch_by_tokens else "", cfg.optimizer,
    )
    use_amp = cfg.amp and dev.type == "cuda"
    started = time.monotonic()
    elapsed_before = progress["history"][-1]["elapsed_s"] if progress["history"] else 0.0
    stop_reason = "max_epochs"

    with _SignalFlag() as flag:
        while not progress["done"] and progress["epoch"] <= cfg.max_epochs:
            epoch = progress["epoch"]
            batches = train_data.train_batches(cfg.batch_size, cfg.seed, epoch, by_tokens=cfg.batch_by_tokens)
            model.train()
            loss_sum, tok_sum, t0 = 0.0, 0, time.monotonic()
            budget_hit = False
            first_bi = progress["batch_in_epoch"]
            for bi in range(first_bi, len(batches)):
                batch = move(train_data.collate(batches[bi]), dev)
                with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=use_amp):
                    out = model(batch)
                loss = out["loss"]
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"loss became {loss.item()} at step {progress['step'] + 1}: lower the learning rate")
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.clip_norm > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
                optimizer.step()
                progress["step"] += 1
                progress["batch_in_epoch"] = bi + 1
                n_tok = int(out["n_tokens"])
                loss_sum += float(out["nll_sum"])
                tok_sum += n_tok
                if cfg.log_every and progress["step"] % cfg.log_every == 0:
                    dt = time.monotonic() - t0
                    left = (len(batches) - bi - 1) * dt / (bi + 1 - first_bi)
                    log.info(
                        "epoch %d batch %d/%d step %d loss %.4f %.0f tok/s epoch ETA %.0fs",
                        epoch, bi + 1, len(batches), progress["step"], loss_sum / max(tok_sum, 1), tok_sum / max(dt, 1e-9), left,
                    )
                if flag.received is not None:
                    save_last()
                    log.warning("signal %d received: saved %s at step %d; re-run to resume", flag.received, last_checkpoint, progress["step"])
                    raise SystemExit(INTERRUPTED_EXIT_CODE)
                if cfg.checkpoint_every and progress["step"] % cfg.checkpoint_every == 0:
                    save_last()
                if cfg.max_steps and progress["step"] >= cfg.max_steps:
                    budget_hit, stop_reason = True, "max_steps"
                    break
                if cfg.time_budget_min and elapsed_before + time.monotonic() - started >= cfg.time_budget_min * 60:
                    budget_hit, stop_reason = True, "time_budget"
                    break

            # ---- validation at the end of the epoch (or when a budget ends training early)
            dt = time.monotonic() - t0
            hyps = translate_data(model, val_data, tv, cfg.val_beam, cfg.val_max_len, cfg.val_batch_size, dev)
            bleu = corpus_scores([merge_bpe(h) for h in hyps], [refs], metrics=("bleu",), tokenize="none")["bleu"]["value"]
            improved = bleu > progress["best_bleu"]
            if improved:
                progress["best_bleu"], progress["bad_epochs"] = bleu, 0
                save_checkpoint(best_checkpoint, model, vocab_info, None, None, dict(progress, best_epoch=epoch), configs, with_rng=False)
                _copy_atomic(best_checkpoint, best_copy)
            else:
                progress["bad_epochs"] += 1
            if scheduler is not None:
                scheduler.step(bleu)
            progress["history"].append({
                "epoch": epoch,
                "step": progress["step"],
                "train_loss": round(loss_sum / max(tok_sum, 1), 5),
                "val_bleu": round(bleu, 2),
                "lr": optimizer.param_groups[0]["lr"],
                "tokens_per_s": round(tok_sum / max(dt, 1e-9), 1),
                "elapsed_s": round(elapsed_before + time.monotonic() - started, 1),
            })
            log.info("epoch %d done: train loss %.4f, val BLEU %.2f%s", epoch, loss_sum / max(tok_sum, 1), bleu, " (best)" if improved else "")
            _write_curve(curve, progress["history"])
            progress["epoch"] += 1
            progress["batch_in_epoch"] = 0
            if budget_hit:
                progress["done"] = True
            elif progress["bad_epochs"] >= cfg.patience:
                progress["done"], stop_reason = True, "early_stopping"
            elif progress["epoch"] > cfg.max_epochs:
                progress["done"] = True
            save_last()
    # Snakemake deletes the outputs of a failed (e.g. cancelled) job; a resumed run restores them.
    if not Path(best_checkpoint).exists() and best_copy.exists():
        _copy_atomic(best_copy, best_checkpoint)
    _write_curve(curve, progress["history"])
    if not Path(best_checkpoint).exists():
        raise RuntimeError(f"training ended without a validation: {best_checkpoint} was not written")
    total_tokens = train_data.n_target_tokens()
    summary = {
        "best_val_bleu": progress["best_bleu"],
        "epochs": progress["epoch"] - 1,
        "steps": progress["step"],
        "stop_reason": stop_reason,
        "train_target_tokens_per_epoch": total_tokens,
        "elapsed_s": progress["history"][-1]["elapsed_s"] if progress["history"] else 0.0,
    }
    log.info("training finished: %s", summary)
    return summary


def train_from_files(train_features=(None, None), val_features=(None, None), **kwargs) -> dict:
    """:func:`train` with feature stores given as ``(npy, index)`` paths (None: text-only)."""
    from ..decode.translate import open_features

    return train(
        train_features=open_features(*train_features),
        val_features=open_features(*val_features),
        **kwargs,
    )
