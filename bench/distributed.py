"""Distributed training on this machine: step time and bytes on the wire for 1, 2 and 4 workers.

    PYTHONPATH=python python3 bench/distributed.py            # writes bench/results/<date>-distributed.{json,md}
    PYTHONPATH=python python3 bench/distributed.py --quick    # a smoke run that writes nothing

The workload is the suite's `mlp` (784-512-512-10, relu, dropout 0.2, batch 128 in all; synthetic
Fashion-MNIST-shaped data): data-parallel 32-bit and 1-bit with the global minibatch of 128 split
over the workers, and block momentum with local minibatches of 128/workers and a block of 2,048
samples. Every worker is one process started by mpiexec; the machine's cores are shared by all of
them (OMP_NUM_THREADS = cores / workers, at least 1), so with more workers than cores the step
time measures oversubscription, not a cluster. Bytes are what each worker hands to MPI per step
(the communicator's counters), which do not depend on the machine. docs/distributed.md turns
these numbers into a cost model for real clusters.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = {'32-bit': ('dp', 32), '1-bit': ('dp', 1), 'bmuf': ('bmuf', 32)}


def worker(args):
    import cntk as C
    C.cntk_py.set_fixed_random_seed(1)
    workers, rank = C.Communicator.num_workers(), C.Communicator.rank()
    x = C.input_variable(784, np.float32)
    y = C.input_variable(10, np.float32)
    with C.layers.default_options(activation=C.relu, init=C.glorot_uniform()):
        z = C.layers.Sequential([C.layers.Dense(512), C.layers.Dropout(0.2), C.layers.Dense(512),
                                 C.layers.Dropout(0.2), C.layers.Dense(10, activation=None)])(x)
    loss, err = C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)
    local = C.rmsprop(z.parameters, C.learning_parameter_schedule(0.001), gamma=0.9, inc=1.2, dec=0.7, max=10,
                      min=1e-6, minibatch_size=C.learners.IGNORE)
    kind, bits = MODES[args.mode]
    if workers == 1 and kind == 'dp' and bits == 32:
        learner = local
    elif kind == 'bmuf':
        learner = C.block_momentum_distributed_learner(local, block_size=2048)
    else:
        learner = C.data_parallel_distributed_learner(local, num_quantization_bits=bits)
    trainer = C.Trainer(z, (loss, err), [learner])
    per = args.batch // workers
    rng = np.random.RandomState(rank)
    xs = rng.rand(per * 16, 784).astype(np.float32)
    ys = np.eye(10, dtype=np.float32)[rng.randint(0, 10, per * 16)]
    comm = C.mpi_communicator()

    def steps(n, offset):
        for i in range(n):
            j = (offset + i) % 16
            trainer.train_minibatch({x: xs[j * per:(j + 1) * per], y: ys[j * per:(j + 1) * per]})

    steps(args.warmup, 0)
    times, sent = [], []
    for m in range(args.measurements):
        counters = learner.communicator()._counters().bytes_sent if learner is not local else 0
        comm.barrier()
        start = time.perf_counter()
        steps(args.steps, m)
        comm.barrier()
        times.append(1000.0 * (time.perf_counter() - start) / args.steps)
        after = learner.communicator()._counters().bytes_sent if learner is not local else 0
        sent.append((after - counters) / args.steps)
    if rank == 0:
        print(json.dumps({'mode': args.mode, 'workers': workers, 'local_batch': per,
                          'ms_per_step': times, 'bytes_per_step': sent,
                          'loss': trainer.previous_minibatch_loss_average}))
    C.Communicator.finalize()


def run(mode, n, args):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_rmaps_base_oversubscribe='1', OMP_NUM_THREADS=str(max(1, (os.cpu_count() or 2) // n)))
    cmd = ['mpiexec', '-n', str(n), '--bind-to', 'none', sys.executable, os.path.abspath(__file__), '--worker',
           '--mode', mode, '--steps', str(args.steps), '--warmup', str(args.warmup),
           '--measurements', str(args.measurements), '--batch', str(args.batch)]
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True).stdout.decode()
    return json.loads([line for line in out.splitlines() if line.startswith('{')][-1])


def table(results):
    lines = ['| mode | workers | local batch | ms/step (median, min-max) | bytes sent per step per worker |',
             '| --- | ---: | ---: | ---: | ---: |']
    for r in results:
        t = r['ms_per_step']
        lines.append('| %s | %d | %d | %.1f (%.1f-%.1f) | %s |' % (
            r['mode'], r['workers'], r['local_batch'], float(np.median(t)), min(t), max(t),
            '{:,.0f}'.format(float(np.median(r['bytes_per_step'])))))
    return '\n'.join(lines)


# ------------------------------------------------------------------ cost model

BANDWIDTH = 25e9 / 8   # bytes/s: a 25 Gb/s network
LATENCY = 15e-6        # seconds per exchange phase (the network's round trip with MPI over TCP)
OVERHEAD = 2e-6        # seconds per message a worker posts (the messages of a phase are in flight together)
BUCKET = 1 << 22       # elements per exchange bucket (src/distributed)


def matrix_of(shape):
    """CNTK's matrix view of a parameter: (rows = last NumPy axis, columns = the rest)."""
    rows = shape[-1] if shape else 1
    return rows, int(np.prod(shape)) // rows if rows else 0


def exchange(shapes, workers, bits):
    """(bytes, messages) each worker sends in one exchange: a reduce-scatter and an all-gather of
    stripes, 32-bit values in buckets of the flattened gradients, or quantized columns per matrix."""
    n = workers
    if bits == 32:
        total = sum(int(np.prod(s)) for s in shapes)
        buckets = -(-total // BUCKET)
        return 2.0 * (n - 1) / n * 4 * total, 2 * (n - 1) * buckets
    size, messages = 0.0, 0.0
    for s in shapes:
        rows, cols = matrix_of(s)
        per_word = 32 // bits
        column = 8 + 4 * -(-rows // per_word)
        size += 2.0 * (n - 1) / n * column * cols
        # Stripes are whole columns: a matrix of fewer columns than workers has fewer owners.
        owners = min(cols, n)
        messages += owners * (n - 1) / n + owners * (n - 1) / n
    return size, messages


def step_cost(shapes, compute_s, workers, mode, local_batch, block=2048):
    """Seconds per step of one worker (no overlap of exchange and compute) and bytes sent per step."""
    header = exchange([(3,)], workers, 32)  # loss, metric and count, summed with every exchange
    if mode == 'bmuf':
        nbytes, msgs = exchange(shapes, workers, 32)
        steps_per_block = max(1.0, block / (workers * local_batch))
        nbytes, msgs, phases = nbytes / steps_per_block, msgs / steps_per_block, 2 / steps_per_block
    else:
        nbytes, msgs = exchange(shapes, workers, 32 if mode == '32-bit' else 1)
        nbytes, msgs, phases = nbytes + header[0], msgs + header[1], 4
    return compute_s + nbytes / BANDWIDTH + msgs * OVERHEAD + phases * LATENCY, nbytes


def cost_model(args):
    sys.path.insert(0, HERE)
    import importlib
    suite = json.load(open(os.path.join(HERE, 'results', args.suite_results)))
    compute = {r['workload']: (r['frameworks']['opencntk']['step_s_median'], r['batch'])
               for r in suite['results'] if 'opencntk' in r['frameworks']}
    lines = ['| workload | parameters | 1 worker ms/step (batch) | mode | ' +
             ' | '.join('%d workers' % n for n in args.model_workers) + ' |',
             '| --- | ---: | ---: | --- |' + ' ---: |' * len(args.model_workers)]
    for name in args.model_workloads.split(','):
        mod = importlib.import_module('workloads.' + name)
        obj = mod.OpenCNTK(mod.make_data())
        shapes = [tuple(p.shape) for p in obj.step.trainer.loss_function.parameters]
        total = sum(int(np.prod(s)) for s in shapes)
        t1, batch = compute[name]
        for mode in ('32-bit', '1-bit', 'bmuf'):
            cells = []
            for n in args.model_workers:
                t, nbytes = step_cost(shapes, t1, n, mode, batch)
                cells.append('%.0f%% (%.1f MB)' % (100 * t1 / t, nbytes / 1e6))
            lines.append('| %s | %s | %.1f (%d) | %s | %s |' % (name, '{:,}'.format(total), 1000 * t1, batch, mode,
                                                                 ' | '.join(cells)))
        print('%s: %d parameters in %d tensors' % (name, total, len(shapes)), file=sys.stderr)
    print('\n'.join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cost-model', action='store_true', help='print the cost model table of docs/distributed.md')
    ap.add_argument('--suite-results', default='2026-11-22-suite.json')
    ap.add_argument('--model-workloads', default='mlp,cnn,cifar_cnn,atis,alexnet')
    ap.add_argument('--model-workers', default=[8, 16, 32, 64, 128, 256], type=lambda s: [int(v) for v in s.split(',')])
    ap.add_argument('--worker', action='store_true')
    ap.add_argument('--mode', default='32-bit', choices=sorted(MODES))
    ap.add_argument('--steps', type=int, default=40)
    ap.add_argument('--warmup', type=int, default=10)
    ap.add_argument('--measurements', type=int, default=5)
    ap.add_argument('--batch', type=int, default=128)
    ap.add_argument('--workers', default='1,2,4')
    ap.add_argument('--quick', action='store_true')
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if args.cost_model:
        return cost_model(args)
    if args.quick:
        args.steps, args.warmup, args.measurements = 3, 1, 1
    results = []
    for n in [int(w) for w in args.workers.split(',')]:
        for mode in ('32-bit', '1-bit', 'bmuf'):
            if n == 1 and mode != '32-bit':
                continue
            r = run(mode, n, args)
            print('%-6s %d workers: %.1f ms/step, %.0f bytes/step' % (mode, n, float(np.median(r['ms_per_step'])),
                                                                    float(np.median(r['bytes_per_step']))),
                  flush=True)
            results.append(r)
    md = table(results)
    print(md)
    if args.quick:
        return
    day = datetime.date.today().isoformat()
    base = os.path.join(HERE, 'results', day + '-distributed')
    cpu = ''
    try:
        cpu = [l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')][0]
    except (OSError, IndexError):
        pass
    meta = {'date': day, 'cpu': cpu, 'cores': os.cpu_count(), 'load': os.getloadavg(), 'results': results}
    with open(base + '.json', 'w') as f:
        json.dump(meta, f, indent=1)
    with open(base + '.md', 'w') as f:
        f.write('# Distributed training on one machine (%s)\n\n%s, %d cores (load %.1f at the start); every worker is '
                'an MPI process on the same machine; OMP_NUM_THREADS = cores / workers.\n\n%s\n'
                % (day, cpu, os.cpu_count() or 0, meta['load'][0], md))


if __name__ == '__main__':
    main()
