"""Layering: what planning imports never loads torch, and decoding never imports training."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def imported_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True, cwd=REPO).stdout
    return set(out.split())


def test_the_modules_planning_imports_do_not_load_torch():
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    imports = "\n".join(line for line in common.splitlines() if re.match(r"(from mmt_repro\S* import|import mmt_repro)", line))
    assert "mmt_repro.plan" in imports  # the planner, which reads the per-paper settings
    loaded = imported_after(imports)
    assert "mmt_repro.settings" in loaded
    assert "torch" not in loaded, "planning must not import torch (about 3 s for every job re-planning on SLURM)"


def test_decoding_does_not_import_the_trainer():
    loaded = imported_after("import mmt_repro.decode.translate, mmt_repro.decode.loop")
    assert not any(name.startswith("mmt_repro.train") for name in loaded)
    trainer = (REPO / "src" / "mmt_repro" / "train" / "trainer.py").read_text()
    assert "from ..decode.loop import decode_data" in trainer  # one decode loop, used by validation too
