"""Splits and languages of the configured datasets, checked when the workflow is planned.

No split or language list of a dataset lives in code. A Multi30k dataset takes its splits
(``datasets.<name>.splits``) and languages (``datasets.<name>.langs``) from the config and
checks them against the files its manifest input declares (:func:`mmt_repro.corpora.multi30k.check_config`);
a grounded dataset takes its splits from the keys of ``datasets.<name>.sizes`` and its languages
from ``datasets.<name>.langs`` (:func:`mmt_repro.grounded.images.check_config`; a grounded video
dataset adds the keys of ``time_shuffled``, :func:`mmt_repro.grounded.video.check_config`). The tables that
read a dataset must name its splits (``test_sets``, ``figure.test_set``) and languages
(``pair``; ``im-<lang>`` captions the images). Every problem is a :class:`~mmt_repro.config.ConfigError` that names the config key
and lists the valid values, raised by ``workflow/rules/common.smk`` before any job runs.
"""

from __future__ import annotations

from ..config import ConfigError
from ..settings import IMAGE_SOURCE

from ..grounded import images as grounded
from ..grounded import video as grounded_video
from . import multi30k
from .manifest import Manifest

#: Dataset sources whose splits and languages this module plans.
SOURCES = ("multi30k", "grounded", "grounded_video")


def dataset_layout(config: dict, manifest: Manifest | None = None) -> dict[str, dict[str, list[str]]]:
    """``{dataset: {"splits": [...], "langs": [...]}}`` of every Multi30k and grounded dataset
    of ``config``, checked (see the module docstring)."""
    layouts: dict[str, dict[str, list[str]]] = {}
    for name, settings in (config.get("datasets") or {}).items():
        if settings.get("source") == "multi30k":
            layouts[name] = multi30k.check_config(name, settings, manifest)
        elif settings.get("source") == "grounded":
            layouts[name] = grounded.check_config(name, settings)
        elif settings.get("source") == "grounded_video":
            layouts[name] = grounded_video.check_config(name, settings)
    check_tables(config, layouts)
    return layouts


def check_tables(config: dict, layouts: dict[str, dict[str, list[str]]]) -> None:
    """Every enabled table on a planned dataset names its splits and languages."""
    for paper, block in (config.get("papers") or {}).items():
        for table, t in (block.get("tables") or {}).items():
            layout = layouts.get(t.get("dataset"))
            if layout is None or not t.get("enabled", True):
                continue
            key, ds = f"papers.{paper}.tables.{table}", f"datasets.{t['dataset']}"
            grounded_source = config["datasets"][t["dataset"]]["source"] in ("grounded", "grounded_video")
            splits_key = "sizes" if grounded_source else "splits"
            named = [(f"{key}.test_sets", s) for s in t.get("test_sets", [])]
            if t.get("figure"):
                named.append((f"{key}.figure.test_set", t["figure"]["test_set"]))
            for where, split in named:
                if split not in layout["splits"]:
                    raise ConfigError(f"{where}: {split!r} is not a split of {ds} ({ds}.{splits_key}); valid values: "
                                      f"{', '.join(layout['splits'])}")
            for lang in str(t.get("pair", "")).split("-"):
                if lang == IMAGE_SOURCE:  # im-<lang>: captioning, the images are the source
                    continue
                if lang and lang not in layout["langs"]:
                    raise ConfigError(f"{key}.pair: language {lang!r} of {t['pair']!r} is not one of {ds}.langs; "
                                      f"valid values: {', '.join(layout['langs'])}")
