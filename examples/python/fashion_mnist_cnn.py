"""A small convolutional network on Fashion-MNIST, trained the CNTK way.

conv 3x3x32 relu, conv 3x3x64 relu, max-pool 2x2, dropout 0.25, dense 128 relu,
dropout 0.5, dense 10; AdaDelta on minibatches of 128 (the Keras mnist_cnn
network). Prints progress and the test accuracy. Data: Debian's
dataset-fashion-mnist package.
"""
import argparse
import os
import sys
import time

import numpy as np

import cntk as C
from cntk.layers import Convolution2D, Dense, Dropout, MaxPooling, Sequential, default_options

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist_data  # noqa: E402


def create_model(num_classes=10):
    with default_options(activation=C.relu, init=C.glorot_uniform()):
        return Sequential([
            Convolution2D((3, 3), 32),
            Convolution2D((3, 3), 64),
            MaxPooling((2, 2), strides=2),
            Dropout(0.25),
            Dense(128),
            Dropout(0.5),
            Dense(num_classes, activation=None),
        ])


def train_and_test(epochs=12, minibatch_size=128, seed=1, train_samples=None, verbose=True, test_each_epoch=False):
    """Trains the CNN; returns (test accuracy, seconds per epoch). With `test_each_epoch`
    the test accuracy after each epoch is printed too."""
    C.cntk_py.set_fixed_random_seed(seed)
    np.random.seed(seed)
    x_train, y_train = fashion_mnist_data.load('train')
    x_test, y_test = fashion_mnist_data.load('test')
    if train_samples:
        x_train, y_train = x_train[:train_samples], y_train[:train_samples]
    x_train = x_train.reshape(-1, 1, 28, 28)
    x_test = x_test.reshape(-1, 1, 28, 28)
    y_train_1h = fashion_mnist_data.one_hot(y_train)

    features = C.input_variable((1, 28, 28), np.float32, name='features')
    labels = C.input_variable(10, np.float32, name='labels')
    model = create_model()(features)
    loss = C.cross_entropy_with_softmax(model, labels)
    error = C.classification_error(model, labels)
    # AdaDelta as Keras's mnist_cnn runs it: rho 0.95 and a step of lr 1 times the
    # AdaDelta update. The update does not depend on the gradient's scale (sum or mean),
    # so that is CNTK's per-sample rate of 1 (its default); a per-minibatch rate of 1
    # would divide the step by the minibatch size. Zeiler's epsilon of 1e-6.
    learner = C.adadelta(model.parameters, lr=C.learning_parameter_schedule_per_sample(1.0), rho=0.95, epsilon=1e-6)
    writers = [C.logging.ProgressPrinter(tag='Training', num_epochs=epochs)] if verbose else []
    trainer = C.Trainer(model, (loss, error), [learner], writers)

    def test_accuracy():
        predictions = []
        for i in range(0, len(x_test), 500):
            predictions.append(np.argmax(model.eval({features: x_test[i:i + 500]}), axis=1))
        return float(np.mean(np.concatenate(predictions) == y_test))

    epoch_times = []
    n = len(x_train)
    for epoch in range(epochs):
        start = time.time()
        order = np.random.permutation(n)
        for i in range(0, n, minibatch_size):
            idx = order[i:i + minibatch_size]
            trainer.train_minibatch({features: x_train[idx], labels: y_train_1h[idx]})
        trainer.summarize_training_progress()
        epoch_times.append(time.time() - start)
        if test_each_epoch:
            print("epoch %d: test accuracy %.2f%% (%.1f s)" % (epoch + 1, 100 * test_accuracy(), epoch_times[-1]),
                  flush=True)
    return test_accuracy(), float(np.median(epoch_times))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--epochs', type=int, default=12)
    parser.add_argument('--train-samples', type=int, default=None, help='use only the first N training images')
    parser.add_argument('--test-each-epoch', action='store_true', help='print the test accuracy after each epoch')
    args = parser.parse_args()
    if not fashion_mnist_data.available():
        sys.exit("Fashion-MNIST not found in %s (apt-get install dataset-fashion-mnist)" % fashion_mnist_data.DATA_DIR)
    accuracy, epoch_seconds = train_and_test(epochs=args.epochs, train_samples=args.train_samples,
                                             test_each_epoch=args.test_each_epoch)
    print("test accuracy: %.2f%% (%.1f s per epoch)" % (100 * accuracy, epoch_seconds))


if __name__ == '__main__':
    main()
