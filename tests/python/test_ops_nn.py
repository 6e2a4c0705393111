"""nn ops: softmax family, top_k, cast, constant-like tensors, stop_gradient, assign,
alias, dropout and weighted sampling."""
import numpy as np
import pytest

import cntk as C
from op_harness import check_forward, gradcheck, f64_input, covers_op


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
    # as CNTK, a sparse result comes back as a SciPy CSR matrix
    np.testing.assert_array_equal(e.eval({x: x0}).toarray(), np.eye(3, 4))
    assert not C.eye_like(x, sparse_output=False).output.is_sparse
    np.testing.assert_array_equal(C.eye_like(x, sparse_output=False).eval({x: x0}), np.eye(3, 4))
    np.testing.assert_array_equal(C.eye_like(np.zeros((4, 2), np.float32)).eval().toarray(), np.eye(4, 2))


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


# ------------------------------------------------------------------ dropout

@covers_op('Dropout', 'forward')
def test_dropout_eval_is_identity():
    x = C.input_variable((10,))
    d = np.random.randn(5, 10).astype(np.float32)
    check_forward(C.dropout(x, 0.5), {x: d}, d)
    check_forward(C.dropout(x), {x: d}, d)


@pytest.mark.parametrize('rate', [0.2, 0.5, 0.75])
def test_dropout_training_rate_scaling_and_gradient(rate):
    x = C.input_variable((100, 100))
    d = np.random.uniform(1, 2, size=(2, 100, 100)).astype(np.float32)
    f = C.dropout(x, rate, seed=7)
    state, out = f.forward({x: d}, keep_for_backward=[f.output])
    y = out[f.output]
    dropped = y == 0
    assert abs(dropped.mean() - rate) < 0.01
    np.testing.assert_allclose(y[~dropped], d[~dropped] / (1 - rate), rtol=1e-6)
    # The expectation is preserved.
    assert abs(y.mean() / d.mean() - 1) < 0.02
    g = f.backward(state, {f.output: np.ones_like(d)}, [x])[x]
    np.testing.assert_allclose(g, np.where(dropped, 0, 1 / (1 - rate)), rtol=1e-6)


@covers_op('Dropout', 'gradient:0')
def test_dropout_gradient_float64():
    x = f64_input((50,))
    d = np.random.randn(3, 50)
    d[0, :5] = 0  # zero inputs still pass their gradient where kept
    f = C.dropout(x, 0.3, seed=3)
    state, out = f.forward({x: d}, keep_for_backward=[f.output])
    w = np.random.randn(3, 50)
    g = f.backward(state, {f.output: w}, [x])[x]
    y = out[f.output]
    mask = np.where(np.abs(d) > 0, y / np.where(d == 0, 1, d), g / w)
    assert set(np.round(np.unique(mask), 6)) <= {0.0, round(1 / 0.7, 6)}
    np.testing.assert_allclose(g, w * mask)


def test_dropout_determinism():
    x = C.input_variable(1000)
    d = np.ones((1, 1000), np.float32)

    def mask(f):
        _, out = f.forward({x: d}, keep_for_backward=[f.output])
        return out[f.output]
    f1, f2 = C.dropout(x, 0.5, seed=11), C.dropout(x, 0.5, seed=11)
    a = mask(f1)
    np.testing.assert_array_equal(a, mask(f2))  # same seed, same masks
    assert not np.array_equal(a, mask(f1))  # a new mask for each minibatch
    assert not np.array_equal(a, mask(C.dropout(x, 0.5, seed=12)))
    C.set_fixed_random_seed(123)
    g1 = C.dropout(x, 0.5)
    C.set_fixed_random_seed(123)
    g2 = C.dropout(x, 0.5)
    np.testing.assert_array_equal(mask(g1), mask(g2))
    assert g1.root_function.attributes['rngSeed'] == g2.root_function.attributes['rngSeed']


def test_dropout_keep_prob_and_attributes():
    x = C.input_variable(3)
    f = C.dropout(x, keep_prob=0.75, seed=5)
    attrs = f.root_function.attributes
    assert attrs['dropoutRate'] == 0.25
    assert attrs['rngSeed'] == 5 and attrs['rngOffset'] == 0
    assert f.root_function.op_name == 'Dropout'


# ---------------------------------------------------------------- sampling

def test_random_sample_with_duplicates():
    w = np.array([1, 2, 3, 4], np.float32)
    f = C.random_sample(w, 5, True, seed=1)
    assert f.shape == (5, 4)
    assert f.output.dynamic_axes == ()
    counts = np.zeros(4)
    for _ in range(400):
        s = f.eval().toarray()  # sparse one-hot rows, as a CSR matrix
        np.testing.assert_array_equal(s.sum(axis=1), 1)  # one-hot rows
        counts += s.sum(axis=0)
    freq = counts / counts.sum()
    np.testing.assert_allclose(freq, w / w.sum(), atol=0.03)


def test_random_sample_without_duplicates():
    w = np.array([5, 1, 1, 1, 1, 1], np.float32)
    f = C.random_sample(w, 4, False, seed=2)
    for _ in range(50):
        s = f.eval().toarray()
        assert s.shape == (4, 6)
        np.testing.assert_array_equal(s.sum(axis=1), 1)
        assert s.sum(axis=0).max() == 1  # no class twice


def test_random_sample_inclusion_frequency():
    w = np.concatenate([np.full(100, 1000.0), np.full(100, 1.0)]).astype(np.float32)
    f = C.random_sample_inclusion_frequency(w, 150, True).eval()
    np.testing.assert_allclose(f[0], 150 * 1000 / 100100, rtol=1e-5)
    np.testing.assert_allclose(f[110], 150 / 100100, rtol=1e-5)
    f = C.random_sample_inclusion_frequency(w, 150, False, seed=3).eval()
    assert abs(f[0] - 1.0) < 1e-3
    assert 0.1 < f[110] < 1.0
    assert abs(f.sum() - 150) < 15


def test_random_sample_determinism():
    w = np.ones(20, np.float32)
    a = C.random_sample(w, 10, True, seed=9).eval().toarray()
    b = C.random_sample(w, 10, True, seed=9).eval().toarray()
    np.testing.assert_array_equal(a, b)


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
    with pytest.raises(ValueError, match='dropout'):
        C.dropout(x, 1.0)
    with pytest.raises(ValueError, match='dropout'):
        C.dropout(x, -0.1)
    with pytest.raises(ValueError, match='eye_like'):
        C.eye_like(x)
    with pytest.raises(ValueError, match='Assign'):
        C.assign(C.parameter((3,)), C.parameter((4,)))
    with pytest.raises(ValueError, match='assign'):
        C.assign(x, np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match='RandomSample'):
        C.random_sample(np.ones(3, np.float32), 3, False)
    with pytest.raises(ValueError, match='random_sample'):
        C.random_sample(np.ones(3, np.float32), 0, True)
    with pytest.raises(ValueError, match='RandomSampleInclusionFrequency'):
        C.random_sample_inclusion_frequency(np.ones((2, 3), np.float32), 1, True)
    with pytest.raises(TypeError):
        C.cast(x, np.int32)
    with pytest.raises(ValueError, match='RandomSample'):
        C.random_sample(np.array([1, -1, 1], np.float32), 1, True).eval()


def test_dropout_set_attribute():
    x = C.input_variable(1000)
    d = np.ones((1, 1000), np.float32)
    f = C.dropout(x, 0.5, seed=1)

    def run():
        _, out = f.forward({x: d}, keep_for_backward=[f.output])
        return out[f.output]
    first = run()
    assert not np.array_equal(first, run())  # the stream goes on
    f.set_attribute('rngSeed', 1)  # setting the seed restarts it
    np.testing.assert_array_equal(first, run())
    f.set_attribute('rngSeed', 2)
    assert f.root_function.attributes['rngSeed'] == 2
    assert not np.array_equal(first, run())
    f.set_attribute('dropoutRate', 0.0)
    np.testing.assert_array_equal(run(), d)
