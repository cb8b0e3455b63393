"""The forward pass the trainer runs: eager, or, with ``shape_buckets`` on a GPU, replayed as
CUDA graphs, one per padded batch shape (BertGen's launch-bound step).

With the training config's ``shape_buckets`` every batch has one of a few shapes
(:func:`mmt_repro.datasets.bertgen.pad_to_shape`). On a CUDA device :func:`step_forward` returns
the model compiled with ``torch.compile(mode="reduce-overhead", dynamic=False)``: TorchDynamo
specialises on each shape it meets (one compilation per bucket; ``recompile_limit`` is raised to
allow every bucket and a few more), AOTAutograd compiles the backward pass with it, and Inductor
records the forward and backward kernels of each shape as CUDA graphs (torch's CUDA-graph
trees) and replays them. The optimiser step stays eager (torch's fused AdamW). This is torch's
maintained path for CUDA graphs in training; hand capture (``torch.cuda.graph``) would also have
to keep static input buffers, the autograd graph and the optimiser's state in captured memory.

Everywhere else (the CPU, or no buckets) the model runs eagerly, as without this module; the
padded batches still give the unpadded loss and gradients (to float rounding). The log says
which path ran (:func:`step_forward`'s second value).

Not run on a CPU: Inductor's CUDA-graph recording and replay. The tests cover the padding,
the choice of path, and TorchDynamo/AOTAutograd's trace of the padded step (:func:`compiled_step`
with the ``aot_eager`` backend: one graph per shape, no graph break, the eager loss and
gradients); only a GPU runs the recorded graphs (docs/bertgen.md, "Speed levers").
"""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["compiled_step", "mark_step", "step_forward"]


def step_forward(model: torch.nn.Module, shape_buckets, device: torch.device) -> tuple[Callable | None, str]:
    """``(forward, what)``: the compiled model the update runs the batch through, or None for
    the model itself (eager: without ``shape_buckets``, or off CUDA); and a line for the log."""
    buckets = list(shape_buckets or ())
    if not buckets:
        return None, "eager"
    if device.type != "cuda":
        return None, (f"eager with shape buckets {buckets} (CUDA graphs need a CUDA device; "
                      f"{device.type} runs the padded batches eagerly)")
    return compiled_step(model, len(buckets)), (f"CUDA graphs: torch.compile(mode='reduce-overhead', dynamic=False), "
                                                f"one graph per shape, shape buckets {buckets}")


def compiled_step(model: torch.nn.Module, n_buckets: int, backend: str | None = None) -> Callable:
    """The model compiled with one specialisation per batch shape (``dynamic=False``): the
    buckets, and a few more for rows wider than the last bucket (past the limit TorchDynamo runs
    the frame eagerly). ``backend`` None: Inductor with ``mode="reduce-overhead"`` (CUDA graphs,
    the trainer's on CUDA); the tests pass ``"aot_eager"`` to trace the same graphs on a CPU."""
    import torch._dynamo

    torch._dynamo.config.recompile_limit = max(int(torch._dynamo.config.recompile_limit), n_buckets + 4)
    if backend is not None:
        return torch.compile(model, backend=backend, dynamic=False)
    return torch.compile(model, mode="reduce-overhead", dynamic=False)  # pragma: no cover - CUDA only


def mark_step(forward: Callable | None) -> None:
    """Tell torch's CUDA-graph trees that a new training iteration begins (their outputs of the
    previous one may be overwritten); nothing for the eager model (``forward`` None)."""
    if forward is not None:  # pragma: no cover - compiled: CUDA only
        torch.compiler.cudagraph_mark_step_begin()
