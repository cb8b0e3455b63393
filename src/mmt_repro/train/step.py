"""One training update, as the shared trainer runs it (and the tests and the GPU calibration).

Needs torch only (no data files, no text tools), so ``benchmarks/gpu_calibration.py`` times
exactly the trainer's update.

No host synchronisation inside an update: the loss, the token count and every scalar the model
returns are added up on the device (:class:`StepSums`) and read back only when the trainer
logs (``log_every``), saves a checkpoint or ends an epoch, in one transfer. A non-finite loss
is remembered on the device with its step and raised (:class:`FloatingPointError`) at that
read, before anything is written. The sums are float64 and added in the order the trainer
always used (each scalar times its batch's tokens, batch after batch), so the figures on the
CPU are bit for bit those of the former per-step ``float()`` reads.

On a GPU, batches are copied from pinned memory without blocking (:func:`to_device`);
``amp`` runs the forward pass under bf16 autocast (the backward pass follows autocast's dtypes).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from ..datasets.resident import resolve_features

__all__ = ["StepSums", "autocast", "make_optimizer", "to_device", "train_update"]


def make_optimizer(name: str, params, *, lr: float, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0):
    """The training config's optimiser (``adadelta`` | ``adam`` | ``adamw``) over the trainable
    parameters (frozen tables, e.g. fixed embeddings, stay out)."""
    params = [p for p in params if p.requires_grad]
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, rho=0.95, eps=1e-6, weight_decay=weight_decay)
    adam = torch.optim.AdamW if name == "adamw" else torch.optim.Adam
    # torch's fused kernel (CPU and CUDA): the same update to float rounding (1e-7 after 10 steps,
    # tested), one kernel for all parameters instead of ~10 ops each: 1.9 against 6.6 ms a step for
    # 120 small tensors on one CPU thread, where the smoke's tiny models take 30-110 ms a step
    fused = all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params) or None
    return adam(params, lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, fused=fused)


def to_device(batch: dict, device: torch.device) -> dict:
    """The batch's tensors on ``device``: on a GPU through pinned memory with non-blocking
    copies (the host goes on while the copy runs); elsewhere ``tensor.to(device)`` as before."""
    if device.type != "cuda":
        return {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in batch.items()}
    out = {}
    for k, v in batch.items():
        if isinstance(v, torch.Tensor) and v.device.type == "cpu":
            v = (v if v.is_pinned() else v.pin_memory()).to(device, non_blocking=True)
        elif isinstance(v, torch.Tensor):
            v = v.to(device, non_blocking=True)
        out[k] = v
    return out


def autocast(device: torch.device, enabled: bool):
    """bf16 autocast for the forward pass on ``device`` when ``enabled`` (the trainer enables
    it for ``amp: true`` on a GPU only; tests enable it on the CPU)."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=bool(enabled))


def _scalar(value) -> bool:
    return isinstance(value, (int, float)) or (torch.is_tensor(value) and value.numel() == 1)


class StepSums:
    """``n_tokens`` and ``train_<key> = sum(value * n_tokens)`` of every scalar a forward
    returns (``loss`` as ``train_loss``), kept on the device; :meth:`read` brings them to the
    host in one transfer. Also remembers the first non-finite loss and its step."""

    def __init__(self):
        self._sums: dict[str, object] = {}  # name -> 0-dim float64 tensor (or a float, for plain numbers)
        self._n: object = 0  # int64 tensor, or int
        self._bad: torch.Tensor | None = None  # (step, loss) of the first non-finite loss; step 0: none
        self._added = False

    def add(self, out: dict, n_tok, step: int | None = None) -> None:
        """Add one forward's scalars (``out``) weighted by its ``n_tok`` target tokens;
        ``step`` (1-based update number) marks a non-finite ``loss``."""
        n = n_tok.detach() if torch.is_tensor(n_tok) else int(n_tok)
        self._added = True
        self._n = self._n + n
        nf = n.to(torch.float64) if torch.is_tensor(n) else None
        for key, value in out.items():
            if key == "n_tokens" or not _scalar(value):
                continue
            name = "train_loss" if key == "loss" else f"train_{key}"
            if torch.is_tensor(value):
                term = value.detach().reshape(()).to(torch.float64) * n  # float64 x int64 -> float64
            elif nf is not None:
                term = nf * float(value)
            else:
                term = float(value) * n
            old = self._sums.get(name)
            self._sums[name] = term if old is None else old + term
        if step is not None and torch.is_tensor(out.get("loss")):
            self._watch(out["loss"].detach(), step)

    def _watch(self, loss: torch.Tensor, step: int) -> None:
        value = loss.reshape(()).to(torch.float64)
        bad = ~torch.isfinite(value)
        # kernels with the step as an argument: nothing is copied from the host (no sync)
        now = torch.stack([bad.to(torch.float64) * step, value])
        if self._bad is None:
            self._bad = now
        else:
            self._bad = torch.where(self._bad[0] > 0, self._bad, now)

    def read(self) -> dict:
        """``{"n_tokens": int, "train_loss": float, ...}`` in the order first seen (one host
        read). Raises :class:`FloatingPointError` when a loss was not finite."""
        if not self._added:
            return {}
        names = list(self._sums)
        tensors = [v for v in (self._n, *self._sums.values(), self._bad) if torch.is_tensor(v)]
        if tensors:
            device = tensors[0].device
            parts = [(v.to(device, torch.float64).reshape(-1) if torch.is_tensor(v)
                      else torch.tensor([float(v)], dtype=torch.float64, device=device))
                     for v in (self._n, *self._sums.values())]
            if self._bad is not None:
                parts.append(self._bad.to(device))
            flat = torch.cat(parts).tolist()  # the one host synchronisation
        else:
            flat = [float(self._n), *map(float, self._sums.values())]
        if self._bad is not None and flat[-2] > 0:
            raise FloatingPointError(f"loss became {flat[-1]} at step {int(flat[-2])}: lower the learning rate")
        out = {"n_tokens": int(flat[0])}
        out.update(zip(names, flat[1 : 1 + len(names)]))
        return out


def train_update(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batches: Iterable[dict], device: torch.device,
                 *, amp: bool = False, clip_norm: float = 0.0, sums: StepSums | None = None, step: int | None = None,
                 n_batches: int | None = None, forward=None) -> None:
    """One optimiser update from ``batches`` (collated dicts, on the host or the device;
    consumed one at a time). With one batch the update minimises the model's ``loss`` as it
    is; with several (``n_batches`` > 1), each batch's per-token mean is weighted by its
    ``n_tokens`` and the summed gradient divided by the group's tokens (fairseq's
    ``--update-freq``). Adds to ``sums`` (``step``: the update's number, for the non-finite
    check). ``forward``: what the batches run through instead of ``model`` (the same model
    compiled for CUDA-graph replay, :func:`mmt_repro.train.graphs.step_forward`). No host
    synchronisation (unless the model itself has one)."""
    optimizer.zero_grad(set_to_none=True)
    if n_batches is None:
        batches = list(batches)
        n_batches = len(batches)
    single = n_batches == 1
    total = None
    for batch in batches:
        batch = resolve_features(to_device(batch, device))
        with autocast(device, amp):
            out = (model if forward is None else forward)(batch)
        loss, n_tok = out["loss"], out["n_tokens"]
        if not torch.is_tensor(n_tok):
            n_tok = int(n_tok)
        (loss if single else loss * n_tok).backward()
        total = n_tok if total is None else total + n_tok
        if sums is not None:
            sums.add(out, n_tok, step)
    if not single and total is not None:
        divisor = total.clamp_min(1) if torch.is_tensor(total) else max(total, 1)
        for p in model.parameters():
            if p.grad is not None:
                p.grad.div_(divisor)
    if clip_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
