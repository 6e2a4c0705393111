#!/usr/bin/env bash
# The demo: installs OpenCNTK and trains a model, printing its result.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
python3 -m pip install -q --disable-pip-version-check . 2>&1 | grep -v "Running pip as the 'root' user" || true
python3 examples/python/logistic_regression.py
