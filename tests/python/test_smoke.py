"""End-to-end smoke tests of the package: build a graph, evaluate, differentiate."""
import numpy as np
import pytest

import cntk as C


def test_times_plus_eval_and_grad():
    x = C.input_variable(3)
    W = C.parameter((3, 2), init=np.arange(6).reshape(3, 2))
    z = C.times(x, W) + 1
    data = np.array([[0, 1, 2], [3, 4, 5]], np.float32)
    np.testing.assert_allclose(z.eval({x: data}), data @ np.arange(6).reshape(3, 2) + 1)
    g = z.grad({x: data}, wrt=[W])
    np.testing.assert_allclose(g, np.repeat(data.sum(0)[:, None], 2, axis=1))


def test_function_decorator_and_call():
    @C.Function
    def f(a, b):
        return a * b + a
    x = C.input_variable(3)
    np.testing.assert_allclose(f(x, x).eval({x: [[1, 2, 3]]}), [[2, 6, 12]])


def test_shape_error_is_value_error():
    with pytest.raises(ValueError, match="Plus"):
        C.plus(C.input_variable(3), C.input_variable(4))


def test_gpu_says_unavailable():
    with pytest.raises(ValueError, match="no GPU"):
        C.gpu(0)
