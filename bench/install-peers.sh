#!/usr/bin/env bash
# Installs what bench/suite.py and bench/run.py compare OpenCNTK with: PyTorch 2.13.0 (the CPU
# wheel) and TensorFlow (tensorflow-cpu, with Keras 3), and the Fashion-MNIST
# data set of the mlp_epoch workload (Debian's dataset-fashion-mnist). Safe to
# run repeatedly: what is installed already is left alone. TensorFlow is
# optional: if it cannot be installed the reason is printed and the benchmark
# runs without it.
set -uo pipefail
PY=${PYTHON:-python3}
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
status=0

pip_install() {
  "$PY" -m pip install -q --disable-pip-version-check "$@" 2>&1 | grep -v "Running pip as the 'root' user"
  return "${PIPESTATUS[0]}"
}

if "$PY" -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null; then
  echo "install-peers: PyTorch 2.13.0 is installed"
else
  echo "install-peers: installing torch==2.13.0"
  pip_install "torch==2.13.0" || { echo "install-peers: ERROR: torch==2.13.0 could not be installed" >&2; status=1; }
fi

if "$PY" -c 'import tensorflow, keras' 2>/dev/null; then
  echo "install-peers: TensorFlow is installed"
else
  echo "install-peers: installing tensorflow-cpu"
  if ! pip_install tensorflow-cpu; then
    echo "install-peers: WARNING: tensorflow-cpu could not be installed (see pip's message above);" \
         "bench/run.py runs without TensorFlow and records why" >&2
  fi
fi

if "$PY" -c 'import matplotlib' 2>/dev/null; then
  echo "install-peers: matplotlib is installed"
else
  echo "install-peers: installing matplotlib (the suite's chart)"
  pip_install matplotlib || { echo "install-peers: WARNING: matplotlib could not be installed: no chart" >&2; }
fi

if ! dpkg -s dataset-fashion-mnist >/dev/null 2>&1; then
  echo "install-peers: installing dataset-fashion-mnist"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq dataset-fashion-mnist >/dev/null; } ||
    { echo "install-peers: ERROR: dataset-fashion-mnist could not be installed" >&2; status=1; }
fi
exit $status
