"""Keras 2.3.1's own backend tests (from its source distribution, fetched from PyPI)
with KERAS_BACKEND=cntk: every test Keras runs for CNTK passes, except those listed
with a reason in tests/keras_suite/expected_failures.txt."""
import os
import sys

import pytest

from keras_harness import requires_keras_2_3_1

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'keras_suite'))
import run as keras_suite  # noqa: E402


pytestmark = requires_keras_2_3_1


def test_keras_backend_tests_pass_on_cntk():
    results = keras_suite.run([keras_suite.BACKEND_TESTS])
    ran = [o for o in results.values() if o != 'skipped']
    passed = ran.count('passed')
    assert len(ran) >= 120, "only %d of Keras' backend tests ran" % len(ran)
    assert passed >= 0.98 * len(ran), "%d of %d backend tests pass" % (passed, len(ran))
    assert keras_suite.check_backend(results) == []


def test_suite_runs_keras_tests_written_for_older_pytest_and_quiet_warnings():
    # pytest.warns(None) (removed in pytest 8) comes from tests/keras_suite/warns_plugin.py;
    # the ReduceLROnPlateau test checks Keras' deprecation warning unless PYTHONWARNINGS
    # says warnings are off, as they are for the run.
    tests = ['tests/keras/engine/test_training.py::test_trainable_weights_count_consistency',
             'tests/keras/callbacks/callbacks_test.py::test_ReduceLROnPlateau_backwards_compatibility']
    results = keras_suite.run(tests)
    assert sorted(results.values()) == ['passed', 'passed'], results


def test_suite_finds_fashion_mnist_after_a_test_unsets_keras_home(tmp_path):
    # Keras' data_utils test unsets KERAS_HOME; its dataset tests that run later must
    # still find Debian's Fashion-MNIST (Keras then looks in $HOME/.keras).
    if not os.path.isdir(keras_suite.FASHION_MNIST):
        pytest.skip("Debian's dataset-fashion-mnist is not installed")
    test = tmp_path / 'test_fashion_mnist_cache.py'
    test.write_text('import os\n'
                    'def test_without_keras_home():\n'
                    '    os.environ.pop("KERAS_HOME")\n'
                    '    from keras.datasets import fashion_mnist\n'
                    '    (x, y), (xt, yt) = fashion_mnist.load_data()\n'
                    '    assert x.shape == (60000, 28, 28) and yt.shape == (10000,)\n')
    results = keras_suite.run([str(test)])
    assert list(results.values()) == ['passed'], results
