"""The models of examples/python, untrained, written as ONNX: each passes onnx.checker's full check and
ONNX Runtime computes what OpenCNTK computes (within 1e-5), sequence models over sequences of
different lengths. The models come from the examples' own create_model functions."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', 'examples', 'python'))
KERAS_EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', 'examples', 'keras'))
sys.path.insert(0, EXAMPLES)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atis_slot_tagger  # noqa: E402
import char_rnn  # noqa: E402
import cifar_convnet  # noqa: E402
import fashion_mnist_cnn  # noqa: E402
import fashion_mnist_mlp  # noqa: E402
from keras_harness import requires_keras_2_3_1  # noqa: E402

TOL = 1e-5


def _export(z, path):
    """Writes z as ONNX (an op without ONNX form fails the test with the engine's message naming it),
    checks the file and opens it in ONNX Runtime."""
    try:
        z.save(str(path), format=C.ModelFormat.ONNX)
    except (NotImplementedError, ValueError) as e:
        pytest.fail(str(e).splitlines()[0])
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    return ort.InferenceSession(str(path), providers=['CPUExecutionProvider'])


def _only_input(sess):
    (i,) = sess.get_inputs()
    return i.name


def _check_static(z, x, tmp_path, batch=3, seed=0):
    """A model over one static input: a batch of random samples."""
    sess = _export(z, tmp_path / 'model.onnx')
    data = np.random.RandomState(seed).uniform(-1, 1, (batch,) + x.shape).astype(np.float32)
    want = z.eval({x: data})
    (got,) = sess.run(None, {_only_input(sess): data})
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)


def _check_sequences(z, x, tmp_path, lengths=(1, 4, 9), seed=0, one_hot=False):
    """A model over one sequence input, fed one sequence per length. ONNX's tensor is
    [Sequence, batch, ...]; a batch holds sequences of one length, so each length runs alone."""
    sess = _export(z, tmp_path / 'model.onnx')
    rng = np.random.RandomState(seed)
    for t in lengths:
        if one_hot:  # words or characters: sparse one-hot input, as the examples read them
            ids = rng.randint(0, x.shape[0], t)
            seq = np.eye(x.shape[0], dtype=np.float32)[ids]
            want = z.eval({x: C.Value.one_hot([ids.tolist()], x.shape[0])})
        else:
            seq = rng.uniform(-1, 1, (t,) + x.shape).astype(np.float32)
            want = z.eval({x: [seq]})
        want = np.asarray(want[0] if isinstance(want, list) else want[0])
        (got,) = sess.run(None, {_only_input(sess): seq[:, None]})
        assert got.shape == (t, 1) + want.shape[1:], (t, got.shape, want.shape)
        np.testing.assert_allclose(got[:, 0], want, rtol=TOL, atol=TOL, err_msg='sequence of length %d' % t)


def _trained_statistics(z, seed=1):
    """Gives batch normalization the running statistics training would: untrained, the variance is 0 and
    the normalization multiplies by 1/sqrt(epsilon), which no float32 comparison survives."""
    rng = np.random.RandomState(seed)
    for c in z.constants:
        if c.name == 'aggregate_mean':
            c.value = rng.uniform(-0.5, 0.5, c.shape).astype(np.float32)
        elif c.name == 'aggregate_variance':
            c.value = rng.uniform(0.5, 2, c.shape).astype(np.float32)
        elif c.name == 'aggregate_count':
            c.value = np.full(c.shape, 100, np.float32)


def test_logistic_regression(tmp_path):
    # examples/python/logistic_regression.py builds its model inline: a Dense layer without activation.
    x = C.input_variable(2, np.float32)
    _check_static(C.layers.Dense(2, activation=None)(x), x, tmp_path)


def test_fashion_mnist_mlp(tmp_path):
    x = C.input_variable(784, np.float32, name='features')
    _check_static(fashion_mnist_mlp.create_model()(x), x, tmp_path)


def test_fashion_mnist_cnn(tmp_path):
    x = C.input_variable((1, 28, 28), np.float32, name='features')
    _check_static(fashion_mnist_cnn.create_model()(x), x, tmp_path)


def test_cifar_convnet(tmp_path):
    x = C.input_variable((3, 32, 32), np.float32, name='features')
    _check_static(cifar_convnet.create_model()(x), x, tmp_path, batch=2)


@pytest.mark.parametrize('bidirectional,batch_norm', [(False, False), (True, False), (False, True)])
def test_atis_slot_tagger(tmp_path, bidirectional, batch_norm):
    query = C.sequence.input_variable(atis_slot_tagger.VOCAB_SIZE, is_sparse=True, name='query')
    z = atis_slot_tagger.create_model(bidirectional=bidirectional, batch_norm=batch_norm)(query)
    _trained_statistics(z)
    _check_sequences(z, query, tmp_path, one_hot=True)


def test_char_rnn(tmp_path):
    vocab = 40
    chars = C.sequence.input_variable(vocab, is_sparse=True, name='chars')
    z = char_rnn.create_model(vocab)(chars)
    _check_sequences(z, chars, tmp_path, one_hot=True)


# The Keras examples' models, built by examples/keras/keras_examples.py (untrained, on a few samples of
# their data) under `python -m cntk.keras`, in one interpreter: Keras' output is an OpenCNTK function.
KERAS_DRIVER = '''
import json, sys, traceback
import numpy as np
sys.path.insert(0, %(examples)r)
import keras_examples as ke
import cntk as C, onnx, onnxruntime as ort
small = dict(mnist_mlp=dict(n_train=4, n_test=4), mnist_cnn=dict(n_train=4, n_test=4),
             cifar10_cnn=dict(n_train=4, n_test=4), imdb_bidirectional_lstm=dict(n_train=4, n_test=4),
             imdb_fasttext=dict(n_train=4, n_test=4), lstm_text_generation=dict(max_chars=2000))
out = {}
for name, kw in small.items():
    try:
        model, (x, _), _, _ = ke.EXAMPLES[name](**kw)
        x = np.asarray(x[:3], np.float32)
        want = model.predict(x)
        path = %(tmp)r + '/' + name + '.onnx'
        C.combine([model.outputs[0]]).save(path, format=C.ModelFormat.ONNX)
        onnx.checker.check_model(onnx.load(path), full_check=True)
        sess = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
        got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        out[name] = dict(shape=[list(got.shape), list(want.shape)], diff=float(np.abs(got - want).max()))
    except Exception as e:
        out[name] = dict(error='%%s: %%s' %% (type(e).__name__, str(e).splitlines()[0]))
json.dump(out, open(%(tmp)r + '/result.json', 'w'))
'''


@pytest.fixture(scope='module')
def keras_results(tmp_path_factory):
    if not os.path.isdir('/usr/share/datasets/fashion-mnist'):
        pytest.skip('Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)')
    tmp = tmp_path_factory.mktemp('keras')
    script = tmp / 'driver.py'
    script.write_text(KERAS_DRIVER % dict(examples=KERAS_EXAMPLES, tmp=str(tmp)))
    env = dict(os.environ, KERAS_HOME=str(tmp / 'keras-home'), KERAS_BACKEND='cntk', OMP_WAIT_POLICY='passive')
    if env.get('PYTHONPATH'):
        env['PYTHONPATH'] = os.pathsep.join(os.path.abspath(p) for p in env['PYTHONPATH'].split(os.pathsep) if p)
    proc = subprocess.run([sys.executable, '-m', 'cntk.keras', str(script)], cwd=str(tmp), env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads((tmp / 'result.json').read_text())


@requires_keras_2_3_1
@pytest.mark.parametrize('name', ['mnist_mlp', 'mnist_cnn', 'cifar10_cnn', 'imdb_bidirectional_lstm', 'imdb_fasttext',
                                  'lstm_text_generation'])
def test_keras_example(keras_results, name):
    r = keras_results[name]
    if 'error' in r:
        pytest.fail(r['error'])
    assert r['shape'][0] == r['shape'][1]
    assert r['diff'] <= TOL, r
