"""Reductions: NumPy-reference forward and float64 gradient checks over static axes,
several axes, all static axes, and the batch axis."""
import numpy as np
import pytest

import cntk as C
from op_harness import check_forward, gradcheck, f64_input

REDUCTIONS = [
    ('reduce_sum', C.reduce_sum, np.sum),
    ('reduce_mean', C.reduce_mean, np.mean),
    ('reduce_max', C.reduce_max, np.max),
    ('reduce_min', C.reduce_min, np.min),
    ('reduce_prod', C.reduce_prod, np.prod),
    ('reduce_log_sum_exp', C.reduce_log_sum_exp, lambda x, axis, keepdims: np.log(np.sum(np.exp(x), axis=axis,
                                                                                              keepdims=keepdims))),
    ('reduce_l1', C.reduce_l1, lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis, keepdims=keepdims)),
    ('reduce_l2', C.reduce_l2, lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))),
    ('reduce_sum_square', C.reduce_sum_square, lambda x, axis, keepdims: np.sum(x * x, axis=axis, keepdims=keepdims)),
]

# (static axis argument, axes of the [batch, 2, 3, 4] data it reduces)
AXES = [(None, (1, 2, 3)), (0, (1,)), (1, (2,)), (-1, (3,)), ((0, 2), (1, 3)), (C.Axis.all_static_axes(), (1, 2, 3))]


def _data(shape):
    # Distinct values (no ties for max/min) away from zero (prod, l1 kinks).
    n = int(np.prod(shape))
    v = np.random.permutation(n).reshape(shape) / n + 0.5
    return v * np.where(np.random.rand(*shape) < 0.3, -1, 1)


@pytest.mark.parametrize('name,op,ref', REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize('axis,np_axes', AXES, ids=['none', 'a0', 'a1', 'a-1', 'a02', 'allstatic'])
@pytest.mark.parametrize('keepdims', [True, False])
def test_static_reductions(name, op, ref, axis, np_axes, keepdims):
    x = f64_input((2, 3, 4))
    d = _data((2, 2, 3, 4))
    f = op(x, axis=axis, keepdims=keepdims)
    # CNTK 2.7: a reduction over all static axes gives a scalar whatever keepdims says.
    all_static = np_axes == (1, 2, 3)
    assert f.output.shape == (() if all_static else ref(d, axis=np_axes, keepdims=keepdims).shape[1:])
    check_forward(f, {x: d}, ref(d, axis=np_axes, keepdims=keepdims and not all_static))
    gradcheck(f, {x: d})


@pytest.mark.parametrize('name,op,ref', REDUCTIONS[:5], ids=[r[0] for r in REDUCTIONS[:5]])
def test_batch_axis_reduction(name, op, ref):
    x = f64_input((3,))
    d = _data((4, 3))
    f = op(x, axis=C.Axis.default_batch_axis())
    assert f.output.dynamic_axes == ()
    check_forward(f, {x: d}, ref(d, axis=0))
    gradcheck(f, {x: d})


def test_all_axes_reduction_gives_one_value():
    x = f64_input((2, 3))
    d = _data((4, 2, 3))
    f = C.reduce_sum(x, axis=C.Axis.all_axes())
    assert f.output.dynamic_axes == ()
    np.testing.assert_allclose(np.sum(f.eval({x: d})), d.sum())
    gradcheck(f, {x: d})


@pytest.mark.parametrize('op,ref', [(C.argmax, np.argmax), (C.argmin, np.argmin)])
@pytest.mark.parametrize('axis', [0, 1, -1])
def test_argmax_argmin(op, ref, axis):
    x = C.input_variable((3, 4))
    d = _data((2, 3, 4)).astype(np.float32)
    expected = np.expand_dims(ref(d, axis=axis % 2 + 1), axis % 2 + 1).astype(np.float32)
    check_forward(op(x, axis=axis), {x: d}, expected)
    # Indices are piecewise constant: the gradient is zero.
    x64 = f64_input((3, 4))
    g = C.reduce_sum(op(x64, axis=axis)).grad({x64: d.astype(np.float64)}, wrt=[x64])
    np.testing.assert_array_equal(g, 0)


def test_argmax_of_vector_and_whole_tensor():
    x = C.input_variable(5)
    check_forward(C.argmax(x), {x: [[1, 5, 2, 9, 0]]}, [3])  # all static axes: a scalar per sample
    y = C.input_variable((2, 2))
    with pytest.raises(ValueError, match='ReduceElements'):
        C.argmax(y, axis=(0, 1))


def test_max_gradient_goes_to_the_maximum():
    x = f64_input(4)
    g = C.reduce_max(x).grad({x: [[1.0, 7.0, 3.0, 2.0]]}, wrt=[x])
    np.testing.assert_array_equal(g, [[0, 1, 0, 0]])


def test_reduction_errors():
    x = C.input_variable((2, 3))
    with pytest.raises(ValueError, match='ReduceElements'):
        C.reduce_sum(x, axis=2)
    with pytest.raises(ValueError, match='ReduceElements'):
        C.reduce_mean(x, axis=-3)
    with pytest.raises(TypeError):
        C.reduce_sum(x, axis='rows')


def test_argmax_without_axis_is_the_flat_index_of_the_sample():
    # CNTK: "if no axis is specified, it returns the flattened index of the largest element".
    x = C.input_variable((2, 3))
    d = np.random.RandomState(5).rand(4, 2, 3).astype(np.float32)
    np.testing.assert_array_equal(C.argmax(x).eval({x: d}), d.reshape(4, -1).argmax(axis=1))
    np.testing.assert_array_equal(C.argmin(x).eval({x: d}), d.reshape(4, -1).argmin(axis=1))
    with pytest.raises(ValueError, match='not several'):
        C.argmax(x, axis=(0, 1))
