"""Running one analysis of a table of ``kind: analysis`` (:mod:`mmt_repro.analyses.registry`
says what an analysis reads and returns): :func:`run_analysis` looks it up among the package's
analyses and those of the modules a paper imports, and writes its scores as a score JSON that
:func:`mmt_repro.tables.build.make_table` reads like any other score.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

from ..io import atomic_write
from ..settings import import_model_modules
from . import commute, deepfuse, doubly_attentive, emb_pred, visual_agreement  # noqa: F401  (register their analyses)
from .registry import _ANALYSES, Analysis


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


def run_analysis(name: str, inputs: str, files: dict, out_json: Path, meta: dict, imports=(),
                 options: dict | None = None) -> dict:
    """Run the analysis ``name`` on ``files`` (with the table's ``options`` as keywords) and
    write its score JSON (``meta`` + ``scores``)."""
    analysis = get_analysis(name, imports)
    if analysis.inputs != inputs:
        raise ValueError(f"analysis {name} reads {analysis.inputs!r}, the table says inputs: {inputs!r}; "
                         f"set `inputs: {analysis.inputs}` in the table's config")
    options = dict(options or {})
    if options:
        accepted = set(inspect.signature(analysis.func).parameters) - {"files"}
        unknown = sorted(set(options) - accepted)
        if unknown:
            raise ValueError(f"analysis {name} takes no options {unknown} (it takes {sorted(accepted) or 'none'}); "
                             "fix the table's `options` in the config")
    scores = analysis.func({k: _as_paths(k, v) for k, v in files.items()}, **options)
    result = {"meta": meta, "scores": scores}
    with atomic_write(out_json) as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
    return result
