"""The benchmark suite's own machinery (bench/suite.py): its statistics, where its workers import OpenCNTK
from, and its equivalence check, which must pass on the small workloads and fail when a peer's update
differs. The check needs the pinned peers (bash bench/install-peers.sh, which scripts/install-deps.sh runs);
it is skipped without them."""
import importlib.util
import json
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


def use_bench_run(monkeypatch):
    """bench/run.py as the module `run` for this test: the bench scripts import their neighbours by plain
    name (`import run`), and in a test session another module of that name may be loaded already."""
    spec = importlib.util.spec_from_file_location('run', os.path.join(BENCH, 'run.py'))
    bench_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_run)
    monkeypatch.setitem(sys.modules, 'run', bench_run)


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
    assert 'MALLOC_MMAP_MAX_' not in env and suite.worker_env('active', 'pytorch_compile')['MALLOC_MMAP_MAX_'] == '0'


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


def fake_row(name, policy, medians, check_ok=True):
    """A result row as run_workload makes it, from median step times (seconds) per column."""
    rng = np.random.default_rng(len(name))
    row = {'workload': name, 'title': name, 'batch': 8, 'policy': policy, 'optimizer': ('sgd', {'lr': 0.1}),
           'columns': {}, 'missing': {}, 'measure_steps': 4,
           'check': {'columns': {'opencntk': {'passed': True, 'n_params': 10}}}}
    for col, m in medians.items():
        xs = list(m * (1 + 0.01 * rng.standard_normal(8)))
        row['columns'][col] = {'info': {'version': col}}
        if col == 'opencntk' or check_ok:  # a column that fails the check is not timed
            row['columns'][col].update(step_s_median=suite.median(xs), step_s_ci=list(suite.median_ci(xs)),
                                       cpu_step_s_median=2 * m, step_s_samples=xs, within_target=True)
        if col != 'opencntk':
            row['check']['columns'][col] = {'passed': check_ok, 'max_rel_diff': 1e-6, 'n_params': 10,
                                            'why': '' if check_ok else 'loss differs'}
    suite.ratios(row)
    return row


def test_report_table_and_readme_block(tmp_path):
    results = [fake_row('mlp', 'active', {'opencntk': 0.010, 'pytorch': 0.020, 'tensorflow_xla': 0.008}),
               fake_row('mlp', 'passive', {'opencntk': 0.012, 'pytorch': 0.021, 'tensorflow_xla': 0.008}),
               fake_row('cnn', 'active', {'opencntk': 0.1, 'pytorch': 0.05}, check_ok=False)]
    report = {'environment': {'date': '2026-01-01', 'cpu_model': 'cpu', 'omp_wait_policies': ['active', 'passive'],
                              'python': '3', 'numpy': '2', 'loadavg_at_start': [0, 0, 0], 'loadavg_at_end': [0, 0, 0]},
              'columns': suite.ORDER, 'frameworks': {}, 'results': results, 'summary': suite.summary(results),
              'method': 'm'}
    assert results[0]['best_peer'] == 'tensorflow_xla'
    assert results[0]['ratio_vs_best_peer'][0] == pytest.approx(1.25, rel=0.05)
    assert 'ratio_vs_best_peer' not in results[2]
    s = {r['workload']: r for r in report['summary']}
    assert s['mlp']['opencntk_policy'] == 'active' and s['mlp']['ratio'][0] == pytest.approx(1.25, rel=0.05)
    assert 'why' in s['cnn']
    text = '\n'.join(suite.table(report))
    assert 'check failed' in text and 'FAILED (PyTorch: loss differs)' in text and 'geometric mean 1.2' in text
    readme = tmp_path / 'README.md'
    readme.write_text('head\n%s\nold table\n%s\ntail\n' % (suite.README_BEGIN, suite.README_END))
    suite.update_readme(report, str(tmp_path / 'r'), readme=str(readme))
    out = readme.read_text()
    assert out.startswith('head\n') and out.endswith('\ntail\n') and 'old table' not in out and '| mlp | active |' in out
    assert suite.markdown(report).count('| mlp |') == 2


def test_gemm_table_gives_each_column_its_share_of_the_sgemm_peak():
    row = fake_row('mlp', 'active', {'opencntk': 0.002, 'pytorch': 0.004})
    row['step_flops'] = 0.4e9
    other = fake_row('cnn', 'active', {'opencntk': 0.1, 'pytorch': 0.1})
    report = {'columns': ['opencntk', 'pytorch'], 'results': [row, other],
              'gemm_peak': {'active': {'peak_gflops': 400.0}}}
    assert suite.gflops(row, 'opencntk') == pytest.approx(200, rel=0.05)
    assert suite.gflops(other, 'opencntk') is None
    lines = suite.gemm_table(report)
    mlp = [ln for ln in lines if ln.startswith('| mlp |')]
    assert len(mlp) == 1 and '| 0.40 |' in mlp[0]
    # medians of the fake samples are within a few percent of the given step times
    cells = [c.strip() for c in mlp[0].strip('|').split('|')][3:]
    assert cells[0].endswith('%)') and 190 <= float(cells[0].split()[0]) <= 210
    assert 47 <= float(cells[0].split('(')[1].rstrip('%)')) <= 53
    assert 95 <= float(cells[1].split()[0]) <= 105
    assert 'active 400 GFLOP/s' in '\n'.join(lines) and not any(ln.startswith('| cnn |') for ln in lines)
    report['gemm_peak'] = {'active': {'error': 'no oneDNN'}}
    text = '\n'.join(suite.gemm_table(report))
    assert 'not measured (no oneDNN)' in text and '%' not in text.split('| mlp |')[1]
    assert suite.gemm_table({'columns': ['opencntk'], 'results': [other]}) == []


def test_step_flops_match_pytorchs_flop_counter():
    """The analytic FLOPs of the GEMM-bound workloads equal what torch.utils.flop_counter counts for the same
    model's forward and backward (it counts the products and convolutions that autograd runs: no input gradient
    for the first layer)."""
    torch = pytest.importorskip('torch')
    from torch.utils.flop_counter import FlopCounterMode
    import workloads
    for name, shape in (('mlp', (784,)), ('alexnet', (3, 224, 224))):
        w = workloads.load(name)
        model = w.PyTorch.__new__(w.PyTorch)
        w.PyTorch.__init__(model, None, w.make_params(None), dropout=False, config={})
        x, y = torch.zeros((w.BATCH,) + shape), torch.zeros(w.BATCH, dtype=torch.long)
        with FlopCounterMode(display=False) as counter:
            model.step.loss_fn(model.step.model(x), y).backward()
        assert w.step_flops() == counter.get_total_flops(), name


def test_gemm_peak_times_the_linked_onednn():
    pytest.importorskip('cntk')
    import gemm_peak
    rates = gemm_peak.sgemm_rates(sizes=(96, 128), reps=3)
    assert set(rates) == {96, 128} and all(np.isfinite(r) and r > 0 for r in rates.values())
    m = gemm_peak.measure(sizes=(64,), reps=1)
    assert os.path.basename(m['library']).startswith('libdnnl.so') and m['peak_gflops'] == m['gflops_by_n']['64']


@pytest.mark.slow
def test_onednn_primitives_build_and_time_every_case_against_the_system_onednn(monkeypatch, tmp_path):
    use_bench_run(monkeypatch)
    monkeypatch.delitem(sys.modules, 'onednn_versions', raising=False)
    import onednn_versions
    exe = onednn_versions.build(str(tmp_path / 'primitives'))
    version, times = onednn_versions.run(exe, 0.001)
    assert version.split('.')[0] in ('2', '3')
    kinds = {case.split()[0] for case in times}
    assert kinds == {'conv_fwd', 'conv_bwd_data', 'conv_bwd_weights', 'lstm_fwd', 'lstm_bwd', 'sgemm'}
    assert len(times) == 14 * 3 + 3 * 2 + 5
    assert all(np.isfinite(ms) and ms > 0 for ms in times.values())


class _FakeWorker:
    """Stands in for a worker process: one started first in its start order measures 1.05 s per step (the
    effect the suite's restarts balance), later-started ones 1.00."""

    def __init__(self, workload, col, policy, log_dir):
        self.col, self.cpus, self.first = col, [0, 1], False

    def ask(self, **cmd):
        if not cmd:
            return {'ok': True, 'info': {'pinned_cpus': [0, 1]}, 'measure_steps': 2, 'warmup_steps': 0,
                    'epoch_steps': 10, 'params_numpy': 1}
        return {'ok': True, 'n_params': 1, 'how': {}}

    def measure(self, start, steps, busy_limit, retries):
        t = 1.05 if self.first else 1.0
        return {'wall_s': t * steps, 'cpu_s': 2 * t * steps, 'steps': steps, 'loss': 1.0, 'others_share': 0.0,
                'discarded': 0}

    def close(self):
        pass


def test_rounds_come_in_blocks_with_workers_restarted_in_reverse_order(monkeypatch):
    starts = []

    class Worker(_FakeWorker):
        def __init__(self, workload, col, policy, log_dir):
            starts.append(col)
            self.col, self.cpus = col, [0, 1]
            # first in its start order: the first of a group of starts of every column
            self.first = len(starts) % 2 == 1

    monkeypatch.setattr(suite, 'Worker', Worker)
    use_bench_run(monkeypatch)
    args = suite.parse_args(['--workloads', 'mlp', '--columns', 'opencntk,pytorch', '--no-check', '--min-rounds',
                             '5', '--max-rounds', '5', '--no-write'])
    row = suite.run_workload('mlp', 'active', args, '/tmp')
    # blocks of 3 rounds (half of 5, rounded up), an even number of them: 6 rounds, one restart
    assert row['rounds'] == 6 and row['restarts'] == 1
    assert starts == ['opencntk', 'pytorch', 'pytorch', 'opencntk']
    # each column measured as often in a first-started process as in a later-started one
    for col in ('opencntk', 'pytorch'):
        assert sorted(row['columns'][col]['step_s_samples']) == [1.0, 1.0, 1.0, 1.05, 1.05, 1.05]
    assert row['ratio_vs_pytorch'][0] == pytest.approx(1.0)


def test_baseline_column_imports_the_named_build(monkeypatch, tmp_path):
    monkeypatch.setenv('OPENCNTK_BENCH_BASELINE', '')  # parse_args sets it; restored after the test
    with pytest.raises(SystemExit, match='holds no built cntk package'):
        suite.parse_args(['--columns', 'opencntk', '--baseline', str(tmp_path)])
    (tmp_path / 'cntk').mkdir()
    (tmp_path / 'cntk' / '_cntk.cpython-311-x86_64-linux-gnu.so').write_bytes(b'')
    args = suite.parse_args(['--columns', 'opencntk', '--baseline', str(tmp_path)])
    assert args.columns == ['opencntk', suite.BASELINE]
    env = suite.worker_env('active', suite.BASELINE)
    assert env['PYTHONPATH'].split(os.pathsep)[0] == str(tmp_path)
    assert suite.BASELINE not in suite.DEFAULT_COLUMNS and suite.BASELINE not in suite.PEERS


def test_an_interrupted_run_goes_on_where_it_stopped(monkeypatch, tmp_path):
    use_bench_run(monkeypatch)
    monkeypatch.setattr(sys.modules['run'], 'git_commit', lambda where=None: 'abc1234')
    monkeypatch.setattr(suite, 'gemm_peak', lambda policy, log_dir, reps: {'peak_gflops': 100.0})
    medians = {'mlp': 0.01, 'cnn': 0.02, 'alexnet': 0.3}
    measured = []

    def measure(name, policy, args, log_dir):
        if len(measured) == 2 and not args.resume:
            raise KeyboardInterrupt  # the run is stopped while it measures its third workload
        measured.append((name, policy))
        return fake_row(name, policy, {'opencntk': medians[name], 'pytorch': 2 * medians[name]})
    monkeypatch.setattr(suite, 'run_workload', measure)
    argv = ['suite.py', '--workloads', 'mlp,cnn,alexnet', '--columns', 'opencntk,pytorch', '--out', str(tmp_path)]
    monkeypatch.setattr(sys, 'argv', argv)
    with pytest.raises(KeyboardInterrupt):
        suite.main()
    [partial] = tmp_path.glob('*-suite.partial.json')
    saved = json.loads(partial.read_text())
    assert [(r['workload'], r['policy']) for r in saved['results']] == [('mlp', 'active'), ('cnn', 'active')]
    assert saved['gemm_peak'] == {'active': {'peak_gflops': 100.0}}

    # another measurement setting, or a build that cannot be identified, is not mixed into the interrupted run
    monkeypatch.setattr(sys, 'argv', argv + ['--max-rounds', '9', '--resume', str(partial)])
    with pytest.raises(SystemExit, match='max_rounds: 25 then, 9 now'):
        suite.main()
    monkeypatch.setattr(sys.modules['run'], 'git_commit', lambda where=None: 'abc1234+dirty')
    monkeypatch.setattr(sys, 'argv', argv + ['--resume', str(partial)])
    with pytest.raises(SystemExit, match='uncommitted changes'):
        suite.main()
    monkeypatch.setattr(sys.modules['run'], 'git_commit', lambda where=None: 'def5678')
    with pytest.raises(SystemExit, match='commit'):
        suite.main()
    with pytest.raises(SystemExit):
        suite.parse_args(['--quick', '--resume', str(partial)])

    monkeypatch.setattr(sys.modules['run'], 'git_commit', lambda where=None: 'abc1234')
    measured.clear()
    assert suite.main() == 0
    # only what was not measured before: alexnet under the active policy, then the passive pass
    assert measured == [('alexnet', 'active'), ('mlp', 'passive'), ('cnn', 'passive'), ('alexnet', 'passive')]
    assert not partial.exists()
    report = json.loads((tmp_path / partial.name.replace('.partial', '')).read_text())
    assert [(r['workload'], r['policy']) for r in report['results']] == [
        (w, p) for p in ('active', 'passive') for w in ('mlp', 'cnn', 'alexnet')]
    assert report['environment']['resumed'][0]['rows_kept'] == 2
    assert 'resumed (`--resume`)' in (tmp_path / partial.name.replace('.partial.json', '.md')).read_text()
