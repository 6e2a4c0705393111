"""End-to-end accuracy: the Fashion-MNIST MLP example reaches 88% test accuracy."""
import os
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), '..', '..', 'examples', 'python')
sys.path.insert(0, os.path.abspath(EXAMPLES))

import fashion_mnist_data  # noqa: E402


@pytest.mark.slow
def test_fashion_mnist_mlp_accuracy():
    if not fashion_mnist_data.available():
        pytest.skip("Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)")
    import fashion_mnist_mlp
    accuracy, _ = fashion_mnist_mlp.train_and_test(epochs=15, verbose=False)
    assert accuracy >= 0.88, "test accuracy %.4f is below 88%%" % accuracy
