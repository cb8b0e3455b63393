"""The manifest of every external input (``config/manifest.yaml``), loaded and checked.

The manifest is the one place that knows where an input comes from: its URLs, the folder a
local mirror keeps it in, the sha256 and line count of each file, its licence, and whether a
script may fetch it at all (``access: download``) or a person has to ask for it
(``request``) or click through a page (``manual``). Rules ask :func:`load_manifest` and
:func:`mmt_repro.corpora.fetch.fetch_input_file`; nothing else in the package holds a URL of an
input that the manifest declares.

File layout of an entry (see the comment at the top of the manifest)::

    inputs:
      multi30k_task1:
        title: ...; papers: [...]; access: download; licence: ...; homepage: ...
        urls: [base URL, ...]        # a file's name is appended
        mirror_dir: multi30k/task1   # under the mirror root `inputs.mirror`
        files:
          raw/train.en.gz: {sha256: <hex>|null, lines: 29000}
          release.tar.bz2: {sha256: null, md5: <hex>}   # md5: where a publisher lists only that
          some.tgz: {urls: [full URL, ...], sha256: null}
          feats.zip: {sha256: null, unpack: {into: feats, strip: feats/, expect: "*.npy"}}
                                     # unpacked by rule unpack_input into resources/<input>/feats/

A run may add to it without editing the repository's file: the config key
``inputs.manifest_extra`` lists further manifest files (same layout) merged on top of
``config/manifest.yaml`` (:func:`load_manifest` with ``config=``). An entry that names an input
already declared adds files to it (and replaces any other field it gives); a new input must be
complete. This is how a released test set or a language that the repository does not know yet
is declared (docs/data.md, "Adding a test set or a language pair through config alone").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import yaml

from ..io import DataError

MANIFEST = Path(__file__).resolve().parents[3] / "config" / "manifest.yaml"
ACCESS = ("download", "request", "manual")
#: The config key listing extra manifest files, merged on top of config/manifest.yaml.
EXTRA_KEY = "inputs.manifest_extra"

_FILE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "sha256": {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"},
        "md5": {"type": ["string", "null"], "pattern": "^[0-9a-f]{32}$"},
        "lines": {"type": "integer", "minimum": 0},
        "urls": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "unpack": {
            "type": "object",
            "additionalProperties": False,
            "required": ["into"],
            "properties": {
                "into": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$"},
                "strip": {"type": "string"},
                "expect": {"type": "string"},
            },
        },
    },
}
_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["inputs"],
    "properties": {
        "inputs": {
            "type": "object",
            "propertyNames": {"pattern": "^[a-z0-9_]+$"},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["title", "papers", "access", "licence", "homepage"],
                "properties": {
                    "title": {"type": "string"},
                    "papers": {"type": "array", "items": {"enum": [
                        "doubly_attentive", "emb_pred", "visual_agreement", "bertgen", "deepfuse"]}},
                    "access": {"enum": list(ACCESS)},
                    "form": {"enum": ["raw", "prepared"]},
                    "licence": {"type": "string"},
                    "homepage": {"type": "string"},
                    "note": {"type": "string"},
                    "urls": {"type": "array", "items": {"type": "string"}},
                    "mirror_dir": {"type": "string"},
                    "request": {"type": "string"},
                    "config_key": {"type": "string"},
                    "files": {"type": "object", "additionalProperties": _FILE_SCHEMA},
                },
            },
        }
    },
}


@dataclass(frozen=True)
class InputFile:
    """One file of an input: where to get it and what it must be."""

    input: str
    name: str
    urls: tuple[str, ...]
    sha256: str | None = None
    lines: int | None = None
    #: an archive unpacked by rule unpack_input into resources/<input>/<into>/: the members under
    #: ``strip`` (prefix removed), at least one matching ``expect`` (corpora.unpack)
    unpack: dict | None = field(default=None, hash=False)
    #: the md5 a publisher lists (e.g. Zenodo), checked by the fetch where no sha256 is known
    md5: str | None = None


@dataclass(frozen=True)
class Input:
    """One declared input of the manifest."""

    name: str
    title: str
    papers: tuple[str, ...]
    access: str
    licence: str
    homepage: str
    form: str = "raw"
    note: str = ""
    mirror_dir: str | None = None
    request: str = ""
    config_key: str = ""
    files: dict[str, InputFile] = field(default_factory=dict)

    def file(self, name: str) -> InputFile:
        """The declared file ``name``; an undeclared name is an error listing the valid ones."""
        if name not in self.files:
            raise DataError(
                MANIFEST,
                f"input {self.name!r} declares no file {name!r}; it declares: {', '.join(sorted(self.files)) or 'none'}",
                "use a declared file name, or add the file (with its sha256) to config/manifest.yaml",
            )
        return self.files[name]


class Manifest(dict):
    """``{name: Input}`` with a lookup that names the valid inputs on a typo."""

    path: Path = MANIFEST
    extra: tuple[Path, ...] = ()

    @property
    def where(self) -> str:
        """The manifest file(s) this was read from, for messages."""
        return " + ".join(str(p) for p in (self.path, *self.extra))

    def input(self, name: str) -> Input:
        if name not in self:
            raise DataError(self.where, f"no input named {name!r}; declared inputs: {', '.join(sorted(self))}",
                            "use one of the declared names, or declare the input in the manifest")
        return self[name]


def _merge(raw: dict, extra: dict, path: Path) -> dict:
    """``raw`` with the inputs of an extra manifest merged in: files are added to an input
    already declared (its other fields are replaced where given); new inputs are added whole."""
    if not isinstance(extra, dict) or not isinstance(extra.get("inputs"), dict) or set(extra) - {"inputs"}:
        raise DataError(path, "an extra manifest must hold one mapping `inputs: {<input>: {...}}`",
                        "use the layout of config/manifest.yaml (an existing input may give `files` only)")
    out = {**raw, "inputs": dict(raw["inputs"])}
    for name, entry in extra["inputs"].items():
        if name in out["inputs"] and isinstance(entry, dict):
            merged = {**out["inputs"][name], **{k: v for k, v in entry.items() if k != "files"}}
            merged["files"] = {**(out["inputs"][name].get("files") or {}), **(entry.get("files") or {})}
            out["inputs"][name] = merged
        else:
            out["inputs"][name] = entry
    return out


def _parse(path: Path, raw: dict, where: str | None = None) -> Manifest:
    where = where or str(path)
    validator = jsonschema.Draft202012Validator(_SCHEMA)
    problems = [f"{'.'.join(map(str, e.absolute_path)) or '<top>'}: {e.message}" for e in validator.iter_errors(raw)]
    if problems:
        raise DataError(where, "invalid manifest:\n  - " + "\n  - ".join(problems),
                        "fix the entries named above (the file's opening comment lists the fields)")
    manifest = Manifest()
    manifest.path = path
    for name, entry in raw["inputs"].items():
        files = {}
        for fname, spec in (entry.get("files") or {}).items():
            urls = tuple(spec.get("urls") or (f"{base.rstrip('/')}/{fname}" for base in entry.get("urls", [])))
            unpack = spec.get("unpack")
            if unpack is not None:
                unpack = {"into": unpack["into"], "strip": unpack.get("strip", ""), "expect": unpack.get("expect", "*")}
            files[fname] = InputFile(name, fname, urls, spec.get("sha256"), spec.get("lines"), unpack, spec.get("md5"))
        intos = [f.unpack["into"] for f in files.values() if f.unpack]
        clash = sorted({i for i in intos if intos.count(i) > 1} | {i for i in intos if i in files})
        if clash:
            raise DataError(where, f"input {name!r} unpacks into {', '.join(clash)} twice, or over one of its files",
                            "give each archive's `unpack.into` a folder name of its own")
        if entry["access"] == "download" and not files:
            raise DataError(where, f"input {name!r} is downloadable but declares no files", "list its files under `files`")
        if entry["access"] != "download" and not (entry.get("request") and entry.get("config_key")):
            raise DataError(where, f"input {name!r} is {entry['access']}-only but lacks `request` or `config_key`",
                            "say where to get it (`request`) and which config key takes its local path (`config_key`)")
        for fname, spec in files.items():
            if entry["access"] == "download" and not spec.urls:
                raise DataError(where, f"file {fname!r} of input {name!r} has no URL", "give the input `urls` or the file `urls`")
        manifest[name] = Input(
            name=name, title=entry["title"], papers=tuple(entry["papers"]), access=entry["access"],
            licence=entry["licence"], homepage=entry["homepage"], form=entry.get("form", "raw"),
            note=entry.get("note", ""), mirror_dir=entry.get("mirror_dir"), request=entry.get("request", ""),
            config_key=entry.get("config_key", ""), files=files,
        )
    return manifest


def _read_yaml(path: Path) -> dict:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise DataError(path, f"not valid YAML: {err}", "fix the syntax") from err


@functools.lru_cache(maxsize=8)
def _load_cached(files: tuple[tuple[str, int], ...]) -> Manifest:
    path, *extra = (Path(f) for f, _ in files)
    raw = _read_yaml(path)
    for extra_path in extra:
        if not isinstance(raw, dict) or not isinstance(raw.get("inputs"), dict):
            break  # _parse reports the main file's problem
        raw = _merge(raw, _read_yaml(extra_path), extra_path)
    manifest = _parse(path, raw, where=" + ".join(f for f, _ in files))
    manifest.path, manifest.extra = path, tuple(extra)
    return manifest


def extra_manifests(config: dict | None, repo: str | Path | None = None) -> list[Path]:
    """The files of ``inputs.manifest_extra`` in ``config``, resolved against ``repo`` (the
    repository, i.e. the folder holding config/) unless absolute."""
    repo = Path(repo) if repo is not None else MANIFEST.parents[1]
    extra = ((config or {}).get("inputs") or {}).get("manifest_extra") or []
    if isinstance(extra, (str, Path)):
        extra = [extra]
    paths = [Path(p) if Path(p).is_absolute() else repo / p for p in extra]
    for p in paths:
        if not p.is_file():
            raise DataError(p, f"the extra manifest listed in `{EXTRA_KEY}` does not exist",
                            f"fix the path in `{EXTRA_KEY}` (relative paths are relative to the repository)")
    return paths


def load_manifest(path: str | Path = MANIFEST, extra: list[str | Path] | tuple = (), config: dict | None = None) -> Manifest:
    """Load and check the manifest; an unknown field, a malformed sha256 or a request-only
    input without instructions is a :class:`DataError` naming the entry.

    ``extra`` manifest files, and those that ``config`` lists under ``inputs.manifest_extra``
    (relative to the repository that holds ``path``'s config/ folder), are merged on top."""
    path = Path(path).resolve()
    if not path.is_file():
        raise DataError(path, "the input manifest does not exist", "restore config/manifest.yaml from the repository")
    files = [path, *(Path(p).resolve() for p in extra)]
    if config is not None:
        files += [p.resolve() for p in extra_manifests(config, path.parents[1])]
    return _load_cached(tuple((str(p), p.stat().st_mtime_ns) for p in files))


def manifest_table(manifest: Manifest) -> list[dict]:
    """One row per declared file (request-only inputs: one row), for docs and listings."""
    rows = []
    for inp in manifest.values():
        base = {"input": inp.name, "access": inp.access, "form": inp.form, "papers": ",".join(inp.papers),
                "licence": inp.licence}
        if not inp.files:
            rows.append({**base, "file": "", "sha256": "", "url": inp.request})
        for f in inp.files.values():
            rows.append({**base, "file": f.name, "sha256": f.sha256 or "unknown", "url": f.urls[0] if f.urls else ""})
    return rows
