"""CNTK's CIFAR-10 ConvNet (conv 32-32-pool, conv 64-64-pool, dense 512, dense 10).

With the CIFAR-10 Python batches present (data_batch_1..5 and test_batch in
$CIFAR10_DIR) it trains on them; otherwise it says so and trains on synthetic
32x32x3 images (none can be downloaded here): ten classes, each a fixed random
pattern plus noise, so that the network has something to learn.
"""
import argparse
import os
import pickle
import sys
import time

import numpy as np

import cntk as C
from cntk.layers import Convolution2D, Dense, Dropout, MaxPooling, Sequential, default_options

CIFAR_DIR = os.environ.get('CIFAR10_DIR', '')


def cifar_available(data_dir=CIFAR_DIR):
    return bool(data_dir) and os.path.exists(os.path.join(data_dir, 'data_batch_1'))


def load_cifar(data_dir=CIFAR_DIR):
    """CIFAR-10 from its Python batches: images (n, 3, 32, 32) in [0, 1], labels (n,)."""
    def batch(name):
        with open(os.path.join(data_dir, name), 'rb') as f:
            d = pickle.load(f, encoding='bytes')
        return d[b'data'].reshape(-1, 3, 32, 32).astype(np.float32) / 255.0, np.asarray(d[b'labels'])
    parts = [batch('data_batch_%d' % i) for i in range(1, 6)]
    x_test, y_test = batch('test_batch')
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), x_test, y_test


def synthetic_cifar(train=5000, test=1000, seed=0):
    """Ten classes of 32x32x3 images: a smooth random pattern per class plus noise."""
    rng = np.random.RandomState(seed)
    coarse = rng.rand(10, 3, 8, 8).astype(np.float32)
    patterns = coarse.repeat(4, axis=2).repeat(4, axis=3)

    def draw(n):
        labels = rng.randint(0, 10, n)
        images = 0.6 * patterns[labels] + 0.4 * rng.rand(n, 3, 32, 32).astype(np.float32)
        return images.astype(np.float32), labels
    x_train, y_train = draw(train)
    x_test, y_test = draw(test)
    return x_train, y_train, x_test, y_test


def create_model(num_classes=10):
    with default_options(activation=C.relu, init=C.glorot_uniform()):
        return Sequential([
            Convolution2D((3, 3), 32, pad=True),
            Convolution2D((3, 3), 32, pad=True),
            MaxPooling((3, 3), strides=2),
            Convolution2D((3, 3), 64, pad=True),
            Convolution2D((3, 3), 64, pad=True),
            MaxPooling((3, 3), strides=2),
            Dense(512),
            Dropout(0.5),
            Dense(num_classes, activation=None),
        ])


def train_and_test(data, epochs=2, minibatch_size=64, learning_rate=0.01, seed=1, verbose=True):
    """Trains with momentum SGD; returns (test accuracy, seconds per epoch)."""
    C.cntk_py.set_fixed_random_seed(seed)
    np.random.seed(seed)
    x_train, y_train, x_test, y_test = data
    y_train_1h = np.eye(10, dtype=np.float32)[y_train]
    features = C.input_variable((3, 32, 32), np.float32, name='features')
    labels = C.input_variable(10, np.float32, name='labels')
    model = create_model()(features)
    loss = C.cross_entropy_with_softmax(model, labels)
    error = C.classification_error(model, labels)
    learner = C.momentum_sgd(model.parameters, C.learning_parameter_schedule(learning_rate),
                             C.momentum_schedule(0.9))
    writers = [C.logging.ProgressPrinter(tag='Training', num_epochs=epochs)] if verbose else []
    trainer = C.Trainer(model, (loss, error), [learner], writers)
    epoch_times = []
    for epoch in range(epochs):
        start = time.time()
        order = np.random.permutation(len(x_train))
        for i in range(0, len(x_train), minibatch_size):
            idx = order[i:i + minibatch_size]
            trainer.train_minibatch({features: x_train[idx], labels: y_train_1h[idx]})
        trainer.summarize_training_progress()
        epoch_times.append(time.time() - start)
    predictions = [np.argmax(model.eval({features: x_test[i:i + 250]}), axis=1) for i in range(0, len(x_test), 250)]
    accuracy = float(np.mean(np.concatenate(predictions) == y_test))
    return accuracy, float(np.median(epoch_times))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--synthetic-samples', type=int, default=5000)
    args = parser.parse_args()
    if cifar_available():
        data = load_cifar()
    else:
        print("CIFAR-10 not found (set CIFAR10_DIR to the folder of its Python batches); "
              "training on synthetic 32x32x3 data instead")
        data = synthetic_cifar(train=args.synthetic_samples)
    accuracy, epoch_seconds = train_and_test(data, epochs=args.epochs)
    print("test accuracy: %.2f%% (%.1f s per epoch)" % (100 * accuracy, epoch_seconds))


if __name__ == '__main__':
    sys.exit(main())
