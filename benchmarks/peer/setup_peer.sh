#!/usr/bin/env bash
# Install the peer toolkit, JoeyNMT 2.3.0, into a virtual environment of its own (never ours):
#   benchmarks/peer/setup_peer.sh            # -> .venv-peer/ (PEER_VENV to put it elsewhere)
# The peer gets the same torch build as ours (the pin in pyproject.toml), so that the benchmark
# compares toolkits, not torch builds. Safe to re-run: a stamp file skips a finished install.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
PEER_VENV=${PEER_VENV:-.venv-peer}
STAMP="$PEER_VENV/.installed-joeynmt-2.3.0"
if [ -f "$STAMP" ]; then
    exit 0
fi
TORCH_PIN=$(grep -o '"torch==[^"]*"' pyproject.toml | tr -d '"')
if [ -z "$TORCH_PIN" ]; then
    echo "setup_peer.sh: no torch==... pin found in pyproject.toml" >&2
    exit 1
fi
"$PYTHON" -m venv "$PEER_VENV"
"$PEER_VENV/bin/python" -m pip install --quiet --upgrade pip
"$PEER_VENV/bin/python" -m pip install --quiet "$TORCH_PIN"
# JoeyNMT 2.3.0 imports importlib_metadata but does not declare it: it fails at import without it.
"$PEER_VENV/bin/python" -m pip install --quiet "joeynmt==2.3.0" importlib_metadata
"$PEER_VENV/bin/python" -c "import joeynmt, torch; print('peer installed: joeynmt', joeynmt.__version__, 'torch', torch.__version__)"
touch "$STAMP"
