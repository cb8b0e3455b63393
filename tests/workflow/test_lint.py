"""`snakemake --lint` is a static check: it needs no inputs (the preflight reports the missing ones
and goes on) and finds every rule naming the one environment (conda and container)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("configfile", [None, "smoke.yaml"])
def test_lint_is_clean_without_the_inputs(wf, tmp_path, configfile):
    extra = ("--configfile", str(REPO / "config" / configfile)) if configfile else ()
    res = wf.snakemake("--lint", "--directory", str(tmp_path), *extra, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "Congratulations, your workflow is in a good condition!" in out, out[-3000:]
    assert "conda environment" not in out and "Traceback" not in out
    if configfile is None:  # the full configuration: inputs a person must fetch, reported, not fatal
        assert "dry run or lint; a real run stops here" in out and "flickr30k_images" in out
