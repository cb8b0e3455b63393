"""run_step's thread setting: torch gets the rule's threads, and steps that never use torch
do not pay for importing it."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from mmt_repro.runtime import set_threads
set_threads(1)
print("torch imported:", "torch" in sys.modules)
import torch
print("threads after a later import:", torch.get_num_threads())
set_threads(2)
print("threads when already imported:", torch.get_num_threads())
"""


def test_threads_reach_torch_without_importing_it_for_every_step():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["torch imported: False", "threads after a later import: 1", "threads when already imported: 2"]
