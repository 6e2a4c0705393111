"""Two-class logistic regression on synthetic data: a linear model trained with SGD.

Prints training progress and the final classification error on fresh data.
"""
import numpy as np

import cntk as C

input_dim, num_classes = 2, 2


def generate(n, rng):
    """Two Gaussian blobs, one per class; labels one-hot."""
    y = rng.randint(0, num_classes, size=(n, 1))
    x = (rng.randn(n, input_dim) + 3) * (y + 1)
    labels = (np.arange(num_classes) == y).astype(np.float32)
    return x.astype(np.float32), labels


def train(minibatches=600, minibatch_size=25, seed=0, verbose=True):
    """Returns the classification error on 1,000 fresh samples."""
    rng = np.random.RandomState(seed)
    C.cntk_py.set_fixed_random_seed(seed + 1)
    features = C.input_variable(input_dim, np.float32)
    label = C.input_variable(num_classes, np.float32)
    z = C.layers.Dense(num_classes, activation=None)(features)
    loss = C.cross_entropy_with_softmax(z, label)
    error = C.classification_error(z, label)
    learner = C.sgd(z.parameters, lr=C.learning_parameter_schedule(0.5))
    writers = [C.logging.ProgressPrinter(freq=100, tag='Training')] if verbose else []
    trainer = C.Trainer(z, (loss, error), [learner], writers)
    for _ in range(minibatches):
        x, y = generate(minibatch_size, rng)
        trainer.train_minibatch({features: x, label: y})
    trainer.summarize_training_progress()
    x, y = generate(1000, rng)
    return trainer.test_minibatch({features: x, label: y})


if __name__ == '__main__':
    print("test classification error: %.2f%%" % (100 * train()))
