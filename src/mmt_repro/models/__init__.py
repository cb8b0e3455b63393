"""Models of the five papers, one module per paper, registered by ``<paper>.<system>``.

The modules are imported explicitly so that registration happens on ``import mmt_repro.models``.
"""

from . import doubly_attentive  # noqa: F401  (registers doubly_attentive.*)
from .registry import available, build_model, is_multimodal, make_config, register

__all__ = ["available", "build_model", "is_multimodal", "make_config", "register"]
