"""The mlp_epoch workload: one training epoch of a 784-512-512-10 MLP on
Fashion-MNIST in OpenCNTK, PyTorch and TensorFlow, side by side.

run.py calls `run(args)`. Each framework trains in its own worker process
(`python3 bench/mlp_epoch.py --worker NAME`), started once and kept warm: the
parent hands out epochs one at a time, the frameworks alternating, so that no
two frameworks ever run at once and drift in machine load falls on all of them.
A worker speaks JSON lines on its standard input and output.

See bench/README.md for the method.
"""
import json
import math
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
THREADS = 2

DIMS = [784, 512, 512, 10]
BATCH = 128
DROPOUT = 0.2
LR, BETA1, BETA2, EPSILON = 0.001, 0.9, 0.999, 1e-8
TRAIN_SIZE = 60000
STEPS_PER_EPOCH = -(-TRAIN_SIZE // BATCH)  # 469: 468 full minibatches and one of 96

# The frameworks in the order of the table; 'tensorflow' is a Python loop over a
# tf.function train step (as the other two are Python loops over a step);
# 'keras_fit' is Keras's own model.fit over the same minibatches, for reference.
FRAMEWORKS = ['opencntk', 'pytorch', 'tensorflow', 'keras_fit']
LABELS = {'opencntk': 'OpenCNTK', 'pytorch': 'PyTorch', 'tensorflow': 'TensorFlow (tf.function step)',
          'keras_fit': 'TensorFlow (Keras model.fit)'}


def epoch_order(epoch):
    """The order of the training samples in epoch `epoch`: the same in every framework."""
    return np.random.default_rng(1000 + epoch).permutation(TRAIN_SIZE)


def initial_params(seed=0):
    """Glorot-uniform weights (in, out) and zero biases, drawn with NumPy: every framework loads these."""
    rng = np.random.default_rng(seed)
    out = []
    for a, b in zip(DIMS[:-1], DIMS[1:]):
        limit = np.sqrt(6.0 / (a + b))
        out.append((rng.uniform(-limit, limit, size=(a, b)).astype(np.float32), np.zeros(b, np.float32)))
    return out


# ------------------------------------------------------------------- workers
#
# A framework is a class with:
#   info()                     versions and thread counts
#   build(dropout)             a fresh model from initial_params() with an Adam optimizer
#   train(order, steps)        trains `steps` minibatches of `order`; returns (loss sum, error count, samples)
# build() and train() see the data as NumPy arrays (x: float32 (60000, 784) in [0, 1], y: int64 labels).


class OpenCNTK:
    def __init__(self, x, y):
        import cntk as C
        self.C = C
        self.x, self.y = x, y
        self.y1h = np.eye(10, dtype=np.float32)[y]  # CNTK's labels are one-hot vectors

    def info(self):
        import run as bench_run
        return {'version': 'OpenCNTK %s (commit %s)' % (self.C.__version__, bench_run.git_commit()),
                'onednn': bench_run.onednn_version(), 'openmp_runtime': bench_run.loaded_library('libgomp'),
                'threads': 'OpenMP %s (OMP_NUM_THREADS=%s)' % (bench_run.omp_max_threads(),
                                                             os.environ.get('OMP_NUM_THREADS'))}

    def build(self, dropout):
        C = self.C
        from cntk.layers import Dense, Dropout, Sequential
        C.cntk_py.set_fixed_random_seed(1)
        self.features = C.input_variable(784, np.float32, name='features')
        self.labels = C.input_variable(10, np.float32, name='labels')
        dense = [Dense(512, activation=C.relu), Dense(512, activation=C.relu), Dense(10)]
        layers = [dense[0], Dropout(dropout), dense[1], Dropout(dropout), dense[2]] if dropout else dense
        model = Sequential(layers)(self.features)
        for d, values in zip(dense, initial_params()):
            for p in d.parameters:  # W (in, out), then b
                p.value = values[0] if p.name == 'W' else values[1]
        loss = C.cross_entropy_with_softmax(model, self.labels)
        error = C.classification_error(model, self.labels)
        # Adam on the mean gradient of each minibatch; epsilon is CNTK's default, 1e-8.
        learner = C.adam(model.parameters, lr=C.learning_parameter_schedule(LR), momentum=BETA1,
                         variance_momentum=BETA2, epsilon=EPSILON, minibatch_size=C.learners.IGNORE)
        self.trainer = C.Trainer(model, (loss, error), [learner])

    def train(self, order, steps):
        trainer, features, labels, x, y1h = self.trainer, self.features, self.labels, self.x, self.y1h
        loss = err = 0.0
        samples = 0
        for s in range(steps):
            idx = order[s * BATCH:(s + 1) * BATCH]
            trainer.train_minibatch({features: x[idx], labels: y1h[idx]})
            n = trainer.previous_minibatch_sample_count
            loss += trainer.previous_minibatch_loss_average * n
            err += trainer.previous_minibatch_evaluation_average * n
            samples += n
        return loss, err, samples


class PyTorch:
    def __init__(self, x, y):
        import torch
        torch.set_num_threads(THREADS)
        self.torch = torch
        self.x, self.y = x, y

    def info(self):
        import run as bench_run
        t = self.torch
        return {'version': 'PyTorch %s' % t.__version__, 'openmp_runtime': bench_run.loaded_library('libgomp'),
                'threads': 'intra-op %d (torch.set_num_threads), inter-op %d' % (t.get_num_threads(),
                                                                                  t.get_num_interop_threads())}

    def build(self, dropout):
        torch, nn = self.torch, self.torch.nn
        torch.manual_seed(1)
        linear = [nn.Linear(a, b) for a, b in zip(DIMS[:-1], DIMS[1:])]
        with torch.no_grad():
            for lin, (W, b) in zip(linear, initial_params()):
                lin.weight.copy_(torch.from_numpy(W.T.copy()))  # nn.Linear keeps (out, in)
                lin.bias.copy_(torch.from_numpy(b))
        self.model = nn.Sequential(linear[0], nn.ReLU(), nn.Dropout(dropout), linear[1], nn.ReLU(),
                                   nn.Dropout(dropout), linear[2])
        self.model.train()
        self.opt = torch.optim.Adam(self.model.parameters(), lr=LR, betas=(BETA1, BETA2), eps=EPSILON)
        self.steps = 0
        self.criterion = nn.CrossEntropyLoss()

    def set_epsilon(self):
        # PyTorch adds eps to sqrt(v / (1 - beta2^t)); CNTK and Keras add it to sqrt(v)
        # and fold sqrt(1 - beta2^t) into the step size. eps / sqrt(1 - beta2^t) at
        # step t makes PyTorch's update exactly theirs.
        self.steps += 1
        self.opt.param_groups[0]['eps'] = EPSILON / math.sqrt(1.0 - BETA2 ** self.steps)

    def train(self, order, steps):
        torch, model, opt, criterion, x, y = self.torch, self.model, self.opt, self.criterion, self.x, self.y
        loss_sum = err = 0.0
        samples = 0
        for s in range(steps):
            idx = order[s * BATCH:(s + 1) * BATCH]
            xb, yb = torch.from_numpy(x[idx]), torch.from_numpy(y[idx])
            out = model(xb)
            loss = criterion(out, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            self.set_epsilon()
            opt.step()
            n = len(idx)
            loss_sum += loss.item() * n
            err += (out.argmax(1) != yb).sum().item()
            samples += n
        return loss_sum, err, samples


class TensorFlow:
    """A Python loop over a tf.function train step (GradientTape, Keras model and optimizer)."""

    def __init__(self, x, y):
        os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(THREADS)
        tf.config.threading.set_inter_op_parallelism_threads(TF_INTER_OP)
        import keras
        self.tf, self.keras = tf, keras
        self.x, self.y = x, y

    def info(self):
        tf, keras = self.tf, self.keras
        onednn = os.environ.get('TF_ENABLE_ONEDNN_OPTS', '(unset: on by default on x86 Linux)')
        return {'version': 'TensorFlow %s, Keras %s' % (tf.__version__, keras.__version__),
                'tf_enable_onednn_opts': onednn,
                'threads': 'intra-op %d, inter-op %d (tf.config.threading)'
                           % (tf.config.threading.get_intra_op_parallelism_threads(),
                              tf.config.threading.get_inter_op_parallelism_threads())}

    def make_model(self, dropout):
        keras = self.keras
        keras.utils.set_random_seed(1)
        layers = [keras.Input((784,)), keras.layers.Dense(512, activation='relu')]
        if dropout:
            layers.append(keras.layers.Dropout(dropout))
        layers.append(keras.layers.Dense(512, activation='relu'))
        if dropout:
            layers.append(keras.layers.Dropout(dropout))
        layers.append(keras.layers.Dense(10))
        model = keras.Sequential(layers)
        model.set_weights([a for W, b in initial_params() for a in (W, b)])  # Dense kernels are (in, out)
        # Keras applies epsilon as CNTK does (to the square root of the uncorrected second moment).
        opt = keras.optimizers.Adam(learning_rate=LR, beta_1=BETA1, beta_2=BETA2, epsilon=EPSILON)
        return model, opt

    def build(self, dropout):
        tf, keras = self.tf, self.keras
        model, opt = self.make_model(dropout)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        @tf.function
        def step(xb, yb):
            with tf.GradientTape() as tape:
                logits = model(xb, training=True)
                loss = loss_fn(yb, logits)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            err = tf.reduce_sum(tf.cast(tf.not_equal(tf.argmax(logits, axis=1), yb), tf.float32))
            return loss, err

        self.step = step

    def train(self, order, steps):
        step, x, y = self.step, self.x, self.y
        loss_sum = err = 0.0
        samples = 0
        for s in range(steps):
            idx = order[s * BATCH:(s + 1) * BATCH]
            loss, e = step(x[idx], y[idx])
            n = len(idx)
            loss_sum += float(loss) * n
            err += float(e)
            samples += n
        return loss_sum, err, samples


class KerasFit(TensorFlow):
    """Keras's model.fit (compile's defaults) over the same minibatches, in the same order."""

    def build(self, dropout):
        keras = self.keras
        self.model, opt = self.make_model(dropout)
        self.model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                           metrics=[keras.metrics.SparseCategoricalAccuracy(name='acc')])

    def info(self):
        d = super().info()
        keras = self.keras
        probe = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        probe.compile(optimizer='adam', loss='mse')
        d['version'] += ', model.fit with compile(jit_compile=%r)' % probe.jit_compile  # what 'auto' resolves to
        return d

    def train(self, order, steps):
        idx = order[:min(steps * BATCH, TRAIN_SIZE)]
        # shuffle=False: Keras takes the minibatches in the order given, as the other loops do.
        h = self.model.fit(self.x[idx], self.y[idx], batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
        n = len(idx)
        return h.history['loss'][0] * n, (1.0 - h.history['acc'][0]) * n, n


WORKERS = {'opencntk': OpenCNTK, 'pytorch': PyTorch, 'tensorflow': TensorFlow, 'keras_fit': KerasFit}
TF_INTER_OP = int(os.environ.get('BENCH_TF_INTER_OP', '1'))


def worker_main(name):
    """Serves commands from the parent: one JSON object per line in, one per line out."""
    proto = os.fdopen(os.dup(1), 'w', buffering=1)
    os.dup2(2, 1)  # anything a library prints goes to stderr, not into the protocol
    sys.stdout = sys.stderr
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, 'examples', 'python'))
    import fashion_mnist_data

    def reply(**kw):
        proto.write(json.dumps(kw) + '\n')

    try:
        cpus = sorted(os.sched_getaffinity(0))[:THREADS]
        os.sched_setaffinity(0, cpus)
        x, y = fashion_mnist_data.load('train')
        x = np.ascontiguousarray(x.reshape(-1, 784))
        fw = WORKERS[name](x, y)
        reply(ok=True, info=dict(fw.info(), pinned_cpus=cpus))
    except Exception as e:  # noqa: BLE001: reported to the parent, which goes on without this framework
        reply(ok=False, error='%s: %s' % (type(e).__name__, e))
        return 1
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd['cmd'] == 'quit':
                break
            if cmd['cmd'] == 'build':
                fw.build(cmd['dropout'])
                reply(ok=True)
            elif cmd['cmd'] == 'check':
                # Per-step losses without dropout: deterministic, comparable across frameworks.
                fw.build(0.0)
                order, losses = epoch_order(0), []
                for s in range(cmd['steps']):
                    loss, _, n = fw.train(order[s * BATCH:], 1)
                    losses.append(loss / n)
                reply(ok=True, losses=losses)
            elif cmd['cmd'] == 'train':
                order = epoch_order(cmd['epoch'])
                steps = cmd['steps']
                c0, t0 = time.process_time(), time.perf_counter()
                loss, err, n = fw.train(order, steps)
                t1, c1 = time.perf_counter(), time.process_time()
                reply(ok=True, wall_s=t1 - t0, cpu_s=c1 - c0, loss=loss / n, error=err / n, samples=n, steps=steps)
            else:
                reply(ok=False, error='unknown command %r' % cmd['cmd'])
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            reply(ok=False, error='%s: %s' % (type(e).__name__, e))
    return 0


# -------------------------------------------------------------------- parent

class Worker:
    def __init__(self, name, omp_wait_policy):
        env = dict(os.environ)
        env['OMP_NUM_THREADS'] = str(THREADS)
        env['TF_CPP_MIN_LOG_LEVEL'] = '2'
        if omp_wait_policy != 'default':
            env['OMP_WAIT_POLICY'] = omp_wait_policy.upper()
        else:
            env.pop('OMP_WAIT_POLICY', None)
        env['PYTHONPATH'] = os.pathsep.join([os.path.join(ROOT, 'python'), HERE] +
                                            ([env['PYTHONPATH']] if env.get('PYTHONPATH') else []))
        self.name = name
        self.log = open(os.path.join(_log_dir(), 'mlp_epoch-%s.log' % name), 'w')
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--worker', name],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     bufsize=1, env=env, cwd=ROOT)

    def ask(self, **cmd):
        if cmd:
            self.proc.stdin.write(json.dumps(cmd) + '\n')
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('%s: the worker exited (see %s)' % (self.name, self.log.name))
        r = json.loads(line)
        if not r.get('ok'):
            raise RuntimeError('%s: %s' % (self.name, r.get('error')))
        return r

    def close(self):
        try:
            self.proc.stdin.write('{"cmd": "quit"}\n')
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        self.log.close()


def _log_dir():
    d = os.path.join(ROOT, 'build', 'bench-logs')
    os.makedirs(d, exist_ok=True)
    return d


def check_losses(results, rtol):
    """Largest relative difference of each framework's per-step losses from OpenCNTK's."""
    ref = results.get('opencntk')
    out = {}
    for fw, losses in results.items():
        if ref is None or fw == 'opencntk':
            continue
        a, b = np.asarray(ref), np.asarray(losses)
        out[fw] = float(np.max(np.abs(a - b) / np.abs(a)))
    bad = {fw: d for fw, d in out.items() if d > rtol}
    return out, bad


def run(args, env_common):
    """The workload; returns the report (and writes it unless args.no_write)."""
    import run as bench_run
    sys.path.insert(0, os.path.join(ROOT, 'examples', 'python'))
    import fashion_mnist_data
    if not fashion_mnist_data.available():
        raise SystemExit('mlp_epoch: Fashion-MNIST not found in %s (apt-get install dataset-fashion-mnist, '
                         'or bash bench/install-peers.sh)' % fashion_mnist_data.DATA_DIR)

    names = [f for f in FRAMEWORKS if f in args.frameworks]
    full_epochs = args.epoch_steps <= 0
    steps = STEPS_PER_EPOCH if full_epochs else args.epoch_steps
    warmup_steps = STEPS_PER_EPOCH if args.warmup_steps <= 0 else args.warmup_steps
    env = dict(env_common, loadavg_at_start=bench_run.loadavg(), frameworks={}, unavailable={})
    print('mlp_epoch: starting workers for %s (logs in %s)' % (', '.join(names), _log_dir()))
    workers = {}
    for fw in names:
        workers[fw] = Worker(fw, args.omp_wait_policy)
    for fw in names:
        try:
            env['frameworks'][fw] = workers[fw].ask()['info']
        except RuntimeError as e:
            print('mlp_epoch: %s is not available: %s' % (LABELS[fw], e))
            env['unavailable'][fw] = str(e)
            workers.pop(fw).close()
    names = [f for f in names if f in workers]
    for fw in names:
        info = env['frameworks'][fw]
        print('  %-30s %s; %s' % (LABELS[fw], info['version'], info['threads']))
    try:
        # 1. The same computation: per-step losses without dropout from the same
        #    parameters, on the same minibatches.
        check = {fw: workers[fw].ask(cmd='check', steps=args.check_steps)['losses'] for fw in names}
        diffs, bad = check_losses(check, args.check_rtol)
        for fw, d in diffs.items():
            print('  check: %s per-step losses (no dropout, %d steps) differ from OpenCNTK\'s by at most %.1e'
                  % (LABELS[fw], args.check_steps, d))
        if bad:
            raise SystemExit('mlp_epoch: per-step losses disagree beyond %.0e: %s' % (args.check_rtol, bad))

        # 2. Training models (dropout 0.2), warmed up for an epoch or warmup_steps.
        for fw in names:
            workers[fw].ask(cmd='build', dropout=DROPOUT)
        warm = {}
        for fw in names:
            warm[fw] = workers[fw].ask(cmd='train', epoch=0, steps=warmup_steps)
            print('  warm-up %-30s %d steps in %.2f s' % (LABELS[fw], warmup_steps, warm[fw]['wall_s']))

        # 3. Measured epochs, the frameworks taking turns (the order rotates every epoch).
        samples = {fw: [] for fw in names}
        for rep in range(args.epochs):
            k = rep % len(names)
            for fw in names[k:] + names[:k]:
                r = workers[fw].ask(cmd='train', epoch=1 + rep, steps=steps)
                samples[fw].append(r)
                print('  epoch %d %-30s %.2f s (CPU %.2f s)  loss %.4f  error %.2f%%'
                      % (1 + rep, LABELS[fw], r['wall_s'], r['cpu_s'], r['loss'], 100 * r['error']))
    finally:
        for w in workers.values():
            w.close()
    env['loadavg_at_end'] = bench_run.loadavg()

    scale = STEPS_PER_EPOCH / steps  # 1 for full epochs
    rows = []
    for fw in names:
        wall = [r['wall_s'] * scale for r in samples[fw]]
        cpu = [r['cpu_s'] * scale for r in samples[fw]]
        rows.append({'framework': fw, 'label': LABELS[fw],
                     'epoch_s_median': statistics.median(wall), 'epoch_s_min': min(wall), 'epoch_s_max': max(wall),
                     'cpu_s_median': statistics.median(cpu), 'epoch_s_samples': [round(w, 4) for w in wall],
                     'cpu_s_samples': [round(c, 4) for c in cpu],
                     'loss_per_epoch': [round(r['loss'], 5) for r in samples[fw]],
                     'error_per_epoch': [round(r['error'], 5) for r in samples[fw]],
                     'final_loss': samples[fw][-1]['loss'], 'final_error': samples[fw][-1]['error'],
                     'check_losses': check[fw], 'check_max_relative_difference': diffs.get(fw, 0.0)})
    by = {r['framework']: r for r in rows}
    for r in rows:
        for peer in ('pytorch', 'tensorflow', 'keras_fit'):
            if peer in by:
                r['ratio_vs_' + peer] = r['epoch_s_median'] / by[peer]['epoch_s_median']
    finals = [r['final_loss'] for r in rows]
    spread = (max(finals) - min(finals)) / statistics.median(finals)
    method = {
        'workload': 'MLP 784-512-512-10, relu, dropout 0.2 after each hidden layer, softmax cross entropy, '
                    'batch 128, one epoch over the 60,000 Fashion-MNIST training images (469 steps, the last of 96)',
        'optimizer': 'Adam lr %g, betas %g/%g, epsilon %g, on the mean gradient of each minibatch'
                     % (LR, BETA1, BETA2, EPSILON),
        'init': 'Glorot-uniform weights and zero biases drawn with NumPy (default_rng(0)), loaded into each framework',
        'data_order': 'epoch e takes the samples in the order NumPy default_rng(1000 + e).permutation(60000); '
                      'the same in every framework',
        'measurement': ('full epochs' if full_epochs else
                        '%d steps per measurement, extrapolated to an epoch (x %.3f)' % (steps, scale)),
        'measured': args.epochs, 'warmup_steps': warmup_steps,
        'order': 'one worker process per framework, kept warm; frameworks take turns epoch by epoch, '
                 'the order rotating every epoch',
        'check': '%d steps without dropout from the same parameters on the same minibatches: per-step losses '
                 'within %.0e of OpenCNTK\'s' % (args.check_steps, args.check_rtol),
        'threads': THREADS, 'omp_wait_policy': args.omp_wait_policy, 'tf_inter_op_threads': TF_INTER_OP,
        'gc': 'enabled (as in a training script)',
        'final_loss_spread': spread,
    }
    report = {'environment': env, 'method': method, 'results': rows}
    md = markdown(report)
    print()
    print(md)
    if spread > 0.15:
        print('WARNING: final training losses differ by %.0f%% between frameworks' % (100 * spread))
    if not args.no_write:
        os.makedirs(args.out, exist_ok=True)
        base = os.path.join(args.out, env['date'] + '-mlp-epoch')
        with open(base + '.json', 'w') as f:
            json.dump(report, f, indent=1)
            f.write('\n')
        with open(base + '.md', 'w') as f:
            f.write(md)
        print('wrote %s.json and %s.md' % (base, base))
    return report


def markdown(report):
    env, m = report['environment'], report['method']
    rows = report['results']
    has = {r['framework'] for r in rows}
    lines = [
        '# MLP training epoch: %s, %s' % (', '.join(dict.fromkeys(LABELS[r['framework']].split(' ')[0]
                                                                 for r in rows)), env['date']),
        '',
        '- workload: %s' % m['workload'],
        '- optimizer: %s; init: %s' % (m['optimizer'], m['init']),
        '- data order: %s' % m['data_order'],
        '- CPU: %s, %d logical CPUs on the machine; every worker pinned to CPUs %s'
        % (env['cpu_model'], env['logical_cpus_on_machine'], env['pinned_cpus']),
    ]
    for fw, info in env['frameworks'].items():
        extra = ', oneDNN %s' % info['onednn'] if 'onednn' in info else ''
        lines.append('- %s: %s%s; threads: %s' % (LABELS[fw], info['version'], extra, info['threads']))
    for fw, why in env['unavailable'].items():
        lines.append('- %s: not run (%s)' % (LABELS[fw], why))
    lines += [
        '- Python %s, NumPy %s; OMP_WAIT_POLICY %s for the OpenMP runtimes (OpenCNTK, PyTorch)'
        % (env['python'], env['numpy'], m['omp_wait_policy']),
        '- load average (1/5/15 min) at start %s, at end %s' % (env['loadavg_at_start'], env['loadavg_at_end']),
        '- method: %s; %d measured, after a warm-up of %d steps; %s' % (m['measurement'], m['measured'],
                                                                        m['warmup_steps'], m['order']),
        '- check: %s' % m['check'],
        '',
        'Seconds per epoch (wall): median (min-max) over the measured epochs; CPU: process CPU seconds per epoch '
        '(all threads). Ratios are of the medians (below 1: faster than the peer). Loss and error: mean training '
        'loss and error over the last measured epoch (dropout on).',
        '',
    ]
    head = '| framework | epoch (s) | steps/s | CPU (s) |'
    sep = '| --- | ---: | ---: | ---: |'
    for peer in ('pytorch', 'tensorflow'):
        if peer in has:
            head += ' vs %s |' % LABELS[peer].split(' ')[0]
            sep += ' ---: |'
    head += ' training loss | training error |'
    sep += ' ---: | ---: |'
    lines += [head, sep]
    for r in rows:
        line = '| %s | %.2f (%.2f-%.2f) | %.0f | %.2f |' % (r['label'], r['epoch_s_median'], r['epoch_s_min'],
                                                            r['epoch_s_max'], STEPS_PER_EPOCH / r['epoch_s_median'],
                                                            r['cpu_s_median'])
        for peer in ('pytorch', 'tensorflow'):
            if peer in has:
                line += ' %.2f |' % r['ratio_vs_' + peer]
        line += ' %.4f | %.2f%% |' % (r['final_loss'], 100 * r['final_error'])
        lines.append(line)
    lines += ['', 'Training loss per measured epoch:', '']
    for r in rows:
        lines.append('- %s: %s' % (r['label'], ', '.join('%.4f' % v for v in r['loss_per_epoch'])))
    lines.append('')
    return '\n'.join(lines)


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == '--worker':
        sys.exit(worker_main(sys.argv[2]))
    sys.exit('usage: run through bench/run.py --workloads mlp_epoch')
