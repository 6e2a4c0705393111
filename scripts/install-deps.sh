#!/usr/bin/env bash
# Installs what building and testing OpenCNTK needs on Debian 12: compilers and
# libraries from Debian, Python packages from PyPI. Safe to run repeatedly.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
pkgs="build-essential cmake ninja-build libdnnl-dev libgtest-dev dataset-fashion-mnist"
pkgs="$pkgs libpng-dev libjpeg-dev"  # image deserializer: PNG and JPEG (libjpeg-turbo) decoding
pkgs="$pkgs libprotobuf-dev protobuf-compiler"  # CNTK v2 model files (src/serialize)
pkgs="$pkgs clang libomp-14-dev"  # libFuzzer targets (make fuzz-model)
pkgs="$pkgs clang-format-14"  # the C/C++ style check (scripts/format.sh)
pkgs="$pkgs openmpi-bin libopenmpi-dev"  # distributed training (src/distributed): MPI
pkgs="$pkgs mono-mcs mono-runtime libmono-system-core4.0-cil libmono-system-drawing4.0-cil"  # the C# API (bindings/csharp): compiler, runtime, System.Core; System.Drawing for CNTK's C# evaluation examples
missing=""
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
# protobuf and Pillow: cntk.contrib's Caffe converter reads prototxt; its deeprl agents resize images.
# pytest-timeout: CNTK's own test suite runs with a per-test time limit (tests/compat/check.py).
python3 -m pip install -q --disable-pip-version-check "numpy>=1.24" "scipy>=1.9" "pytest>=7" "nanobind>=2.0" \
  "scikit-build-core>=0.8" tensorboard pytest-timeout protobuf Pillow 2>&1 | grep -v "Running pip as the 'root' user" || true
# ONNX (src/onnx): the onnx package (checker, ONNX's backend node tests, its reference evaluator) and ONNX
# Runtime check what OpenCNTK writes and reads; tabulate is imported by ONNX's backend-test report plugin.
python3 -m pip install -q --disable-pip-version-check "onnx==1.23.2" "onnxruntime==1.32.0" tabulate 2>&1 |
  grep -v "Running pip as the 'root' user\|is ignored: it is neither" || true
# PyTorch (CPU) in the main interpreter: tests/python/test_onnx_nn.py reads models torch.onnx.export writes;
# onnxscript is its newer exporter's (dynamo=True, dynamic_shapes) dependency.
python3 -m pip install -q --disable-pip-version-check "torch==2.13.0" "onnxscript==0.7.2" 2>&1 |
  grep -v "Running pip as the 'root' user\|is ignored: it is neither" || true
# Keras 2.3.1, the last Keras with a CNTK backend: tests/python/test_keras_*.py run it on OpenCNTK
# (with cntk.keras_compat). It pulls h5py, keras-applications, keras-preprocessing; no TensorFlow.
# pandas and flaky: Keras' own test modules import them (tests/keras_suite runs some in CI).
python3 -m pip install -q --disable-pip-version-check "keras==2.3.1" pandas flaky 2>&1 |
  grep -v "Running pip as the 'root' user\|is ignored: it is neither" || true
# The benchmark suite's pinned peers (torch, tensorflow-cpu, Keras 3) in a venv of their own (build/bench-venv),
# where Keras 3 does not replace the Keras 2.3.1 above; tests/python/test_bench_suite.py runs the suite's
# equivalence check with them.
bash "$(dirname "$0")/../bench/install-peers.sh" >/dev/null ||
  echo "install-deps: WARNING: the benchmark peers could not be installed (bench/install-peers.sh)" >&2
