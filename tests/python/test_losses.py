"""cntk.losses: NumPy-reference forward checks and float64 gradient checks."""
import numpy as np
import pytest

import cntk as C
from op_harness import check_forward, gradcheck, f64_input, covers_op


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _ce_ref(o, t, axis=-1):
    m = o.max(axis=axis, keepdims=True)
    lse = m + np.log(np.exp(o - m).sum(axis=axis, keepdims=True))
    return lse - (t * o).sum(axis=axis, keepdims=True)


def _probs(shape):
    return np.random.dirichlet(np.ones(shape[-1]), size=shape[:-1])


# ---------------------------------------------------------------- cross_entropy_with_softmax

def test_cross_entropy_with_softmax_documented_examples():
    r = C.cross_entropy_with_softmax([[1., 1., 1., 50.]], [[0., 0., 0., 1.]]).eval()
    np.testing.assert_allclose(r, [[0.]], atol=1e-6)
    r = C.cross_entropy_with_softmax([[1., 2., 3., 4.]], [[0.35, 0.15, 0.05, 0.45]]).eval()
    np.testing.assert_allclose(r, [[1.84019]], rtol=1e-5)


def test_cross_entropy_with_softmax_batch_float32():
    x, t = C.input_variable(5), C.input_variable(5)
    f = C.cross_entropy_with_softmax(x, t)
    assert f.output.shape == (1,)
    xd = np.random.randn(7, 5).astype(np.float32)
    td = _probs((7, 5)).astype(np.float32)
    check_forward(f, {x: xd, t: td}, _ce_ref(xd.astype(np.float64), td), rtol=1e-5)


def test_cross_entropy_with_softmax_is_stable_for_large_logits():
    x, t = C.input_variable(3), C.input_variable(3)
    f = C.cross_entropy_with_softmax(x, t)
    xd = np.array([[1000., -1000., 0.], [-1e4, -1e4 + 1, -1e4 + 2]], np.float32)
    td = np.array([[0., 1., 0.], [0., 0., 1.]], np.float32)
    got = f.eval({x: xd, t: td})
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, _ce_ref(xd.astype(np.float64), td), rtol=1e-5)
    g = f.grad({x: xd, t: td}, wrt=[x])
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, _softmax(xd.astype(np.float64)) - td, atol=1e-6)


@pytest.mark.parametrize('batch', [True, False])
def test_cross_entropy_with_softmax_gradient(batch):
    x, t = f64_input(6, batch=batch), f64_input(6, batch=batch)
    f = C.cross_entropy_with_softmax(x, t)
    shape = (3, 6) if batch else (6,)
    xd, td = np.random.randn(*shape), _probs(shape)
    check_forward(f, {x: xd, t: td}, _ce_ref(xd, td))
    grads = gradcheck(f, {x: xd, t: td})
    # The output gradient is softmax(o) - t (times the output gradient).
    g = f.grad({x: xd, t: td}, wrt=[x])
    np.testing.assert_allclose(g, _softmax(xd) - td, atol=1e-12)


@pytest.mark.parametrize('axis', [0, 1, -1, -2])
def test_cross_entropy_with_softmax_axis(axis):
    x, t = f64_input((3, 4)), f64_input((3, 4))
    f = C.cross_entropy_with_softmax(x, t, axis=axis)
    ax = axis % 2
    expected_shape = (1, 4) if ax == 0 else (3, 1)
    assert f.output.shape == expected_shape
    xd = np.random.randn(2, 3, 4)
    td = np.moveaxis(_probs((2, 4, 3) if ax == 0 else (2, 3, 4)), -1, 1) if ax == 0 else _probs((2, 3, 4))
    check_forward(f, {x: xd, t: td}, _ce_ref(xd, td, axis=ax + 1))
    gradcheck(f, {x: xd, t: td})


def test_cross_entropy_with_softmax_all_static_axes_and_axis_object():
    x, t = f64_input((2, 3)), f64_input((2, 3))
    xd = np.random.randn(2, 2, 3)
    td = _probs((2, 6)).reshape(2, 2, 3)
    f = C.cross_entropy_with_softmax(x, t, axis=C.Axis.all_static_axes())
    ref = np.log(np.exp(xd).sum(axis=(1, 2))) - (xd * td).sum(axis=(1, 2))
    assert f.output.shape == ()  # all static axes reduce to a scalar, as CNTK 2.7
    check_forward(f, {x: xd, t: td}, ref)
    gradcheck(f, {x: xd, t: td})
    g = C.cross_entropy_with_softmax(x, t, axis=C.Axis(0))
    check_forward(g, {x: xd, t: td}, _ce_ref(xd, td, axis=1))


def test_cross_entropy_with_softmax_constant_target_broadcasts_over_batch():
    x = f64_input(4)
    td = np.array([0., 1., 0., 0.])
    f = C.cross_entropy_with_softmax(x, C.constant(td))
    xd = np.random.randn(3, 4)
    check_forward(f, {x: xd}, _ce_ref(xd, td[None, :]))
    gradcheck(f, {x: xd})


def test_cross_entropy_with_softmax_target_of_lower_rank_pairs_with_each_output_row():
    # CNTK: log-sum-exp(o) - transpose(t) x o, so a target (N,) meets every row of o (M, N).
    x, t = f64_input((2, 3)), f64_input(3)
    f = C.cross_entropy_with_softmax(x, t)
    assert f.output.shape == (2, 1)
    xd, td = np.random.randn(4, 2, 3), _probs((4, 3))
    check_forward(f, {x: xd, t: td}, _ce_ref(xd, td[:, None, :]))
    gradcheck(f, {x: xd, t: td})
    with pytest.raises(ValueError):
        C.cross_entropy_with_softmax(x, f64_input(2))


def test_cross_entropy_with_softmax_sequences():
    x = C.sequence.input_variable(4, dtype=np.float64)
    t = C.sequence.input_variable(4, dtype=np.float64)
    f = C.cross_entropy_with_softmax(x, t)
    xd = [np.random.randn(3, 4), np.random.randn(2, 4)]
    td = [np.eye(4)[[0, 1, 2]], np.eye(4)[[3, 0]]]
    got = f.eval({x: xd, t: td})
    for g, a, b in zip(got, xd, td):
        np.testing.assert_allclose(g, _ce_ref(a, b), rtol=1e-10)


def test_cross_entropy_with_softmax_in_float32_matches_float64():
    x, t = C.input_variable(1000), C.input_variable(1000)
    xd = (np.random.randn(8, 1000) * 5).astype(np.float32)
    td = np.eye(1000, dtype=np.float32)[np.random.randint(0, 1000, 8)]
    got = C.cross_entropy_with_softmax(x, t).eval({x: xd, t: td})
    np.testing.assert_allclose(got, _ce_ref(xd.astype(np.float64), td), rtol=1e-5)


# ---------------------------------------------------------------- squared_error

def test_squared_error_documented_example():
    i1, i2 = C.input_variable((1, 2)), C.input_variable((1, 2))
    r = C.squared_error(i1, i2).eval({i1: np.asarray([[[2., 1.]]], dtype=np.float32),
                                      i2: np.asarray([[[4., 6.]]], dtype=np.float32)})
    np.testing.assert_allclose(np.ravel(r), [29.])


@pytest.mark.parametrize('shape', [(4,), (2, 3)])
def test_squared_error_forward_and_gradient(shape):
    o, t = f64_input(shape), f64_input(shape)
    f = C.squared_error(o, t)
    od, tdata = np.random.randn(3, *shape), np.random.randn(3, *shape)
    ref = ((od - tdata) ** 2).reshape(3, -1).sum(1)  # a scalar per sample, as CNTK's
    check_forward(f, {o: od, t: tdata}, ref)
    gradcheck(f, {o: od, t: tdata})


# ---------------------------------------------------------------- binary cross entropy

def _bce_ref(p, t, w=None):
    v = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    if w is not None:
        v = v * w
    return v.reshape(v.shape[0], -1).sum(1, keepdims=True)


@pytest.mark.parametrize('shape', [(1,), (5,), (2, 3)])
def test_binary_cross_entropy_forward_and_gradient(shape):
    o, t = f64_input(shape), f64_input(shape)
    f = C.binary_cross_entropy(o, t)
    assert f.output.shape == (1,)
    p = np.random.uniform(0.05, 0.95, size=(4,) + shape)
    y = np.random.uniform(0, 1, size=(4,) + shape)  # soft targets are allowed
    check_forward(f, {o: p, t: y}, _bce_ref(p, y))
    gradcheck(f, {o: p, t: y})


def test_binary_cross_entropy_with_hard_labels_and_saturated_outputs():
    o, t = C.input_variable(4), C.input_variable(4)
    f = C.binary_cross_entropy(o, t)
    p = np.array([[0., 1., 0.3, 0.9]], np.float32)
    y = np.array([[0., 1., 1., 0.]], np.float32)
    got = f.eval({o: p, t: y})
    np.testing.assert_allclose(got, [[-(np.log(0.3) + np.log(0.1))]], rtol=1e-5)
    g = f.grad({o: p, t: y}, wrt=[o])
    np.testing.assert_allclose(g, [[1., -1., -1 / 0.3, 1 / 0.1]], rtol=1e-5)


def test_binary_cross_entropy_of_a_sigmoid_trains_like_logistic_regression():
    z, t = f64_input(3), f64_input(3)
    f = C.binary_cross_entropy(C.sigmoid(z), t)
    zd, y = np.random.randn(2, 3), (np.random.rand(2, 3) > 0.5).astype(np.float64)
    g = f.grad({z: zd, t: y}, wrt=[z])
    np.testing.assert_allclose(g, 1 / (1 + np.exp(-zd)) - y, atol=1e-12)


@pytest.mark.parametrize('wshape', [(3,), (1,)])
def test_weighted_binary_cross_entropy(wshape):
    o, t, w = f64_input(3), f64_input(3), f64_input(wshape)
    f = C.weighted_binary_cross_entropy(o, t, w)
    p = np.random.uniform(0.05, 0.95, size=(4, 3))
    y = (np.random.rand(4, 3) > 0.5).astype(np.float64)
    wd = np.random.uniform(0.5, 2, size=(4,) + wshape)
    check_forward(f, {o: p, t: y, w: wd}, _bce_ref(p, y, wd))
    gradcheck(f, {o: p, t: y, w: wd})


def test_weighted_binary_cross_entropy_constant_weights():
    o, t = f64_input(2), f64_input(2)
    wv = np.array([2., 0.5])
    f = C.weighted_binary_cross_entropy(o, t, wv)
    p, y = np.array([[0.2, 0.7]]), np.array([[1., 0.]])
    check_forward(f, {o: p, t: y}, _bce_ref(p, y, wv[None, :]))
    gradcheck(f, {o: p, t: y})


# ---------------------------------------------------------------- cosine_distance

def test_cosine_distance_documented_example():
    a = np.asarray([-1, -1, -1, 1, 1, -1, 1, 1, -1, 1, 1, -1], np.float32).reshape(3, 2, 2)
    b = np.asarray([1, 1, -1, 1, 1, -1, 1, -1, -1, -1, -1, 1], np.float32).reshape(3, 2, 2)
    x, y = C.sequence.input_variable(shape=(2,)), C.sequence.input_variable(shape=(2,))
    got = C.cosine_distance(x, y).eval({x: list(a), y: list(b)})
    np.testing.assert_allclose(np.round(np.asarray(got), 5), [[-1., 1.], [1., 0.], [0., -1.]], atol=1e-6)


@pytest.mark.parametrize('shape', [(4,), (2, 3)])
def test_cosine_distance_forward_and_gradient(shape):
    x, y = f64_input(shape), f64_input(shape)
    f = C.cosine_distance(x, y)
    assert f.output.shape == ()
    xd, yd = np.random.randn(3, *shape), np.random.randn(3, *shape)
    xf, yf = xd.reshape(3, -1), yd.reshape(3, -1)
    ref = (xf * yf).sum(1) / np.sqrt((xf ** 2).sum(1) * (yf ** 2).sum(1))
    check_forward(f, {x: xd, y: yd}, ref)
    gradcheck(f, {x: xd, y: yd})


# ---------------------------------------------------------------- lambda_rank

def _rank_groups(score, gain, group):
    groups, prev = [], None
    for i, g in enumerate(group):
        if i == 0 or int(g) != prev:
            groups.append([])
        prev = int(g)
        groups[-1].append(i)
    ranks = np.zeros(len(score), int)
    for idx in groups:
        order = sorted(range(len(idx)), key=lambda k: (-score[idx[k]], gain[idx[k]], k))
        for r, k in enumerate(order):
            ranks[idx[k]] = r
    return groups, ranks


def _lambda_rank_ref(score, gain, group):
    """CNTK's LambdaRank value (per sample share) and gradient, from its definition."""
    groups, ranks = _rank_groups(score, gain, group)
    total = 0.0
    grad = np.zeros(len(score))
    for idx in groups:
        pos = {i: k for k, i in enumerate(idx)}
        ideal = sum(gain[i] / np.log(2 + pos[i]) for i in idx)
        metric = sum(gain[i] / np.log(2 + ranks[i]) for i in idx)
        if ideal != 0:
            total += metric / ideal
        min_gain = gain[idx[-1]]
        for a, i in enumerate(idx):
            if not gain[i] > min_gain:
                continue
            for j in idx[a + 1:]:
                if abs(gain[i] - gain[j]) < 1e-7:
                    continue
                di, dj = np.log(2 + ranks[i]), np.log(2 + ranks[j])
                delta = 0 if ideal == 0 else abs((gain[i] - gain[j]) * (di - dj) / (di * dj) / ideal)
                lam = -delta / (1 + np.exp(score[i] - score[j]))
                grad[i] += lam
                grad[j] -= lam
    return (1 - total / len(groups)) * 100, grad


def test_lambda_rank_documented_example():
    group = C.input_variable((1,))
    score = C.input_variable((1,), needs_gradient=True)
    gain = C.input_variable((1,))
    g = np.array([1, 1, 2, 2], dtype=np.float32).reshape(4, 1)
    s = np.array([1, 2, 3, 4], dtype=np.float32).reshape(4, 1)
    n = np.array([7, 1, 3, 1], dtype=np.float32).reshape(4, 1)
    f = C.lambda_rank(score, gain, group)
    got = f.grad({score: s, gain: n, group: g}, wrt=[score])
    np.testing.assert_allclose(np.round(got, 4).ravel(), [-0.2121, 0.2121, -0.1486, 0.1486], atol=1e-6)


@covers_op('LambdaRank', 'forward', 'gradient:0')
def test_lambda_rank_value_and_gradient_against_reference():
    rng = np.random.RandomState(3)
    group = np.repeat([4, 7, 7.5, 1], [5, 4, 3, 1]).astype(np.float64)  # 7.5 -> group 7: one group of 7
    gain = np.concatenate([np.sort(rng.randint(0, 4, n))[::-1] for n in (5, 4, 3, 1)]).astype(np.float64)
    score = rng.randn(len(gain))
    score[1] = score[2]  # a tie in scores
    s, gn, gr = f64_input(1), f64_input(1), f64_input(1)
    f = C.lambda_rank(s, gn, gr)
    args = {s: score[:, None], gn: gain[:, None], gr: group[:, None]}
    value, grad = _lambda_rank_ref(score, gain, group)
    out = f.eval(args)
    assert out.shape == ()  # one value for the minibatch, as CNTK's
    np.testing.assert_allclose(out, value * len(score), rtol=1e-10)
    got = f.grad(args, wrt=[s, gn, gr])
    np.testing.assert_allclose(got[s].ravel(), grad, atol=1e-12)
    np.testing.assert_array_equal(got[gn], 0)
    np.testing.assert_array_equal(got[gr], 0)


def test_lambda_rank_gradient_scales_with_the_output_gradient():
    s, gn, gr = f64_input(1), f64_input(1), f64_input(1)
    f = C.lambda_rank(s, gn, gr)
    args = {s: np.array([[0.], [1.], [2.]]), gn: np.array([[3.], [1.], [0.]]), gr: np.zeros((3, 1))}
    state, outs = f.forward(args, [f.output], keep_for_backward=[f.output])
    g1 = f.backward(state, {f.output: np.array(1.)}, [s])[s]
    g2 = f.backward(state, {f.output: np.array(0.5)}, [s])[s]
    np.testing.assert_allclose(g2, 0.5 * g1)
    assert np.all(g1[:2] != 0)


def test_lambda_rank_float32_matches_reference():
    s, gn, gr = C.input_variable(1), C.input_variable(1), C.input_variable(1)
    score = np.random.randn(10).astype(np.float32)
    gain = np.array([5, 3, 3, 0, 2, 1, 0, 4, 4, 1], np.float32)
    group = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2], np.float32)
    gain[7:] = [4, 1, 0]
    value, grad = _lambda_rank_ref(score.astype(np.float64), gain, group)
    args = {s: score[:, None], gn: gain[:, None], gr: group[:, None]}
    np.testing.assert_allclose(C.lambda_rank(s, gn, gr).eval(args), value * len(score), rtol=1e-5)
    np.testing.assert_allclose(C.lambda_rank(s, gn, gr).grad(args, wrt=[s]).ravel(), grad, atol=1e-6)


# ---------------------------------------------------------------- nce_loss

def _nce_setup(classes=6, dim=3, batch=4, num_samples=5, allow_duplicates=True, seed=11):
    x = C.input_variable(dim, dtype=np.float64)
    y = C.input_variable(classes, dtype=np.float64)
    W = C.parameter((classes, dim), init=C.glorot_uniform(seed=5), dtype=np.float64)
    b = C.parameter((classes, 1), init=C.normal(0.1, seed=6), dtype=np.float64)
    q = np.arange(classes, dtype=np.float64) + 1
    loss = C.nce_loss(W, b, x, y, q, num_samples=num_samples, allow_duplicates=allow_duplicates, seed=seed)
    rng = np.random.RandomState(0)
    xd = rng.randn(batch, dim)
    yd = np.eye(classes)[rng.randint(0, classes, batch)]
    return loss, x, y, W, b, q, xd, yd


def _nce_expected(W, b, q, k, xd, yd):
    """The expectation of the loss over the noise samples (drawn with duplicates)."""
    z = xd @ W.T + b.ravel()
    qn = q / q.sum()
    U = k * qn
    lU = np.log(U)
    zp = (yd * z).sum(1)
    lp = (yd * lU).sum(1)
    pos = np.logaddexp(zp, lp) - zp
    neg = (U[None, :] * np.logaddexp(z, lU[None, :])).sum(1) - (U * lU).sum()
    return pos + neg


@covers_op('NCE', 'forward')
def test_nce_loss_is_unbiased():
    loss, x, y, W, b, q, xd, yd = _nce_setup(num_samples=8)
    assert loss.output.shape == ()  # one scalar per sample, as CNTK's
    vals = np.array([loss.eval({x: xd, y: yd}).ravel() for _ in range(4000)])
    expected = _nce_expected(W.value, b.value, q, 8, xd, yd)
    err = vals.std(0) / np.sqrt(len(vals))
    assert np.all(np.abs(vals.mean(0) - expected) < 5 * err + 1e-9)
    # Fresh draws each evaluation.
    assert np.ptp(vals[:, 0]) > 0


def test_nce_loss_seed_reproduces_samples():
    loss, x, y, W, b, q, xd, yd = _nce_setup()
    a = [loss.clone(C.CloneMethod.share, {x: x, y: y}).eval({x: xd, y: yd}) for _ in range(2)]
    np.testing.assert_array_equal(a[0], a[1])


@covers_op('NCE', 'gradient:0', 'gradient:1', 'gradient:2')
@pytest.mark.parametrize('allow_duplicates', [True, False])
def test_nce_loss_gradient(allow_duplicates):
    """Gradients for weights, biases and inputs against central differences with the
    same noise samples (each clone of the loss starts the same random stream)."""
    loss, x, y, W, b, q, xd, yd = _nce_setup(allow_duplicates=allow_duplicates)
    fresh = lambda: loss.clone(C.CloneMethod.share, {x: x, y: y})
    f = fresh()
    out = f.output
    wts = np.random.RandomState(1).standard_normal(xd.shape[0])
    state, _ = f.forward({x: xd, y: yd}, [out], keep_for_backward=[out])
    grads = f.backward(state, {out: wts}, [W, b, x])

    def value():
        g = fresh()
        return float(np.sum(np.asarray(g.eval({x: xd, y: yd})) * wts))

    eps = 1e-6
    for var in (W, b):
        base = var.value.copy()
        num = np.zeros_like(base)
        for idx in np.ndindex(*base.shape):
            for sign in (1, -1):
                v = base.copy()
                v[idx] += sign * eps
                var.value = v
                num[idx] += sign * value() / (2 * eps)
        var.value = base
        np.testing.assert_allclose(grads[var].toarray(), num, rtol=1e-5, atol=1e-8)  # sparse, as CNTK's
    num = np.zeros_like(xd)
    for idx in np.ndindex(*xd.shape):
        for sign in (1, -1):
            v = xd.copy()
            v[idx] += sign * eps
            g = fresh()
            num[idx] += sign * float(np.sum(np.asarray(g.eval({x: v, y: yd})) * wts)) / (2 * eps)
    np.testing.assert_allclose(grads[x], num, rtol=1e-5, atol=1e-8)


def test_nce_loss_without_duplicates_draws_distinct_classes():
    # With 5 of 6 classes drawn without duplicates, the sampled set misses one class.
    loss, x, y, W, b, q, xd, yd = _nce_setup(num_samples=5, allow_duplicates=False)
    vals = {tuple(np.round(loss.eval({x: xd, y: yd}).ravel(), 10)) for _ in range(60)}
    assert 1 < len(vals) <= 6


def test_nce_loss_infers_the_input_dimension_and_accepts_sparse_labels():
    import scipy.sparse
    x = C.input_variable(10)
    y = C.input_variable(100, is_sparse=True)
    W = C.parameter((100, C.InferredDimension), init=C.glorot_uniform(seed=98052))
    b = C.parameter((100, 1), init=-np.log(100))
    loss = C.nce_loss(W, b, x, y, np.arange(100, dtype=np.float32) + 1, seed=98052)
    assert W.shape == (100, 10)
    x0 = np.arange(40, dtype=np.float32).reshape(4, 10) / 40
    y0 = scipy.sparse.csr_matrix((np.ones(4, np.float32), [10, 20, 30, 40], range(5)), shape=(4, 100))
    r = loss.eval({x: x0, y: y0})
    assert r.shape == (4,) and np.all(np.isfinite(r))
    # As CNTK: the weights and biases get sparse gradients, holding the rows of the classes used.
    g = loss.grad({x: x0, y: y0}, wrt=[W, b], as_numpy=False)
    assert g[W].is_sparse and g[b].is_sparse
    dense = loss.grad({x: x0, y: y0}, wrt=[W]).toarray()  # as_numpy gives a CSR matrix
    assert dense.shape == (100, 10) and np.all(np.any(dense[[10, 20, 30, 40]] != 0, axis=1))


# ---------------------------------------------------------------- hierarchical_softmax_layer

def test_hierarchical_softmax_layer_probabilities():
    x, lab = C.input_variable(5), C.input_variable(1)
    out, class_probs, all_probs = C.hierarchical_softmax_layer(x, lab, 10)
    assert out.output.shape == (1, 1) and class_probs.output.shape == (4,)  # CNTK's shapes; ceil(sqrt(10)) classes
    assert len(all_probs) == 4 and all(p.output.shape == (3,) for p in all_probs)
    xd = np.random.randn(3, 5).astype(np.float32)
    ld = np.array([[0], [4], [9]], np.float32)
    probs = np.concatenate([p.eval({x: xd}) for p in all_probs], axis=1)
    np.testing.assert_allclose(probs.sum(1), 1, rtol=1e-5)
    np.testing.assert_allclose(class_probs.eval({x: xd}).sum(1), 1, rtol=1e-5)
    np.testing.assert_allclose(out.eval({x: xd, lab: ld}).ravel(), probs[np.arange(3), [0, 4, 9]], rtol=1e-5)
    names = sorted(p.name for p in out.parameters)
    assert names == ['hsoftmax_b1', 'hsoftmax_b2s', 'hsoftmax_w1', 'hsoftmax_w2s']


def test_hierarchical_softmax_layer_reference_and_gradient():
    x, lab = f64_input(3), f64_input(1)
    out, class_probs, _ = C.hierarchical_softmax_layer(x, lab, 6, label_classes=2)
    params = {p.name: p for p in out.parameters}
    w1, b1 = params['hsoftmax_w1'].value, params['hsoftmax_b1'].value
    w2s, b2s = params['hsoftmax_w2s'].value, params['hsoftmax_b2s'].value
    assert w2s.shape == (2, 3, 3) and b2s.shape == (2, 3)
    xd = np.random.randn(4, 3)
    ld = np.array([[0.], [2.], [3.], [5.]])
    cls = np.floor((ld[:, 0] + 0.5) / 3).astype(int)
    within = (ld[:, 0] - cls * 3).astype(int)
    cp = _softmax(xd @ w1 + b1)
    ref = []
    for i in range(4):
        pin = _softmax(xd[i] @ w2s[cls[i]] + b2s[cls[i]])
        ref.append(pin[within[i]] * cp[i, cls[i]])
    check_forward(out, {x: xd, lab: ld}, np.array(ref)[:, None, None])
    gradcheck(out, {x: xd, lab: ld}, wrt=[x] + list(out.parameters))


# ---------------------------------------------------------------- fmeasure

def test_fmeasure_vectors():
    o, t = f64_input(4), f64_input(4)
    f = C.fmeasure(o, t)
    od = np.random.uniform(0.05, 1, size=(3, 4))
    td = (np.random.rand(3, 4) > 0.4).astype(np.float64)
    td[:, 0] = 1
    c = (od * td).sum(1)
    p, r = c / od.sum(1), c / td.sum(1)
    assert f.output.shape == ()  # CNTK 2.7 sums over all static axes: a scalar per sample
    check_forward(f, {o: od, t: td}, 1 - 2 * p * r / (p + r))
    gradcheck(f, {o: od, t: td}, wrt=[o])


def test_fmeasure_images_per_class_with_beta():
    o, t = f64_input((2, 3, 3)), f64_input((2, 3, 3))
    f = C.fmeasure(o, t, beta=2)
    assert f.output.shape == (2, 1, 1)
    od = np.random.uniform(0.05, 1, size=(1, 2, 3, 3))
    td = (np.random.rand(1, 2, 3, 3) > 0.5).astype(np.float64)
    td[..., 0, 0] = 1
    c = (od * td).sum((2, 3))
    p, r = c / od.sum((2, 3)), c / td.sum((2, 3))
    check_forward(f, {o: od, t: td}, (1 - 5 * p * r / (4 * p + r))[..., None, None])
    gradcheck(f, {o: od, t: td}, wrt=[o])


# ---------------------------------------------------------------- not implemented / bad arguments

def test_lattice_sequence_with_softmax_needs_sequences():
    # The criterion itself is tested in test_lattice.py.
    x, y = C.input_variable(3), C.input_variable(3)
    with pytest.raises(ValueError, match='must all be sequences'):
        C.losses.lattice_sequence_with_softmax(x, y, y, y, 'a', 'b', 'c', 'd')


def test_bad_arguments():
    x3, x4 = C.input_variable(3), C.input_variable(4)
    with pytest.raises(ValueError, match='CrossEntropyWithSoftmax'):
        C.cross_entropy_with_softmax(x3, x4)
    with pytest.raises(ValueError, match='CrossEntropyWithSoftmax'):
        C.cross_entropy_with_softmax(x3, x3, axis=2)
    with pytest.raises(TypeError, match='cross_entropy_with_softmax'):
        C.cross_entropy_with_softmax(x3, x3, axis='last')
    with pytest.raises(ValueError, match='Logistic'):
        C.binary_cross_entropy(x3, x4)
    with pytest.raises(ValueError, match='Logistic'):
        C.weighted_binary_cross_entropy(x3, x3, C.input_variable(2))
    with pytest.raises(ValueError, match='cosine_distance'):
        C.cosine_distance(x3, x4)
    with pytest.raises(ValueError, match='LambdaRank'):
        C.lambda_rank(x3, C.input_variable(1), C.input_variable(1))
    with pytest.raises(ValueError, match='LambdaRank'):
        C.lambda_rank(C.input_variable(1, dynamic_axes=[]), C.constant([1.]), C.constant([0.]))
    with pytest.raises(ValueError, match='fmeasure'):
        C.fmeasure(x3, C.input_variable((1, 3)))
    with pytest.raises(ValueError, match='hierarchical_softmax_layer'):
        C.hierarchical_softmax_layer(x3, C.input_variable(1), 0)
    with pytest.raises(TypeError, match='Logistic|CrossEntropyWithSoftmax|incompatible'):
        C.cross_entropy_with_softmax(x3, C.input_variable(3, dtype=np.float16))


def test_nce_loss_bad_arguments():
    x, y = C.input_variable(3), C.input_variable(6)
    W = C.parameter((6, 3))
    b = C.parameter((6, 1))
    q = np.ones(6)
    with pytest.raises(ValueError, match='nce_loss.*noise_distribution'):
        C.nce_loss(W, b, x, y, np.ones((2, 3)))
    with pytest.raises(ValueError, match='nce_loss.*weights'):
        C.nce_loss(C.parameter((5, 3)), b, x, y, q)
    with pytest.raises(ValueError, match='nce_loss.*biases'):
        C.nce_loss(W, C.parameter((6, 2)), x, y, q)
    with pytest.raises(ValueError, match='nce_loss.*labels'):
        C.nce_loss(W, b, x, C.input_variable(5), q)
    with pytest.raises(ValueError, match='nce_loss.*num_samples'):
        C.nce_loss(W, b, x, y, q, num_samples=6, allow_duplicates=False)
    with pytest.raises(ValueError, match='NCE'):
        C.nce_loss(W, b, C.input_variable(4), y, q)


def test_mixed_float32_and_float64_operands():
    # The op computes in float64; the float32 operand is converted, and its gradient comes back in float32.
    o = C.input_variable(3, dtype=np.float32, needs_gradient=True)
    t = C.input_variable(3, dtype=np.float64)
    f = C.cross_entropy_with_softmax(o, t)
    od = np.array([[1., 2., 3.]], np.float32)
    td = np.array([[0.2, 0.3, 0.5]])
    np.testing.assert_allclose(f.eval({o: od, t: td}), _ce_ref(od.astype(np.float64), td), rtol=1e-12)
    g = f.grad({o: od, t: td}, wrt=[o])
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, _softmax(od.astype(np.float64)) - td, rtol=1e-6)
    w = C.constant(np.array([2., 0.5, 1.]))  # float64 weights next to float32 data
    p = C.input_variable(3, dtype=np.float32)
    bce = C.weighted_binary_cross_entropy(p, C.input_variable(3, dtype=np.float32), w)
    pd, yd = np.array([[0.2, 0.6, 0.9]], np.float32), np.array([[1., 0., 1.]], np.float32)
    np.testing.assert_allclose(bce.eval({bce.arguments[0]: pd, bce.arguments[1]: yd}),
                               _bce_ref(pd.astype(np.float64), yd, w.value[None, :]), rtol=1e-6)
