"""The benchmark suite: every workload of bench/workloads in OpenCNTK, PyTorch and TensorFlow, side by side.

    python3 bench/suite.py                     # all workloads, both OpenMP wait policies; writes
                                               # bench/results/<date>-suite.{json,md,png} and the README table
    python3 bench/suite.py --workloads mlp,cnn # some of them
    python3 bench/suite.py --check             # only the equivalence check of every workload (exit 1 on a failure)
    python3 bench/suite.py --quick             # a smoke run: few steps, 2 measurements, writes nothing
    python3 bench/suite.py --resume bench/results/<date>-suite.partial.json
                                               # go on with an interrupted run (same arguments, CPU and commit)
    python3 bench/suite.py --columns opencntk --baseline ../old/python
                                               # this OpenCNTK against another build of it (a python/ folder
                                               # holding its in-place extension), measured in turns

Each (workload, column) pair trains in its own worker process (`suite.py --worker WORKLOAD COLUMN`), pinned to
2 CPUs with 2 threads, kept warm between measurements and restarted, in the reverse start order, between blocks
of rounds (a process's speed depends on when it started). A column is a framework in one configuration: OpenCNTK;
PyTorch eager and with torch.compile; TensorFlow with a tf.function step, without and with XLA
(jit_compile=True). Before timing, every column trains CHECK_STEPS steps from the same NumPy initial values
with dropout off; its per-step losses must stay within the workload's CHECK_RTOL of OpenCNTK's and its
parameter count must equal OpenCNTK's, or the column is reported as failing the check instead of timed.
Then the workers take turns, one measurement (MEASURE_STEPS steps) each per round, the order rotating, until
every column's bootstrap 95% interval of the median is within +-5% (at least MIN_ROUNDS rounds, at most
--max-rounds); a measurement during which other processes used more than --busy-limit of the pinned CPUs is
discarded and repeated. The whole is done once per OpenMP wait policy (active, passive). For the GEMM-bound
workloads (those with step_flops: mlp, alexnet) the report gives each column's achieved GFLOP/s beside oneDNN's
sgemm peak, measured at the start of each policy's pass by bench/gemm_peak.py. See bench/README.md.

The suite runs under the peers' virtual environment (build/bench-venv, made by bench/install-peers.sh) when
it exists, and imports OpenCNTK from python/ when it holds the in-place build (make dev), else the installed
package (pip install .).
"""
import argparse
import datetime
import glob
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
THREADS = 2
# column -> (label, framework class of the workload module, configuration)
COLUMNS = {
    'opencntk': ('OpenCNTK', 'OpenCNTK', {}),
    # Another build of OpenCNTK (--baseline): the same workload code over that build's package, to tell whether
    # a change made a workload slower. Not a peer; measured in the same rounds as the others.
    'opencntk_baseline': ('OpenCNTK baseline', 'OpenCNTK', {}),
    'pytorch': ('PyTorch', 'PyTorch', {}),
    'pytorch_compile': ('PyTorch compile', 'PyTorch', {'compile': True}),
    'tensorflow': ('TensorFlow', 'TensorFlow', {}),
    'tensorflow_xla': ('TensorFlow XLA', 'TensorFlow', {'jit_compile': True}),
    # bfloat16 mixed precision (float32 parameters and update), on workloads with BF16 where the CPU has it:
    # OpenCNTK's bfloat16 math mode, PyTorch's autocast, Keras' mixed_bfloat16 policy.
    'opencntk_bf16': ('OpenCNTK bf16', 'OpenCNTK', {'bf16': True}),
    'pytorch_bf16': ('PyTorch bf16', 'PyTorch', {'bf16': True}),
    'tensorflow_bf16': ('TensorFlow bf16', 'TensorFlow', {'bf16': True}),
}
ORDER = list(COLUMNS)  # the rotation of a round
BASELINE = 'opencntk_baseline'
DEFAULT_COLUMNS = [c for c in ORDER if c != BASELINE]
BF16 = [c for c in ORDER if COLUMNS[c][2].get('bf16')]
PEERS = [c for c in ORDER if COLUMNS[c][1] != 'OpenCNTK' and c not in BF16]  # float32 peers
BF16_PEERS = [c for c in BF16 if COLUMNS[c][1] != 'OpenCNTK']
# The bfloat16 columns' check, against OpenCNTK's float32 losses: (early steps, their tolerance, the tolerance
# over all CHECK_STEPS or None). bfloat16 rounds every product's operands (2^-9 relative), and training amplifies
# that like any perturbation: measured on this suite's workloads, the bfloat16 columns of all three frameworks
# stay within 2.5% of float32 over the first 5 steps, then part by up to 57% (cnn, step 12) as float32 runs from
# slightly different weights would. So the first steps are held to 3e-2 and the later ones only to being finite.
BF16_CHECK = (5, 3e-2, None)
CHECK_COLUMNS = ['opencntk', 'pytorch', 'tensorflow']  # --check's default; the timed run checks every column
PINNED = {'torch': '2.13.0', 'tensorflow': '2.21.0', 'keras': '3.15.1'}  # bench/install-peers.sh
POLICIES = ['active', 'passive']
CHECK_STEPS = 20
# Per-step loss tolerances of the check (relative to OpenCNTK's loss), unless a workload states its own:
# CHECK_EARLY over the first steps, where a different update form (RMSProp's first average, Adam's epsilon)
# shows at once, and CHECK_RTOL over all CHECK_STEPS. Float32 training is chaotic enough that a 1e-7 change of
# the initial weights can grow to 1e-3 in 20 steps (mlp under RMSProp: 2.4e-3 in PyTorch and TensorFlow), so a
# workload states a looser CHECK_RTOL where its own sensitivity was measured that large.
CHECK_EARLY = (5, 1e-4)
CHECK_RTOL = 1e-3
MIN_ROUNDS = 5
TARGET_HALF_WIDTH = 0.05  # each column's 95% interval within +-5% of its median


def label(col):
    return COLUMNS[col][0]


def inplace_python_dir():
    """ROOT/python when it holds the in-place build of the extension (make dev), else None."""
    d = os.path.join(ROOT, 'python')
    return d if glob.glob(os.path.join(d, 'cntk', '_cntk*.so')) else None


# PyTorch's CPU tensors come from malloc, which maps a large block afresh for each allocation and unmaps it on
# free: fastText's 240 MB embedding gradient was paged in again every step. These glibc settings keep freed
# memory for reuse (a caching allocator's effect); fastText's PyTorch step took about 30% less time with them.
TORCH_MALLOC_ENV = {'MALLOC_MMAP_MAX_': '0', 'MALLOC_TRIM_THRESHOLD_': str(4 << 30)}


def baseline_python_dir():
    """The python/ folder of the build --baseline names (passed to the workers in the environment)."""
    d = os.environ.get('OPENCNTK_BENCH_BASELINE')
    if not d or not glob.glob(os.path.join(d, 'cntk', '_cntk*.so')):
        raise SystemExit('--baseline: %r holds no built cntk package (cntk/_cntk*.so)' % d)
    return os.path.abspath(d)


def worker_env(policy, col=None):
    env = dict(os.environ)
    env['OMP_NUM_THREADS'] = str(THREADS)
    env['OMP_WAIT_POLICY'] = policy.upper()
    env['TF_CPP_MIN_LOG_LEVEL'] = '2'
    if col and COLUMNS[col][1] == 'PyTorch':
        env.update(TORCH_MALLOC_ENV)
    inplace = baseline_python_dir() if col == BASELINE else inplace_python_dir()
    # Without the in-place build, python/ would shadow the installed package with sources that lack the
    # extension: drop it, so that `import cntk` finds what pip installed.
    own = [p for p in env.get('PYTHONPATH', '').split(os.pathsep)
           if p and os.path.realpath(p) != os.path.realpath(os.path.join(ROOT, 'python'))]
    env['PYTHONPATH'] = os.pathsep.join(([inplace] if inplace else []) + [HERE] + own)
    return env


# ---------------------------------------------------------------------------- versions

def _onednn_verbose_version(code):
    """oneDNN's version as its verbose mode prints it when `code` runs a primitive in a fresh process."""
    env = dict(os.environ, ONEDNN_VERBOSE='1', DNNL_VERBOSE='1', TF_CPP_MIN_LOG_LEVEL='2', OMP_NUM_THREADS='1')
    try:
        out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 'unknown (%s)' % type(e).__name__
    m = re.search(r'oneDNN (v[0-9.]+[^\n,]*)', out.stdout + out.stderr)
    return m.group(1).strip() if m else 'not reported (no oneDNN primitive ran)'


def framework_info(col):
    """Versions of the column's framework and of the oneDNN / MKL it runs on, and its thread settings."""
    import run as bench_run
    fw = COLUMNS[col][1]
    if fw == 'OpenCNTK':
        import cntk
        pkg = os.path.dirname(cntk.__file__)
        return {'version': 'OpenCNTK %s (commit %s)' % (cntk.__version__, bench_run.git_commit(pkg)),
                'package': pkg,
                'build': ('--baseline' if col == BASELINE else
                          'in place (make dev)' if inplace_python_dir() else 'installed (pip install .)'),
                'onednn': '%s (%s, as linked)' % (bench_run.onednn_version(), bench_run.loaded_library('libdnnl')),
                'openmp_runtime': bench_run.loaded_library('libgomp'),
                'threads': 'OpenMP %s' % bench_run.omp_max_threads()}
    if fw == 'PyTorch':
        from workloads.common import torch_setup
        torch = torch_setup()
        cfg = torch.__config__.show()

        def line(pattern):
            m = re.search(pattern, cfg)
            return m.group(1).strip() if m else 'not listed'
        return {'version': 'PyTorch %s' % torch.__version__,
                'onednn': line(r'MKL-DNN (v[^\n]*)') + ('' if torch.backends.mkldnn.is_available()
                                                       else ' (torch.backends.mkldnn unavailable)'),
                'mkl': line(r'Math Kernel Library Version ([^\n]*)'),
                'malloc': ' '.join('%s=%s' % kv for kv in TORCH_MALLOC_ENV.items() if os.environ.get(kv[0]) == kv[1]),
                'openmp_runtime': bench_run.loaded_library('libgomp'),
                'threads': 'intra-op %d, inter-op %d' % (torch.get_num_threads(), torch.get_num_interop_threads())}
    from workloads.common import tf_setup
    tf, keras = tf_setup()  # the thread settings the workload runs with
    # TensorFlow links its oneDNN statically and exports no version call: its verbose mode says it.
    onednn = _onednn_verbose_version('import tensorflow as tf; tf.matmul(tf.ones((64, 64)), tf.ones((64, 64)))')
    return {'version': 'TensorFlow %s, Keras %s' % (tf.__version__, keras.__version__),
            'onednn': '%s (bundled; TF_ENABLE_ONEDNN_OPTS=%s)'
                      % (onednn, os.environ.get('TF_ENABLE_ONEDNN_OPTS', 'unset: on by default on x86 Linux')),
            'threads': 'intra-op %d, inter-op %d' % (tf.config.threading.get_intra_op_parallelism_threads(),
                                                     tf.config.threading.get_inter_op_parallelism_threads())}


def pin_warnings(infos):
    """Differences between the peers' versions found and the pinned ones."""
    out = []
    for info in infos:
        for name, want in PINNED.items():
            shown = {'torch': 'PyTorch', 'tensorflow': 'TensorFlow', 'keras': 'Keras'}[name]
            m = re.search(r'%s ([0-9][^ ,+]*)' % shown, info.get('version', ''))
            if m and m.group(1) != want:
                out.append('%s %s is not the pinned %s (bash bench/install-peers.sh)' % (name, m.group(1), want))
    return sorted(set(out))


# ---------------------------------------------------------------------------- worker

def worker_main(workload, col):
    proto = os.fdopen(os.dup(1), 'w', buffering=1)
    os.dup2(2, 1)  # library output goes to the log, not into the protocol
    sys.stdout = sys.stderr

    def reply(**kw):
        proto.write(json.dumps(kw) + '\n')

    def error(e):
        import traceback
        traceback.print_exc()
        text = str(e).strip().splitlines()
        return '%s: %s' % (type(e).__name__, text[-1][:300] if text else '')

    try:
        cpus = sorted(os.sched_getaffinity(0))[:THREADS]
        os.sched_setaffinity(0, cpus)
        import workloads
        w = workloads.load(workload)
        data = w.make_data()
        params = w.make_params(data)
        cls, config = getattr(w, COLUMNS[col][1]), COLUMNS[col][2]
        if config.get('bf16'):
            from workloads.common import enable_bf16
            enable_bf16(COLUMNS[col][1])
        reply(ok=True, info=dict(framework_info(col), pinned_cpus=cpus), measure_steps=w.MEASURE_STEPS,
              warmup_steps=w.WARMUP_STEPS, epoch_steps=w.EPOCH_STEPS, params_numpy=params.count())
    except Exception as e:  # noqa: BLE001: reported to the parent, which records it
        reply(ok=False, error=error(e))
        return 1

    def batch(fw, s):
        return fw.batch(s) if hasattr(fw, 'batch') else fw.data.get(s)

    fw = None
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd['cmd'] == 'quit':
            break
        try:
            if cmd['cmd'] == 'check':
                # Dropout off, from the NumPy initial values: deterministic, comparable per step.
                probe = cls(data, params, dropout=False, config=config)
                losses = [probe.step(*batch(probe, s)) for s in range(cmd['steps'])]
                reply(ok=True, losses=losses, n_params=probe.step.count, how=getattr(probe.step, 'info', {}))
                del probe
            elif cmd['cmd'] == 'build':
                fw = cls(data, params, dropout=True, config=config)
                reply(ok=True, n_params=fw.step.count, how=getattr(fw.step, 'info', {}))
            elif cmd['cmd'] == 'train':
                start, steps = cmd['start'], cmd['steps']
                losses = []
                c0, t0 = time.process_time(), time.perf_counter()
                for s in range(start, start + steps):
                    losses.append(fw.step(*batch(fw, s)))
                t1, c1 = time.perf_counter(), time.process_time()
                reply(ok=True, wall_s=t1 - t0, cpu_s=c1 - c0, loss=sum(losses) / len(losses), steps=steps)
            else:
                reply(ok=False, error='unknown command %r' % cmd['cmd'])
        except Exception as e:  # noqa: BLE001
            reply(ok=False, error=error(e))
    return 0


# ---------------------------------------------------------------------------- parent

def cpu_busy_jiffies(cpus):
    """Non-idle jiffies of the given CPUs, from /proc/stat."""
    total = 0
    with open('/proc/stat') as f:
        for line in f:
            name, *vals = line.split()
            if name.startswith('cpu') and name[3:].isdigit() and int(name[3:]) in cpus:
                v = [int(x) for x in vals]
                total += sum(v) - v[3] - v[4]  # less idle and iowait
    return total


class Worker:
    def __init__(self, workload, col, policy, log_dir):
        self.name = '%s/%s' % (workload, col)
        self.log = open(os.path.join(log_dir, 'suite-%s-%s-%s.log' % (workload, col, policy)), 'w')
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--worker', workload, col],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     bufsize=1, env=worker_env(policy, col), cwd=ROOT)
        self.cpus = []

    def signal(self, sig):
        try:
            os.kill(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def ask(self, **cmd):
        """Sends a command and waits for the reply. Between commands the worker is stopped (SIGSTOP): under
        OMP_WAIT_POLICY=ACTIVE an idle OpenMP runtime spins its threads without end, and would take the CPUs
        from the worker being measured."""
        self.signal(signal.SIGCONT)
        try:
            if cmd:
                self.proc.stdin.write(json.dumps(cmd) + '\n')
                self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        finally:
            self.signal(signal.SIGSTOP)
        if not line:
            raise RuntimeError('the worker exited (see %s)' % self.log.name)
        r = json.loads(line)
        if not r.get('ok'):
            raise RuntimeError(r.get('error'))
        return r

    def measure(self, start, steps, busy_limit, retries):
        """One measurement; repeated (up to `retries` times) while other processes used more than `busy_limit`
        of the pinned CPUs' time. Returns the reply with the share others took and the discarded count."""
        hz = os.sysconf('SC_CLK_TCK')
        discarded = 0
        while True:
            b0 = cpu_busy_jiffies(self.cpus)
            r = self.ask(cmd='train', start=start, steps=steps)
            others = max(0.0, (cpu_busy_jiffies(self.cpus) - b0) / hz - r['cpu_s'])
            r['others_share'] = others / (r['wall_s'] * max(1, len(self.cpus)))
            if r['others_share'] <= busy_limit or discarded >= retries:
                r['discarded'] = discarded
                return r
            discarded += 1

    def close(self):
        self.signal(signal.SIGCONT)
        try:
            self.proc.stdin.write('{"cmd": "quit"}\n')
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            self.proc.kill()
        self.log.close()


# ---------------------------------------------------------------------------- statistics

def median(xs):
    import numpy as np
    return float(np.median(xs))


def bootstrap(fn, samples, n=2000, seed=0):
    """2.5 and 97.5 percentiles of fn over `n` resamplings (with replacement) of each list in `samples`."""
    import numpy as np
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(s, dtype=float) for s in samples]
    draws = [a[rng.integers(0, len(a), (n, len(a)))] for a in arrays]
    stats = fn(*[np.median(d, axis=1) for d in draws])
    lo, hi = np.percentile(stats, [2.5, 97.5])
    return float(lo), float(hi)


def median_ci(xs):
    return bootstrap(lambda m: m, [xs])


def ratio_ci(a, b):
    return bootstrap(lambda ma, mb: ma / mb, [a, b])


def half_width(xs):
    lo, hi = median_ci(xs)
    return max(hi - median(xs), median(xs) - lo) / median(xs)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


# ---------------------------------------------------------------------------- one workload

def compare_losses(ref, losses, rtol):
    """(largest relative difference of `losses` from `ref`, the step where it is)."""
    worst, at = 0.0, 0
    for i, (a, b) in enumerate(zip(ref, losses)):
        d = abs(a - b) / max(abs(a), 1e-12)
        if not math.isfinite(b):
            d = math.inf
        if d > worst:
            worst, at = d, i
    return worst, at


def start_workers(name, cols, policy, log_dir, row, keep=False):
    """Starts a worker per column, in the order given; keep: a restart, the row's column entries stay."""
    workers = {}
    for col in cols:
        wk = Worker(name, col, policy, log_dir)
        try:
            r = wk.ask()
        except RuntimeError as e:
            wk.close()
            row['missing'][col] = str(e)
            print('  %-16s missing: %s' % (label(col), e))
            continue
        wk.cpus = r['info']['pinned_cpus']
        workers[col] = wk
        if keep and col in row['columns']:
            row['columns'][col]['info'] = r['info']
        else:
            row['columns'][col] = {'info': r['info']}
        row.update(measure_steps=r['measure_steps'], warmup_steps=r['warmup_steps'],
                   epoch_steps=r['epoch_steps'], params_numpy=r['params_numpy'])
    return workers


def run_check(w, workers, row, steps):
    """The equivalence check; drops (and closes) the workers of columns that fail it."""
    rtol = getattr(w, 'CHECK_RTOL', CHECK_RTOL)
    early_steps, early_rtol = getattr(w, 'CHECK_EARLY', CHECK_EARLY)
    bf16_early_steps, bf16_early_rtol, bf16_rtol = getattr(w, 'BF16_CHECK', BF16_CHECK)
    check = row['check'] = {'steps': steps, 'rtol': rtol, 'early_steps': early_steps, 'early_rtol': early_rtol,
                            'bf16': {'rtol': bf16_rtol, 'early_steps': bf16_early_steps,
                                     'early_rtol': bf16_early_rtol}, 'columns': {}}
    for col in list(workers):
        try:
            r = workers[col].ask(cmd='check', steps=steps)
            check['columns'][col] = {'losses': r['losses'], 'n_params': r['n_params'], 'how': r['how']}
        except RuntimeError as e:
            check['columns'][col] = {'error': str(e)}
    ref = check['columns'].get('opencntk', {})
    for col, c in check['columns'].items():
        if 'error' in c:
            c['passed'], c['why'] = False, 'failed to train: %s' % c['error']
        elif 'losses' not in ref:
            c['passed'], c['why'] = None, 'OpenCNTK did not train, nothing to compare with'
        elif col == 'opencntk':
            c['passed'] = c['n_params'] == row['params_numpy']
            c['why'] = '' if c['passed'] else '%d parameters, NumPy has %d' % (c['n_params'], row['params_numpy'])
        else:
            # A bfloat16 column is held to the looser bfloat16 tolerances (also OpenCNTK's own).
            es, er, r = ((bf16_early_steps, bf16_early_rtol, bf16_rtol) if col in BF16
                         else (early_steps, early_rtol, rtol))
            c['max_rel_diff'], c['at_step'] = compare_losses(ref['losses'], c['losses'], r)
            c['early_max_rel_diff'], at = compare_losses(ref['losses'][:es], c['losses'][:es], 0)
            why = []
            if not all(math.isfinite(x) for x in c['losses']):
                why.append('a loss is not finite')
            if c['early_max_rel_diff'] > er:
                why.append('loss differs by %.2g at step %d (tolerance %.0e in the first %d steps)'
                           % (c['early_max_rel_diff'], at, er, es))
            if r is not None and c['max_rel_diff'] > r:
                why.append('loss differs by %.2g at step %d (tolerance %.0e)' % (c['max_rel_diff'], c['at_step'], r))
            if c['n_params'] != ref['n_params']:
                why.append('%d parameters, OpenCNTK %d' % (c['n_params'], ref['n_params']))
            c['passed'], c['why'] = not why, '; '.join(why)
        print('  %-16s check: %s%s' % (label(col), {True: 'passed', False: 'FAILED', None: 'n/a'}[c['passed']],
                                        (' (max relative loss difference %.1e)' % c['max_rel_diff'])
                                        if 'max_rel_diff' in c else '') + (': ' + c['why'] if c.get('why') else ''))
        if c['passed'] is not True and col in workers:
            workers.pop(col).close()
    return check


def prepare_workers(workers, row, warm, start=0):
    """Builds each worker's model and runs its warm-up steps; a worker that fails is closed and reported."""
    for col in list(workers):
        try:
            r = workers[col].ask(cmd='build')
            row['columns'][col].update(n_params=r['n_params'], how=r['how'])
            t0 = time.perf_counter()
            if warm:
                workers[col].ask(cmd='train', start=start, steps=warm)
            row['columns'][col].setdefault('warmup_s', time.perf_counter() - t0)
        except RuntimeError as e:
            row['missing'][col] = 'failed: %s' % e
            print('  %-16s failed: %s' % (label(col), e))
            workers.pop(col).close()


def done(samples, workers, rnd, args, started):
    """Whether the measurement of a workload may stop after `rnd` rounds."""
    if rnd >= args.max_rounds or time.perf_counter() - started > args.workload_seconds:
        return rnd >= args.min_rounds or time.perf_counter() - started > args.workload_seconds
    widths = [half_width([r['wall_s'] / r['steps'] for r in samples[c]]) for c in workers if samples[c]]
    return rnd >= args.min_rounds and all(v <= TARGET_HALF_WIDTH for v in widths)


def run_workload(name, policy, args, log_dir):
    """Checks and measures one workload in every column under one OpenMP wait policy; returns its row."""
    import run as bench_run
    import workloads
    w = workloads.load(name)
    row = {'workload': name, 'title': w.TITLE, 'batch': w.BATCH, 'policy': policy, 'optimizer': w.OPTIMIZER,
           'columns': {}, 'missing': {}, 'loadavg_before': bench_run.loadavg()}
    if hasattr(w, 'step_flops'):
        row['step_flops'] = w.step_flops()
    skip = dict(getattr(w, 'SKIP_COLUMNS', {}))
    from workloads.common import cpu_has_bf16
    for col in BF16:
        if not getattr(w, 'BF16', False):
            skip.setdefault(col, 'no bfloat16 columns for this workload (its step is a sparse product and update, '
                                 'which OpenCNTK computes in float32 under the bfloat16 math mode)')
        elif not cpu_has_bf16():
            skip.setdefault(col, 'this CPU has no bfloat16 instructions (AVX512_BF16 or AMX)')
    for col in args.columns:
        if col in skip:
            row['missing'][col] = 'not run: %s' % skip[col]
    workers = start_workers(name, [c for c in args.columns if c not in skip], policy, log_dir, row)
    try:
        if workers and not args.no_check:
            run_check(w, workers, row, args.check_steps)
        if args.check_only or 'opencntk' not in workers:
            return row
        steps, warm = row['measure_steps'], row['warmup_steps']
        if args.quick:
            steps, warm = min(steps, 3), min(warm, 1)
        row.update(measure_steps=steps, warmup_steps=warm)
        # A worker process's speed depends on when it started: on this kind of machine the column whose worker
        # started first ran about 5% slower than an identical column started after it (an A/A run of one build
        # in two columns). So the rounds come in blocks, and before each block after the first every worker is
        # restarted, the start order reversed; the blocks are even in number and size.
        block = max(1, math.ceil(args.min_rounds / 2))
        order = [c for c in ORDER if c in workers]
        samples = {col: [] for col in workers}
        started = time.perf_counter()
        rnd = 0
        while workers:
            if rnd and rnd % block == 0:
                if (rnd // block) % 2 == 0 and done(samples, workers, rnd, args, started):
                    break
                for wk in workers.values():
                    wk.close()
                order.reverse()
                workers = start_workers(name, [c for c in order if c in workers], policy, log_dir, row, keep=True)
            prepare_workers(workers, row, warm, start=rnd * steps)
            for _ in range(block):
                names = [c for c in ORDER if c in workers]
                k = rnd % len(names) if names else 0
                for col in names[k:] + names[:k]:
                    try:
                        r = workers[col].measure(warm + rnd * steps, steps, args.busy_limit, args.retries)
                    except RuntimeError as e:
                        row['missing'][col] = 'failed while training: %s' % e
                        print('  %-16s failed: %s' % (label(col), e))
                        workers.pop(col).close()
                        continue
                    samples[col].append(r)
                rnd += 1
                print('  round %d: %s' % (rnd, ', '.join('%s %.1f ms +-%.0f%%' % (
                    label(c), 1e3 * median([r['wall_s'] / r['steps'] for r in samples[c]]),
                    100 * half_width([r['wall_s'] / r['steps'] for r in samples[c]]))
                    for c in workers if samples[c])))
        row['restarts'] = rnd // block - 1 if rnd else 0
        row['rounds'] = rnd
        for col, rs in samples.items():
            if not rs or col in row['missing']:
                continue
            per_step = [r['wall_s'] / r['steps'] for r in rs]
            cpu = [r['cpu_s'] / r['steps'] for r in rs]
            lo, hi = median_ci(per_step)
            d = row['columns'][col]
            d.update(step_s_median=median(per_step), step_s_ci=[lo, hi], cpu_step_s_median=median(cpu),
                     step_s_samples=per_step, cpu_step_s_samples=cpu,
                     within_target=half_width(per_step) <= TARGET_HALF_WIDTH,
                     others_share=[r['others_share'] for r in rs], discarded=sum(r['discarded'] for r in rs),
                     loss_per_measurement=[r['loss'] for r in rs])
            if row.get('epoch_steps'):
                d['epoch_s_median'] = d['step_s_median'] * row['epoch_steps']
    finally:
        for wk in workers.values():
            wk.close()
        row['loadavg_after'] = bench_run.loadavg()
    ratios(row)
    return row


def timed(row, col):
    d = row['columns'].get(col)
    return d if d and 'step_s_median' in d else None


def ratios(row):
    """OpenCNTK's median over each timed float32 peer column's, with bootstrap 95% intervals, and over the best;
    the same for OpenCNTK bf16 over the bfloat16 peer columns (keys prefixed bf16_)."""
    me = timed(row, 'opencntk')
    if me and timed(row, BASELINE):
        b = row['columns'][BASELINE]
        row['ratio_vs_baseline'] = ([me['step_s_median'] / b['step_s_median']] +
                                    list(ratio_ci(me['step_s_samples'], b['step_s_samples'])))
    for mine, theirs, prefix in (('opencntk', PEERS, ''), ('opencntk_bf16', BF16_PEERS, 'bf16_')):
        me, peers = timed(row, mine), [c for c in theirs if timed(row, c)]
        if not me or not peers:
            continue
        for c in peers:
            r = me['step_s_median'] / row['columns'][c]['step_s_median']
            row[prefix + 'ratio_vs_' + c] = [r] + list(ratio_ci(me['step_s_samples'],
                                                                row['columns'][c]['step_s_samples']))
        best = min(peers, key=lambda c: row['columns'][c]['step_s_median'])
        row[prefix + 'best_peer'] = best
        row[prefix + 'ratio_vs_best_peer'] = row[prefix + 'ratio_vs_' + best]


def summary(results, me='opencntk', peers=None):
    """Per workload over both wait policies: OpenCNTK's best median over the best peer column's (float32; with
    me='opencntk_bf16' and peers=BF16_PEERS the bfloat16 columns, over the workloads that ran them)."""
    peers = PEERS if peers is None else peers
    out = []
    for name in dict.fromkeys(r['workload'] for r in results):
        rows = [r for r in results if r['workload'] == name]
        mine = [(r['columns'][me], r) for r in rows if timed(r, me)]
        theirs = [(r['columns'][c], r, c) for r in rows for c in peers if timed(r, c)]
        if any(r['missing'].get(me, '').startswith('not run') for r in rows):
            continue  # a workload without these columns
        if not mine or not theirs:
            why = '; '.join('%s: %s' % (label(c), m) for r in rows for c, m in r['missing'].items()
                            if c == me) or 'no timed column on one side (see the check)'
            out.append({'workload': name, 'why': why})
            continue
        m, mr = min(mine, key=lambda t: t[0]['step_s_median'])
        p, pr, pc = min(theirs, key=lambda t: t[0]['step_s_median'])
        out.append({'workload': name, 'opencntk_policy': mr['policy'], 'best_peer': pc, 'peer_policy': pr['policy'],
                    'ratio': [m['step_s_median'] / p['step_s_median']] +
                             list(ratio_ci(m['step_s_samples'], p['step_s_samples']))})
    return out


# ---------------------------------------------------------------------------- GEMM peak

def gemm_peak(policy, log_dir, reps):
    """oneDNN's sgemm rate (bench/gemm_peak.py) in a process pinned and threaded as the workers, under `policy`;
    {'error': why} when it could not be measured."""
    log = os.path.join(log_dir, 'suite-gemm-peak-%s.log' % policy)
    try:
        with open(log, 'w') as err:
            out = subprocess.run([sys.executable, os.path.join(HERE, 'gemm_peak.py'), str(reps)],
                                 stdout=subprocess.PIPE, stderr=err, text=True, timeout=600,
                                 env=worker_env(policy, 'opencntk'), cwd=ROOT)
        if out.returncode != 0:
            return {'error': 'bench/gemm_peak.py exited with status %d (see %s)' % (out.returncode, log)}
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired) as e:
        return {'error': '%s: %s' % (type(e).__name__, e)}


def gflops(row, col):
    """A timed column's achieved GFLOP/s on a GEMM-bound row: the step's product FLOPs over its median step."""
    d = timed(row, col)
    return row['step_flops'] / d['step_s_median'] / 1e9 if d and row.get('step_flops') else None


# ---------------------------------------------------------------------------- report

GOAL = ('Goal: OpenCNTK faster than the best peer column on every workload (ratio below 1 with its 95% interval '
        'below 1); 0.67 or less everywhere.')


def _cell(row, col):
    d = timed(row, col)
    if d:
        lo, hi = d['step_s_ci']
        return '%.1f [%.1f-%.1f] cpu %.1f%s' % (1e3 * d['step_s_median'], 1e3 * lo, 1e3 * hi,
                                                1e3 * d['cpu_step_s_median'], '' if d['within_target'] else ' (wide)')
    c = row.get('check', {}).get('columns', {}).get(col)
    if c and c.get('passed') is False:
        return 'check failed'
    if col in row['missing']:
        return 'not run' if row['missing'][col].startswith('not run') else 'failed'
    return '-'


def _ratio(r):
    return '%.2f [%.2f-%.2f]' % tuple(r) if r else '-'


def table(report):
    cols = report['columns']
    base = BASELINE in cols
    bf = 'opencntk_bf16' in cols
    lines = [GOAL, '',
             '| workload | OMP wait | ' + ' | '.join('%s (ms/step)' % label(c) for c in cols) +
             (' | OpenCNTK / baseline' if base else '') + ' | best peer | OpenCNTK / best peer' +
             (' | OpenCNTK bf16 / best bf16 peer' if bf else '') + ' | check (max loss diff) |',
             '| --- | --- | ' + ' | '.join('---:' for _ in cols) + (' | ---:' if base else '') + ' | --- | ---:' +
             (' | ---:' if bf else '') + ' | --- |']
    for row in report['results']:
        check = row.get('check', {}).get('columns', {})
        failed = ['%s: %s' % (label(c), v['why']) for c, v in check.items() if v.get('passed') is False]
        diffs = [v['max_rel_diff'] for c, v in check.items()
                 if 'max_rel_diff' in v and v.get('passed') and c not in BF16]
        bf_diffs = [v['early_max_rel_diff'] for c, v in check.items()
                    if 'early_max_rel_diff' in v and v.get('passed') and c in BF16]
        shown = (['%.0e' % max(diffs)] if diffs else []) + (
            ['bf16 first steps %.0e' % max(bf_diffs)] if bf_diffs else [])
        ck = ('FAILED (%s)' % '; '.join(failed) if failed else
              'passed (%s)' % ', '.join(shown) if shown else 'n/a' if check else 'not run')
        ratio = _ratio(row.get('ratio_vs_best_peer'))
        if 'opencntk' in row['missing']:
            ratio = 'OpenCNTK missing'
        elif check.get('opencntk', {}).get('passed') is False:
            ratio = 'check failed'
        lines.append('| %s | %s | %s%s | %s | %s%s | %s |' % (
            row['workload'], row['policy'], ' | '.join(_cell(row, c) for c in cols),
            ' | ' + _ratio(row.get('ratio_vs_baseline')) if base else '',
            label(row['best_peer']) if row.get('best_peer') else '-', ratio,
            ' | ' + _ratio(row.get('bf16_ratio_vs_best_peer')) if bf else '', ck))
    for key, what in (('summary', 'OpenCNTK under its faster wait policy over the fastest float32 peer column '
                                  'under either'),
                      ('bf16_summary', 'bfloat16: OpenCNTK bf16 under its faster wait policy over the fastest '
                                       'bfloat16 peer column under either')):
        summ = report.get(key, [])
        got = [s['ratio'][0] for s in summ if 'ratio' in s]
        if got:
            lines += ['', 'Summary, per workload (%s): ' % what +
                      ', '.join('%s %s' % (s['workload'], _ratio(s['ratio']) if 'ratio' in s else 'n/a')
                                for s in summ) + '; geometric mean %.2f.' % geomean(got)]
    lines += gemm_table(report)
    vs = [(r['workload'], r['policy'], r['ratio_vs_baseline']) for r in report['results'] if r.get('ratio_vs_baseline')]
    if vs:
        slower = ['%s (%s) %s' % (w, p, _ratio(r)) for w, p, r in vs if r[1] > 1]
        lines += ['', 'OpenCNTK / baseline (%s): geometric mean %.2f; slower than the baseline beyond the noise '
                      '(95%% interval above 1): %s.' % (report['frameworks'].get(BASELINE, {}).get('version', '?'),
                                                        geomean([r[0] for _, _, r in vs]),
                                                        ', '.join(slower) or 'none')]
    return lines


def gemm_table(report):
    """The GEMM-bound rows' achieved GFLOP/s per column, as shares of the sgemm peak measured in the run."""
    rows = [r for r in report['results'] if r.get('step_flops')]
    peaks = report.get('gemm_peak', {})
    if not rows:
        return []
    cols = report['columns']

    def peak_of(policy):
        return peaks.get(policy, {}).get('peak_gflops')

    def cell(row, col):
        g, p = gflops(row, col), peak_of(row['policy'])
        return '-' if g is None else '%.0f (%.0f%%)' % (g, 100 * g / p) if p else '%.0f' % g
    measured = ', '.join('%s %s' % (pol, '%.0f GFLOP/s' % peak_of(pol) if peak_of(pol) else
                                    'not measured (%s)' % peaks.get(pol, {}).get('error', 'not run'))
                         for pol in dict.fromkeys(r['policy'] for r in rows))
    lines = ['', 'GEMM-bound rows: achieved GFLOP/s (the step\'s convolution and matrix-product FLOPs, forward and '
                 'backward, over the median step) and its share of oneDNN\'s float32 GEMM peak measured in this run '
                 '(dnnl_sgemm, n = 1024 and 2048, %d threads; per wait policy: %s). The bf16 columns\' shares are of '
                 'the same float32 peak: bfloat16 products run at up to twice its rate.' % (THREADS, measured), '',
             '| workload | OMP wait | GFLOP per step | ' + ' | '.join(label(c) for c in cols) + ' |',
             '| --- | --- | ---: | ' + ' | '.join('---:' for _ in cols) + ' |']
    for row in rows:
        lines.append('| %s | %s | %.2f | %s |' % (row['workload'], row['policy'], row['step_flops'] / 1e9,
                                                  ' | '.join(cell(row, c) for c in cols)))
    return lines


def markdown(report):
    env = report['environment']
    lines = ['# Benchmark suite: OpenCNTK, PyTorch, TensorFlow (%s)' % env['date'], '',
             '- CPU: %s; every worker pinned to %d CPUs, %d threads per framework; OMP_WAIT_POLICY: %s'
             % (env['cpu_model'], THREADS, THREADS, ', '.join(env['omp_wait_policies'])),
             '- Python %s, NumPy %s; load average at start %s, at end %s'
             % (env['python'], env['numpy'], env['loadavg_at_start'], env['loadavg_at_end'])]
    lines += ['- resumed (`--resume`) at %s, load average %s, keeping the %d workload rows measured before'
              % (r['at'], r['loadavg'], r['rows_kept']) for r in env.get('resumed', [])]
    for col, info in report['frameworks'].items():
        extra = ''.join('; %s %s' % (k, info[k]) for k in ('mkl', 'malloc') if info.get(k))
        lines.append('- %s: %s; oneDNN %s%s; threads: %s' % (label(col), info.get('version'), info.get('onednn', '?'),
                                                             extra, info.get('threads')))
    for wmsg in report.get('warnings', []):
        lines.append('- WARNING: %s' % wmsg)
    lines += ['- method: %s' % report['method'], '',
              'Milliseconds per training step (wall): median [bootstrap 95% interval] and CPU time per step (all '
              'threads); "(wide)": the interval stayed wider than +-5% after the last round. Ratio: OpenCNTK\'s '
              'median over the best peer column\'s, with its bootstrap 95% interval.', '']
    lines += table(report)
    lines += ['', 'Workloads:', '']
    for row in report['results']:
        if row['policy'] != report['environment']['omp_wait_policies'][0]:
            continue
        lines.append('- `%s`: %s; optimizer %s%s' % (row['workload'], row['title'], row['optimizer'][0],
                                                     '; %d steps per measurement' % row['measure_steps']
                                                     if 'measure_steps' in row else ''))
    missing = [(row['workload'], row['policy'], c, why) for row in report['results']
               for c, why in row['missing'].items()]
    if missing:
        lines += ['', 'Not timed:', '']
        lines += ['- `%s` (%s) in %s: %s' % (wl, pol, label(c), why) for wl, pol, c, why in missing]
    lines.append('')
    return '\n'.join(lines)


README_BEGIN = '<!-- bench-suite:begin (written by bench/suite.py) -->'
README_END = '<!-- bench-suite:end -->'


def update_readme(report, base, readme=os.path.join(ROOT, 'README.md')):
    """Replaces the README's result block (between README_BEGIN and README_END) with this run's table."""
    with open(readme) as f:
        text = f.read()
    if README_BEGIN not in text or README_END not in text:
        print('%s has no %s ... %s block: not updated' % (readme, README_BEGIN, README_END))
        return
    env = report['environment']
    rel = os.path.relpath(base, ROOT)
    block = [README_BEGIN, '', 'Latest full run (%s, %s, %d threads per framework, load average %s at the start, '
             '%s at the end; details in `%s.md`):' % (env['date'], env['cpu_model'], THREADS, env['loadavg_at_start'],
                                                       env['loadavg_at_end'], rel), '']
    block += table(report) + ['', README_END]
    head, rest = text.split(README_BEGIN, 1)
    tail = rest.split(README_END, 1)[1]
    with open(readme, 'w') as f:
        f.write(head + '\n'.join(block) + tail)
    print('updated the result table in %s' % readme)


def chart(report, path):
    """OpenCNTK's time over the best peer column's, per workload and wait policy, with the 95% intervals."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    rows = [r for r in report['results'] if r.get('ratio_vs_best_peer')]
    if not rows:
        return
    names = ['%s\n%s' % (r['workload'], r['policy']) for r in rows]
    vals = [r['ratio_vs_best_peer'] for r in rows]
    fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(names)), 4))
    ax.bar(range(len(names)), [v[0] for v in vals], yerr=[[v[0] - v[1] for v in vals], [v[2] - v[0] for v in vals]],
           color='#5b8dd9', capsize=3)
    ax.axhline(1.0, color='black', linewidth=0.8)
    ax.set_yscale('log')
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30, ha='right', fontsize=7)
    ax.set_ylabel('OpenCNTK / best peer (lower is better)')
    ax.set_title('OpenCNTK vs the best peer column, %s' % report['environment']['date'])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report_base(args, env):
    """The path, without extension, of the run's report files."""
    return os.path.join(args.out, env['date'] + ('-suite-vs-baseline' if args.baseline else '-suite'))


class Progress:
    """What a run has measured so far, saved after each workload to <report base>.partial.json, so that a run
    interrupted after hours loses at most the workload it was measuring (`--resume`). A run goes on only under the
    same arguments, on the same CPU and from the same clean commit; anything else would mix two measurements."""

    IDENTITY_ARGS = ('workloads', 'columns', 'policies', 'min_rounds', 'max_rounds', 'workload_seconds',
                     'busy_limit', 'retries', 'check_steps', 'no_check', 'baseline')

    def __init__(self, args, env, commit):
        self.identity = {k: getattr(args, k) for k in self.IDENTITY_ARGS}
        self.identity.update(cpu_model=env['cpu_model'], logical_cpus=env['logical_cpus_on_machine'],
                             python_executable=env['python_executable'], commit=commit)
        self.path = report_base(args, env) + '.partial.json'

    def resume(self, path):
        """(environment, sgemm peaks, result rows) of the interrupted run saved at `path`; exits saying why
        when it cannot go on from it."""
        try:
            with open(path) as f:
                saved = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit('--resume %s: %s' % (path, e))
        if self.identity['commit'].endswith('+dirty'):
            sys.exit('--resume: the checkout has uncommitted changes, so this build cannot be shown to be the one '
                     'the interrupted run measured; commit them or start a new run')
        then = saved.get('identity', {})
        differ = sorted(k for k in set(self.identity) | set(then) if self.identity.get(k) != then.get(k))
        if differ:
            sys.exit('--resume %s: the interrupted run differs in %s (%s); start a new run instead' % (
                path, ', '.join(differ), '; '.join('%s: %r then, %r now' % (k, then.get(k), self.identity.get(k))
                                                   for k in differ)))
        import run as bench_run
        env = saved['environment']
        env.setdefault('resumed', []).append({'at': datetime.datetime.now().isoformat(timespec='seconds'),
                                              'loadavg': bench_run.loadavg(), 'rows_kept': len(saved['results'])})
        self.path = path
        print('resuming %s: %d workload(s) measured before' % (path, len(saved['results'])))
        return env, saved['gemm_peak'], saved['results']

    def save(self, env, peaks, results):
        state = {'identity': self.identity, 'environment': env, 'gemm_peak': peaks, 'results': results}
        os.makedirs(os.path.dirname(self.path) or '.', exist_ok=True)
        with open(self.path + '.tmp', 'w') as f:
            json.dump(state, f, indent=1)
        os.replace(self.path + '.tmp', self.path)  # never a half-written file, even if killed while writing

    def remove(self):
        if os.path.exists(self.path):
            os.remove(self.path)


def parse_args(argv=None):
    import workloads
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--workloads', default=','.join(workloads.ORDER))
    ap.add_argument('--columns', default=None,
                    help='comma-separated columns (default: all; with --check: %s): %s'
                         % (','.join(CHECK_COLUMNS), ', '.join(ORDER)))
    ap.add_argument('--frameworks', dest='columns', help=argparse.SUPPRESS)  # the former name
    ap.add_argument('--omp-wait-policy', default=','.join(POLICIES),
                    help='comma-separated OMP_WAIT_POLICY values, one pass each (default: active,passive)')
    ap.add_argument('--check', dest='check_only', action='store_true',
                    help='only the equivalence check of each workload; exit status 1 when one fails')
    ap.add_argument('--no-check', action='store_true', help='time without the equivalence check (not for a report)')
    ap.add_argument('--check-steps', type=int, default=CHECK_STEPS)
    ap.add_argument('--min-rounds', type=int, default=MIN_ROUNDS, help='measurements per column at least (5)')
    ap.add_argument('--max-rounds', type=int, default=25, help='measurements per column at most')
    ap.add_argument('--workload-seconds', type=float, default=900,
                    help='stop adding rounds to a workload after this long (past --min-rounds)')
    ap.add_argument('--busy-limit', type=float, default=0.10,
                    help="largest share of the pinned CPUs' time other processes may take during a measurement")
    ap.add_argument('--retries', type=int, default=3, help='repetitions of a measurement disturbed by other load')
    ap.add_argument('--baseline', metavar='PYTHON_DIR',
                    help='add a column timing another OpenCNTK build: the python/ folder of its checkout, holding '
                         'its in-place extension; the report gives OpenCNTK / baseline per workload')
    ap.add_argument('--quick', action='store_true', help='smoke run: 3 steps, 2 rounds, writes nothing')
    ap.add_argument('--out', default=os.path.join(HERE, 'results'))
    ap.add_argument('--resume', metavar='PARTIAL_JSON',
                    help='go on with an interrupted run: the OUT/<date>-suite.partial.json it left; the workloads '
                         'it measured are kept, the rest measured; refused unless the arguments, the CPU and the '
                         'commit are the same')
    ap.add_argument('--no-write', action='store_true')
    args = ap.parse_args(argv)
    args.workloads = [w for w in args.workloads.split(',') if w]
    default_cols = CHECK_COLUMNS if args.check_only else DEFAULT_COLUMNS
    args.columns = [c for c in (args.columns.split(',') if args.columns else default_cols) if c]
    if args.baseline:
        os.environ['OPENCNTK_BENCH_BASELINE'] = os.path.abspath(args.baseline)
        baseline_python_dir()  # exits naming the folder when it holds no build
        args.columns = [c for c in ORDER if c in args.columns or c == BASELINE]
    elif BASELINE in args.columns:
        ap.error('the %s column needs --baseline' % BASELINE)
    args.policies = [p.lower() for p in args.omp_wait_policy.split(',') if p]
    for c in args.columns:
        if c not in COLUMNS:
            ap.error('unknown column %r (known: %s)' % (c, ', '.join(ORDER)))
    if 'opencntk' not in args.columns:
        ap.error('the columns must include opencntk (the reference of the check and the ratios)')
    for p in args.policies:
        if p not in POLICIES:
            ap.error('unknown wait policy %r (known: %s)' % (p, ', '.join(POLICIES)))
    for w in args.workloads:
        workloads.load(w)
    if args.check_only:
        args.policies, args.no_write = args.policies[:1], True
    if args.quick:
        args.min_rounds = args.max_rounds = 2
        args.retries, args.no_write = 0, True
    elif args.min_rounds < 5:
        ap.error('--min-rounds must be at least 5 (use --quick for a smoke run)')
    if args.resume and args.no_write:
        ap.error('--resume goes on with a run that writes its report; not with --check, --quick or --no-write')
    return args


def main():
    sys.path.insert(0, HERE)
    import run as bench_run
    import numpy as np
    import workloads
    args = parse_args()
    log_dir = os.path.join(ROOT, 'build', 'bench-logs')
    os.makedirs(log_dir, exist_ok=True)
    env = {'date': datetime.date.today().isoformat(), 'cpu_model': bench_run.cpu_model(),
           'logical_cpus_on_machine': os.cpu_count(), 'python': platform.python_version(), 'numpy': np.__version__,
           'python_executable': sys.executable, 'omp_wait_policies': args.policies,
           'loadavg_at_start': bench_run.loadavg(), 'threads': THREADS}
    print('CPU: %s; %d threads per framework; load average %s; %s; logs in %s'
          % (env['cpu_model'], THREADS, env['loadavg_at_start'], sys.executable, log_dir))
    results, peaks = [], {}
    progress = None if args.no_write else Progress(args, env, bench_run.git_commit(ROOT))  # --check: no_write
    if progress and args.resume:
        env, peaks, results = progress.resume(args.resume)
    elif progress and os.path.exists(progress.path):
        print('%s holds an interrupted run (--resume %s goes on with it); this run starts anew and replaces it'
              % (progress.path, progress.path))
    gemm_bound = [n for n in args.workloads if hasattr(workloads.load(n), 'step_flops')]
    for policy in args.policies:
        if gemm_bound and not args.check_only and policy not in peaks:
            peaks[policy] = gemm_peak(policy, log_dir, 2 if args.quick else 7)
            if progress:
                progress.save(env, peaks, results)
            print('oneDNN sgemm peak (OMP_WAIT_POLICY=%s): %s' % (
                policy, '%.0f GFLOP/s' % peaks[policy]['peak_gflops'] if 'peak_gflops' in peaks[policy]
                else peaks[policy]['error']))
        for name in args.workloads:
            if any(r['workload'] == name and r['policy'] == policy for r in results):
                print('%s (OMP_WAIT_POLICY=%s): measured before the interruption' % (name, policy))
                continue
            print('%s (OMP_WAIT_POLICY=%s):' % (name, policy))
            results.append(run_workload(name, policy, args, log_dir))
            if progress:
                progress.save(env, peaks, results)
    env['loadavg_at_end'] = bench_run.loadavg()
    frameworks = {}
    for row in results:
        for col, d in row['columns'].items():
            frameworks.setdefault(col, d['info'])
    report = {'environment': env, 'columns': args.columns, 'frameworks': frameworks,
              'warnings': pin_warnings(frameworks.values()), 'results': results, 'summary': summary(results),
              'bf16_summary': summary(results, 'opencntk_bf16', BF16_PEERS) if 'opencntk_bf16' in args.columns else [],
              'gemm_peak': peaks,
              'method': ('one worker process per workload and column, kept warm; equivalence check first (%d steps '
                         'from the same NumPy initial values, dropout off, per-step losses within each workload\'s '
                         'tolerance of OpenCNTK\'s, equal parameter counts); warm-up steps excluded; rounds of one '
                         'measurement per column, order rotating, in blocks of half the least rounds with every '
                         'worker restarted in the reverse start order before each block after the first, an even '
                         'number of blocks, from %d rounds until every 95%% interval is within '
                         '+-%d%% (at most %d rounds, or the pair of blocks that reaches them; %d s per workload); '
                         'measurements during which other processes '
                         'took over %d%% of the pinned CPUs repeated up to %d times'
                         % (args.check_steps, args.min_rounds, 100 * TARGET_HALF_WIDTH, args.max_rounds,
                            args.workload_seconds, 100 * args.busy_limit, args.retries))}
    if args.check_only:
        bad = [(r['workload'], c, v['why']) for r in results for c, v in r.get('check', {}).get('columns', {}).items()
               if v.get('passed') is not True]
        bad += [(r['workload'], c, why) for r in results for c, why in r['missing'].items()]
        print()
        for r in results:
            for c, v in r.get('check', {}).get('columns', {}).items():
                print('%-10s %-16s %-7s params %-9s max loss diff %s' % (
                    r['workload'], label(c), {True: 'passed', False: 'FAILED', None: 'n/a'}[v.get('passed')],
                    v.get('n_params', '-'), '%.1e' % v['max_rel_diff'] if 'max_rel_diff' in v else '-'))
        for wl, c, why in bad:
            print('%s/%s: %s' % (wl, c, why))
        return 1 if bad else 0
    md = markdown(report)
    print()
    print(md)
    if not args.no_write:
        os.makedirs(args.out, exist_ok=True)
        base = report_base(args, env)
        with open(base + '.json', 'w') as f:
            json.dump(report, f, indent=1)
            f.write('\n')
        with open(base + '.md', 'w') as f:
            f.write(md)
        try:
            chart(report, base + '.png')
        except ImportError:
            print('matplotlib is not installed: no chart (bash bench/install-peers.sh)')
        print('wrote %s.{json,md,png}' % base)
        progress.remove()
        if (os.path.abspath(args.out) == os.path.join(HERE, 'results') and set(args.workloads) == set(workloads.ORDER)
                and set(args.columns) == set(DEFAULT_COLUMNS) and set(args.policies) == set(POLICIES)):
            update_readme(report, base)
    return 0


if __name__ == '__main__':
    if len(sys.argv) == 4 and sys.argv[1] == '--worker':
        sys.path.insert(0, HERE)
        sys.exit(worker_main(sys.argv[2], sys.argv[3]))
    sys.path.insert(0, HERE)
    import run as bench_run
    bench_run.reexec_in_venv(__file__)
    sys.exit(main())
