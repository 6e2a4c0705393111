"""Activation and weight reorders per training step, and the share of oneDNN's time they take,
with oneDNN layouts kept between steps and with plain layouts (CNTK_DNNL_BLOCKED=0), from
oneDNN's own per-primitive log (DNNL_VERBOSE=1) summed by primitive kind.

    python3 bench/dnnl_layouts.py alexnet googlenet convbn [--warmup 2] [--steps 2]

alexnet and googlenet are bench/workloads' networks; convbn is a small ResNet-like network
(conv-BN-relu stem, two residual blocks of conv-BN-relu-conv-BN plus the block's input,
pooling between, a dense classifier), batch 16, 3x32x32, defined here. Each workload and
mode runs in a child process (oneDNN reads DNNL_VERBOSE when it starts).
"""
import argparse
import ctypes
import os
import subprocess
import sys
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = '### dnnl_layouts'


class ConvBN:
    """conv-BN-relu stem and residual blocks, SGD over synthetic 10-class images."""
    BATCH = 16

    def __init__(self):
        import numpy as np
        import cntk as C
        from cntk.layers import BatchNormalization, Convolution2D, Dense, MaxPooling
        C.cntk_py.set_fixed_random_seed(1)

        def conv_bn(h, f, relu=True):
            h = BatchNormalization(map_rank=1, normalization_time_constant=4096)(
                Convolution2D((3, 3), f, pad=True, bias=False)(h))
            return C.relu(h) if relu else h

        def block(h, f):
            return C.relu(conv_bn(conv_bn(h, f), f, relu=False) + h)

        x = C.input_variable((3, 32, 32))
        y = C.input_variable(10)
        h = block(block(conv_bn(x, 32), 32), 32)
        h = MaxPooling((2, 2), strides=2)(h)
        h = block(block(conv_bn(h, 64), 64), 64)
        h = MaxPooling((2, 2), strides=2)(h)
        z = Dense(10)(h)
        loss = C.cross_entropy_with_softmax(z, y)
        self.trainer = C.Trainer(z, (loss, None), [C.sgd(z.parameters, C.learning_parameter_schedule(0.01))])
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((self.BATCH, 3, 32, 32)).astype(np.float32)
        self.y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, self.BATCH)]
        self.inputs = (x, y)

    def step(self, s):
        self.trainer.train_minibatch({self.inputs[0]: self.x, self.inputs[1]: self.y})


class Workload:
    """A bench/workloads network's OpenCNTK step."""

    def __init__(self, name):
        import importlib
        sys.path.insert(0, HERE)
        mod = importlib.import_module('workloads.' + name)
        self.fw = mod.OpenCNTK(mod.make_data())

    def step(self, s):
        fw = self.fw
        fw.step(*(fw.batch(s) if hasattr(fw, 'batch') else fw.data.get(s)))


def child(name, warmup, steps):
    import cntk as C
    libc = ctypes.CDLL(None)

    def flush():
        sys.stdout.flush()
        libc.fflush(None)

    w = ConvBN() if name == 'convbn' else Workload(name)
    for s in range(warmup):
        w.step(s)
    flush()
    print(MARK, 'start')
    flush()
    a0, w0 = C._cntk.dnnl_reorders(), C._cntk.dnnl_weight_reorders()
    t0 = time.perf_counter()
    for s in range(steps):
        w.step(warmup + s)
    wall = time.perf_counter() - t0
    flush()
    print(MARK, 'counts', C._cntk.dnnl_reorders() - a0, C._cntk.dnnl_weight_reorders() - w0, wall)
    flush()


def measure(name, blocked, warmup, steps):
    env = dict(os.environ, DNNL_VERBOSE='1', CNTK_DNNL_BLOCKED='1' if blocked else '0')
    env['PYTHONPATH'] = os.path.join(os.path.dirname(HERE), 'python') + os.pathsep + env.get('PYTHONPATH', '')
    out = subprocess.run([sys.executable, __file__, '--child', name, '--warmup', str(warmup), '--steps', str(steps)],
                         env=env, check=True, capture_output=True, text=True).stdout
    times, counting, counts = defaultdict(float), False, None
    for line in out.splitlines():
        if line.startswith(MARK):
            parts = line.split()
            if parts[2] == 'start':
                counting = True
            else:
                counts = (int(parts[3]), int(parts[4]), float(parts[5]))
        elif counting and line.startswith('onednn_verbose,exec,'):
            f = line.split(',')
            times[f[3]] += float(f[-1])
    total = sum(times.values())
    return {'act': counts[0] / steps, 'wei': counts[1] / steps, 'ms': total / steps, 'wall_ms': 1e3 * counts[2] / steps,
            'reorder_share': times['reorder'] / total if total else 0.0,
            'kinds': {k: v / total for k, v in sorted(times.items(), key=lambda kv: -kv[1])}}


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('workloads', nargs='*', default=['alexnet', 'googlenet', 'convbn'])
    p.add_argument('--warmup', type=int, default=2)
    p.add_argument('--steps', type=int, default=2)
    p.add_argument('--child')
    a = p.parse_args()
    if a.child:
        return child(a.child, a.warmup, a.steps)
    print('| workload | activation reorders per step | weight reorders per step | reorders\' share of oneDNN time '
          '| oneDNN ms per step | wall ms per step |')
    print('| --- | --- | --- | --- | --- | --- |')
    for name in a.workloads:
        for blocked in (False, True):
            r = measure(name, blocked, a.warmup, a.steps)
            print('| %s, %s | %g | %g | %.0f%% | %.0f | %.0f |' % (
                name, 'kept layouts' if blocked else 'plain layouts', r['act'], r['wei'], 100 * r['reorder_share'],
                r['ms'], r['wall_ms']))
            print('    shares:', ', '.join('%s %.1f%%' % (k, 100 * v) for k, v in list(r['kinds'].items())[:6]),
                  file=sys.stderr)
            sys.stdout.flush()


if __name__ == '__main__':
    main()
