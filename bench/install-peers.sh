#!/usr/bin/env bash
# Installs what bench/suite.py and bench/run.py compare OpenCNTK with, at pinned versions, in a
# virtual environment of their own (build/bench-venv, or $BENCH_VENV):
#   torch 2.13.0 (the CPU wheel), tensorflow-cpu 2.21.0, keras 3.15.1, and matplotlib for the chart;
# and the Fashion-MNIST data set (Debian's dataset-fashion-mnist).
#
# Why a venv: TensorFlow 2.21 needs Keras 3, while tests/python runs Keras 2.3.1 (the last Keras with
# a CNTK backend) from the system's site-packages; installing the peers there would replace it. The
# venv sees the system's site-packages (NumPy, and OpenCNTK when `pip install .` put it there), and
# its own packages come first. bench/suite.py re-runs itself under the venv's Python when it exists.
#
# Safe to run repeatedly: a package already at its pinned version is left alone.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
VENV=${BENCH_VENV:-$ROOT/build/bench-venv}
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
status=0
# The pins; bench/suite.py records the versions it finds, and warns when they differ from these.
PINS=("torch==2.13.0" "tensorflow-cpu==2.21.0" "keras==3.15.1")

if [ ! -x "$VENV/bin/python" ]; then
  echo "install-peers: creating $VENV (with the system's site-packages visible)"
  "$PY" -m venv --system-site-packages "$VENV" || { echo "install-peers: ERROR: could not create $VENV" >&2; exit 1; }
fi
VPY="$VENV/bin/python"

pip_install() {
  "$VPY" -m pip install -q --disable-pip-version-check "$@" 2>&1 | grep -v "Running pip as the 'root' user\|is ignored: it is neither"
  return "${PIPESTATUS[0]}"
}

installed_version() {  # the version pip's metadata gives for $1 inside the venv, or nothing
  "$VPY" -c 'import importlib.metadata as m, sys
try: print(m.version(sys.argv[1]).split("+")[0])
except m.PackageNotFoundError: pass' "$1" 2>/dev/null
}

missing=()
for pin in "${PINS[@]}"; do
  name=${pin%%==*} want=${pin##*==}
  have=$(installed_version "$name")
  if [ "$have" = "$want" ]; then
    echo "install-peers: $name $want is installed"
  else
    echo "install-peers: installing $pin${have:+ (found $have)}"
    missing+=("$pin")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  # All pins in one resolution: tensorflow-cpu would otherwise pull the newest Keras.
  pip_install "${PINS[@]}" || { echo "install-peers: ERROR: ${PINS[*]} could not be installed" >&2; status=1; }
fi

if "$VPY" -c 'import matplotlib' 2>/dev/null; then
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
