"""mmt-repro: reproducible multimodal machine translation.

All real logic of the workflow lives in this package; Snakemake rules call it through thin
scripts under ``workflow/scripts`` and users can call it by hand with ``python -m mmt_repro``.
"""

import os

# OpenMP threads that wait for work spin for only ~1,000 polls, then sleep. With libgomp's
# default (300,000 polls) or ACTIVE, a torch job sharing the machine with one other CPU-bound
# process trained 3-3.5x slower than idle (the issue measured up to 20-50x on a loaded
# workflow); with this it stays near 2x, and idle speed is kept (PASSIVE, no spinning at all,
# costs ~20 % idle). benchmarks/bench_load.py measures all of them. libgomp reads these once,
# when torch loads it, so they are set here, before any module imports torch. Values the user
# exported win (OMP_WAIT_POLICY=PASSIVE for nodes that are always oversubscribed).
os.environ.setdefault("GOMP_SPINCOUNT", "1000")

__version__ = "0.1.0"
