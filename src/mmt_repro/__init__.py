"""mmt-repro: reproducible multimodal machine translation.

All real logic of the workflow lives in this package; Snakemake rules call it through thin
scripts under ``workflow/scripts`` and users can call it by hand with ``python -m mmt_repro``.
"""

__version__ = "0.1.0"
