"""The six Keras examples of CNTK's Keras benchmark (examples/keras/keras_examples.py) train
on Keras 2.3.1 with KERAS_BACKEND=cntk through model.fit, and models save and load with
h5py 3. Each run is a fresh interpreter under `python -m cntk.keras` (Keras reads its
backend once, at import)."""
import json
import os
import subprocess
import sys

import pytest

from keras_harness import requires_keras_2_3_1

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
EXAMPLES = os.path.join(ROOT, 'examples', 'keras')


pytestmark = requires_keras_2_3_1

DRIVER = '''
import json, sys
sys.path.insert(0, %(examples)r)
import numpy as np
import keras_examples as ke
model, times, loss, acc = ke.train(%(name)r, %(epochs)d, seed=%(seed)d, **%(data)r)
out = {'loss': loss, 'accuracy': acc, 'seconds': times}
if %(save)r:
    import keras
    (x, _), _ = ke.fashion_mnist(200, 1)
    x = x.reshape(len(x), -1).astype('float32') / 255
    before = model.predict(x)
    model.save(%(save)r)
    loaded = keras.models.load_model(%(save)r)
    out['max_diff'] = float(np.abs(loaded.predict(x) - before).max())
    out['same_weights'] = all(np.array_equal(a, b) for a, b in zip(model.get_weights(), loaded.get_weights()))
    out['optimizer'] = type(loaded.optimizer).__name__
json.dump(out, open(%(result)r, 'w'))
'''


def train(tmp_path, name, epochs, save=None, seed=1, **data):
    result = str(tmp_path / 'result.json')
    script = tmp_path / 'driver.py'
    script.write_text(DRIVER % dict(examples=EXAMPLES, name=name, epochs=epochs, data=data, save=save,
                                    result=result, seed=seed))
    env = dict(os.environ, KERAS_HOME=str(tmp_path / 'keras-home'), KERAS_BACKEND='cntk')
    # Spinning OpenMP workers stall on a machine shared with other jobs.
    env.setdefault('OMP_WAIT_POLICY', 'passive')
    if env.get('PYTHONPATH'):  # the driver runs elsewhere: PYTHONPATH=../python must still find cntk
        env['PYTHONPATH'] = os.pathsep.join(os.path.abspath(p) for p in env['PYTHONPATH'].split(os.pathsep) if p)
    proc = subprocess.run([sys.executable, '-m', 'cntk.keras', str(script)], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(result) as f:
        return json.load(f)


def _needs_fashion_mnist():
    if not os.path.isdir('/usr/share/datasets/fashion-mnist'):
        pytest.skip('Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)')


def test_mnist_mlp_trains_and_saves_and_loads(tmp_path):
    _needs_fashion_mnist()
    r = train(tmp_path, 'mnist_mlp', 2, save=str(tmp_path / 'mlp.h5'), n_train=20000, n_test=2000)
    # the whole training set reaches 0.84 after one epoch; 2 x 20000 samples, 0.77-0.82 by seed
    assert r['accuracy'] >= 0.75, r
    assert r['same_weights'] and r['max_diff'] < 1e-6, r
    assert r['optimizer'] == 'RMSprop'


def test_imdb_fasttext_trains(tmp_path):
    r = train(tmp_path, 'imdb_fasttext', 3, n_train=2000, n_test=1000)
    assert r['accuracy'] >= 0.9, r


def test_imdb_bidirectional_lstm_trains(tmp_path):
    r = train(tmp_path, 'imdb_bidirectional_lstm', 2, n_train=1000, n_test=500)
    assert r['accuracy'] >= 0.85, r


@pytest.mark.slow
def test_mnist_cnn_trains(tmp_path):
    _needs_fashion_mnist()
    r = train(tmp_path, 'mnist_cnn', 2, n_train=3000, n_test=1000)
    assert r['accuracy'] >= 0.7, r


@pytest.mark.slow
def test_cifar10_cnn_trains(tmp_path):
    r = train(tmp_path, 'cifar10_cnn', 3, n_train=2000, n_test=500)
    # the example's RMSprop(1e-4) is slow to start: 0.5-0.9 after 3 epochs by seed (chance is 0.1)
    assert r['accuracy'] >= 0.4, r


@pytest.mark.slow
def test_lstm_text_generation_trains(tmp_path):
    if not os.path.exists('/usr/share/common-licenses/GPL-3'):
        pytest.skip('no /usr/share/common-licenses/GPL-3 to learn from')
    # The example's RMSprop(0.01) can blow up in the first steps and saturate the softmax
    # (seed 2 does, here and without the fused LSTM): the seed keeps the run reproducible.
    r = train(tmp_path, 'lstm_text_generation', 2, max_chars=20000)
    # 40-odd characters: a uniform guess has loss ~3.7; the first epochs learn the frequent ones
    assert r['loss'] < 2.8 and r['accuracy'] >= 0.25, r


@pytest.mark.slow
def test_synthetic_cifar10_cache_is_read_by_keras_loader(tmp_path):
    script = tmp_path / 'cifar.py'
    script.write_text('''
import sys
sys.path.insert(0, %r)
import numpy as np
import keras_examples as ke
ke.write_cifar10_cache(seed=3)
from keras.datasets import cifar10
(x_train, y_train), (x_test, y_test) = cifar10.load_data()
(sx, sy), (tx, ty) = ke.synthetic_cifar10(seed=3)
assert x_train.shape == (50000, 32, 32, 3) and y_train.shape == (50000, 1), (x_train.shape, y_train.shape)
assert x_test.shape == (10000, 32, 32, 3)
assert np.array_equal(x_train, sx) and np.array_equal(y_train[:, 0], sy) and np.array_equal(x_test, tx)
print('ok')
''' % EXAMPLES)
    env = dict(os.environ, KERAS_HOME=str(tmp_path / 'keras-home'), KERAS_BACKEND='cntk')
    if env.get('PYTHONPATH'):
        env['PYTHONPATH'] = os.pathsep.join(os.path.abspath(p) for p in env['PYTHONPATH'].split(os.pathsep) if p)
    proc = subprocess.run([sys.executable, '-m', 'cntk.keras', str(script)], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == 'ok', proc.stderr[-3000:]
