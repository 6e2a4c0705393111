#!/usr/bin/env python3
"""Read throughput of cntk.io.MinibatchSource over CTF and CBF files: ATIS and Fashion-MNIST.

For each data set, as CTF (CTFDeserializer): the one-pass chunk index, then one randomized sweep read
with prefetch off and on, alone (samples/s and MB/s of the file) and with a training step after each
minibatch (with prefetch on, the next minibatch is read while the step runs). The same data converted
to CBF (cntk.io._formats.convert_ctf_to_cbf, float32, 32 MiB chunks, written once under build/bench/):
opening the file (header and chunk table) and one randomized sweep read alone, prefetch off and on.

Usage (from the repository root, after `make dev`):

    PYTHONPATH=python python3 bench/readers.py            # writes bench/results/<date>-readers.{json,md}
    PYTHONPATH=python python3 bench/readers.py --quick    # a small smoke run, writes nothing

Fashion-MNIST comes from /usr/share/datasets/fashion-mnist/ (Debian's dataset-fashion-mnist); its CTF
copy and the CBF files are written once under build/bench/. Timings are reported, never asserted.
"""
import argparse
import datetime
import gzip
import json
import os
import platform
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FASHION = '/usr/share/datasets/fashion-mnist'
ATIS = os.path.join(ROOT, '..', 'shared', 'data', 'atis', 'atis.train.ctf')


def fashion_ctf(limit):
    """Fashion-MNIST's training set as CTF (|features 784 pixel values |labels one-hot sparse)."""
    out_dir = os.path.join(ROOT, 'build', 'bench')
    path = os.path.join(out_dir, 'fashion-mnist.train.%d.ctf' % limit)
    if os.path.exists(path):
        return path
    os.makedirs(out_dir, exist_ok=True)
    with gzip.open(os.path.join(FASHION, 'train-images-idx3-ubyte.gz')) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)[:limit]
    with gzip.open(os.path.join(FASHION, 'train-labels-idx1-ubyte.gz')) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:limit]
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        for img, lab in zip(images, labels):
            f.write('|features %s |labels %d:1\n' % (' '.join(map(str, img.tolist())), lab))
    os.replace(tmp, path)
    return path


def cbf_twin(ctf_path, streams):
    """The CTF file converted to CBF under build/bench/ (once); streams: (name, alias, dense|sparse, dim)."""
    from cntk.io._formats import convert_ctf_to_cbf
    out_dir = os.path.join(ROOT, 'build', 'bench')
    path = os.path.join(out_dir, os.path.splitext(os.path.basename(ctf_path))[0] + '.cbf')
    if os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(ctf_path):
        return path
    os.makedirs(out_dir, exist_ok=True)
    tmp = path + '.tmp'
    convert_ctf_to_cbf(ctf_path, tmp, streams)
    os.replace(tmp, path)
    return path


def cbf_entry(ds, streams):
    """A read-only entry for the CBF twin of data set ds."""
    from cntk.io._formats import CBFDeserializer
    path = cbf_twin(ds['path'], streams)
    return dict(name=ds['name'], format='cbf', path=path, make=lambda: CBFDeserializer(path),
                model=None, mb_size=ds['mb_size'], what=ds['what'] + '; converted to CBF (float32)')


def datasets(quick):
    import cntk as C
    from cntk.io import CTFDeserializer, StreamDef, StreamDefs
    out = []
    if os.path.exists(ATIS):
        def atis():
            return CTFDeserializer(ATIS, StreamDefs(query=StreamDef('S0', 943, is_sparse=True),
                                                    intent=StreamDef('S1', 26, is_sparse=True),
                                                    slots=StreamDef('S2', 129, is_sparse=True)))

        def atis_model():
            q = C.sequence.input_variable(943, is_sparse=True)
            s = C.sequence.input_variable(129, is_sparse=True)
            z = C.layers.Sequential([C.layers.Embedding(150), C.layers.Dense(129)])(q)
            loss = C.cross_entropy_with_softmax(z, s)
            tr = C.Trainer(z, (loss, C.classification_error(z, s)), [C.sgd(z.parameters, C.learning_parameter_schedule(0.01))])
            return tr, {'query': q, 'slots': s}
        out.append(dict(name='atis', format='ctf', path=ATIS, make=atis, model=atis_model, mb_size=1000,
                         what='ATIS train: 4,978 sequences, 66,547 tokens; sparse S0/S1/S2'))
        out.append(cbf_entry(out[-1], [('query', 'S0', 'sparse', 943), ('intent', 'S1', 'sparse', 26),
                                       ('slots', 'S2', 'sparse', 129)]))
    if os.path.isdir(FASHION):
        path = fashion_ctf(2000 if quick else 60000)

        def fashion():
            return CTFDeserializer(path, StreamDefs(features=StreamDef('features', 784),
                                                    labels=StreamDef('labels', 10, is_sparse=True)))

        def fashion_model():
            f = C.input_variable(784)
            l = C.input_variable(10, is_sparse=True)
            z = C.layers.Sequential([C.layers.Dense(200, activation=C.relu), C.layers.Dense(10)])(f / 255.0)
            loss = C.cross_entropy_with_softmax(z, l)
            tr = C.Trainer(z, (loss, C.classification_error(z, l)), [C.sgd(z.parameters, C.learning_parameter_schedule(0.05))])
            return tr, {'features': f, 'labels': l}
        out.append(dict(name='fashion_mnist', format='ctf', path=path, make=fashion, model=fashion_model,
                         mb_size=256, what='Fashion-MNIST train: dense 784 + sparse one-hot 10 per sample'))
        out.append(cbf_entry(out[-1], [('features', 'features', 'dense', 784), ('labels', 'labels', 'sparse', 10)]))
    return out


def sweep(ds, prefetch, train):
    """Seconds for one randomized sweep; samples (counted on the first stream)."""
    from cntk.io import MinibatchSource
    src = MinibatchSource(ds['make'](), max_sweeps=1, prefetch=prefetch)
    trainer, inputs = ds['model']() if train else (None, None)
    input_map = {v: src.streams[name] for name, v in inputs.items()} if train else None
    samples = 0
    t0 = time.perf_counter()
    while True:
        mb = src.next_minibatch(ds['mb_size'], input_map=input_map)
        if not mb:
            break
        samples += next(iter(mb.values())).num_samples if not train else mb[next(iter(input_map))].num_samples
        if train:
            trainer.train_minibatch(mb)
    return time.perf_counter() - t0, samples


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--reps', type=int, default=3, help='timed sweeps per configuration (the median is reported)')
    ap.add_argument('--quick', action='store_true', help='small smoke run; writes nothing')
    ap.add_argument('--out', default=os.path.join(ROOT, 'bench', 'results'))
    ap.add_argument('--omp-wait-policy', choices=['passive', 'active', 'default'], default='passive',
                    help="OMP_WAIT_POLICY (default passive, as bench/run.py: idle OpenMP threads sleep instead of "
                         "spinning, which leaves the prefetch thread a core; 'default' leaves the environment alone)")
    args = ap.parse_args()
    if args.omp_wait_policy != 'default':
        os.environ['OMP_WAIT_POLICY'] = args.omp_wait_policy.upper()  # before the OpenMP runtime starts
    reps = 1 if args.quick else args.reps
    from cntk.io import CTFDeserializer  # noqa: F401  (imports the package before timing)
    results = []
    for ds in datasets(args.quick):
        size_mb = os.path.getsize(ds['path']) / 1e6
        t0 = time.perf_counter()
        ds['make']()._native()
        index_s = time.perf_counter() - t0
        row = dict(dataset=ds['name'], format=ds['format'], what=ds['what'], file_mb=round(size_mb, 2),
                   mb_size=ds['mb_size'], index_seconds=round(index_s, 3), runs={})
        for train in (False, True) if ds['model'] else (False,):
            # Prefetch off and on alternate, so that load from elsewhere on the machine hits both alike.
            times = {False: [], True: []}
            for _ in range(reps):
                for prefetch in (False, True):
                    t, n = sweep(ds, prefetch, train)
                    times[prefetch].append(t)
            for prefetch in (False, True):
                t = float(np.median(times[prefetch]))
                best = min(times[prefetch])
                key = '%s_prefetch_%s' % ('train' if train else 'read', 'on' if prefetch else 'off')
                row['runs'][key] = dict(seconds=round(t, 3), best_seconds=round(best, 3), samples=n,
                                        samples_per_s=round(n / t), mb_per_s=round(size_mb / t, 2),
                                        all_seconds=[round(x, 3) for x in times[prefetch]])
                print('%-14s %-4s %-18s %8.3f s (best %8.3f s)  %10.0f samples/s  %7.2f MB/s'
                      % (ds['name'], ds['format'], key, t, best, n / t, size_mb / t))
        results.append(row)
    if args.quick or not results:
        return
    date = datetime.date.today().isoformat()
    env = dict(python=platform.python_version(), machine=platform.machine(), cpus=os.cpu_count(),
               load_average=os.getloadavg(),
               omp_wait_policy=os.environ.get('OMP_WAIT_POLICY', '(unset: libgomp default)'),
               note='CBF files converted from the CTF ones (float32, 32 MiB chunks); index s: CTF one-pass chunk '
                    'index, CBF header and chunk table; one randomized sweep per run (randomization window 4 chunks of 32 MB), median of %d runs '
                    '(prefetch off and on alternating); read_* read only, train_* run a Trainer step after each '
                    'minibatch; prefetch reads the next minibatch on a background thread while the step runs' % reps)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, '%s-readers.json' % date), 'w') as f:
        json.dump(dict(date=date, environment=env, results=results), f, indent=1)
    lines = ['# Reader throughput (%s)' % date, '', env['note'] + '.', '',
             'Machine: %d CPUs, load average %.1f / %.1f / %.1f at the end (other jobs share it: timings are noisy); '
             'OMP_WAIT_POLICY %s.' % ((env['cpus'],) + tuple(env['load_average']) + (env['omp_wait_policy'],)), '',
             '| data | format | file MB | index s | run | prefetch | s/sweep (median) | best s | samples/s | MB/s |',
             '| --- | --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: |']
    for r in results:
        for key, v in r['runs'].items():
            run, _, pf = key.split('_')
            lines.append('| %s | %s | %.1f | %.3f | %s | %s | %.3f | %.3f | %d | %.2f |' % (
                r['dataset'], r['format'].upper(), r['file_mb'], r['index_seconds'], run, pf, v['seconds'], v['best_seconds'],
                v['samples_per_s'], v['mb_per_s']))
    with open(os.path.join(args.out, '%s-readers.md' % date), 'w') as f:
        f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
