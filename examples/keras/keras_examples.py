"""The six Keras examples of CNTK's Keras benchmark, on Keras 2.3.1 with KERAS_BACKEND=cntk.

    pip install keras==2.3.1
    python -m cntk.keras examples/keras/keras_examples.py mnist_mlp --epochs 2

The models are those of Keras' examples (mnist_mlp, mnist_cnn, cifar10_cnn,
imdb_bidirectional_lstm, imdb_fasttext, lstm_text_generation). Their data, without a
download:

- MNIST: Fashion-MNIST from Debian's dataset-fashion-mnist, which Keras' own
  `fashion_mnist.load_data()` reads from its dataset cache (no hash check), linked there by
  `use_debian_fashion_mnist`.
- CIFAR-10: synthetic images of CIFAR's shapes (a fixed random template per class plus
  noise, so there is something to learn); `write_cifar10_cache` also writes them as the
  pickled batches Keras' `cifar10.load_data()` reads from its cache.
- IMDB: Keras checks imdb.npz's hash, so `synthetic_imdb` stands in for `imdb.load_data`:
  reviews of IMDB's shape (word ids below `num_words`, 1 starts a review), whose label is
  whether "positive" words outnumber "negative" ones.
- Text generation: any local text; by default the GPL-3 text every Debian system has.
"""
import argparse
import os
import pickle
import sys
import time

import numpy as np

FASHION_MNIST = '/usr/share/datasets/fashion-mnist'
DEFAULT_TEXT = '/usr/share/common-licenses/GPL-3'


# ------------------------------------------------------------------------- data

def keras_home():
    """Keras' cache folder, as keras.utils.get_file picks it."""
    return os.environ.get('KERAS_HOME', os.path.join(os.path.expanduser('~'), '.keras'))


def use_debian_fashion_mnist():
    """Links Debian's Fashion-MNIST files into Keras' dataset cache; False when absent."""
    if not os.path.isdir(FASHION_MNIST):
        return False
    cache = os.path.join(keras_home(), 'datasets', 'fashion-mnist')
    os.makedirs(cache, exist_ok=True)
    for f in os.listdir(FASHION_MNIST):
        link = os.path.join(cache, f)
        if not os.path.exists(link):
            os.symlink(os.path.join(FASHION_MNIST, f), link)
    return True


def fashion_mnist(n_train=None, n_test=None):
    """((x_train, y_train), (x_test, y_test)) as uint8 images and integer labels."""
    from keras.datasets import fashion_mnist as loader
    if not use_debian_fashion_mnist():
        raise FileNotFoundError('Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)')
    (x_train, y_train), (x_test, y_test) = loader.load_data()
    return (x_train[:n_train], y_train[:n_train]), (x_test[:n_test], y_test[:n_test])


def synthetic_cifar10(n_train=50000, n_test=10000, seed=0):
    """CIFAR-10's shapes, (n, 32, 32, 3) uint8 and labels 0..9: each class is a fixed
    random template, each image its template plus noise."""
    rng = np.random.RandomState(seed)
    templates = rng.uniform(40, 215, size=(10, 32, 32, 3))

    def draw(n):
        y = rng.randint(0, 10, n)
        x = templates[y] + rng.normal(0, 60, size=(n, 32, 32, 3))
        return np.clip(x, 0, 255).astype(np.uint8), y.astype(np.int64)
    return draw(n_train), draw(n_test)


def write_cifar10_cache(seed=0):
    """Writes synthetic CIFAR-10 batches where Keras' cifar10.load_data() reads them
    (it skips the download when the folder exists)."""
    folder = os.path.join(keras_home(), 'datasets', 'cifar-10-batches-py')
    os.makedirs(folder, exist_ok=True)
    (x_train, y_train), (x_test, y_test) = synthetic_cifar10(seed=seed)

    def write(name, x, y):
        # CIFAR's pickles: rows of 3072 bytes, channels first, labels as a list
        data = {b'data': x.transpose(0, 3, 1, 2).reshape(len(x), 3072), b'labels': [int(v) for v in y]}
        with open(os.path.join(folder, name), 'wb') as f:
            pickle.dump(data, f)
    for i in range(5):
        write('data_batch_%d' % (i + 1), x_train[i * 10000:(i + 1) * 10000], y_train[i * 10000:(i + 1) * 10000])
    write('test_batch', x_test, y_test)
    # Keras looks for the downloaded archive (no hash check) before the unpacked folder;
    # an uncompressed tar serves (tarfile detects the format).
    import tarfile
    with tarfile.open(folder + '.tar.gz', 'w') as tar:
        tar.add(folder, arcname=os.path.basename(folder))
    return folder


def synthetic_imdb(num_words=20000, n_train=25000, n_test=25000, min_len=20, max_len=400, seed=0):
    """IMDB's shapes, as imdb.load_data(num_words=...) returns them: lists of word ids
    (1 starts each review, 2 is out of vocabulary), labels 0/1. Words 4..53 are
    "positive", 54..103 "negative"; about one word in eight is one of those, and a review is
    positive when it has more positive words."""
    rng = np.random.RandomState(seed)
    # other words follow a Zipf-like law over ids 104..num_words-1
    cdf = np.cumsum(1.0 / np.arange(1, num_words - 103) ** 0.8)
    cdf /= cdf[-1]

    def draw(n):
        xs, ys = [], []
        for _ in range(n):
            length = rng.randint(min_len, max_len + 1)
            words = 104 + np.minimum(np.searchsorted(cdf, rng.rand(length)), num_words - 105)
            label = rng.randint(0, 2)
            k = max(3, length // 8)
            strong = rng.randint(4, 54, size=k) + (0 if label else 50)
            weak = rng.randint(4, 54, size=k // 3) + (50 if label else 0)
            marked = np.concatenate([strong, weak])
            pos = rng.choice(length, size=min(len(marked), length), replace=False)
            words[pos] = marked[:len(pos)]
            xs.append([1] + words.tolist())
            ys.append(label)
        return np.array(xs, dtype=object), np.array(ys)
    return draw(n_train), draw(n_test)


def text_corpus(path=DEFAULT_TEXT, max_chars=None):
    with open(path, encoding='utf-8', errors='replace') as f:
        text = f.read().lower()
    return text[:max_chars] if max_chars else text


# ------------------------------------------------------- the examples' arrays

# Each example's arrays as its model trains on them, made with NumPy (Fashion-MNIST through the
# running Keras' loader, which in Keras 2.3.1 and 3 reads the same cached files), so that the
# same models written for Keras 3 (keras3_examples.py) train on identical arrays.

def pad_sequences(seqs, maxlen):
    """Keras' pad_sequences with its defaults: int32, zeros and cuts at the front."""
    out = np.zeros((len(seqs), maxlen), dtype=np.int32)
    for i, s in enumerate(seqs):
        s = np.asarray(s[-maxlen:], dtype=np.int32)
        if len(s):
            out[i, -len(s):] = s
    return out


def one_hot(y, n):
    """Keras' to_categorical: float32 rows."""
    return np.eye(n, dtype=np.float32)[np.asarray(y, dtype=np.int64).reshape(-1)]


def mnist_data(n_train=None, n_test=None, images=False):
    (x_train, y_train), (x_test, y_test) = fashion_mnist(n_train, n_test)
    shape = (28, 28, 1) if images else (784,)
    x_train = x_train.reshape((len(x_train),) + shape).astype('float32') / 255
    x_test = x_test.reshape((len(x_test),) + shape).astype('float32') / 255
    return (x_train, one_hot(y_train, 10)), (x_test, one_hot(y_test, 10))


def cifar10_data(n_train=50000, n_test=10000):
    (x_train, y_train), (x_test, y_test) = synthetic_cifar10(n_train, n_test)
    return ((x_train.astype('float32') / 255, one_hot(y_train, 10)),
            (x_test.astype('float32') / 255, one_hot(y_test, 10)))


def imdb_data(n_train=25000, n_test=25000, max_features=20000, maxlen=100):
    (x_train, y_train), (x_test, y_test) = synthetic_imdb(max_features, n_train, n_test)
    return (pad_sequences(x_train, maxlen), y_train), (pad_sequences(x_test, maxlen), y_test)


def text_data(max_chars=None, text_path=DEFAULT_TEXT, maxlen=40, step=3):
    """One-hot windows of `maxlen` characters, every `step`, and the character after each;
    the last tenth is the test set."""
    text = text_corpus(text_path, max_chars)
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    starts = range(0, len(text) - maxlen, step)
    x = np.zeros((len(starts), maxlen, len(chars)), dtype=np.float32)
    y = np.zeros((len(starts), len(chars)), dtype=np.float32)
    for i, s in enumerate(starts):
        for t, c in enumerate(text[s:s + maxlen]):
            x[i, t, index[c]] = 1
        y[i, index[text[s + maxlen]]] = 1
    split = int(len(x) * 0.9)
    return (x[:split], y[:split]), (x[split:], y[split:])


# ------------------------------------------------------------------- the models

# `unroll` (the LSTM examples): Keras 2.3.1's CNTK backend, on CNTK 2.7 as on OpenCNTK, outputs
# an LSTM's cell state c instead of h unless the layer is unrolled: its `rnn` takes the last of
# the step's new states ([h, c]) as the step's output (keras-team/keras#14653, #13572).
# unroll=True computes Keras' LSTM as written (tests/python/test_keras3_comparison.py checks
# both against NumPy); the examples keep Keras' default.

def mnist_mlp(n_train=None, n_test=None):
    from keras.layers import Dense, Dropout
    from keras.models import Sequential
    from keras.optimizers import RMSprop
    train, test = mnist_data(n_train, n_test)
    model = Sequential([Dense(512, activation='relu', input_shape=(784,)), Dropout(0.2),
                        Dense(512, activation='relu'), Dropout(0.2), Dense(10, activation='softmax')])
    model.compile(loss='categorical_crossentropy', optimizer=RMSprop(), metrics=['accuracy'])
    return model, train, test, 128


def mnist_cnn(n_train=None, n_test=None):
    import keras
    from keras.layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D
    from keras.models import Sequential
    train, test = mnist_data(n_train, n_test, images=True)
    model = Sequential([Conv2D(32, (3, 3), activation='relu', input_shape=(28, 28, 1)),
                        Conv2D(64, (3, 3), activation='relu'), MaxPooling2D((2, 2)), Dropout(0.25),
                        Flatten(), Dense(128, activation='relu'), Dropout(0.5), Dense(10, activation='softmax')])
    model.compile(loss='categorical_crossentropy', optimizer=keras.optimizers.Adadelta(), metrics=['accuracy'])
    return model, train, test, 128


def cifar10_cnn(n_train=50000, n_test=10000):
    import keras
    from keras.layers import Activation, Conv2D, Dense, Dropout, Flatten, MaxPooling2D
    from keras.models import Sequential
    train, test = cifar10_data(n_train, n_test)
    model = Sequential([
        Conv2D(32, (3, 3), padding='same', input_shape=(32, 32, 3)), Activation('relu'),
        Conv2D(32, (3, 3)), Activation('relu'), MaxPooling2D((2, 2)), Dropout(0.25),
        Conv2D(64, (3, 3), padding='same'), Activation('relu'),
        Conv2D(64, (3, 3)), Activation('relu'), MaxPooling2D((2, 2)), Dropout(0.25),
        Flatten(), Dense(512), Activation('relu'), Dropout(0.5), Dense(10), Activation('softmax')])
    model.compile(loss='categorical_crossentropy', optimizer=keras.optimizers.RMSprop(learning_rate=0.0001, decay=1e-6),
                  metrics=['accuracy'])
    return model, train, test, 32


def imdb_bidirectional_lstm(n_train=25000, n_test=25000, unroll=False):
    from keras.layers import LSTM, Bidirectional, Dense, Dropout, Embedding
    from keras.models import Sequential
    max_features, maxlen = 20000, 100
    train, test = imdb_data(n_train, n_test, max_features, maxlen)
    model = Sequential([Embedding(max_features, 128, input_length=maxlen), Bidirectional(LSTM(64, unroll=unroll)),
                        Dropout(0.5), Dense(1, activation='sigmoid')])
    model.compile('adam', 'binary_crossentropy', metrics=['accuracy'])
    return model, train, test, 32


def imdb_fasttext(n_train=25000, n_test=25000):
    from keras.layers import Dense, Embedding, GlobalAveragePooling1D
    from keras.models import Sequential
    max_features, maxlen = 20000, 400  # Keras' example without its bigram features
    train, test = imdb_data(n_train, n_test, max_features, maxlen)
    model = Sequential([Embedding(max_features, 50, input_length=maxlen), GlobalAveragePooling1D(),
                        Dense(1, activation='sigmoid')])
    model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
    return model, train, test, 32


def lstm_text_generation(max_chars=None, text_path=DEFAULT_TEXT, unroll=False):
    from keras.layers import LSTM, Dense
    from keras.models import Sequential
    from keras.optimizers import RMSprop
    train, test = text_data(max_chars, text_path)
    _, maxlen, chars = train[0].shape
    model = Sequential([LSTM(128, input_shape=(maxlen, chars), unroll=unroll), Dense(chars, activation='softmax')])
    model.compile(loss='categorical_crossentropy', optimizer=RMSprop(learning_rate=0.01))
    return model, train, test, 128


EXAMPLES = {f.__name__: f for f in (mnist_mlp, mnist_cnn, cifar10_cnn, imdb_bidirectional_lstm,
                                    imdb_fasttext, lstm_text_generation)}


def accuracy(model, x, y):
    """Accuracy from predictions (Keras 2.3.1's stateful metrics on CNTK report a batch
    late, since the backend has no control dependencies)."""
    p = model.predict(x, batch_size=256, verbose=0)
    if p.shape[-1] == 1:
        return float(np.mean((p[:, 0] > 0.5) == (np.asarray(y).reshape(-1) > 0.5)))
    return float(np.mean(np.argmax(p, -1) == np.argmax(y, -1)))


def train(name, epochs, verbose=0, seed=None, weights=None, examples=None, shuffle=True, **data_args):
    """Trains one example with model.fit; returns (model, per-epoch seconds, test loss,
    test accuracy). `seed` seeds NumPy's generator, from which Keras' CNTK backend draws
    its initializers' and dropout's seeds (and, in Keras 3, every generator through
    keras.utils.set_random_seed). `weights`, an .npz path: the initial weights are loaded
    from it when it exists, else written to it, so that two runs can start from the same
    values. `examples` is the table of model builders (EXAMPLES here, Keras 3's in
    keras3_examples.py): this loop serves both Kerases."""
    import keras
    if seed is not None:
        np.random.seed(seed)
        if hasattr(keras.utils, 'set_random_seed'):  # Keras 3
            keras.utils.set_random_seed(seed)
    model, (x_train, y_train), (x_test, y_test), batch_size = (examples or EXAMPLES)[name](**data_args)
    if weights and os.path.exists(weights):
        with np.load(weights) as f:
            model.set_weights([f['w%d' % i] for i in range(len(f.files))])
    elif weights:
        np.savez(weights, **{'w%d' % i: w for i, w in enumerate(model.get_weights())})
    times = []

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            times.append(time.perf_counter() - self.start)
    model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, verbose=verbose, callbacks=[Timer()],
              shuffle=shuffle)
    loss = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    loss = loss[0] if isinstance(loss, list) else loss
    return model, times, float(loss), accuracy(model, x_test, y_test)


def set_threads(backend, threads=None):
    """Sets the threads of Keras' backend where it has a call for them; returns its version and
    thread count. OpenCNTK's OpenMP reads OMP_NUM_THREADS when it loads, before this runs."""
    if backend == 'tensorflow':
        import tensorflow as tf
        if threads:
            try:
                tf.config.threading.set_intra_op_parallelism_threads(threads)
                tf.config.threading.set_inter_op_parallelism_threads(1)
            except RuntimeError:  # TensorFlow already started: the numbers returned say what holds
                pass
        return {'framework': 'TensorFlow ' + tf.__version__,
                'threads': 'intra-op %d, inter-op %d' % (tf.config.threading.get_intra_op_parallelism_threads(),
                                                         tf.config.threading.get_inter_op_parallelism_threads())}
    if backend == 'torch':
        import torch
        if threads:
            torch.set_num_threads(threads)
        return {'framework': 'PyTorch ' + torch.__version__, 'threads': 'intra-op %d' % torch.get_num_threads()}
    import cntk
    if threads and os.environ.get('OMP_NUM_THREADS') != str(threads):
        raise SystemExit('--threads %d: run with OMP_NUM_THREADS=%d (OpenMP reads it at load)' % (threads, threads))
    return {'framework': 'OpenCNTK ' + cntk.__version__,
            'threads': 'OMP_NUM_THREADS=%s' % os.environ.get('OMP_NUM_THREADS', 'unset')}


def main(argv=None, examples=None, doc=__doc__):
    """The command line of this module and of keras3_examples.py (`examples`: its models)."""
    import json
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('example', choices=sorted(examples or EXAMPLES))
    ap.add_argument('--epochs', type=int, default=1)
    ap.add_argument('--seeds', default=None,
                    help="comma-separated seeds, one run each (NumPy's generator, and Keras 3's); default: unseeded")
    ap.add_argument('--data', default='{}', help='the data function\'s arguments, as JSON: \'{"n_train": 2000}\'')
    ap.add_argument('--weights', help='an .npz of initial weights ("{seed}" in it stands for the seed): '
                                      'loaded when it exists, else written')
    ap.add_argument('--json', help='write the runs (loss, accuracy, seconds per epoch) and versions to this file')
    ap.add_argument('--save', help='save the (last) trained model to this .h5 file (model.save)')
    ap.add_argument('--threads', type=int, help="the framework's threads (Keras 2.3.1 on CNTK: set OMP_NUM_THREADS)")
    args = ap.parse_args(argv)
    import keras
    backend = keras.backend.backend()
    framework = set_threads(backend, args.threads)
    runs = []
    for seed in ([int(s) for s in args.seeds.split(',')] if args.seeds else [None]):
        keras.backend.clear_session()
        weights = args.weights.replace('{seed}', str(seed)) if args.weights else None
        model, times, loss, acc = train(args.example, args.epochs, verbose=0 if args.json else 2, seed=seed,
                                        weights=weights, examples=examples, **json.loads(args.data))
        runs.append({'seed': seed, 'seconds': times, 'loss': loss, 'accuracy': acc})
        print('%s (Keras %s on %s, seed %s): %d epochs, %.1f s per epoch, test loss %.4f, test accuracy %.4f'
              % (args.example, keras.__version__, backend, seed, args.epochs, float(np.mean(times)), loss, acc),
              flush=True)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'example': args.example, 'keras': keras.__version__, 'backend': backend, **framework,
                       'epochs': args.epochs, 'data': json.loads(args.data), 'runs': runs}, f)
    if args.save:
        model.save(args.save)


if __name__ == '__main__':
    sys.exit(main())
