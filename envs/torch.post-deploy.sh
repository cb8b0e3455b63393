#!/usr/bin/env bash
# Install the mmt-repro package (without its dependencies, which the env file pins) into the
# freshly created conda env. Snakemake runs this from the working directory; set
# MMT_REPRO_SRC when that is not the repository root.
set -euo pipefail
pip install --no-deps "${MMT_REPRO_SRC:-.}"
