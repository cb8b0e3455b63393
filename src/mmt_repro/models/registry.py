"""Model registry: every paper's model is registered under ``<paper>.<system>``.

A model class declares a dataclass config; :func:`make_config` builds it from a plain dict and
rejects unknown keys by listing the valid ones, so a typo in ``config/papers/*.yaml`` or in a
smoke override stops the run instead of being silently ignored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch.nn as nn

_REGISTRY: dict[str, tuple[type[nn.Module], type]] = {}


def register(name: str, config_cls: type) -> Callable[[type[nn.Module]], type[nn.Module]]:
    """Class decorator: register ``cls`` (built as ``cls(config, src_vocab, tgt_vocab)``)."""

    def wrap(cls: type[nn.Module]) -> type[nn.Module]:
        if name in _REGISTRY:
            raise ValueError(f"model {name!r} registered twice")
        _REGISTRY[name] = (cls, config_cls)
        cls.registry_name = name
        return cls

    return wrap


def available() -> list[str]:
    return sorted(_REGISTRY)


def _lookup(name: str) -> tuple[type[nn.Module], type]:
    if name not in _REGISTRY:
        raise ValueError(f"unknown model {name!r}; valid models: {', '.join(available())}")
    return _REGISTRY[name]


def make_config(name: str, values: dict[str, Any] | None = None):
    """The dataclass config of model ``name`` with ``values`` applied; unknown keys raise."""
    _, config_cls = _lookup(name)
    values = dict(values or {})
    fields = {f.name for f in dataclasses.fields(config_cls)}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ValueError(
            f"unknown config key(s) {unknown} for model {name!r}; valid keys: {', '.join(sorted(fields))}"
        )
    return config_cls(**values)


def build_model(name: str, config: dict[str, Any] | Any, src_vocab_size: int, tgt_vocab_size: int) -> nn.Module:
    """Instantiate a registered model from a config dict (or dataclass) and vocabulary sizes."""
    cls, config_cls = _lookup(name)
    if not isinstance(config, config_cls):
        config = make_config(name, config)
    return cls(config, src_vocab_size, tgt_vocab_size)


def is_multimodal(name: str) -> bool:
    """Whether model ``name`` reads image (or video) features."""
    cls, _ = _lookup(name)
    return bool(getattr(cls, "use_image", False))
