"""benchmarks/peer/bench_peer.py prints CPU use (CPU seconds / wall / threads) beside each rate,
so that its ratios can be compared across machines of one type (issue 23)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_peer", REPO / "benchmarks" / "peer" / "bench_peer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cpu_use_of_a_busy_and_an_idle_process(tmp_path):
    bench = _bench()
    busy = bench.run([sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.8: pass"],
                     tmp_path / "busy.log", threads=1)
    idle = bench.run([sys.executable, "-c", "import time; time.sleep(0.8)"], tmp_path / "idle.log", threads=1)
    assert busy["cpu_s"] >= 0.8 and busy["cpu_s"] <= busy["wall_s"] + 0.2
    assert busy["cpu_use"] > 2 * idle["cpu_use"] and idle["cpu_use"] < 0.5
    # the same process on "two threads" uses half of what it was given
    two = bench.run([sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.8: pass"],
                    tmp_path / "two.log", threads=2)
    assert two["cpu_use"] <= 0.6
    labels = [label for label, _, _ in bench.rows_for([1, 5], "gru")]
    assert "training CPU use" in labels and "greedy decoding CPU use" in labels and "beam-5 decoding CPU use" in labels
