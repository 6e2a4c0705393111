"""Normalization and image ops: batch_normalization (and the BatchNormalization layer),
local_response_normalization, mean_variance_normalization, per_dim_mean_variance_normalize,
depth_to_space, space_to_depth, crop_manual, crop_automatic(_with_ancestors), image_scaler."""
import inspect
import math
import os

import numpy as np
import pytest

import cntk as C
from op_harness import check_forward, gradcheck, f64_input, covers_op


NORM_NAMES = {
    'cntk.ops': ['batch_normalization', 'local_response_normalization', 'mean_variance_normalization',
                 'per_dim_mean_variance_normalize', 'depth_to_space', 'space_to_depth', 'crop_manual',
                 'crop_automatic', 'crop_automatic_with_ancestors', 'image_scaler'],
    'cntk.layers.layers': ['BatchNormalization'],
}


def test_signatures_match_cntk27():
    tsv = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'reference', 'cntk27_python_api.tsv')
    if not os.path.exists(tsv):
        pytest.skip("the reference list is absent")
    want = {}
    with open(tsv) as f:
        for line in f:
            parts = line.rstrip('\n').split('\t')
            if len(parts) == 3 and parts[1] == 'def' and parts[0] in NORM_NAMES:
                name, _, args = parts[2].partition('(')
                want[(parts[0], name)] = [a.strip() for a in args.rstrip(')').split(',') if a.strip()]
    import importlib
    for module, names in NORM_NAMES.items():
        mod = importlib.import_module(module)
        for name in names:
            params = list(inspect.signature(getattr(mod, name)).parameters)
            assert params == want[(module, name)], name
            assert getattr(C, name, None) is getattr(mod, name) or module != 'cntk.ops'
    assert C.layers.BatchNormalization is C.layers.layers.BatchNormalization


# ------------------------------------------------------------- batch normalization
#
# A NumPy model of CNTK 2.7's BatchNormalizationNode: the exponential averaging
# factor from the time constant and the sample count, the unbiased variance in the
# running estimate, and the blend of running and batch statistics.

def np_exp_avg_factor(T, count, n):
    if T < 0:
        return n / (n + count)
    if count == 0:
        return 1.0
    if math.isinf(T):
        return 0.0
    if T > 0:
        return -math.expm1(-n / T)
    return 1.0


def np_blend_factor(B, count, n):
    if count == 0:
        return 0.0
    if math.isinf(B):
        return 1.0
    if B > 0:
        return B / (B + n)
    return 0.0


class NpBatchNorm(object):
    """Running statistics and outputs of CNTK's batch normalization for x of shape [N, *sample]."""

    def __init__(self, shape, spatial, T, B, eps):
        self.spatial, self.T, self.B, self.eps = spatial, T, B, eps
        nfeat = shape[0] if spatial else int(np.prod(shape))
        self.mean = np.zeros(nfeat)
        self.var = np.zeros(nfeat)
        self.count = 0.0

    def _ncs(self, x):
        n = x.shape[0]
        return x.reshape(n, self.mean.size, -1)

    def train(self, x, scale, bias):
        xs = self._ncs(x)
        n, S = xs.shape[0], xs.shape[2]
        m = n * S
        mu = xs.mean(axis=(0, 2))
        var = xs.var(axis=(0, 2))
        f = np_exp_avg_factor(self.T, self.count, n)
        b = np_blend_factor(self.B, self.count, n)
        if f != 0:
            unbiased = var * m / (m - 1) if m > 1 else np.zeros_like(var)
            self.mean = f * mu + (1 - f) * self.mean
            self.var = f * unbiased + (1 - f) * self.var
        M = b * self.mean + (1 - b) * mu
        inv = 1 / np.sqrt(var + self.eps)
        I = b / np.sqrt(self.var + self.eps) + (1 - b) * inv if b != 0 else inv
        if f != 0 or b != 1:
            self.count += n
        y = scale.reshape(1, -1, 1) * (xs - M[None, :, None]) * I[None, :, None] + bias.reshape(1, -1, 1)
        self.last = (xs, M, I, 1 - b, scale.reshape(-1))
        return y.reshape(x.shape)

    def grads(self, dy):
        """CNTK's gradient formula for the last training step."""
        xs, M, I, w, scale = self.last
        g = dy.reshape(xs.shape)
        xhat = (xs - M[None, :, None]) * I[None, :, None]
        db = g.sum(axis=(0, 2))
        ds = (g * xhat).sum(axis=(0, 2))
        m = xs.shape[0] * xs.shape[2]
        dx = (scale * I)[None, :, None] * (g - w * (xhat * ds[None, :, None] + db[None, :, None]) / m)
        return dx.reshape(dy.shape), ds, db

    def infer(self, x, scale, bias):
        xs = self._ncs(x)
        y = scale.reshape(1, -1, 1) * (xs - self.mean[None, :, None]) / np.sqrt(self.var + self.eps)[None, :, None] \
            + bias.reshape(1, -1, 1)
        return y.reshape(x.shape)


def make_bn(shape, spatial, T=5000, B=0, eps=1e-5, dtype=np.float64, seed=0, **kw):
    rng = np.random.RandomState(seed)
    nfeat = shape[0] if spatial else int(np.prod(shape))
    x = C.input_variable(shape, dtype=dtype)
    scale = C.Parameter((nfeat,), init=rng.uniform(0.5, 1.5, nfeat).astype(dtype), dtype=dtype, name='scale')
    bias = C.Parameter((nfeat,), init=rng.standard_normal(nfeat).astype(dtype), dtype=dtype, name='bias')
    mean = C.Constant(np.zeros(nfeat, dtype), dtype=dtype, name='run_mean')
    var = C.Constant(np.zeros(nfeat, dtype), dtype=dtype, name='run_var')
    count = C.Constant(0.0, shape=(), dtype=dtype, name='run_count')
    f = C.batch_normalization(x, scale, bias, mean, var, spatial, normalization_time_constant=T,
                              blend_time_constant=B, epsilon=eps, running_count=count, **kw)
    return f, x, scale, bias, mean, var, count


def train_step(f, x, data):
    out = f.output
    state, outs = f.forward({x: data}, [out], keep_for_backward=[out])
    return state, np.asarray(outs[out])


BN_CASES = [
    # (shape, spatial, T, B)
    ((4,), False, 5000, 0),
    ((3, 2), False, 5000, 0),
    ((3, 4, 5), True, 5000, 0),
    ((3, 4, 5), True, 0, 0),
    ((4,), False, float('inf'), 0),
    ((3, 2, 2), True, float('inf'), 0),
    ((4,), False, 7.0, 0),
    ((3, 4, 5), True, 30.0, 20.0),
    ((4,), False, 5000, float('inf')),
    ((2, 3), False, 0, 5.0),
    ((4,), False, -1, 0),  # time constant < 0: averages over everything seen
]


@covers_op('BatchNormalization', 'forward')
@pytest.mark.parametrize('shape,spatial,T,B', BN_CASES, ids=[str(c) for c in BN_CASES])
def test_batch_normalization_training_and_running_statistics(shape, spatial, T, B):
    f, x, scale, bias, mean, var, count = make_bn(shape, spatial, T, B, eps=1e-3)
    ref = NpBatchNorm(shape, spatial, T, B, 1e-3)
    rng = np.random.RandomState(1)
    s, b = np.asarray(scale.value), np.asarray(bias.value)
    for step, n in enumerate([5, 3, 8, 1, 6]):
        d = rng.standard_normal((n,) + shape) * (step + 1) + step
        state, y = train_step(f, x, d)
        np.testing.assert_allclose(y, ref.train(d, s, b), rtol=1e-9, atol=1e-9, err_msg="step %d" % step)
        np.testing.assert_allclose(mean.value, ref.mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(var.value, ref.var, rtol=1e-9, atol=1e-12)
        assert float(count.value) == ref.count
        # the gradients follow CNTK's formula
        dy = rng.standard_normal(y.shape)
        g = f.backward(state, {f.output: dy}, [x, scale, bias])
        dx, ds, db = ref.grads(dy)
        np.testing.assert_allclose(g[x], dx, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(g[scale], ds, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(g[bias], db, rtol=1e-8, atol=1e-10)
    # inference uses the running statistics and leaves them alone
    d = rng.standard_normal((4,) + shape)
    before = (np.array(mean.value), np.array(var.value), float(count.value))
    np.testing.assert_allclose(f.eval({x: d}), ref.infer(d, s, b), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(mean.value, before[0])
    np.testing.assert_array_equal(var.value, before[1])
    assert float(count.value) == before[2]


def test_batch_normalization_time_constant_zero_uses_each_batch_alone():
    f, x, scale, bias, mean, var, count = make_bn((3,), False, T=0)
    rng = np.random.RandomState(2)
    for n in (4, 6):
        d = rng.standard_normal((n, 3)) * 3 + 1
        train_step(f, x, d)
        np.testing.assert_allclose(mean.value, d.mean(axis=0), rtol=1e-12)
        np.testing.assert_allclose(var.value, d.var(axis=0, ddof=1), rtol=1e-12)
    assert float(count.value) == 10


def test_batch_normalization_infinite_time_constant_freezes_after_first_batch():
    f, x, scale, bias, mean, var, count = make_bn((3,), False, T=float('inf'))
    rng = np.random.RandomState(3)
    first = rng.standard_normal((5, 3))
    train_step(f, x, first)
    np.testing.assert_allclose(mean.value, first.mean(axis=0), rtol=1e-12)
    train_step(f, x, rng.standard_normal((5, 3)) + 10)
    np.testing.assert_allclose(mean.value, first.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(var.value, first.var(axis=0, ddof=1), rtol=1e-12)
    assert float(count.value) == 10  # still counted: the batch statistics were used


def test_batch_normalization_single_value_statistics_have_zero_variance():
    f, x, scale, bias, mean, var, count = make_bn((2,), False, T=0)
    train_step(f, x, np.array([[1.0, 2.0]]))
    np.testing.assert_array_equal(var.value, [0.0, 0.0])


def _train_mode_gradcheck(f, x, data, params, eps=1e-6, rtol=1e-5, atol=1e-8):
    """Central differences of sum(w * f) evaluated in training mode (batch statistics)."""
    out = f.output
    rng = np.random.RandomState(0)
    state, y = train_step(f, x, data)
    w = rng.standard_normal(y.shape)
    analytic = f.backward(state, {out: w}, [x] + params)

    def value():
        return float(np.sum(train_step(f, x, data)[1] * w))
    for v in [x] + params:
        base = np.array(data if v is x else v.value, dtype=np.float64)
        num = np.zeros_like(base)
        for idx in np.ndindex(*base.shape):
            for sign in (1, -1):
                p = base.copy()
                p[idx] += sign * eps
                if v is x:
                    data = p
                else:
                    v.value = p
                num[idx] += sign * value() / (2 * eps)
            if v is x:
                data = base
            else:
                v.value = base
        np.testing.assert_allclose(np.asarray(analytic[v]).reshape(base.shape), num, rtol=rtol, atol=atol,
                                   err_msg="gradient of %s" % v)


@covers_op('BatchNormalization', 'gradient:0', 'gradient:1', 'gradient:2')
@pytest.mark.parametrize('shape,spatial', [((3,), False), ((2, 2, 3), True), ((2, 3), False)])
def test_batch_normalization_gradients_with_batch_statistics(shape, spatial):
    f, x, scale, bias, *_ = make_bn(shape, spatial, T=0, B=0, eps=1e-2)
    d = np.random.RandomState(4).standard_normal((4,) + shape)
    _train_mode_gradcheck(f, x, d, [scale, bias])


def test_batch_normalization_gradients_with_running_statistics_only():
    # blend_time_constant=inf with a frozen running estimate: after the first minibatch
    # the running statistics are used, and they are constants for the gradient.
    f, x, scale, bias, *_ = make_bn((2, 3), True, T=float('inf'), B=float('inf'), eps=1e-2)
    rng = np.random.RandomState(5)
    train_step(f, x, rng.standard_normal((6, 2, 3)))
    _train_mode_gradcheck(f, x, rng.standard_normal((3, 2, 3)), [scale, bias])


@pytest.mark.parametrize('spatial', [False, True])
def test_batch_normalization_float32_matches_reference(spatial):
    # float32 runs through oneDNN's primitive (inference and training without blend)
    shape = (4, 5, 6)
    f, x, scale, bias, mean, var, count = make_bn(shape, spatial, T=100, B=0, dtype=np.float32)
    ref = NpBatchNorm(shape, spatial, 100, 0, 1e-5)
    rng = np.random.RandomState(6)
    s, b = np.asarray(scale.value, np.float64), np.asarray(bias.value, np.float64)
    for n in (8, 3):
        d = (rng.standard_normal((n,) + shape) * 2 + 1).astype(np.float32)
        state, y = train_step(f, x, d)
        np.testing.assert_allclose(y, ref.train(d.astype(np.float64), s, b), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(mean.value, ref.mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(var.value, ref.var, rtol=1e-4, atol=1e-6)
        dy = rng.standard_normal(y.shape).astype(np.float32)
        g = f.backward(state, {f.output: dy}, [x, scale, bias])
        dx, ds, db = ref.grads(dy.astype(np.float64))
        np.testing.assert_allclose(g[x], dx, rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(g[scale], ds, rtol=1e-3, atol=1e-3)
    d = rng.standard_normal((5,) + shape).astype(np.float32)
    np.testing.assert_allclose(f.eval({x: d}), ref.infer(d.astype(np.float64), s, b), rtol=1e-4, atol=1e-4)


def test_batch_normalization_of_sequences_ignores_padding():
    x = C.sequence.input_variable((3,), dtype=np.float64)
    scale = C.Parameter((3,), init=1.0, dtype=np.float64)
    bias = C.Parameter((3,), init=0.0, dtype=np.float64)
    mean = C.Constant(np.zeros(3), dtype=np.float64)
    var = C.Constant(np.zeros(3), dtype=np.float64)
    count = C.Constant(0.0, shape=(), dtype=np.float64)
    f = C.batch_normalization(x, scale, bias, mean, var, False, normalization_time_constant=0,
                              running_count=count)
    rng = np.random.RandomState(7)
    seqs = [rng.standard_normal((4, 3)), rng.standard_normal((2, 3)) + 5, rng.standard_normal((1, 3))]
    out = f.output
    state, outs = f.forward({x: seqs}, [out], keep_for_backward=[out])
    allx = np.concatenate(seqs)
    np.testing.assert_allclose(mean.value, allx.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(var.value, allx.var(axis=0, ddof=1), rtol=1e-12)
    assert float(count.value) == 7
    for got, q in zip(outs[out], seqs):
        np.testing.assert_allclose(got, (q - allx.mean(0)) / np.sqrt(allx.var(0) + 1e-5), rtol=1e-9)


def test_batch_normalization_argument_errors():
    x = C.input_variable((3, 4))
    p = C.Parameter((3,), init=1.0)
    c = C.Constant(np.zeros(3, np.float32))
    n = C.Constant(0.0, shape=())
    with pytest.raises(ValueError):  # not spatial: needs one scale per element
        C.batch_normalization(x, p, p, c, c, False, running_count=n)
    with pytest.raises(ValueError):
        C.batch_normalization(x, p, p, c, c, True, epsilon=0, running_count=n)
    with pytest.raises(ValueError):
        C.batch_normalization(x, p, p, c, c, True, blend_time_constant=-1, running_count=n)
    with pytest.raises(ValueError):  # the running statistics must be Constants or Parameters
        C.batch_normalization(x, p, p, C.plus(c, 1), c, True, running_count=n)
    with pytest.raises(ValueError):  # the count is a scalar
        C.batch_normalization(x, p, p, c, c, True, running_count=C.Constant(np.zeros(2, np.float32)))
    with pytest.raises(ValueError):  # parameters have no dynamic axes
        C.batch_normalization(x, C.input_variable(3), p, c, c, True, running_count=n)
    with pytest.warns(Warning):  # CNTK 2.7 warns and creates the count when it is missing
        f = C.batch_normalization(x, p, p, c, c, True)
    assert f.shape == (3, 4)


def test_batch_normalization_infers_parameter_shapes():
    x = C.input_variable((3, 4, 5))
    for spatial, want in ((True, (3,)), (False, (60,))):
        p = C.Parameter(C.InferredDimension, init=1.0)
        q = C.Parameter(C.InferredDimension, init=0.0)
        m = C.Constant(0, shape=(C.InferredDimension,))
        v = C.Constant(0, shape=(C.InferredDimension,))
        f = C.batch_normalization(x, p, q, m, v, spatial, running_count=C.Constant(0, shape=()))
        assert p.shape == want and q.shape == want and m.shape == want and v.shape == want
        assert f.shape == (3, 4, 5)
        assert np.asarray(m.value).shape == want


def test_batch_normalization_attributes():
    f, *_ = make_bn((3,), False, T=123, B=4, eps=1e-3, use_cudnn_engine=True, disable_regularization=True)
    a = f.root_function.attributes
    assert a['normalizationTimeConstant'] == 123 and a['blendTimeConstant'] == 4
    assert a['epsilon'] == 1e-3 and a['spatial'] is False
    assert a['useCuDNNEngine'] is True and a['disableRegularization'] is True


def test_batch_normalization_vs_torch():
    torch = pytest.importorskip('torch')
    shape = (3, 4, 4)
    T = 50.0
    f, x, scale, bias, mean, var, count = make_bn(shape, True, T=T, eps=1e-5)
    tm, tv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    w = torch.tensor(np.asarray(scale.value))
    b = torch.tensor(np.asarray(bias.value))
    rng = np.random.RandomState(8)
    seen = 0
    for n in (4, 6, 2):
        d = rng.standard_normal((n,) + shape) * 2 + 3
        _, y = train_step(f, x, d)
        momentum = 1.0 if seen == 0 else -math.expm1(-n / T)  # CNTK's factor as torch's momentum
        ty = torch.nn.functional.batch_norm(torch.tensor(d), tm, tv, w, b, training=True, momentum=momentum, eps=1e-5)
        seen += n
        np.testing.assert_allclose(y, ty.numpy(), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(mean.value, tm.numpy(), rtol=1e-9)
        np.testing.assert_allclose(var.value, tv.numpy(), rtol=1e-9)
    d = rng.standard_normal((2,) + shape)
    ty = torch.nn.functional.batch_norm(torch.tensor(d), tm, tv, w, b, training=False, eps=1e-5)
    np.testing.assert_allclose(f.eval({x: d}), ty.numpy(), rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------ BatchNormalization layer

def test_batch_normalization_layer_defaults_and_shapes():
    bn = C.layers.BatchNormalization(map_rank=1)
    f = bn(C.input_variable((3, 8, 8)))
    assert f.scale.shape == (3,) and f.bias.shape == (3,)
    assert f.aggregate_mean.shape == (3,) and f.aggregate_variance.shape == (3,)
    assert f.aggregate_count.shape == ()
    np.testing.assert_array_equal(f.scale.value, np.ones(3))
    np.testing.assert_array_equal(f.bias.value, np.zeros(3))
    g = C.layers.BatchNormalization()(C.input_variable((2, 5)))
    assert g.scale.shape == (10,)
    attrs = None
    for fn in C.logging.graph.depth_first_search(g, lambda n: isinstance(n, C.Function) and n.op_name ==
                                                 'BatchNormalization' and not n.is_block, depth=-1):
        attrs = fn.attributes
    assert attrs is not None
    assert attrs['normalizationTimeConstant'] == 5000 and attrs['blendTimeConstant'] == 0
    assert attrs['epsilon'] == pytest.approx(1e-5) and attrs['spatial'] is False
    assert attrs['useCuDNNEngine'] is True and attrs['disableRegularization'] is False
    with pytest.raises(NotImplementedError):
        C.layers.BatchNormalization(map_rank=2)
    with C.layers.default_options(normalization_time_constant=100, epsilon=1e-3):
        h = C.layers.BatchNormalization()(C.input_variable(4))
    attrs = [fn.attributes for fn in C.logging.graph.depth_first_search(
        h, lambda n: isinstance(n, C.Function) and n.op_name == 'BatchNormalization' and not n.is_block, depth=-1)]
    assert attrs[0]['normalizationTimeConstant'] == 100 and attrs[0]['epsilon'] == pytest.approx(1e-3)


def test_batch_normalization_layer_trains_and_infers():
    x = C.input_variable((2, 3))
    model = C.layers.BatchNormalization(map_rank=1, init_scale=2, normalization_time_constant=0)(x)
    rng = np.random.RandomState(9)
    d = (rng.standard_normal((6, 2, 3)) * 3 + 2).astype(np.float32)
    out = model.output
    _, outs = model.forward({x: d}, [out], keep_for_backward=[out])
    xs = d.astype(np.float64).reshape(6, 2, 3)
    mu, var = xs.mean(axis=(0, 2)), xs.var(axis=(0, 2))
    want = 2 * (xs - mu[None, :, None]) / np.sqrt(var + 1e-5)[None, :, None]
    np.testing.assert_allclose(outs[out], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(model.aggregate_mean.value, mu, rtol=1e-5)
    np.testing.assert_allclose(model.aggregate_variance.value, var * 18 / 17, rtol=1e-4)
    assert float(model.aggregate_count.value) == 6
    # inference with the aggregates
    e = rng.standard_normal((2, 2, 3)).astype(np.float32)
    want = 2 * (e - mu[None, :, None]) / np.sqrt(var * 18 / 17 + 1e-5)[None, :, None]
    np.testing.assert_allclose(model.eval({x: e}), want, rtol=1e-4, atol=1e-4)
    # a learner trains scale and bias, not the aggregates
    label = C.input_variable((2, 3))
    loss = C.reduce_sum(C.square(model - label))
    learner = C.sgd(model.parameters, C.learning_parameter_schedule(0.01))
    assert set(p.name for p in model.parameters) == {'scale', 'bias'}
    trainer = C.Trainer(model, (loss, None), [learner])
    target = np.zeros((6, 2, 3), np.float32)
    losses = []
    for _ in range(20):
        trainer.train_minibatch({x: d, label: target})
        losses.append(trainer.previous_minibatch_loss_average)
    assert losses[-1] < losses[0] * 0.5


# ------------------------------------------------------------ local response normalization

def np_lrn(x, r, bias, alpha, beta):
    # x: [N, C, ...]
    Cn = x.shape[1]
    sq = x ** 2
    out = np.empty_like(x)
    for c in range(Cn):
        lo, hi = max(0, c - r), min(Cn - 1, c + r)
        s = sq[:, lo:hi + 1].sum(axis=1)
        out[:, c] = x[:, c] / (bias + alpha / (2 * r + 1) * s) ** beta
    return out


@covers_op('LocalResponseNormalization', 'forward', 'gradient:0')
@pytest.mark.parametrize('shape,r,bias,alpha,beta', [((5, 3, 4), 2, 2.0, 1e-2, 0.75), ((4, 2, 2), 1, 1.0, 0.5, 0.5),
                                                      ((3, 2, 2), 4, 1.5, 0.3, 1.0), ((6,), 0, 1.0, 2.0, 0.75)])
def test_local_response_normalization(shape, r, bias, alpha, beta):
    x = f64_input(shape)
    d = np.random.RandomState(10).standard_normal((2,) + shape)
    f = C.local_response_normalization(x, r, bias, alpha, beta)
    check_forward(f, {x: d}, np_lrn(d, r, bias, alpha, beta), rtol=1e-10, atol=1e-12)
    gradcheck(f, {x: d})
    # float32 (oneDNN's forward primitive, own backward loops) agrees with float64, gradient included
    x32 = C.input_variable(shape)
    f32 = C.local_response_normalization(x32, r, bias, alpha, beta)
    check_forward(f32, {x32: d.astype(np.float32)}, np_lrn(d, r, bias, alpha, beta), rtol=1e-5, atol=1e-6)
    w = np.random.RandomState(20).standard_normal(d.shape)
    s64, o64 = f.forward({x: d}, [f.output], keep_for_backward=[f.output])
    g64 = f.backward(s64, {f.output: w}, [x])[x]
    s32, o32 = f32.forward({x32: d.astype(np.float32)}, [f32.output], keep_for_backward=[f32.output])
    g32 = f32.backward(s32, {f32.output: w.astype(np.float32)}, [x32])[x32]
    np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-5)


def test_local_response_normalization_vs_torch_and_errors():
    torch = pytest.importorskip('torch')
    d = np.random.RandomState(11).standard_normal((2, 7, 3, 3))
    x = f64_input((7, 3, 3))
    got = C.local_response_normalization(x, 2, 2.0, 1e-4, 0.75).eval({x: d})
    want = torch.nn.functional.local_response_norm(torch.tensor(d), size=5, alpha=1e-4, beta=0.75, k=2.0)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10)


def test_local_response_normalization_errors():
    x = C.input_variable((3, 2, 2))
    with pytest.raises(ValueError):
        C.local_response_normalization(x, -1, 1.0, 1.0, 0.5)
    with pytest.raises(ValueError):
        C.local_response_normalization(x, 1.5, 1.0, 1.0, 0.5)
    with pytest.raises(TypeError):
        C.local_response_normalization(x, 1, 'a', 1.0, 0.5)


# ------------------------------------------------------------ mean/variance normalizations

def test_mean_variance_normalization_cntk_example():
    data = np.array([[[0., 2], [4., 6.]], [[0., 4], [8., 12.]]]).astype(np.float32)
    got = C.mean_variance_normalization(data).eval()
    want = np.array([[[-1.3416, -0.4472], [0.4472, 1.3416]], [[-1.3416, -0.4472], [0.4472, 1.3416]]])
    np.testing.assert_allclose(np.asarray(got).reshape(want.shape), want, atol=1e-4)


@pytest.mark.parametrize('shape,across,scaling', [((3, 4, 2), False, True), ((3, 4, 2), True, True),
                                                   ((3, 4), False, False), ((5,), False, True),
                                                   ((5,), True, False)])
def test_mean_variance_normalization(shape, across, scaling):
    x = f64_input(shape)
    d = np.random.RandomState(12).standard_normal((2,) + shape) * 3 + 1
    axes = tuple(range(1, len(shape) + 1)) if (len(shape) < 2 or across) else tuple(range(2, len(shape) + 1))
    centered = d - d.mean(axis=axes, keepdims=True)
    want = centered / (np.sqrt((centered ** 2).mean(axis=axes, keepdims=True)) + 1e-3) if scaling else centered
    f = C.mean_variance_normalization(x, epsilon=1e-3, use_stats_across_channels=across, do_variance_scaling=scaling)
    check_forward(f, {x: d}, want, rtol=1e-10, atol=1e-12)
    gradcheck(f, {x: d})


def test_mean_variance_normalization_errors():
    with pytest.raises(ValueError):
        C.mean_variance_normalization(C.input_variable(3), epsilon=-1)
    with pytest.raises(ValueError):
        C.mean_variance_normalization(C.input_variable(()))


def test_per_dim_mean_variance_normalize():
    x = f64_input((2, 3))
    rng = np.random.RandomState(13)
    d = rng.standard_normal((4, 2, 3))
    mean = rng.standard_normal((2, 3))
    inv = rng.uniform(0.5, 2, (2, 3))
    f = C.per_dim_mean_variance_normalize(x, mean, inv)
    check_forward(f, {x: d}, (d - mean) * inv, rtol=1e-12)
    gradcheck(f, {x: d})
    # broadcast per channel
    f = C.per_dim_mean_variance_normalize(x, mean[:, :1], inv[:, :1])
    check_forward(f, {x: d}, (d - mean[:, :1]) * inv[:, :1], rtol=1e-12)


# ------------------------------------------------------------ depth_to_space / space_to_depth

def np_depth_to_space(x, b):
    # ONNX DCR, x: [N, C, H, W]
    n, c, h, w = x.shape
    t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return t.reshape(n, c // (b * b), h * b, w * b)


def np_space_to_depth(x, b):
    n, c, h, w = x.shape
    t = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return t.reshape(n, c * b * b, h // b, w // b)


def test_depth_to_space_cntk_example():
    x = np.array(np.reshape(range(8), (8, 1, 1)), dtype=np.float32)
    x = np.tile(x, (1, 2, 3))
    a = C.input_variable((8, 2, 3))
    got = C.depth_to_space(a, block_size=2).eval({a: x[None]})
    want = [[[0., 2., 0., 2., 0., 2.], [4., 6., 4., 6., 4., 6.], [0., 2., 0., 2., 0., 2.], [4., 6., 4., 6., 4., 6.]],
            [[1., 3., 1., 3., 1., 3.], [5., 7., 5., 7., 5., 7.], [1., 3., 1., 3., 1., 3.], [5., 7., 5., 7., 5., 7.]]]
    np.testing.assert_array_equal(got, [want])


def test_space_to_depth_cntk_example():
    np.random.seed(3)
    x = np.random.randint(low=0, high=100, size=(1, 4, 6)).astype(np.float32)
    a = C.input_variable((1, 4, 6))
    got = C.space_to_depth(a, block_size=2).eval({a: x[None]})
    want = [[[24., 56., 0.], [96., 44., 39.]], [[3., 72., 21.], [20., 93., 14.]],
            [[19., 41., 21.], [26., 90., 66.]], [[74., 10., 38.], [81., 22., 2.]]]
    np.testing.assert_array_equal(got, [want])


@pytest.mark.parametrize('shape,b', [((8, 2, 3), 2), ((18, 1, 2), 3), ((3, 2, 2), 1)])
def test_depth_to_space_and_back(shape, b):
    x = f64_input(shape)
    d = np.random.RandomState(14).standard_normal((2,) + shape)
    f = C.depth_to_space(x, b)
    check_forward(f, {x: d}, np_depth_to_space(d, b), rtol=0, atol=0)
    gradcheck(f, {x: d})
    assert f.root_function.op_name == 'DepthToSpace'
    y = f64_input(f.shape)
    g = C.space_to_depth(y, b)
    e = np_depth_to_space(d, b)
    check_forward(g, {y: e}, np_space_to_depth(e, b), rtol=0, atol=0)
    np.testing.assert_array_equal(np_space_to_depth(e, b), d)
    gradcheck(g, {y: e})


def test_depth_space_errors():
    with pytest.raises(ValueError):
        C.depth_to_space(C.input_variable((6, 2, 2)), 2)  # 6 channels not divisible by 4
    with pytest.raises(ValueError):
        C.space_to_depth(C.input_variable((1, 3, 4)), 2)
    with pytest.raises(ValueError):
        C.depth_to_space(C.input_variable((8, 2)), 2)
    with pytest.raises(ValueError):
        C.space_to_depth(C.input_variable((1, 4, 4)), 1.5)
    with pytest.raises(ValueError):
        C.depth_to_space(C.input_variable((4, 2, 2)), 0)


# ------------------------------------------------------------ image_scaler

def test_image_scaler():
    x = f64_input((3, 2, 4))
    d = np.random.RandomState(15).standard_normal((2, 3, 2, 4))
    biases = [1.0, -2.0, 0.5]
    f = C.image_scaler(x, 0.25, biases)
    check_forward(f, {x: d}, d * 0.25 + np.array(biases).reshape(3, 1, 1), rtol=1e-12)
    gradcheck(f, {x: d})
    assert f.root_function.op_name == 'ImageScaler'
    with pytest.raises(ValueError):
        C.image_scaler(x, 1.0, [1.0, 2.0])
    with pytest.raises(ValueError):
        C.image_scaler(f64_input((3, 4)), 1.0, [1.0, 2.0, 3.0])


# ------------------------------------------------------------ crops

@pytest.mark.parametrize('shape,ref,ox,oy', [((2, 6, 7), (2, 3, 4), 1, 2), ((5, 5), (5, 5), 0, 0),
                                            ((1, 4, 6), (9, 2, 2), 4, 2)])
def test_crop_manual(shape, ref, ox, oy):
    x = f64_input(shape)
    r = f64_input(ref)
    d = np.random.RandomState(16).standard_normal((3,) + shape)
    e = np.zeros((3,) + ref)
    f = C.crop_manual(x, r, ox, oy)
    h, w = ref[-2], ref[-1]
    want = d[..., oy:oy + h, ox:ox + w]
    assert f.shape == shape[:-2] + (h, w)
    check_forward(f, {x: d, r: e}, want, rtol=0, atol=0)
    gradcheck(f, {x: d, r: e}, wrt=[x])
    g = f.grad({x: d, r: e}, wrt=[r])
    np.testing.assert_array_equal(g, np.zeros_like(e))


def test_crop_errors():
    x = C.input_variable((2, 6, 7))
    r = C.input_variable((2, 3, 4))
    with pytest.raises(ValueError):
        C.crop_manual(x, r, 4, 0)  # 4 + 4 > 7
    with pytest.raises(ValueError):
        C.crop_manual(x, r, -1, 0)
    with pytest.raises(ValueError):
        C.crop_manual(C.input_variable(5), r, 0, 0)


def test_crop_automatic_finds_offsets_through_the_graph():
    x = f64_input((2, 6, 7))
    r = f64_input((2, 3, 4))
    d = np.random.RandomState(17).standard_normal((2, 2, 6, 7))
    e = np.zeros((2, 2, 3, 4))
    cropped = C.crop_manual(x, r, 2, 1)                      # x[..., 1:4, 2:6]
    ref = C.layers.Activation(C.tanh)(C.plus(cropped, 1.0))  # through a block and elementwise ops
    f = C.crop_automatic(C.relu(x), ref)
    assert f.root_function.attributes['offset'] == [2, 1]
    check_forward(f, {x: d, r: e}, np.maximum(d, 0)[..., 1:4, 2:6], rtol=0, atol=0)
    gradcheck(f, {x: d, r: e}, wrt=[x])
    # nested crops add up
    inner = C.crop_manual(x, f64_input((2, 5, 5)), 1, 1)   # offset (1, 1)
    outer = C.crop_manual(inner, r, 1, 0)                 # offset (1, 0) within it
    g = C.crop_automatic(x, outer)
    assert g.root_function.attributes['offset'] == [2, 1]


def test_crop_automatic_with_ancestors():
    image = f64_input((3, 8, 8))
    label = f64_input((1, 8, 8))
    r = f64_input((3, 5, 5))
    features = C.crop_manual(image, r, 2, 1)
    f = C.crop_automatic_with_ancestors(label, features, label, image)
    assert f.root_function.attributes['offset'] == [2, 1]
    assert len(f.root_function.inputs) == 4
    rng = np.random.RandomState(18)
    li = rng.standard_normal((2, 1, 8, 8))
    got = f.eval({label: li, image: rng.standard_normal((2, 3, 8, 8)), r: np.zeros((2, 3, 5, 5))})
    np.testing.assert_array_equal(got, li[..., 1:6, 2:7])


def test_crop_automatic_errors():
    x = C.input_variable((2, 6, 7))
    y = C.input_variable((2, 3, 4))
    with pytest.raises(ValueError):  # no common ancestor
        C.crop_automatic(x, y)
    with pytest.raises(ValueError):  # the referent is larger than the input
        C.crop_automatic(C.crop_manual(x, y, 1, 1), x)
    with pytest.raises(ValueError):  # no spatial transform through a transpose
        C.crop_automatic(x, C.crop_manual(C.transpose(C.transpose(x, (0, 2, 1)), (0, 2, 1)), y, 0, 0))
    with pytest.raises(ValueError):  # ancestor_input must be an ancestor of node_input
        C.crop_automatic_with_ancestors(x, y, C.input_variable((2, 6, 7)), y)
