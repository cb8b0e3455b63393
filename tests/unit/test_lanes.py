"""The test session's layout (tests/conftest.py): which shared run a test reads decides its
xdist group, and the smoke run's group is the one xdist hands out first."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _root_conftest():
    spec = importlib.util.spec_from_file_location("mmt_root_conftest", REPO / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_test_is_grouped_by_the_shared_run_it_reads():
    group_of = _root_conftest().xdist_group_of
    assert group_of(["tmp_path", "smoke_run", "wf"]) == "smoke_run"
    assert group_of(["wf", "slurm_run", "slurm_cluster"]) == "slurm"
    assert group_of(["reduced_local_run", "slurm_cluster"]) == "slurm"
    assert group_of(["tmp_path", "toy_corpus"]) is None
    with pytest.raises(pytest.UsageError, match="several groups"):
        group_of(["smoke_run", "reduced_local_run"])


@pytest.fixture
def smoke_run():
    """A stand-in of tests/workflow's session fixture of this name: the name alone decides the group."""
    return None


def test_a_shared_runs_reader_carries_its_group_in_its_xdist_id(smoke_run, request):
    if not os.environ.get("PYTEST_XDIST_WORKER") or not request.config.getvalue("loadgroup"):
        pytest.skip("checks a worker of `pytest -n N --dist loadgroup` (make test; the next test runs it so)")
    assert request.node.nodeid.endswith("@smoke_run"), request.node.nodeid


@pytest.mark.slow
def test_xdist_puts_the_group_into_the_test_id():
    # without the group in the id, xdist's loadgroup schedules the readers of one shared run on
    # every worker, and each worker makes the run (pytest 9.2 with pytest-xdist 3.8 did)
    name = "tests/unit/test_lanes.py::test_a_shared_runs_reader_carries_its_group_in_its_xdist_id"
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "1", "--dist", "loadgroup", "-p", "no:cacheprovider",
                          name], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "1 passed" in res.stdout, res.stdout[-3000:] + res.stderr[-2000:]


def test_make_test_runs_every_lane_in_one_loadgroup_session():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^test: .*\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    assert recipe.count("\n") == 1, recipe  # one pytest session
    assert "$(FAST_LANES) --dist loadgroup" in recipe and " -m " not in recipe, recipe
    assert re.search(r"^FAST_LANES = .*pytest -q -n 2$", makefile, re.MULTILINE)


PLUGIN = '''
import json

def pytest_collection_finish(session):
    groups = {}
    for item in session.items:
        mark = item.get_closest_marker("xdist_group")
        groups[item.nodeid] = mark.args[0] if mark else None
    with open(OUT, "w") as f:
        json.dump(groups, f)
'''


@pytest.mark.slow
def test_the_smoke_runs_group_is_handed_out_first(tmp_path):
    # xdist's loadgroup orders the work units by size, largest first: the smoke run's readers
    # must stay the largest group, or the smoke run (the session's long pole) starts late. The
    # shared runs' fixtures live in tests/workflow/conftest.py: only tests there can read them.
    out = tmp_path / "groups.json"
    (tmp_path / "groups_plugin.py").write_text(f"OUT = {str(out)!r}\n" + PLUGIN, encoding="utf-8")
    res = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "groups_plugin", "tests/workflow"],
                         cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    groups = json.loads(out.read_text(encoding="utf-8"))
    sizes = Counter(g for g in groups.values() if g)
    assert set(sizes) == {"smoke_run", "slurm"}, sizes
    assert sizes["smoke_run"] > sizes["slurm"] > 1, sizes
    smoke = {n for n, g in groups.items() if g == "smoke_run"}
    assert "tests/workflow/test_workflow.py::test_smoke_all_tsv_has_the_expected_rows" in smoke
    slurm = {n for n, g in groups.items() if g == "slurm"}
    assert "tests/workflow/test_slurm.py::test_slurm_run_is_byte_identical_to_the_local_run" in slurm
