"""The backend boundary (src/kernels/backend.h): the ops, the graph and the executor name
no vendor library; oneDNN and its layouts stay in src/kernels/cpu. The op suite runs on
both CPU backends (scripts/test.sh); this keeps the source side of that promise."""
import os
import re
import subprocess
import sys

SRC = os.path.join(os.path.dirname(__file__), '..', '..', 'src')


def test_ops_graph_and_exec_do_not_mention_onednn_names():
    found = []
    for folder in ('ops', 'graph', 'exec'):
        root = os.path.join(SRC, folder)
        for dirpath, _, files in os.walk(root):
            for name in files:
                path = os.path.join(dirpath, name)
                with open(path, encoding='utf-8', errors='replace') as f:
                    for n, line in enumerate(f, 1):
                        if re.search('dnnl', line, re.IGNORECASE):
                            found.append('%s:%d: %s' % (os.path.relpath(path, SRC), n, line.strip()))
    assert not found, 'oneDNN names outside src/kernels:\n' + '\n'.join(found)



_NET = """
import numpy as np, cntk as C
from cntk.layers import Convolution2D, MaxPooling, Dense, Sequential, Recurrence, LSTM, GRU, BatchNormalization
C.cntk_py.set_backend(BACKEND)
x = C.input_variable((3, 16, 16)); y = C.input_variable(10)
m = Sequential([Convolution2D((3, 3), 16, activation=C.relu, pad=True), BatchNormalization(),
                MaxPooling((2, 2), (2, 2)), Dense(10)])(x)
m = C.local_response_normalization(C.reshape(m, (10, 1, 1)), 2, 1.0, 1e-4, 0.75)
loss = C.cross_entropy_with_softmax(C.reshape(m, 10), y)
t = C.Trainer(m, (loss, None), C.sgd(m.parameters, 0.01))
t.train_minibatch({x: np.random.rand(8, 3, 16, 16).astype(np.float32),
                   y: np.eye(10, dtype=np.float32)[np.random.randint(0, 10, 8)]})
s = C.sequence.input_variable(32)
r = Sequential([Recurrence(LSTM(64)), Recurrence(GRU(32)), C.sequence.last, Dense(8, activation=C.tanh)])(s)
r.eval({s: [np.random.rand(5, 32).astype(np.float32)] * 4})
"""


def _primitives_run(backend):
    """oneDNN primitive kinds executed while a float32 conv/BN/pool/LRN net trains a step
    and an LSTM and a GRU evaluate (the GRU on oneDNN's RNN primitive, the LSTM on the own
    step-by-step kernel's sgemm), as oneDNN's own verbose log reports them."""
    env = dict(os.environ, DNNL_VERBOSE='1', ONEDNN_VERBOSE='1')
    out = subprocess.run([sys.executable, '-c', 'BACKEND = %r\n' % backend + _NET], env=env,
                         capture_output=True, text=True, check=True).stdout
    return {line.split(',')[3] for line in out.splitlines() if ',exec,' in line}


def test_reference_backend_runs_no_onednn_primitive():
    assert {'convolution', 'rnn'} <= _primitives_run('onednn')  # the log does report them
    assert _primitives_run('reference') == set()
