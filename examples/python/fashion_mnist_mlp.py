"""A 784-512-512-10 multilayer perceptron on Fashion-MNIST, trained the CNTK way.

relu activations, dropout 0.2, Adam, minibatches of 128. Prints progress and
the test accuracy. Data: Debian's dataset-fashion-mnist package.
"""
import argparse
import os
import sys
import time

import numpy as np

import cntk as C
from cntk.layers import Dense, Dropout, Sequential, default_options

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist_data  # noqa: E402


def create_model(num_classes=10):
    with default_options(activation=C.relu, init=C.glorot_uniform()):
        return Sequential([
            Dense(512), Dropout(0.2),
            Dense(512), Dropout(0.2),
            Dense(num_classes, activation=None),
        ])


def train_and_test(epochs=15, minibatch_size=128, learning_rate=0.001, seed=1, verbose=True):
    """Trains the MLP; returns (test accuracy, seconds per epoch)."""
    C.cntk_py.set_fixed_random_seed(seed)
    np.random.seed(seed)
    x_train, y_train = fashion_mnist_data.load('train')
    x_test, y_test = fashion_mnist_data.load('test')
    x_train = x_train.reshape(-1, 784)
    x_test = x_test.reshape(-1, 784)
    y_train_1h = fashion_mnist_data.one_hot(y_train)

    features = C.input_variable(784, np.float32, name='features')
    labels = C.input_variable(10, np.float32, name='labels')
    model = create_model()(features)
    loss = C.cross_entropy_with_softmax(model, labels)
    error = C.classification_error(model, labels)
    # Adam on the mean gradient of each minibatch (lr as given, whatever the minibatch size).
    learner = C.adam(model.parameters, lr=C.learning_parameter_schedule(learning_rate), momentum=0.9,
                     variance_momentum=0.999, minibatch_size=C.learners.IGNORE)
    writers = [C.logging.ProgressPrinter(tag='Training', num_epochs=epochs)] if verbose else []
    trainer = C.Trainer(model, (loss, error), [learner], writers)

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

    predictions = []
    for i in range(0, len(x_test), 1000):
        predictions.append(np.argmax(model.eval({features: x_test[i:i + 1000]}), axis=1))
    accuracy = float(np.mean(np.concatenate(predictions) == y_test))
    return accuracy, float(np.median(epoch_times))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--epochs', type=int, default=15)
    args = parser.parse_args()
    if not fashion_mnist_data.available():
        sys.exit("Fashion-MNIST not found in %s (apt-get install dataset-fashion-mnist)" % fashion_mnist_data.DATA_DIR)
    accuracy, epoch_seconds = train_and_test(epochs=args.epochs)
    print("test accuracy: %.2f%% (%.1f s per epoch)" % (100 * accuracy, epoch_seconds))


if __name__ == '__main__':
    main()
