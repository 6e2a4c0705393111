#!/usr/bin/env python3
"""Per-epoch time of the six Keras examples (examples/keras) in three columns, 2 threads each:
Keras 2.3.1 on OpenCNTK (keras_examples.py under `python -m cntk.keras`), and the same models
in Keras 3 (keras3_examples.py) on TensorFlow and on PyTorch, in the peers' venv
(build/bench-venv, made by bench/install-peers.sh).

    python3 bench/keras_examples.py                       # writes bench/results/<date>-keras-examples.{json,md}
    python3 bench/keras_examples.py --examples mnist_mlp  # some examples
    python3 bench/keras_examples.py --quick               # smoke run: small data, 2 epochs, writes nothing

Run it with the Python that has Keras 2.3.1 (not the venv's). Each column runs each example in a
fresh process, from the same initial weights (written by the OpenCNTK column, loaded by the
others), on the same arrays, for `--epochs` epochs; the first epoch (graph building, tracing)
is reported apart, and the time per epoch is the median of the others. The examples train on
part of their data where a whole epoch would take minutes (SIZES); the report gives the
samples per epoch and the time scaled to the example's whole training set.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXAMPLES_DIR = os.path.join(ROOT, 'examples', 'keras')
sys.path.insert(0, HERE)
import run as bench_run  # noqa: E402  (cpu_model, loadavg, git_commit)

THREADS = 2
# Data arguments per example and the size of its whole training set (the examples' own).
SIZES = {
    'mnist_mlp': ({'n_train': 60000, 'n_test': 2000}, 60000),
    'mnist_cnn': ({'n_train': 6000, 'n_test': 2000}, 60000),
    'cifar10_cnn': ({'n_train': 2000, 'n_test': 1000}, 50000),
    'imdb_bidirectional_lstm': ({'n_train': 2000, 'n_test': 1000}, 25000),
    'imdb_fasttext': ({'n_train': 5000, 'n_test': 1000}, 25000),
    'lstm_text_generation': ({}, None),  # the whole text
}
QUICK = {
    'mnist_mlp': {'n_train': 2000, 'n_test': 500}, 'mnist_cnn': {'n_train': 500, 'n_test': 200},
    'cifar10_cnn': {'n_train': 200, 'n_test': 100}, 'imdb_bidirectional_lstm': {'n_train': 200, 'n_test': 100},
    'imdb_fasttext': {'n_train': 500, 'n_test': 100}, 'lstm_text_generation': {'max_chars': 5000},
}
COLUMNS = {  # key: (label, Keras backend)
    'opencntk': ('Keras 2.3.1 on OpenCNTK', 'cntk'),
    'tensorflow': ('Keras 3 on TensorFlow', 'tensorflow'),
    'torch': ('Keras 3 on PyTorch', 'torch'),
}


def venv_python():
    venv = os.environ.get('BENCH_VENV', os.path.join(ROOT, 'build', 'bench-venv'))
    return os.path.join(venv, 'bin', 'python')


def column_command(col, example, epochs, data, weights, out):
    args = [example, '--epochs', str(epochs), '--seeds', '1', '--data', json.dumps(data), '--weights', weights,
            '--json', out, '--threads', str(THREADS)]
    if col == 'opencntk':
        return [sys.executable, '-m', 'cntk.keras', os.path.join(EXAMPLES_DIR, 'keras_examples.py')] + args
    return [venv_python(), os.path.join(EXAMPLES_DIR, 'keras3_examples.py')] + args


def column_env(col, keras_home):
    env = dict(os.environ, KERAS_BACKEND=COLUMNS[col][1], KERAS_HOME=keras_home, OMP_NUM_THREADS=str(THREADS),
               TF_CPP_MIN_LOG_LEVEL='2')
    env.setdefault('OMP_WAIT_POLICY', 'passive')  # spinning workers stall on a shared machine
    inplace = os.path.join(ROOT, 'python')
    paths = [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p]
    if glob.glob(os.path.join(inplace, 'cntk', '_cntk*.so')):  # the in-place build (make dev)
        paths = [inplace] + [p for p in paths if os.path.realpath(p) != os.path.realpath(inplace)]
    env['PYTHONPATH'] = os.pathsep.join(os.path.abspath(p) for p in paths)
    return env


def run_column(col, example, epochs, data, work):
    out = os.path.join(work, '%s-%s.json' % (example, col))
    weights = os.path.join(work, '%s-init.npz' % example)
    proc = subprocess.run(column_command(col, example, epochs, data, weights, out), env=column_env(col, work),
                          cwd=work, capture_output=True, text=True)
    if proc.returncode != 0:
        return {'error': (proc.stderr.strip().splitlines() or ['exit status %d' % proc.returncode])[-1]}
    with open(out) as f:
        r = json.load(f)
    run = r.pop('runs')[0]
    r.update(loss=run['loss'], accuracy=run['accuracy'], epoch_seconds=run['seconds'],
             first_epoch=run['seconds'][0], per_epoch=statistics.median(run['seconds'][1:] or run['seconds']))
    return r


def samples(example, data):
    """Training samples per epoch of `example` with `data` (the arrays keras_examples.py makes)."""
    if example == 'lstm_text_generation':
        sys.path.insert(0, EXAMPLES_DIR)
        import keras_examples as ke
        return len(ke.text_data(**data)[0][0])
    return data.get('n_train')


def markdown(report):
    cols = report['columns']
    lines = ['# Keras examples: Keras 2.3.1 on OpenCNTK, Keras 3 on TensorFlow and on PyTorch', '',
             '%s, commit %s. CPU: %s; %d threads per framework; load average before the run %s, after it %s.'
             % (report['date'], report['commit'], report['cpu'], THREADS,
                ' / '.join('%.2f' % v for v in report['load_before']),
                ' / '.join('%.2f' % v for v in report['load_after'])), '']
    if report.get('note'):
        lines += [report['note'], '']
    lines += ['Versions: ' + '; '.join('%s: %s (%s)' % (COLUMNS[c][0], report['versions'].get(c, '?'),
                                                        report['threads'].get(c, '?')) for c in cols) + '.', '',
              'Seconds per epoch (median of epochs 2..%d; the first epoch, with graph building or tracing, '
              'in brackets), on the samples per epoch given; "whole set" scales that time to the example\'s '
              'whole training set. Ratio: OpenCNTK\'s time over the peer\'s (below 1: OpenCNTK is faster).' %
              report['epochs'], '']
    head = ['example', 'samples / epoch'] + [COLUMNS[c][0] for c in cols] + \
        ['whole set, %s' % COLUMNS[c][0] for c in cols] + ['ratio to %s' % COLUMNS[c][0] for c in cols[1:]]
    lines += ['| ' + ' | '.join(head) + ' |', '| --- |' + ' ---: |' * (len(head) - 1)]
    for name, row in report['examples'].items():
        cells = [name, str(row['samples'])]
        for c in cols:
            r = row[c]
            cells.append('error: %s' % r['error'] if 'error' in r
                         else '%.2f (%.2f)' % (r['per_epoch'], r['first_epoch']))
        for c in cols:
            r = row[c]
            cells.append('%.1f' % (r['per_epoch'] * row['scale']) if 'per_epoch' in r else '')
        for c in cols[1:]:
            a, b = row[cols[0]], row[c]
            cells.append('%.2f' % (a['per_epoch'] / b['per_epoch']) if 'per_epoch' in a and 'per_epoch' in b else '')
        lines.append('| ' + ' | '.join(cells) + ' |')
    lines += ['', 'Test loss / accuracy after the run (accuracy from `predict`; a check that each column trained, '
              'not the comparison of tests/python/test_keras3_comparison.py, which trains several seeds). The '
              'examples run as Keras ships them: rolled, Keras 2.3.1\'s LSTMs on the CNTK backend output the cell '
              'state (docs/keras.md), so the LSTM rows\' losses differ by model; TensorFlow\'s Adam takes a dense '
              'embedding gradient, as Keras 2.3.1\'s and PyTorch\'s do.', '',
              '| example | ' + ' | '.join(COLUMNS[c][0] for c in cols) + ' |', '| --- |' + ' ---: |' * len(cols)]
    for name, row in report['examples'].items():
        lines.append('| %s | %s |' % (name, ' | '.join(
            '%.4f / %.4f' % (row[c]['loss'], row[c]['accuracy']) if 'loss' in row[c] else '' for c in cols)))
    return '\n'.join(lines) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--examples', default=','.join(SIZES), help='comma-separated examples')
    ap.add_argument('--columns', default=','.join(COLUMNS), help='comma-separated columns (opencntk first)')
    ap.add_argument('--epochs', type=int, default=3)
    ap.add_argument('--quick', action='store_true', help='small data, 2 epochs, nothing written')
    ap.add_argument('--note', help='a line for the report (the machine\'s state, say)')
    ap.add_argument('--out', default=os.path.join(HERE, 'results'))
    args = ap.parse_args()
    if not os.path.exists(venv_python()):
        sys.exit('no %s: run bash bench/install-peers.sh' % venv_python())
    cols = args.columns.split(',')
    epochs = 2 if args.quick else args.epochs
    report = {'date': datetime.date.today().isoformat(), 'commit': bench_run.git_commit(), 'cpu': bench_run.cpu_model(),
              'python': platform.python_version(), 'threads_per_framework': THREADS, 'epochs': epochs,
              'columns': cols, 'note': args.note, 'load_before': bench_run.loadavg(), 'examples': {},
              'versions': {}, 'threads': {}}
    with tempfile.TemporaryDirectory() as work:
        sys.path.insert(0, EXAMPLES_DIR)
        import keras_examples as ke
        os.environ['KERAS_HOME'] = work
        ke.use_debian_fashion_mnist()  # the Fashion-MNIST examples read it from Keras' cache in `work`
        for name in args.examples.split(','):
            data, whole = (QUICK[name], None) if args.quick else SIZES[name]
            n = samples(name, data)
            row = {'data': data, 'samples': n, 'scale': (whole or n) / n}
            for col in cols:
                row[col] = r = run_column(col, name, epochs, data, work)
                if 'keras' in r:
                    report['versions'].setdefault(col, '%s, Keras %s' % (r['framework'], r['keras']))
                    report['threads'].setdefault(col, r['threads'])
                print('%-24s %-26s %s' % (name, COLUMNS[col][0], r.get('error') or '%.2f s per epoch (first %.2f)'
                                          % (r['per_epoch'], r['first_epoch'])), flush=True)
            report['examples'][name] = row
    report['load_after'] = bench_run.loadavg()
    md = markdown(report)
    print(md)
    if not args.quick:
        os.makedirs(args.out, exist_ok=True)
        base = os.path.join(args.out, '%s-keras-examples' % report['date'])
        with open(base + '.json', 'w') as f:
            json.dump(report, f, indent=1)
        with open(base + '.md', 'w') as f:
            f.write(md)
        print('wrote %s.{json,md}' % base)


if __name__ == '__main__':
    main()
