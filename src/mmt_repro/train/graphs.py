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

Not run on a CPU: :func:`_compiled` (the CUDA branch). The tests cover the padding and the
choice of path; a GPU check runs the compiled step (docs/bertgen.md, "Speed levers").
"""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["mark_step", "step_forward"]


def step_forward(model: torch.nn.Module, shape_buckets, device: torch.device) -> tuple[Callable, str]:
    """``(forward, what)``: the callable the update runs the batch through and a line for the
    log. Eager (``model`` itself) without ``shape_buckets`` or off CUDA."""
    buckets = list(shape_buckets or ())
    if not buckets:
        return model, "eager"
    if device.type != "cuda":
        return model, (f"eager with shape buckets {buckets} (CUDA graphs need a CUDA device; "
                       f"{device.type} runs the padded batches eagerly)")
    return _compiled(model, len(buckets)), (f"CUDA graphs: torch.compile(mode='reduce-overhead', dynamic=False), "
                                            f"one graph per shape, shape buckets {buckets}")


# ----------------------------------------------------------------------------- CUDA only
def _compiled(model: torch.nn.Module, n_buckets: int) -> Callable:  # pragma: no cover - needs a CUDA device
    """The model compiled for CUDA-graph replay, one specialisation per batch shape: the buckets,
    and a few more for rows wider than the last bucket (past the limit TorchDynamo runs the
    frame eagerly)."""
    import torch._dynamo

    torch._dynamo.config.recompile_limit = max(int(torch._dynamo.config.recompile_limit), n_buckets + 4)
    return torch.compile(model, mode="reduce-overhead", dynamic=False)


def mark_step(forward: Callable) -> None:
    """Tell torch's CUDA-graph trees that a new training iteration begins (their outputs of the
    previous one may be overwritten); nothing for an eager forward."""
    if forward is not None and hasattr(forward, "_orig_mod"):  # pragma: no cover - compiled: CUDA only
        torch.compiler.cudagraph_mark_step_begin()
