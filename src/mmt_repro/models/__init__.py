"""Models of the five papers, one module per paper, registered by ``<paper>.<system>``.

The modules are imported explicitly so that registration happens on ``import mmt_repro.models``.
The contract every model follows is in :mod:`mmt_repro.models.base`.
"""

from . import deepfuse  # noqa: F401  (registers deepfuse.*)
from . import doubly_attentive  # noqa: F401  (registers doubly_attentive.*)
from . import transformer  # noqa: F401  (registers transformer.nmt, the shared Transformer)
from . import emb_pred  # noqa: F401  (registers emb_pred.*)
from . import visual_agreement  # noqa: F401  (registers visual_agreement.seq2seq*)
from . import visual_agreement_transformer  # noqa: F401  (registers visual_agreement.transformer*)
from . import bertgen  # noqa: F401  (registers bertgen.*)
from .base import MMTModel, Specials, Vocabs, VocabSpec
from .registry import available, build_model, make_config, model_class, register, visual_input

__all__ = ["MMTModel", "Specials", "VocabSpec", "Vocabs", "available", "build_model", "make_config",
           "model_class", "register", "visual_input"]
