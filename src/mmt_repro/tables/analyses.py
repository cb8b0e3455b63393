"""Analysis tables: numbers other than translation scores, computed per run by a function
registered next to the paper's model (Calixto et al.'s beta shares; later VAD, rare-word F,
probes).

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
:func:`run_analysis` writes them as a score JSON that :func:`mmt_repro.tables.build.make_table`
reads like any other score.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..io import atomic_write
from ..settings import import_model_modules

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


def get_analysis(name: str, imports: list[str] | tuple[str, ...] = ()) -> Analysis:
    import_model_modules(imports)
    if name not in _ANALYSES:
        raise ValueError(f"unknown analysis {name!r}; registered: {', '.join(sorted(_ANALYSES)) or 'none'}")
    return _ANALYSES[name]


def _as_paths(name: str, value):
    """One file as a Path; several (e.g. the k reference files of a captioning test set) as a
    list of Paths; a one-element list (the rule's input lists) as its one Path."""
    if isinstance(value, (str, Path)):
        return Path(value)
    values = [Path(v) for v in value]
    if not values:
        raise ValueError(f"analysis input {name!r} names no file")
    return values[0] if len(values) == 1 else values


def run_analysis(name: str, inputs: str, files: dict, out_json: Path, meta: dict, imports=()) -> dict:
    """Run the analysis ``name`` on ``files`` and write its score JSON (``meta`` + ``scores``)."""
    analysis = get_analysis(name, imports)
    if analysis.inputs != inputs:
        raise ValueError(f"analysis {name} reads {analysis.inputs!r}, the table says inputs: {inputs!r}; "
                         f"set `inputs: {analysis.inputs}` in the table's config")
    scores = analysis.func({k: _as_paths(k, v) for k, v in files.items()})
    result = {"meta": meta, "scores": scores}
    with atomic_write(out_json) as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
    return result
