"""Model registry: every paper's model is registered under ``<paper>.<system>``.

A model class (a :class:`~mmt_repro.models.base.MMTModel`) declares a dataclass config;
:func:`make_config` builds it from a plain dict and rejects unknown keys by listing the valid
ones, so a typo in ``config/papers/*.yaml`` or in a smoke override stops the run instead of being
silently ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import make_dataclass_config
from .base import MMTModel, Vocabs

_REGISTRY: dict[str, tuple[type[MMTModel], type]] = {}


def register(name: str, config_cls: type) -> Callable[[type[MMTModel]], type[MMTModel]]:
    """Class decorator: register ``cls`` (built as ``cls(config, vocabs, resources)``)."""

    def wrap(cls: type[MMTModel]) -> type[MMTModel]:
        if name in _REGISTRY:
            raise ValueError(f"model {name!r} registered twice")
        if not issubclass(cls, MMTModel):
            raise TypeError(f"{cls.__name__} must subclass mmt_repro.models.base.MMTModel")
        _REGISTRY[name] = (cls, config_cls)
        cls.registry_name = name
        return cls

    return wrap


def available() -> list[str]:
    return sorted(_REGISTRY)


def _lookup(name: str) -> tuple[type[MMTModel], type]:
    if name not in _REGISTRY:
        raise ValueError(f"unknown model {name!r}; valid models: {', '.join(available())}")
    return _REGISTRY[name]


def model_class(name: str) -> type[MMTModel]:
    return _lookup(name)[0]


def make_config(name: str, values: dict[str, Any] | None = None):
    """The dataclass config of model ``name`` with ``values`` applied; unknown keys raise."""
    _, config_cls = _lookup(name)
    return make_dataclass_config(config_cls, values, f"model config ({name})")


def build_model(name: str, config: dict[str, Any] | Any, vocabs: Vocabs,
                resources: dict[str, Path] | None = None) -> MMTModel:
    """Instantiate a registered model from its config (dict or dataclass), the vocabularies and
    the resources (pretrained vectors or weights) the system declares."""
    cls, config_cls = _lookup(name)
    if not isinstance(config, config_cls):
        config = make_config(name, config)
    return cls(config, vocabs, resources)


def visual_input(name: str) -> str:
    """What model ``name`` reads besides text: none, grid, regions or video."""
    return model_class(name).visual
