"""The analysis registry: numbers other than translation scores, computed per run by a function
registered in the paper's module of :mod:`mmt_repro.analyses` (Calixto et al.'s beta shares;
VAD, rare-word F, retrieval, probes), or in a module a paper's settings import (``imports``).

A table of ``kind: analysis`` names ``analysis: <name>`` and what the analysis reads
(``inputs: attention`` -- the greedy per-step dump of :func:`mmt_repro.decode.translate.dump_attention`
--, ``inputs: translation`` -- the translation and its reference --, ``translation_train`` -- those
and the target side of the training corpus, for analyses by training frequency -- or ``inputs:
model`` -- the checkpoint (``checkpoint``), the split's text on both sides in the model's form
(``src``, ``tgt``), the vocabularies (``src_vocab``, ``tgt_vocab``), the features
(``features_npy``, ``features_index``) of multimodal systems and, where the paper has an align
stage, the split's word alignment (``align``); Yang et al.'s VAD force-decodes both directions).
A table's ``files: {name: path}`` adds named inputs. The function registered as
``<paper>.<name>`` gets those files and returns ``{metric: {"value": float, "signature": str}}``;
:func:`mmt_repro.analyses.run.run_analysis` writes them as a score JSON that
:func:`mmt_repro.tables.build.make_table` reads like any other score.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

INPUT_KINDS = ("attention", "translation", "translation_train", "model")


@dataclass(frozen=True)
class Analysis:
    name: str
    inputs: str  # attention | translation
    func: Callable[..., dict]


_ANALYSES: dict[str, Analysis] = {}


def register_analysis(name: str, inputs: str) -> Callable:
    """Decorator: register ``func(files: dict[str, Path]) -> {metric: {value, signature}}`` as
    ``name`` (``<paper>.<analysis>``). ``files`` holds ``attention`` (a dump); ``hyp`` and
    ``ref`` (translation and reference in the scoring form), with ``train`` (the target side of
    the training corpus, same form) for ``translation_train``; or the model's files (see the
    module docstring); and the table's own ``files``."""
    if inputs not in INPUT_KINDS:
        raise ValueError(f"analysis inputs {inputs!r}; valid: {', '.join(INPUT_KINDS)}")

    def wrap(func: Callable) -> Callable:
        if name in _ANALYSES:
            raise ValueError(f"analysis {name!r} registered twice")
        _ANALYSES[name] = Analysis(name, inputs, func)
        return func

    return wrap
