"""The inputs of the data stage (data.smk): corpora fetched, prepared and generated, and their
statistics."""

from __future__ import annotations

from pathlib import Path

from ..config import ConfigError
from ..corpora.fetch import sha256_of
from ..corpora.prepare import SOURCES as CORPUS_SOURCES
from ..corpora.prepare import corpus_plan
from ..corpora.wmt import WMT15_ARCHIVES
from ..io import DataError
from .lookup import Lookup, pattern
from .paths import path


class DataInputs:
    def __init__(self, look: Lookup):
        self.look = look

    # ------------------------------------------------------------------ corpora
    @property
    def manifest_inputs(self) -> str:
        """A wildcard pattern of every manifest input (longest first)."""
        return "|".join(sorted(self.look.manifest, key=len, reverse=True))

    wmt15_archives = list(WMT15_ARCHIVES)

    @property
    def prepared_corpora(self) -> list:
        """Datasets made by mmt_repro.corpora.prepare (one generated rule each, see data.smk)."""
        return [n for n, ds in self.look.config["datasets"].items() if ds["source"] in CORPUS_SOURCES]

    def corpus_plan_of(self, dataset: str):
        """(inputs by role, outputs under results/data/<dataset>/) of a prepared corpus."""
        return corpus_plan(dataset, self.look.dataset_config(dataset), self.look.manifest)

    @property
    def comparable_per_image(self) -> int:
        """Comparable descriptions generated per grounded training image: as many as any paper
        back-translates (Multi30k task 2 has 5 per image)."""
        return max([s.backtranslation.descriptions for s in self.look.settings.values() if s.backtranslation] or [1])

    def grounded_layouts(self, source: str) -> dict:
        """(splits, langs) -> dataset names, of the generated datasets of a source (grounded:
        one rule per layout, since a rule's outputs cannot depend on its wildcards)."""
        layouts = {}
        for name, layout in self.look.layout.items():
            if self.look.dataset_config(name)["source"] == source:
                layouts.setdefault((tuple(layout["splits"]), tuple(layout["langs"])), []).append(name)
        return layouts

    @staticmethod
    def grounded_gold_pairs(langs) -> list:
        """The language pairs the grounded generator writes gold alignments for (langs order)."""
        from ..grounded.images import gold_pairs

        return gold_pairs(langs)

    # Where a checked file is fetched from does not decide its bytes (the manifest's sha256 does):
    # these params are Path objects, which Snakemake leaves out of the params it compares (it
    # compares only what it can represent: strings, numbers, containers), so a new checkout or a
    # moved mirror re-runs no fetch.
    @property
    def mirror_dir(self) -> Path | None:
        """The local mirror of the inputs (`inputs.mirror`), resolved; None when unset."""
        found = self.look.config_path("inputs", "mirror")
        return Path(found) if found else None

    def local_input_dir(self, wildcards) -> Path | None:
        """The per-input local folder (`inputs.local.<input>`), resolved; None when unset."""
        found = self.look.config_path("inputs", "local", wildcards.input)
        return Path(found) if found else None

    def repo_file_source(self, wildcards) -> Path:
        """The repository file a run folder's copy (rule repo_file) is made from (a Path: where
        the checkout is decides nothing, see :attr:`mirror_dir`)."""
        return self.look.repo / wildcards.file

    def repo_file_sha256(self, wildcards) -> str:
        """The sha256 of a repository file a job reads: its copy is redone when it changes."""
        source = self.repo_file_source(wildcards)
        if not source.is_file():
            raise DataError(source, "a job reads this file of the repository and it is missing",
                            "restore it (git checkout -- <file>) or fix the config entry that names it")
        return sha256_of(source)

    # ------------------------------------------------------------------ unpacked archives
    @property
    def unpacked(self) -> dict:
        """``resources/<input>/<into>`` -> (archive, unpack spec): :meth:`Lookup.unpacked`."""
        return self.look.unpacked

    @property
    def unpack_inputs(self) -> str:
        """A wildcard pattern of the manifest inputs that have an archive to unpack."""
        return pattern(folder.split("/")[1] for folder in self.unpacked)

    @property
    def unpack_folders(self) -> str:
        """A wildcard pattern of the folders archives are unpacked into (``unpack.into``)."""
        return pattern(folder.split("/")[2] for folder in self.unpacked)

    def _unpack_of(self, wildcards) -> tuple:
        folder = f"resources/{wildcards.input}/{wildcards.folder}"
        if folder not in self.unpacked:
            raise DataError(self.look.manifest.where, f"no archive of input {wildcards.input!r} is unpacked into "
                            f"{folder}", "declare `unpack: {into: ...}` on the archive's entry in the manifest")
        return self.unpacked[folder]

    def unpack_archive(self, wildcards) -> str:
        """The fetched archive that rule unpack_input unpacks into resources/{input}/{folder}."""
        return self._unpack_of(wildcards)[0]

    def unpack_param(self, key: str):
        """A setting of the archive's ``unpack`` spec (strip, expect)."""
        return lambda wildcards: self._unpack_of(wildcards)[1][key]

    def multi30k_file(self, kind: str):
        """The fetched task 1 file (resources/<input>/...) of the wildcards' split (and language)."""
        from ..corpora import multi30k

        def get(wildcards):
            ds, split = wildcards.dataset, wildcards.split
            key = f"datasets.{ds}"
            if split not in self.look.dataset_splits(ds):
                raise ConfigError(
                    f"{key}.splits: split {split!r} is not configured; valid values: "
                    f"{', '.join(self.look.dataset_splits(ds))} (add it there, and its files to the manifest)"
                )
            inp = self.look.dataset_config(ds).get("input") or multi30k.TASK1_INPUT
            if kind == "image_list":
                return f"resources/{inp}/{multi30k.image_list_file(split)}"
            if wildcards.lang not in self.look.dataset_langs(ds):
                raise ConfigError(
                    f"{key}.langs: language {wildcards.lang!r} is not configured; valid values: "
                    f"{', '.join(self.look.dataset_langs(ds))}"
                )
            return f"resources/{inp}/{multi30k.text_file(split, wildcards.lang)}"

        return get

    # ------------------------------------------------------------------ statistics
    def stats_files(self, wildcards) -> dict:
        return self.look.corpus_text_files(wildcards.dataset)

    def stats_image_lists(self, wildcards) -> dict:
        """split -> image list, for the corpora that have one per split (Multi30k, grounded)."""
        if self.look.dataset_config(wildcards.dataset)["source"] not in ("multi30k", "grounded"):
            return {}
        splits = {key.split("|")[0] for key in self.look.corpus_text_files(wildcards.dataset)}
        return {s: path("image_list", dataset=wildcards.dataset, split=s) for s in sorted(splits)}

    def stats_inputs(self, wildcards) -> list:
        return [*self.stats_files(wildcards).values(), *self.stats_image_lists(wildcards).values()]

    def stats_train_split(self, wildcards) -> str:
        return self.look.dataset_config(wildcards.dataset).get("train", "train")

    def stats_targets(self) -> list:
        return [path("corpus_stats", dataset=ds) for ds in self.look.config["data"]["corpora"]]
