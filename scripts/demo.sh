#!/usr/bin/env bash
# The demo: installs OpenCNTK and trains the Fashion-MNIST MLP, printing its test accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
python3 -m pip install -q --disable-pip-version-check . 2>&1 | { grep -v "Running pip as the 'root' user" || true; }
python3 examples/python/fashion_mnist_mlp.py
