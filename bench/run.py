#!/usr/bin/env python3
"""Benchmarks of OpenCNTK against its peers: framework overhead and MLP calls (against
PyTorch, in one process) and an MLP training epoch (against PyTorch and TensorFlow).

Usage (from the repository root, after `make dev`):

    PYTHONPATH=python python3 bench/run.py                        # every workload, writes bench/results/
    PYTHONPATH=python python3 bench/run.py --workloads mlp_epoch  # only the named workloads
    PYTHONPATH=python python3 bench/run.py --quick                # a short smoke run, writes nothing

See bench/README.md for the method.
"""
import argparse
import os

THREADS = 2
# Calls timed in this process against PyTorch (bench/results/<date>.{json,md}).
OVERHEAD_WORKLOADS = ['tiny_eval', 'tiny_fwd_bwd', 'mlp_eval', 'mlp_fwd_bwd']
# A training epoch against PyTorch and TensorFlow, in worker processes (bench/mlp_epoch.py;
# bench/results/<date>-mlp-epoch.{json,md}).
EPOCH_WORKLOADS = ['mlp_epoch']
ALL_WORKLOADS = OVERHEAD_WORKLOADS + EPOCH_WORKLOADS
EPOCH_FRAMEWORKS = ['opencntk', 'pytorch', 'tensorflow', 'keras_fit']


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--reps', type=int, default=11, help='timed loops per framework and workload (at least 5)')
    ap.add_argument('--loop-seconds', type=float, default=0.2, help='approximate length of one timed loop')
    ap.add_argument('--warmup-seconds', type=float, default=0.5, help='untimed warm-up per framework and workload')
    ap.add_argument('--omp-wait-policy', choices=['passive', 'active', 'default'], default='passive',
                    help="OMP_WAIT_POLICY for the OpenMP runtime both frameworks share (default: passive; "
                         "'default' leaves the environment alone)")
    ap.add_argument('--workloads', default=','.join(ALL_WORKLOADS),
                    help='comma-separated workloads to run (default: all): %s' % ', '.join(ALL_WORKLOADS))
    ap.add_argument('--quick', action='store_true',
                    help='short smoke run (2 loops of 0.02 s; mlp_epoch: 2 measurements of 20 steps); writes nothing')
    ap.add_argument('--out', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'results'),
                    help='directory for the result files')
    ap.add_argument('--no-write', action='store_true', help='print the table only')
    ep = ap.add_argument_group('mlp_epoch')
    ep.add_argument('--frameworks', default=','.join(EPOCH_FRAMEWORKS),
                    help='comma-separated frameworks for mlp_epoch (default: all): %s' % ', '.join(EPOCH_FRAMEWORKS))
    ep.add_argument('--epochs', type=int, default=5, help='measured epochs per framework (at least 5)')
    ep.add_argument('--epoch-steps', type=int, default=0,
                    help='measure this many steps instead of a whole epoch and extrapolate (default 0: whole epochs)')
    ep.add_argument('--warmup-steps', type=int, default=0, help='warm-up steps per framework (default 0: one epoch)')
    ep.add_argument('--check-steps', type=int, default=10,
                    help='steps without dropout whose losses are compared across frameworks before timing')
    ep.add_argument('--check-rtol', type=float, default=1e-3, help='largest relative loss difference in that check')
    args = ap.parse_args()
    args.workloads = [w.strip() for w in args.workloads.split(',') if w.strip()]
    args.frameworks = [f.strip() for f in args.frameworks.split(',') if f.strip()]
    for w in args.workloads:
        if w not in ALL_WORKLOADS:
            ap.error('unknown workload %r (choose from %s)' % (w, ', '.join(ALL_WORKLOADS)))
    for f in args.frameworks:
        if f not in EPOCH_FRAMEWORKS:
            ap.error('unknown framework %r (choose from %s)' % (f, ', '.join(EPOCH_FRAMEWORKS)))
    if args.quick:
        args.reps, args.loop_seconds, args.warmup_seconds, args.no_write = 2, 0.02, 0.02, True
        args.epochs, args.epoch_steps, args.warmup_steps, args.check_steps = 2, 20, 20, 3
    elif args.reps < 5:
        ap.error('--reps must be at least 5')
    elif args.epochs < 5:
        ap.error('--epochs must be at least 5')
    return args


def reexec_in_venv(script):
    """Runs `script` again under the peers' virtual environment (build/bench-venv, or $BENCH_VENV; made by
    bench/install-peers.sh) when it exists and is not this interpreter's; BENCH_NO_VENV=1 stays here."""
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    venv = os.environ.get('BENCH_VENV', os.path.join(root, 'build', 'bench-venv'))
    py = os.path.join(venv, 'bin', 'python')
    if (os.path.exists(py) and not os.environ.get('BENCH_NO_VENV')
            and os.path.realpath(sys.prefix) != os.path.realpath(venv)):
        os.execv(py, [py, os.path.abspath(script)] + sys.argv[1:])


# The OpenMP runtime reads its environment once, when it is loaded: the thread
# count and wait policy are set before anything that loads one is imported.
if __name__ == '__main__':
    reexec_in_venv(__file__)
ARGS = parse_args() if __name__ == '__main__' else None
os.environ['OMP_NUM_THREADS'] = str(THREADS)
if ARGS is not None and ARGS.omp_wait_policy != 'default':
    os.environ['OMP_WAIT_POLICY'] = ARGS.omp_wait_policy.upper()

import datetime  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# --------------------------------------------------------------- environment

def pin_threads():
    """Restricts the process to THREADS CPUs (the first ones it may use)."""
    cpus = sorted(os.sched_getaffinity(0))[:THREADS]
    os.sched_setaffinity(0, cpus)
    return cpus


def cpu_model():
    with open('/proc/cpuinfo') as f:
        for line in f:
            if line.startswith('model name'):
                return line.split(':', 1)[1].strip()
    return platform.processor() or 'unknown'


def loadavg():
    with open('/proc/loadavg') as f:
        return [float(v) for v in f.read().split()[:3]]


def git_commit(where=ROOT):
    try:
        out = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=where, capture_output=True, text=True)
        dirty = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'], cwd=where,
                               capture_output=True, text=True).stdout.strip()
        return out.stdout.strip() + ('+dirty' if dirty else '')
    except OSError:
        return 'unknown'


def loaded_library(fragment):
    """Path of a shared library loaded into this process whose name contains `fragment`."""
    with open('/proc/self/maps') as f:
        for line in f:
            path = line.split()[-1]
            if fragment in os.path.basename(path):
                return path
    return None


def onednn_version():
    """Version of the oneDNN library OpenCNTK links (dnnl_version())."""
    import ctypes
    path = loaded_library('libdnnl.so')
    if not path:
        return 'unknown'

    class Version(ctypes.Structure):
        _fields_ = [('major', ctypes.c_int), ('minor', ctypes.c_int), ('patch', ctypes.c_int),
                    ('hash', ctypes.c_char_p)]

    lib = ctypes.CDLL(path)
    lib.dnnl_version.restype = ctypes.POINTER(Version)
    v = lib.dnnl_version().contents
    return '%d.%d.%d' % (v.major, v.minor, v.patch)


def omp_max_threads():
    """omp_get_max_threads() of the OpenMP runtime OpenCNTK uses."""
    import ctypes
    path = loaded_library('libgomp')
    if not path:
        return None
    return ctypes.CDLL(path).omp_get_max_threads()


# ------------------------------------------------------------------ workloads
#
# Each workload gives, per framework, a zero-argument callable doing one call
# (NumPy in, NumPy out, as CNTK's eval/forward/backward are) and the values it
# returns, which are compared across frameworks before anything is timed.

def glorot_uniform(rng, fan_in, fan_out):
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=(fan_in, fan_out)).astype(np.float32)


def make_params(dims, seed=0):
    """Glorot-uniform weights (in, out) and zero biases, from NumPy: both frameworks load these arrays."""
    rng = np.random.default_rng(seed)
    return [(glorot_uniform(rng, a, b), np.zeros(b, np.float32)) for a, b in zip(dims[:-1], dims[1:])]


def make_data(batch, dim, seed=1):
    return np.random.default_rng(seed).standard_normal((batch, dim)).astype(np.float32)


def cntk_graph(C, dims, params):
    """times/plus layers with relu between them; returns (input, output function, parameters)."""
    x = C.input_variable(dims[0], np.float32, name='x')
    h = x
    ps = []
    for i, (W, b) in enumerate(params):
        pw = C.parameter(W.shape, init=W, name='W%d' % i)
        pb = C.parameter(b.shape, init=b, name='b%d' % i)
        ps += [pw, pb]
        h = C.times(h, pw) + pb
        if i < len(params) - 1:
            h = C.relu(h)
    return x, h, ps


def cntk_calls(C, dims, params, data):
    x, z, ps = cntk_graph(C, dims, params)
    zo = z.output
    ones = np.ones((data.shape[0], dims[-1]), np.float32)

    def eval_call():
        return [z.eval({x: data})]

    def fwd_bwd_call():
        state, out = z.forward({x: data}, outputs=[zo], keep_for_backward=[zo])
        grads = z.backward(state, {zo: ones}, ps)
        return [out[zo]] + [grads[p] for p in ps]

    return eval_call, fwd_bwd_call


def torch_calls(torch, dims, params, data, idiomatic):
    """PyTorch twins. `idiomatic`: nn.Linear layers (fused addmm); otherwise literal x @ W + b."""
    ones = np.ones((data.shape[0], dims[-1]), np.float32)
    if idiomatic:
        layers = []
        for i, (W, b) in enumerate(params):
            lin = torch.nn.Linear(W.shape[0], W.shape[1])
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(W.T.copy()))
                lin.bias.copy_(torch.from_numpy(b))
            layers.append(lin)
            if i < len(params) - 1:
                layers.append(torch.nn.ReLU())
        model = torch.nn.Sequential(*layers)
        ps = list(model.parameters())

        def forward(xt):
            return model(xt)

        def grads_as_cntk():
            # nn.Linear keeps weights as (out, in); CNTK's are (in, out).
            return [p.grad.numpy().T if p.dim() == 2 else p.grad.numpy() for p in ps]
    else:
        ps = []
        for W, b in params:
            ps += [torch.from_numpy(W.copy()).requires_grad_(), torch.from_numpy(b.copy()).requires_grad_()]

        def forward(xt):
            h = xt
            for i in range(0, len(ps), 2):
                h = h @ ps[i] + ps[i + 1]
                if i + 2 < len(ps):
                    h = torch.relu(h)
            return h

        def grads_as_cntk():
            return [p.grad.numpy() for p in ps]

    def eval_call():
        with torch.inference_mode():
            return [forward(torch.from_numpy(data)).numpy()]

    def fwd_bwd_call():
        for p in ps:
            p.grad = None
        y = forward(torch.from_numpy(data))
        y.backward(torch.from_numpy(ones))
        return [y.detach().numpy()] + grads_as_cntk()

    return eval_call, fwd_bwd_call


def check_same(name, a_vals, b_vals, rtol=1e-4):
    """Largest difference between the two frameworks' results, relative to the largest magnitude."""
    worst = 0.0
    for a, b in zip(a_vals, b_vals):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a.shape != b.shape:
            raise AssertionError('%s: shapes differ: %s vs %s' % (name, a.shape, b.shape))
        scale = max(np.abs(a).max(), np.abs(b).max(), 1e-30)
        worst = max(worst, float(np.abs(a - b).max() / scale))
    if worst > rtol:
        raise AssertionError('%s: OpenCNTK and PyTorch disagree (relative difference %.2e)' % (name, worst))
    return worst


# --------------------------------------------------------------------- timing

def time_loop(fn, n):
    """(wall seconds, process CPU seconds) per call over a loop of n calls, with the
    garbage collector paused (as timeit does). CPU time counts every thread."""
    gc_was = gc.isenabled()
    gc.disable()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(n):
            fn()
        t1, c1 = time.perf_counter(), time.process_time()
    finally:
        if gc_was:
            gc.enable()
    return (t1 - t0) / n, (c1 - c0) / n


def warm_up_and_size(fn, warmup_s, target_s):
    """Runs fn for at least warmup_s (and 5 calls); returns the loop length that lasts about target_s."""
    calls, t0 = 0, time.perf_counter()
    while calls < 5 or time.perf_counter() - t0 < warmup_s:
        fn()
        calls += 1
    per_call = time_loop(fn, max(3, calls // 4))[0]
    return max(3, int(target_s / per_call))


def summarize(samples):
    us = [w * 1e6 for w, _ in samples]
    cpu = [c * 1e6 for _, c in samples]
    return {'median_us': statistics.median(us), 'min_us': min(us), 'max_us': max(us),
            'cpu_median_us': statistics.median(cpu),
            'samples_us': [round(u, 3) for u in us], 'cpu_samples_us': [round(u, 3) for u in cpu]}


# ----------------------------------------------------------------------- main

def main():
    args = ARGS
    cpus = pin_threads()
    common = {
        'date': datetime.date.today().isoformat(),
        'cpu_model': cpu_model(),
        'logical_cpus_on_machine': os.cpu_count(),
        'pinned_cpus': cpus,
        'python': platform.python_version(),
        'numpy': np.__version__,
    }
    print('CPU: %s (%d logical CPUs; pinned to %s); load average %s'
          % (common['cpu_model'], common['logical_cpus_on_machine'], cpus, loadavg()))
    overhead = [w for w in OVERHEAD_WORKLOADS if w in args.workloads]
    if overhead:
        run_overhead(args, dict(common), overhead)
    if 'mlp_epoch' in args.workloads:
        sys.path.insert(0, HERE)
        import mlp_epoch
        if overhead:
            print()
        mlp_epoch.run(args, dict(common))


def run_overhead(args, env, selected):
    """The calls timed in this process against PyTorch; writes <date>.{json,md}."""
    import torch
    torch.set_num_threads(THREADS)
    import cntk as C

    env.update({
        'loadavg_at_start': loadavg(),
        'torch': torch.__version__,
        'torch_threads': torch.get_num_threads(),
        'opencntk_api': C.__version__,
        'opencntk_commit': git_commit(),
        'opencntk_onednn': onednn_version(),
        'opencntk_omp_threads': omp_max_threads(),
        'OMP_NUM_THREADS': os.environ.get('OMP_NUM_THREADS'),
        'OMP_WAIT_POLICY': os.environ.get('OMP_WAIT_POLICY', '(unset: libgomp default)'),
        'openmp_runtime': loaded_library('libgomp'),
    })
    print('Python %s, NumPy %s, PyTorch %s (%d threads), OpenCNTK %s at %s with oneDNN %s (OpenMP threads %s)'
          % (env['python'], env['numpy'], env['torch'], env['torch_threads'], env['opencntk_api'],
             env['opencntk_commit'], env['opencntk_onednn'], env['opencntk_omp_threads']))
    print('OpenMP runtime %s, OMP_WAIT_POLICY %s' % (env['openmp_runtime'], env['OMP_WAIT_POLICY']))

    tiny_dims, mlp_dims, mlp_batch = [4, 3], [784, 512, 512, 10], 128
    tiny_params, tiny_data = make_params(tiny_dims), make_data(1, tiny_dims[0])
    mlp_params, mlp_data = make_params(mlp_dims), make_data(mlp_batch, mlp_dims[0])
    c_tiny = cntk_calls(C, tiny_dims, tiny_params, tiny_data)
    t_tiny = torch_calls(torch, tiny_dims, tiny_params, tiny_data, idiomatic=False)
    c_mlp = cntk_calls(C, mlp_dims, mlp_params, mlp_data)
    t_mlp = torch_calls(torch, mlp_dims, mlp_params, mlp_data, idiomatic=True)
    workloads = [
        ('tiny_eval', 'x @ W + b, x (1, 4), W (4, 3): eval', c_tiny[0], t_tiny[0]),
        ('tiny_fwd_bwd', 'x @ W + b, x (1, 4), W (4, 3): forward + backward (dW, db)', c_tiny[1], t_tiny[1]),
        ('mlp_eval', 'MLP 784-512-512-10 relu, batch 128: eval', c_mlp[0], t_mlp[0]),
        ('mlp_fwd_bwd', 'MLP 784-512-512-10 relu, batch 128: forward + backward (6 parameter gradients)',
         c_mlp[1], t_mlp[1]),
    ]
    workloads = [w for w in workloads if w[0] in selected]

    results = []
    for key, desc, c_fn, t_fn in workloads:
        diff = check_same(key, c_fn(), t_fn())
        fns = {'opencntk': c_fn, 'pytorch': t_fn}
        sizes = {fw: warm_up_and_size(fn, args.warmup_seconds, args.loop_seconds) for fw, fn in fns.items()}
        samples = {fw: [] for fw in fns}
        for rep in range(args.reps):
            order = ['opencntk', 'pytorch'] if rep % 2 == 0 else ['pytorch', 'opencntk']
            for fw in order:
                samples[fw].append(time_loop(fns[fw], sizes[fw]))
        row = {'workload': key, 'description': desc, 'max_relative_difference': diff}
        for fw in fns:
            row[fw] = dict(summarize(samples[fw]), calls_per_loop=sizes[fw])
        row['ratio_median'] = row['opencntk']['median_us'] / row['pytorch']['median_us']
        row['ratio_min'] = row['opencntk']['min_us'] / row['pytorch']['min_us']
        row['ratio_cpu_median'] = row['opencntk']['cpu_median_us'] / row['pytorch']['cpu_median_us']
        results.append(row)
        print('%-13s OpenCNTK %10.1f us  PyTorch %10.1f us  ratio %.2f'
              % (key, row['opencntk']['median_us'], row['pytorch']['median_us'], row['ratio_median']))
    env['loadavg_at_end'] = loadavg()

    method = {
        'threads': THREADS,
        'reps': args.reps,
        'loop_seconds': args.loop_seconds,
        'warmup_seconds': args.warmup_seconds,
        'order': 'frameworks alternate within each workload; the order flips every repetition',
        'per_call': 'NumPy in, NumPy out: OpenCNTK eval/forward/backward with dicts of NumPy arrays; '
                    'PyTorch with torch.from_numpy inputs and .numpy() results',
        'init': 'Glorot-uniform weights (NumPy default_rng(0)), zero biases; data standard normal (default_rng(1))',
        'gc': 'paused during timed loops',
        'omp_wait_policy': env['OMP_WAIT_POLICY'],
    }
    report = {'environment': env, 'method': method, 'results': results}
    md = markdown(report)
    print()
    print(md)
    if not args.no_write:
        os.makedirs(args.out, exist_ok=True)
        base = os.path.join(args.out, env['date'])
        with open(base + '.json', 'w') as f:
            json.dump(report, f, indent=1)
            f.write('\n')
        with open(base + '.md', 'w') as f:
            f.write(md)
        print('wrote %s.json and %s.md' % (base, base))


def markdown(report):
    env, method = report['environment'], report['method']
    lines = [
        '# OpenCNTK vs PyTorch, %s' % env['date'],
        '',
        '- CPU: %s, %d logical CPUs on the machine, process pinned to CPUs %s'
        % (env['cpu_model'], env['logical_cpus_on_machine'], env['pinned_cpus']),
        '- threads: PyTorch %d (`torch.set_num_threads`), OpenCNTK OpenMP %s (`OMP_NUM_THREADS=%s`); '
        'both run on one OpenMP runtime, `OMP_WAIT_POLICY=%s`'
        % (env['torch_threads'], env['opencntk_omp_threads'], env['OMP_NUM_THREADS'], env['OMP_WAIT_POLICY']),
        '- Python %s, NumPy %s, PyTorch %s, OpenCNTK %s (commit %s, oneDNN %s)'
        % (env['python'], env['numpy'], env['torch'], env['opencntk_api'], env['opencntk_commit'],
           env['opencntk_onednn']),
        '- load average (1/5/15 min) at start %s, at end %s' % (env['loadavg_at_start'], env['loadavg_at_end']),
        '- %d timed loops of about %.2f s per framework and workload, after %.2f s of warm-up; '
        'frameworks alternate' % (method['reps'], method['loop_seconds'], method['warmup_seconds']),
        '',
        'Wall time per call in microseconds: median (min-max over the timed loops). '
        'Ratio: OpenCNTK / PyTorch of the medians (below 1: OpenCNTK is faster); '
        'CPU ratio: the same for process CPU time per call (all threads).',
        '',
        '| workload | OpenCNTK (us) | PyTorch (us) | ratio | CPU ratio |',
        '| --- | ---: | ---: | ---: | ---: |',
    ]
    for r in report['results']:
        c, t = r['opencntk'], r['pytorch']
        lines.append('| %s | %s | %s | %.2f | %.2f |'
                     % (r['description'], cell(c), cell(t), r['ratio_median'], r['ratio_cpu_median']))
    lines.append('')
    return '\n'.join(lines)


def cell(s):
    fmt = '%.1f' if s['median_us'] < 1000 else '%.0f'
    return (fmt + ' (' + fmt + '-' + fmt + ')') % (s['median_us'], s['min_us'], s['max_us'])


if __name__ == '__main__':
    sys.exit(main())
