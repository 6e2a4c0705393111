#!/usr/bin/env python3
"""Model files: save time, load time and file size of OpenCNTK's CNTK v2 model files next to
PyTorch's torch.save / torch.load of the same architectures.

Models: the Fashion-MNIST CNN of examples/python/fashion_mnist_cnn.py (conv 3x3x32, conv 3x3x64,
max-pool 2x2, dense 128, dense 10; 1.2 M parameters) and the ATIS tagger's shape (embedding 150,
LSTM 300, dense 129 over a 943-word vocabulary). OpenCNTK saves the whole graph (Function.save) and
loads it (cntk.load_model); PyTorch saves the module's state_dict and loads it into a new module
(torch.load + load_state_dict), its usual way, and also the whole module (pickled). Each figure is
the median of several runs; the files live in a temporary folder. PyTorch's LSTM has two bias
vectors where CNTK's has one (1,200 more parameters).

Usage (from the repository root, after `make dev`):

    PYTHONPATH=python python3 bench/model_files.py            # writes bench/results/<date>-model-files.{json,md}
    PYTHONPATH=python python3 bench/model_files.py --quick    # a smoke run, writes nothing

Timings are reported, never asserted.
"""
import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'examples', 'python'))


def median_time(fn, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


# ------------------------------------------------------------------ OpenCNTK

def cntk_models():
    import cntk as C
    import fashion_mnist_cnn
    features = C.input_variable((1, 28, 28), np.float32, name='features')
    cnn = fashion_mnist_cnn.create_model()(features)
    words = C.sequence.input_variable(943, is_sparse=True, name='words')
    tagger = C.layers.Sequential([
        C.layers.Embedding(150),
        C.layers.Recurrence(C.layers.LSTM(300)),
        C.layers.Dense(129)])(words)
    cnn_in = np.random.RandomState(0).standard_normal((4, 1, 28, 28)).astype(np.float32)
    seq_in = [np.eye(943, dtype=np.float32)[np.random.RandomState(i).randint(0, 943, 12)] for i in range(2)]
    return {'fashion_mnist_cnn': (cnn, {features: cnn_in}), 'atis_lstm_tagger': (tagger, {words: seq_in})}


def bench_cntk(name, model, args, folder, runs):
    import cntk as C
    path = os.path.join(folder, name + '.cntk')
    model.save(path)
    loaded = C.load_model(path)
    # The loaded model computes what the original computes (a check that the file is whole).
    by_uid = {v.uid: v for v in loaded.arguments}
    a = np.asarray(model.eval(args) if not isinstance(model.eval(args), list) else np.concatenate(model.eval(args)))
    out = loaded.eval({by_uid[k.uid]: v for k, v in args.items()})
    b = np.asarray(out if not isinstance(out, list) else np.concatenate(out))
    np.testing.assert_array_equal(a, b)
    return {'save_s': median_time(lambda: model.save(path), runs),
            'load_s': median_time(lambda: C.load_model(path), runs),
            'file_bytes': os.path.getsize(path),
            'parameters': int(sum(np.prod(p.shape) for p in model.parameters))}


# ------------------------------------------------------------------ PyTorch

def torch_models():
    import torch
    from torch import nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            # Unpadded as CNTK's Convolution2D by default: 28 -> 26 -> 24, pooled to 12.
            self.c1, self.c2 = nn.Conv2d(1, 32, 3), nn.Conv2d(32, 64, 3)
            self.d1, self.d2 = nn.Linear(64 * 12 * 12, 128), nn.Linear(128, 10)

        def forward(self, x):
            x = torch.max_pool2d(torch.relu(self.c2(torch.relu(self.c1(x)))), 2)
            return self.d2(torch.relu(self.d1(x.flatten(1))))

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.lstm, self.out = nn.Embedding(943, 150), nn.LSTM(150, 300), nn.Linear(300, 129)

        def forward(self, x):
            return self.out(self.lstm(self.emb(x))[0])

    # torch.save of a whole module pickles its class by name: make the classes module-level names.
    for cls in (CNN, Tagger):
        cls.__qualname__ = 'Torch' + cls.__name__
        globals()[cls.__qualname__] = cls
    return {'fashion_mnist_cnn': CNN, 'atis_lstm_tagger': Tagger}


def bench_torch(name, cls, folder, runs):
    import torch
    model = cls()
    sd_path = os.path.join(folder, name + '.state_dict.pt')
    full_path = os.path.join(folder, name + '.module.pt')
    torch.save(model.state_dict(), sd_path)
    torch.save(model, full_path)

    def load_state():
        m = cls()
        m.load_state_dict(torch.load(sd_path))
        return m

    return {'save_s': median_time(lambda: torch.save(model.state_dict(), sd_path), runs),
            'load_s': median_time(load_state, runs),
            'file_bytes': os.path.getsize(sd_path),
            'module_save_s': median_time(lambda: torch.save(model, full_path), runs),
            'module_load_s': median_time(lambda: torch.load(full_path, weights_only=False), runs),
            'module_file_bytes': os.path.getsize(full_path),
            'parameters': int(sum(p.numel() for p in model.parameters()))}


def markdown(result):
    lines = ['# Model files: save, load, size (%s)' % result['date'], '',
             'Median of %d runs; %s; torch %s. OpenCNTK: `Function.save` / `cntk.load_model` of the whole graph '
             '(CNTK v2 format). PyTorch: `torch.save(state_dict)` / `torch.load` + `load_state_dict` into a new '
             'module (and, in brackets, the pickled module).' % (result['runs'], result['machine'],
                                                                 result['torch']), '',
             '| model | parameters | OpenCNTK save ms | OpenCNTK load ms | OpenCNTK bytes | '
             'PyTorch save ms | PyTorch load ms | PyTorch bytes |',
             '|---|---|---|---|---|---|---|---|']
    for name, r in result['models'].items():
        c, t = r['opencntk'], r['pytorch']
        lines.append('| %s | %d | %.2f | %.2f | %d | %.2f (%.2f) | %.2f (%.2f) | %d (%d) |' % (
            name, c['parameters'], 1e3 * c['save_s'], 1e3 * c['load_s'], c['file_bytes'], 1e3 * t['save_s'],
            1e3 * t['module_save_s'], 1e3 * t['load_s'], 1e3 * t['module_load_s'], t['file_bytes'],
            t['module_file_bytes']))
    return '\n'.join(lines) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', type=int, default=7)
    ap.add_argument('--quick', action='store_true', help='3 runs, write no results')
    opts = ap.parse_args()
    runs = 3 if opts.quick else opts.runs
    import torch
    torch.set_num_threads(1)
    result = {'date': datetime.date.today().isoformat(), 'runs': runs, 'torch': torch.__version__,
              'machine': '%s, %d cores, Python %s' % (platform.machine(), os.cpu_count(), platform.python_version()),
              'models': {}}
    cm, tm = cntk_models(), torch_models()
    with tempfile.TemporaryDirectory() as folder:
        for name in cm:
            model, args = cm[name]
            result['models'][name] = {'opencntk': bench_cntk(name, model, args, folder, runs),
                                      'pytorch': bench_torch(name, tm[name], folder, runs)}
            print(name, json.dumps(result['models'][name]), flush=True)
    md = markdown(result)
    print(md)
    if not opts.quick:
        out = os.path.join(ROOT, 'bench', 'results', '%s-model-files' % result['date'])
        with open(out + '.json', 'w') as f:
            json.dump(result, f, indent=2)
        with open(out + '.md', 'w') as f:
            f.write(md)
        print('wrote', out + '.{json,md}')


if __name__ == '__main__':
    main()
