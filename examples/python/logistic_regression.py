"""Two-class logistic regression on synthetic data, trained with plain SGD.

Prints the training loss as it falls and the final classification error.
"""
import numpy as np

import cntk as C

np.random.seed(0)
input_dim, num_classes = 2, 2


def generate(n):
    """Two Gaussian blobs, one per class; labels one-hot."""
    y = np.random.randint(0, num_classes, size=(n, 1))
    x = (np.random.randn(n, input_dim) + 3) * (y + 1)
    labels = (np.arange(num_classes) == y).astype(np.float32)
    return x.astype(np.float32), labels


def main():
    features = C.input_variable(input_dim, np.float32)
    label = C.input_variable(num_classes, np.float32)
    W = C.parameter((input_dim, num_classes), init=C.glorot_uniform(seed=1))
    b = C.parameter((num_classes,), init=0)
    z = C.times(features, W) + b
    loss = C.cross_entropy_with_softmax(z, label)
    error = C.classification_error(z, label)
    mean_loss = C.reduce_mean(loss, axis=C.Axis.all_axes())

    learning_rate, minibatch_size = 0.5, 25
    for step in range(600):
        x, y = generate(minibatch_size)
        grads = mean_loss.grad({features: x, label: y}, wrt=[W, b])
        for p in (W, b):
            p.value = p.value - learning_rate * grads[p]
        if step % 100 == 0:
            print("step %4d  loss %.4f" % (step, mean_loss.eval({features: x, label: y}).item()))
    x, y = generate(1000)
    err = error.eval({features: x, label: y}).mean()
    print("test classification error: %.2f%%" % (100 * err))


if __name__ == '__main__':
    main()
