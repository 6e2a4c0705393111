"""nn ops: softmax family, top_k, cast, constant-like tensors, stop_gradient, assign and alias."""
import numpy as np
import pytest

import cntk as C
from op_harness import check_forward, gradcheck, f64_input


def np_softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def np_log_softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


# ------------------------------------------------------------- softmax family

# (cntk axis argument, numpy axes over a [batch, 2, 3, 4] array)
SOFTMAX_AXES = [(None, (1, 2, 3)), (0, 1), (1, 2), (-1, 3), (2, 3),
                (C.Axis.all_static_axes(), (1, 2, 3)), (C.Axis.default_batch_axis(), 0)]


@pytest.mark.parametrize('axis,np_axis', SOFTMAX_AXES, ids=[str(a[0]) for a in SOFTMAX_AXES])
def test_softmax_forward_and_gradient(axis, np_axis):
    x = f64_input((2, 3, 4))
    d = np.random.randn(3, 2, 3, 4)
    f = C.softmax(x, axis=axis)
    check_forward(f, {x: d}, np_softmax(d, np_axis), rtol=1e-10, atol=1e-12)
    gradcheck(f, {x: d})


@pytest.mark.parametrize('axis,np_axis', [(None, 3)] + SOFTMAX_AXES[1:],
                         ids=[str(a[0]) for a in [(None, 3)] + SOFTMAX_AXES[1:]])
def test_log_softmax_forward_and_gradient(axis, np_axis):
    x = f64_input((2, 3, 4))
    d = np.random.randn(3, 2, 3, 4)
    f = C.log_softmax(x, axis=axis)
    check_forward(f, {x: d}, np_log_softmax(d, np_axis), rtol=1e-10, atol=1e-12)
    gradcheck(f, {x: d})


def test_softmax_float32_and_cntk_examples():
    np.testing.assert_allclose(C.softmax([[1, 1, 2, 3]]).eval(), [[0.082595, 0.082595, 0.224515, 0.610296]],
                               atol=1e-6)
    np.testing.assert_allclose(C.softmax([1, 1]).eval(), [0.5, 0.5])
    np.testing.assert_allclose(C.softmax([[[1, 1], [3, 5]]], axis=-1).eval(),
                               [[[0.5, 0.5], [0.119203, 0.880797]]], atol=1e-6)
    np.testing.assert_allclose(C.softmax([[[1, 1], [3, 5]]], axis=1).eval(),
                               [[[0.119203, 0.017986], [0.880797, 0.982014]]], atol=1e-6)
    x = C.input_variable(5)
    assert C.softmax(x).output.dtype == np.float32
    assert C.softmax(x).shape == (5,)


def test_softmax_is_numerically_stable():
    x = C.input_variable(3)
    d = np.array([[1000.0, 1001.0, -1000.0], [-1e4, -1e4, -1e4]], np.float32)
    y = C.softmax(x).eval({x: d})
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y, np_softmax(d.astype(np.float64), 1), rtol=1e-5, atol=1e-7)
    ly = C.log_softmax(x).eval({x: d})
    assert np.all(np.isfinite(ly))
    np.testing.assert_allclose(ly, np_log_softmax(d.astype(np.float64), 1), rtol=1e-5, atol=1e-4)


def test_softmax_without_batch_axis_and_in_sequences():
    x = f64_input((3, 4), batch=False)
    d = np.random.randn(3, 4)
    gradcheck(C.softmax(x, axis=0), {x: d})
    s = C.sequence.input_variable(4, dtype=np.float64)
    seqs = [np.random.randn(2, 4), np.random.randn(3, 4)]
    got = C.softmax(s).eval({s: seqs})
    for g, q in zip(got, seqs):
        np.testing.assert_allclose(g, np_softmax(q, 1), rtol=1e-10)


def test_hardmax():
    np.testing.assert_array_equal(C.hardmax([1., 1., 2., 3.]).eval(), [0, 0, 0, 1])
    np.testing.assert_array_equal(C.hardmax([1., 3., 2., 3.]).eval(), [0, 1, 0, 0])  # first maximum
    x = C.input_variable((2, 3))
    d = np.random.randn(4, 2, 3).astype(np.float32)
    ref = np.zeros_like(d).reshape(4, 6)
    ref[np.arange(4), d.reshape(4, 6).argmax(1)] = 1
    check_forward(C.hardmax(x), {x: d}, ref.reshape(d.shape))
    x64 = f64_input(3)
    g = C.hardmax(x64).grad({x64: np.random.randn(2, 3)}, wrt=[x64])
    np.testing.assert_array_equal(g, 0)


# ------------------------------------------------------------------- top_k

@pytest.mark.parametrize('axis', [0, 1, -1])
def test_top_k_forward_and_gradient(axis):
    x = f64_input((4, 5))
    d = np.random.randn(2, 4, 5)
    k = 3
    t = C.top_k(x, k, axis=axis)
    assert len(t.outputs) == 2
    np_axis = (axis % 2) + 1
    order = np.argsort(-d, axis=np_axis, kind='stable')
    idx = np.take(order, np.arange(k), axis=np_axis)
    vals = np.take_along_axis(d, idx, axis=np_axis)
    r = t.eval({x: d})
    np.testing.assert_allclose(r[t.outputs[0]], vals)
    np.testing.assert_array_equal(r[t.outputs[1]], idx)
    assert t.outputs[0].shape == t.outputs[1].shape
    assert t.outputs[0].shape[axis] == k
    gradcheck(C.combine([t.outputs[0]]), {x: d})


def test_top_k_cntk_example_and_ties():
    x = C.input_variable(10)
    y = C.top_k(-x * C.log(x), 3)
    x0 = np.arange(10, dtype=np.float32) * 0.1
    top = y.eval({x: x0})
    np.testing.assert_array_equal(top[y.outputs[1]], [[4, 3, 5]])
    r = C.top_k(np.array([2., 5., 5., 1.], np.float32), 2)
    out = r.eval()
    np.testing.assert_array_equal(out[r.outputs[0]], [5, 5])
    np.testing.assert_array_equal(out[r.outputs[1]], [1, 2])


# ----------------------------------------------------- cast and constant-likes

def test_cast():
    x = C.input_variable(3)
    d = np.array([[1.5, -2.25, 3.0]], np.float32)
    f = C.cast(x, np.float64)
    assert f.output.dtype == np.float64
    got = f.eval({x: d})
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, d)
    h = C.cast(C.cast(x, np.float16), np.float32)
    np.testing.assert_array_equal(h.eval({x: d}), d)  # exactly representable in float16
    # The gradient is cast back to the input's type.
    g = C.reduce_sum(C.cast(x, np.float64) * 2).grad({x: d}, wrt=[x])
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, np.full_like(d, 2))


def test_ones_zeros_like():
    x = C.input_variable((3, 4))
    x0 = np.arange(24).reshape((2, 3, 4)).astype('f')
    np.testing.assert_array_equal(C.ones_like(x).eval({x: x0}), np.ones_like(x0))
    np.testing.assert_array_equal(C.zeros_like(x).eval({x: x0}), np.zeros_like(x0))
    assert C.ones_like(x).output.dynamic_axes == x.dynamic_axes
    x64 = f64_input(3)
    g = (C.ones_like(x64) * x64).grad({x64: np.ones((2, 3))}, wrt=[x64])
    np.testing.assert_array_equal(g, 1)  # only through the product's second operand
    np.testing.assert_array_equal(C.zeros_like(np.ones((2, 2))).eval(), np.zeros((2, 2)))


def test_eye_like():
    x = C.input_variable(4)
    x0 = np.arange(12).reshape((3, 4)).astype('f')
    e = C.eye_like(x)
    assert e.output.is_sparse
    np.testing.assert_array_equal(e.eval({x: x0}), np.eye(3, 4))
    assert not C.eye_like(x, sparse_output=False).output.is_sparse
    np.testing.assert_array_equal(C.eye_like(np.zeros((4, 2), np.float32)).eval(), np.eye(4, 2))


# --------------------------------------------------- stop_gradient and alias

def test_stop_gradient():
    x = f64_input(3)
    d = np.array([[1.0, 2.0, 3.0]])
    f = x * C.stop_gradient(x)
    check_forward(f, {x: d}, d * d)
    np.testing.assert_allclose(f.grad({x: d}, wrt=[x]), d)  # d(x * c)/dx with c = x held fixed
    s = C.stop_gradient(x)
    assert s.root_function.op_name == 'StopGradient'
    np.testing.assert_array_equal(s.grad({x: d}, wrt=[x]), 0)


def test_alias():
    x = f64_input((2, 3))
    d = np.random.randn(2, 2, 3)
    a = C.alias(x, name='a')
    assert a.name == 'a'
    assert a.output != x
    check_forward(a, {x: d}, d)
    gradcheck(a, {x: d})


# ------------------------------------------------------------------- assign

def test_assign_cntk_examples():
    dest = C.constant(shape=(3, 4))
    data = C.parameter(shape=(3, 4), init=2)
    np.testing.assert_array_equal(C.assign(dest, data).eval(), np.full((3, 4), 2))
    np.testing.assert_array_equal(dest.asarray(), np.full((3, 4), 2))

    dest = C.parameter(shape=(3, 4), init=0)
    a = C.assign(dest, data)
    y = dest + data
    result = C.combine([y, a]).eval()
    np.testing.assert_array_equal(result[y.output], np.full((3, 4), 2))  # old value of dest during the pass
    np.testing.assert_array_equal(dest.asarray(), np.full((3, 4), 2))
    result = C.combine([y, a]).eval()
    np.testing.assert_array_equal(result[y.output], np.full((3, 4), 4))


def test_assign_in_training_happens_after_backward():
    w = C.parameter(shape=(2,), init=1.0, dtype=np.float64)
    p = C.parameter(shape=(2,), init=np.array([3.0, 4.0]), dtype=np.float64)
    a = C.assign(w, p * 2)
    x = f64_input(2)
    loss = C.combine([C.reduce_sum(x * w), a])
    state, _ = loss.forward({x: np.ones((1, 2))}, outputs=loss.outputs, keep_for_backward=loss.outputs)
    np.testing.assert_array_equal(w.asarray(), [1, 1])  # not yet: gradients still to come
    grads = loss.backward(state, {loss.outputs[0]: np.ones((1, 1)), loss.outputs[1]: np.ones(2)}, [w, p])
    np.testing.assert_array_equal(grads[w], [1, 1])
    np.testing.assert_array_equal(grads[p], [2, 2])  # identity through assign, then * 2
    np.testing.assert_array_equal(w.asarray(), [6, 8])


# ----------------------------------------------------------- bad arguments

def test_bad_arguments():
    x = C.input_variable((3, 4))
    with pytest.raises(ValueError, match='Softmax'):
        C.softmax(x, axis=2)
    with pytest.raises(ValueError, match='LogSoftmax'):
        C.log_softmax(C.sequence.input_variable(3), axis=C.Axis.default_dynamic_axis())
    with pytest.raises(ValueError, match='TopK'):
        C.top_k(x, 5)
    with pytest.raises(ValueError, match='TopK'):
        C.top_k(x, 2, axis=C.Axis.default_batch_axis())
    with pytest.raises(TypeError, match='top_k'):
        C.top_k(x, 1.5)
    with pytest.raises(ValueError, match='eye_like'):
        C.eye_like(x)
    with pytest.raises(ValueError, match='Assign'):
        C.assign(C.parameter((3,)), C.parameter((4,)))
    with pytest.raises(ValueError, match='assign'):
        C.assign(x, np.zeros((3, 4), np.float32))
    with pytest.raises(TypeError):
        C.cast(x, np.int32)

