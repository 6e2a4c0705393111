"""The benchmark suite's own machinery (bench/suite.py): its statistics, where its workers import OpenCNTK
from, and its equivalence check, which must pass on the small workloads and fail when a peer's update
differs. The check needs the pinned peers (bash bench/install-peers.sh, which scripts/install-deps.sh runs);
it is skipped without them."""
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, 'bench')
sys.path.insert(0, BENCH)
import suite  # noqa: E402


def peers_python():
    """The interpreter the suite runs under when the peers are installed, else None."""
    venv = os.environ.get('BENCH_VENV', os.path.join(ROOT, 'build', 'bench-venv'))
    for py in (os.path.join(venv, 'bin', 'python'), sys.executable):
        if os.path.exists(py) and subprocess.run([py, '-c', 'import torch, tensorflow, keras'],
                                                 capture_output=True).returncode == 0:
            return py
    return None


def test_bootstrap_interval_holds_the_median_and_narrows_with_more_samples():
    rng = np.random.default_rng(3)
    few = list(1.0 + 0.1 * rng.standard_normal(6))
    many = list(1.0 + 0.1 * rng.standard_normal(200))
    for xs in (few, many):
        lo, hi = suite.median_ci(xs)
        assert lo <= suite.median(xs) <= hi
    assert suite.half_width(many) < suite.half_width(few)
    assert suite.half_width(many) < 0.05
    # The ratio of two samples around 2 and 1: its interval holds 2 and is below 1 for the reverse.
    a, b = [2.0 + 0.01 * v for v in rng.standard_normal(20)], [1.0 + 0.01 * v for v in rng.standard_normal(20)]
    lo, hi = suite.ratio_ci(a, b)
    assert lo < 2.0 < hi and hi < 2.1
    assert suite.ratio_ci(b, a)[1] < 1


def test_compare_losses_finds_the_worst_step():
    assert suite.compare_losses([1.0, 2.0, 4.0], [1.0, 2.02, 4.0], 1e-3) == (pytest.approx(0.01), 1)
    assert suite.compare_losses([1.0], [float('nan')], 1e-3)[0] == float('inf')


def test_workers_import_the_installed_package_without_an_inplace_build(monkeypatch):
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join([os.path.join(ROOT, 'python'), '/elsewhere']))
    monkeypatch.setattr(suite, 'inplace_python_dir', lambda: None)
    path = suite.worker_env('passive')['PYTHONPATH'].split(os.pathsep)
    assert os.path.join(ROOT, 'python') not in path and path == [BENCH, '/elsewhere']
    monkeypatch.setattr(suite, 'inplace_python_dir', lambda: os.path.join(ROOT, 'python'))
    env = suite.worker_env('active')
    assert env['PYTHONPATH'].split(os.pathsep)[0] == os.path.join(ROOT, 'python')
    assert env['OMP_WAIT_POLICY'] == 'ACTIVE' and env['OMP_NUM_THREADS'] == str(suite.THREADS)


def run_check(py, workloads, **env):
    return subprocess.run([py, os.path.join(BENCH, 'suite.py'), '--check', '--workloads', workloads],
                          capture_output=True, text=True, cwd=ROOT, timeout=900,
                          env=dict(os.environ, BENCH_NO_VENV='1', **env))


@pytest.mark.slow
def test_equivalence_check_passes_on_the_small_workloads():
    py = peers_python()
    if py is None:
        pytest.skip('the pinned peers are not installed (bash bench/install-peers.sh)')
    r = run_check(py, 'mlp,char_lstm')
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for wl in ('mlp', 'char_lstm'):
        for col in ('OpenCNTK', 'PyTorch', 'TensorFlow'):
            assert any(line.split()[:3] == [wl, col, 'passed'] for line in r.stdout.splitlines()), r.stdout[-3000:]


@pytest.mark.slow
def test_equivalence_check_fails_when_the_peers_update_differs():
    py = peers_python()
    if py is None:
        pytest.skip('the pinned peers are not installed (bash bench/install-peers.sh)')
    r = run_check(py, 'mlp', BENCH_PEER_LR_SCALE='1.05')  # the peers' learning rate 5% higher
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert 'mlp/pytorch: loss differs' in r.stdout and 'mlp/tensorflow: loss differs' in r.stdout
