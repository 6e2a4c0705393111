"""The convolutional examples: the CIFAR-10 ConvNet learns on synthetic data, and the
Fashion-MNIST CNN reaches 91% test accuracy (slow)."""
import os
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), '..', '..', 'examples', 'python')
sys.path.insert(0, os.path.abspath(EXAMPLES))

import fashion_mnist_data  # noqa: E402


def test_cifar_convnet_learns_synthetic_data():
    import cifar_convnet
    data = cifar_convnet.synthetic_cifar(train=1280, test=500)
    accuracy, _ = cifar_convnet.train_and_test(data, epochs=2, verbose=False)
    assert accuracy > 0.15, "test accuracy %.3f is no better than chance (0.1)" % accuracy


@pytest.mark.slow
def test_fashion_mnist_cnn_accuracy():
    if not fashion_mnist_data.available():
        pytest.skip("Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)")
    import fashion_mnist_cnn
    # Measured 2026-11-22 (seed 1): test accuracy 88.2, 90.2, 90.5, 91.2, 91.9% after epochs
    # 1 to 5; about 100 CPU-seconds per epoch single-threaded, so 5 epochs fit in ~10 min on 2 cores.
    accuracy, _ = fashion_mnist_cnn.train_and_test(epochs=5, verbose=False)
    assert accuracy >= 0.91, "test accuracy %.4f is below 91%%" % accuracy
