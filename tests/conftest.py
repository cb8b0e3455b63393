"""Shared test fixtures (where ../shared/datasets is, tiny parallel corpora) and the test lanes.

Lanes (pytest markers, registered in pyproject.toml):

- ``unit``: one function or model against hand computations (tests/unit, tests/models);
- ``pipeline``: Snakemake planning, data steps and error paths, without training a real model
  (tests/workflow, unless marked otherwise);
- ``e2e``: whole DAG runs that train and decode (the smoke run, the stand-in second paper), and
  every real input through its data stage (extractors on real media, every shared corpus);
- ``slurm``: the reduced DAG through a real single-node SLURM cluster, which doubles as the
  determinism check (byte-identical to the local run).

A test without a lane marker gets one from its folder. ``make test`` runs every lane in one
session on two pytest workers (``--dist loadgroup``): the tests that read the one smoke run form
the group ``smoke_run``, those of the SLURM cluster and its reference run the group ``slurm``, so
each shared run is made once, on one worker. xdist hands out the largest group first, so one
worker starts the smoke run (both cores, ~20 minutes) at once while the other takes the SLURM
tests (mostly waiting for the cluster) and every other test beside it: the cores stay busy
from start to end. ``make test-fast`` runs ``unit`` and ``pipeline`` without the tests marked
``slow`` (over ~10 s idle each: they train, run a DAG stage or a Java scorer), which keeps it
under 3 minutes.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("GOMP_SPINCOUNT", "1000")  # as mmt_repro/__init__.py, for tests importing torch first

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = REPO.parent / "shared" / "datasets"


LANES = ("unit", "pipeline", "e2e", "slurm")
# The session fixtures that make one shared run each (tests/workflow/conftest.py), and the xdist
# group of the tests that use them: one worker makes the run and runs all its readers.
SHARED_RUNS = {"smoke_run": "smoke_run", "slurm_cluster": "slurm", "reduced_local_run": "slurm"}


def xdist_group_of(fixturenames) -> str | None:
    """The xdist group of a test using ``fixturenames`` (None: the test runs anywhere)."""
    groups = {SHARED_RUNS[name] for name in fixturenames if name in SHARED_RUNS}
    if len(groups) > 1:
        raise pytest.UsageError(f"a test reads shared runs of several groups {sorted(groups)}: make them one group")
    return groups.pop() if groups else None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    """Every test is in exactly one lane: its own marker, else its folder's; a test that reads a
    shared run is in that run's xdist group."""
    for item in items:
        marked = [lane for lane in LANES if item.get_closest_marker(lane)]
        if len(marked) > 1:
            raise pytest.UsageError(f"{item.nodeid} is in several lanes {marked}; give it one")
        if not marked:
            folder = Path(str(item.fspath)).resolve().relative_to(REPO / "tests").parts[0]
            item.add_marker(pytest.mark.pipeline if folder == "workflow" else pytest.mark.unit)
        group = xdist_group_of(getattr(item, "fixturenames", ()))
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


def shared_dataset(name: str) -> Path:
    """Path of ../shared/datasets/<name>, or skip the test saying what is missing."""
    path = SHARED_DATASETS / name
    if not path.exists():
        pytest.skip(f"needs the real data set {path} (../shared/datasets/{name} beside the repo); not present")
    return path


@pytest.fixture
def toy_corpus(tmp_path):
    """A tiny copy task with images: target = source words with a colour read off the image."""
    import numpy as np

    from mmt_repro.text.vocab import Vocab

    rng = np.random.default_rng(0)
    words = ["a", "b", "c", "d", "e", "f"]
    colours = ["red", "blue"]
    src, tgt, feats = [], [], []
    for _ in range(64):
        n = int(rng.integers(2, 5))
        s = [words[int(i)] for i in rng.integers(0, len(words), n)]
        c = int(rng.integers(0, 2))
        src.append(" ".join(s))
        tgt.append(" ".join([*s, colours[c]]))
        f = np.zeros((3, 4), dtype=np.float32)
        f[:, c] = 1.0
        feats.append(f)
    d = tmp_path / "toy"
    d.mkdir()
    for name, lines in (("train.src", src), ("train.tgt", tgt), ("val.src", src[:16]), ("val.tgt", tgt[:16])):
        (d / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    Vocab.build([d / "train.src"]).save(d / "src.json")
    Vocab.build([d / "train.tgt"]).save(d / "tgt.json")

    class Store:
        def __init__(self, arr):
            self.arr = arr

        def __len__(self):
            return len(self.arr)

        def __getitem__(self, i):
            return self.arr[i]

    from training_jobs import write_store

    # the same features as files (a feature store each), for training jobs (tests/training_jobs.py)
    stores = {"train": write_store(d, "train", np.stack(feats)), "val": write_store(d, "val", np.stack(feats[:16]))}
    return {"dir": d, "features": Store(np.stack(feats)), "val_features": Store(np.stack(feats[:16])), "stores": stores}


class StandinInputs:
    """Stand-in inputs (mmt_repro.standins) read through the path of the real files: each
    input's stand-in mirror is written once per session (its own folder and stand-in
    manifest), then every file is fetched from that mirror into ``resources/<input>/`` by
    ``fetch_input_file`` (sha256 and line counts checked against the stand-in manifest) and
    each declared archive unpacked by ``unpack_archive``, as rules fetch_input and unpack_input do."""

    def __init__(self, base: Path):
        self.base = base
        self._done: dict[str, dict] = {}

    def __call__(self, name: str) -> dict:
        """``{"resources": resources/<input>/, "mirror": its mirror root, "manifest": the
        manifest with the stand-in one merged, "files": {file: fetched path}, "written": ...}``."""
        if name not in self._done:
            from mmt_repro.corpora.fetch import fetch_input_file
            from mmt_repro.corpora.manifest import load_manifest
            from mmt_repro.corpora.unpack import unpack_archive
            from mmt_repro.standins.mirror import EXTRAS, folder_of, write_mirror

            root = self.base / name / "mirror"
            written = write_mirror(root, inputs=[name], video_seconds=1.0, video_fps=8)
            if name in EXTRAS:  # no manifest input: read where it was written
                self._done[name] = {"mirror": root, "written": written, "folder": root / EXTRAS[name][0]}
                return self._done[name]
            manifest = load_manifest(extra=[written["manifest"]])
            res = self.base / name / "resources"
            files = {}
            for f in manifest.input(name).files.values():
                out = res / name / f.name
                fetch_input_file(name, f.name, out, mirror_root=root, manifest=manifest)
                files[f.name] = out
                if f.unpack:
                    unpack_archive(out, res / name / f.unpack["into"], f.unpack["strip"], f.unpack["expect"])
            self._done[name] = {"resources": res / name, "mirror": root, "manifest": manifest, "files": files,
                                "written": written, "folder": root / folder_of(manifest.input(name))}
        return self._done[name]


@pytest.fixture(scope="session")
def standin(tmp_path_factory):
    """``standin(input)``: that input's stand-in files fetched (and unpacked) from a stand-in
    mirror, written once per session (:class:`StandinInputs`)."""
    return StandinInputs(tmp_path_factory.mktemp("standins"))
