"""Consecutive oneDNN steps (convolution, fused convolution, pooling, activations, batch
normalization, LRN, channel splice) keep oneDNN's
own (blocked) layout between them instead of reordering every value to the plain layout
and back. With set_dnnl_layouts(False) every step reads and writes plain values: both must
give the same outputs, gradients and parameter updates, and the reorder counter shows
what is saved."""
import numpy as np
import pytest

import cntk as C
from cntk.layers import BatchNormalization, Convolution, Dense, MaxPooling

TOL = 1e-5


def reorders():
    return C._cntk.dnnl_reorders()


class blocked_mode:
    """Runs a block with oneDNN layouts between steps `on` or off (restoring the caller's setting)."""

    def __init__(self, on):
        self.on = on

    def __enter__(self):
        self.old = C.cntk_py.dnnl_layouts_enabled()
        C.cntk_py.set_dnnl_layouts(self.on)

    def __exit__(self, *exc):
        C.cntk_py.set_dnnl_layouts(self.old)


def run(fn, args, outputs, wrt, on, seed=0):
    """Forward (keeping state) and backward with fixed random root gradients; returns
    outputs, gradients and the reorders of the forward and of the backward pass."""
    with blocked_mode(on):
        r0 = reorders()
        state, outs = fn.forward(args, outputs, keep_for_backward=outputs)
        r1 = reorders()
        rng = np.random.RandomState(seed)
        roots = {o: rng.standard_normal(np.asarray(outs[o]).shape).astype(np.asarray(outs[o]).dtype) for o in outputs}
        grads = fn.backward(state, roots, wrt)
        r2 = reorders()
    return ({o: np.asarray(outs[o]) for o in outputs}, {v: np.asarray(grads[v]) for v in wrt}, r1 - r0, r2 - r1)


def close(a, b, tol=TOL):
    scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale)


def check_same(fn, args, outputs=None, wrt=None):
    outputs = outputs or [fn.output]
    wrt = wrt or (list(args.keys()) + list(fn.parameters))
    o_on, g_on, f_on, b_on = run(fn, args, outputs, wrt, on=True)
    o_off, g_off, f_off, b_off = run(fn, args, outputs, wrt, on=False)
    for o in outputs:
        assert np.all(np.isfinite(o_on[o]))
        close(o_on[o], o_off[o])
    for v in wrt:
        close(g_on[v], g_off[v])
    return (f_on, b_on), (f_off, b_off)


def data(shape, seed=1, dtype=np.float32):
    return np.random.RandomState(seed).standard_normal(shape).astype(dtype)


def param(shape, seed, scale=0.1, dtype=np.float32):
    return C.parameter(init=(np.random.RandomState(seed).standard_normal(shape) * scale).astype(dtype))


def conv_relu_pool_conv(cin=16, c1=32, c2=32, dtype=np.float32):
    x = C.input_variable((cin, 12, 12), dtype=dtype)
    w1, w2 = param((c1, cin, 3, 3), 2, dtype=dtype), param((c2, c1, 3, 3), 3, dtype=dtype)
    r = C.relu(C.convolution(w1, x))
    h = C.pooling(r, C.MAX_POOLING, (2, 2), strides=(2, 2))
    return x, C.convolution(w2, h), r, h


def test_conv_relu_pool_conv_matches_plain_layout():
    x, y, _, _ = conv_relu_pool_conv()
    check_same(y, {x: data((4, 16, 12, 12))})


@pytest.mark.onednn('counts the reorders around values kept in oneDNN layouts')
def test_conv_relu_pool_conv_reorders_nothing_between_its_steps():
    x, y, _, _ = conv_relu_pool_conv()
    (fwd_on, bwd_on), (fwd_off, bwd_off) = check_same(y, {x: data((2, 16, 12, 12))})
    # Kept: the input into the first convolution's layout and the result out of the
    # last one's, nothing between. Plain: each convolution reorders in and out.
    assert fwd_on == 2
    assert fwd_off == 4
    # Backward likewise: the root gradient in and the input's gradient out; the weight
    # gradients reuse what the data gradients reordered.
    assert bwd_on == 2
    assert bwd_off == 4


def test_plain_reader_gets_the_value_made_plain_once():
    x, y, _, h = conv_relu_pool_conv()
    # reduce_sum and the second convolution both read the pooled value; reduce_sum
    # needs it plain, so it is not kept in oneDNN's layout and both see the same numbers.
    f = C.combine([y + C.reduce_sum(h), C.reduce_mean(h, axis=0)])
    check_same(f, {x: data((3, 16, 12, 12))}, outputs=f.outputs)


@pytest.mark.parametrize('on', [True, False])
def test_max_pooling_keeps_its_workspace_for_the_backward_pass(on):
    # The forward pass of a training step keeps oneDNN's argmax; without it the backward pass
    # would run the pooling forward again. Gradients agree with the other layout either way.
    x, y, _, _ = conv_relu_pool_conv()
    before = C._cntk.max_pool_workspaces_recomputed()
    _, g, _, _ = run(y, {x: data((2, 16, 12, 12))}, [y.output], [x] + list(y.parameters), on=on)
    assert C._cntk.max_pool_workspaces_recomputed() == before
    _, g_other, _, _ = run(y, {x: data((2, 16, 12, 12))}, [y.output], [x] + list(y.parameters), on=not on)
    for v in g:
        close(g[v], g_other[v])


def test_requested_intermediate_outputs_are_plain_and_equal():
    x, y, relu, pooled = conv_relu_pool_conv()
    f = C.combine([y, pooled, relu])
    check_same(f, {x: data((2, 16, 12, 12))}, outputs=f.outputs)


def test_gradient_of_a_kept_intermediate():
    x, y, _, pooled = conv_relu_pool_conv()
    pooled = pooled.output
    o_on, g_on, _, _ = run(y, {x: data((2, 16, 12, 12))}, [y.output], [pooled, x], on=True)
    o_off, g_off, _, _ = run(y, {x: data((2, 16, 12, 12))}, [y.output], [pooled, x], on=False)
    close(g_on[pooled], g_off[pooled])
    close(g_on[x], g_off[x])


def alexnet_like():
    x = C.input_variable((3, 67, 67))
    with C.layers.default_options(activation=C.relu, init=C.glorot_uniform(seed=5)):
        h = Convolution((11, 11), 16, strides=4, pad=False, init_bias=0.1)(x)
        h = MaxPooling((3, 3), strides=2)(h)
        h = Convolution((5, 5), 32, pad=True, init_bias=0.1)(h)
        h = MaxPooling((3, 3), strides=2)(h)
        h = Convolution((3, 3), 32, pad=True, init_bias=0.1)(h)
        h = Convolution((3, 3), 16, pad=True, init_bias=0.1)(h)
        h = MaxPooling((3, 3), strides=2)(h)
        z = Dense(10, activation=None, init=C.glorot_uniform(seed=6))(h)
    return x, z


@pytest.mark.onednn('counts the reorders around values kept in oneDNN layouts')
def test_alexnet_like_net_matches_plain_layout():
    x, z = alexnet_like()
    (fwd_on, _), (fwd_off, _) = check_same(z, {x: data((3, 3, 67, 67))})
    assert fwd_on < fwd_off


def inception_like(dtype=np.float32, narrow=8):
    x = C.input_variable((16, 10, 10), dtype=dtype)
    w0 = param((32, 16, 3, 3), 10, dtype=dtype)
    h = C.relu(C.convolution(w0, x))                       # read by three convolutions and a pool
    b1 = C.relu(C.convolution(param((narrow, 32, 1, 1), 11, dtype=dtype), h))
    b2 = C.relu(C.convolution(param((16, 32, 1, 1), 12, dtype=dtype), h))
    b2 = C.relu(C.convolution(param((16, 16, 3, 3), 13, dtype=dtype), b2))
    b3 = C.relu(C.convolution(param((16, 32, 1, 1), 14, dtype=dtype), h))
    b4 = C.pooling(h, C.MAX_POOLING, (3, 3), strides=(1, 1), auto_padding=[False, True, True])
    b4 = C.relu(C.convolution(param((narrow, 32, 1, 1), 15, dtype=dtype), b4))
    s = C.splice(b1, b2, b3, b4, axis=0)
    # the next block's first convolution reads the spliced value
    return x, C.convolution(param((16, 32 + 2 * narrow, 1, 1), 16, dtype=dtype), s), s


@pytest.mark.onednn('counts the reorders around values kept in oneDNN layouts')
@pytest.mark.parametrize('narrow', [8, 16])
def test_inception_like_block_matches_plain_layout(narrow):
    # 8 channels split oneDNN's 16-channel blocks: those parts of the splice's gradient
    # are taken through the plain layout; 16 keep every part in oneDNN's layout.
    x, y, _ = inception_like(narrow=narrow)
    (fwd_on, bwd_on), (fwd_off, bwd_off) = check_same(y, {x: data((2, 16, 10, 10))})
    # the splice concatenates the branches in oneDNN's layout, and the inception input
    # is reordered once for the three convolutions that read it
    assert fwd_on == 2 and fwd_off == 14
    assert bwd_on < bwd_off
    if narrow == 16:
        assert bwd_on == 2


def test_splice_read_plain_elsewhere():
    x, y, s = inception_like(narrow=16)
    f = C.combine([y, C.reduce_sum(s)])   # the splice's result is also read plain
    check_same(f, {x: data((2, 16, 10, 10))}, outputs=f.outputs)


def test_float64_stays_on_the_plain_path():
    x, y, _ = inception_like(np.float64)
    (fwd_on, bwd_on), _ = check_same(y, {x: data((2, 16, 10, 10), dtype=np.float64)})
    assert fwd_on == 0 and bwd_on == 0
    o, _, _, _ = run(y, {x: data((2, 16, 10, 10), dtype=np.float64)}, [y.output], [x], on=True)
    assert o[y.output].dtype == np.float64


def conv_bn_relu_pool(seed=3, cin=8):
    x = C.input_variable((cin, 8, 8))
    h = Convolution((3, 3), 16, pad=True, init=C.glorot_uniform(seed=seed), init_bias=0.2)(x)
    h = BatchNormalization(map_rank=1, normalization_time_constant=100)(h)
    h = MaxPooling((2, 2), strides=2)(C.relu(h))
    y = Convolution((3, 3), 16, pad=True, init=C.glorot_uniform(seed=seed + 1))(h)
    return x, y


def running_statistics(f):
    return sorted(((c.name, np.asarray(c.value).copy()) for c in f.constants), key=lambda kv: kv[0])


@pytest.mark.parametrize('training', [True, False])
def test_batch_normalization_matches_plain_layout(training):
    xd = data((4, 8, 8, 8))
    results = {}
    for on in (True, False):
        x, y = conv_bn_relu_pool()   # a fresh graph: each training pass updates the running statistics
        if training:
            o, g, _, _ = run(y, {x: xd}, [y.output], [x] + list(y.parameters), on=on)
            grads = [g[v] for v in [x] + list(y.parameters)]
        else:
            with blocked_mode(on):
                o = {y.output: np.asarray(y.eval({x: xd}))}
            grads = []
        results[on] = (o[y.output], grads, running_statistics(y))
    close(results[True][0], results[False][0])
    for a, b in zip(results[True][1], results[False][1]):
        close(a, b)
    stats_on, stats_off = results[True][2], results[False][2]
    assert [n for n, _ in stats_on] == [n for n, _ in stats_off]
    for (_, a), (_, b) in zip(stats_on, stats_off):
        np.testing.assert_array_equal(a, b)


def test_training_steps_update_parameters_alike():
    finals = {}
    xd = data((4, 3, 67, 67))
    labels = np.eye(10, dtype=np.float32)[[1, 3, 5, 7]]
    for on in (True, False):
        x, z = alexnet_like()
        t = C.input_variable(10)
        loss = C.cross_entropy_with_softmax(z, t)
        learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.05), C.momentum_schedule(0.9))
        trainer = C.Trainer(z, (loss, None), [learner])
        with blocked_mode(on):
            for _ in range(3):
                trainer.train_minibatch({x: xd, t: labels})
        finals[on] = [np.asarray(p.value).copy() for p in z.parameters]
    for a, b in zip(finals[True], finals[False]):
        close(a, b)


@pytest.mark.onednn('counts the reorders around values kept in oneDNN layouts')
def test_switch_rebuilds_the_plan():
    x, y, _, _ = conv_relu_pool_conv()
    xd = data((2, 16, 12, 12))
    with blocked_mode(True):
        r0 = reorders()
        y.eval({x: xd})
        on = reorders() - r0
    with blocked_mode(False):
        r0 = reorders()
        y.eval({x: xd})
        off = reorders() - r0
    with blocked_mode(True):
        r0 = reorders()
        y.eval({x: xd})
        again = reorders() - r0
    assert on == again == 2 and off == 4


@pytest.mark.onednn('counts the reorders around values kept in oneDNN layouts')
def test_weight_reorders_are_counted_apart():
    x, y, _, _ = conv_relu_pool_conv()
    xd = data((2, 16, 12, 12))
    counts = {}
    for on in (True, False):
        with blocked_mode(on):
            w0 = C._cntk.dnnl_weight_reorders()
            state, outs = y.forward({x: xd}, [y.output], keep_for_backward=[y.output])
            fwd = C._cntk.dnnl_weight_reorders() - w0
            y.backward(state, {y.output: np.ones_like(np.asarray(outs[y.output]))}, list(y.parameters))
            counts[on] = (fwd, C._cntk.dnnl_weight_reorders() - w0)
    # Forward: each convolution's weights into its layout. Backward: into backward data's
    # layout (the second convolution only: no gradient is asked for x) and each weight
    # gradient out of the primitive's layout. Keeping activations in oneDNN's layouts
    # changes none of these.
    assert counts[True] == counts[False] == (2, 5)


@pytest.mark.onednn('counts the reorders around values kept in oneDNN layouts')
def test_batch_normalization_inference_keeps_the_layout():
    xd = data((2, 16, 8, 8))
    counts, outs = {}, {}
    for on in (True, False):
        x, y = conv_bn_relu_pool(cin=16)
        with blocked_mode(on):
            r0 = reorders()
            outs[on] = np.asarray(y.eval({x: xd}))
            counts[on] = reorders() - r0
    close(outs[True], outs[False])
    # conv -> batch normalization -> relu -> pool -> conv: the input in, the result out
    assert counts[True] == 2
    assert counts[False] == 4


# ---------------------------------------- batch normalization in training, LRN

def bn_chain(cin=16, c1=16, tc=100, blend=0, map_rank=1, seed=3):
    """conv -> batch normalization -> relu -> pool -> conv, with the BN's settings."""
    x = C.input_variable((cin, 8, 8))
    h = Convolution((3, 3), c1, pad=True, init=C.glorot_uniform(seed=seed), init_bias=0.2)(x)
    h = BatchNormalization(map_rank=map_rank, normalization_time_constant=tc, blend_time_constant=blend,
                           init_scale=1.5)(h)
    h = MaxPooling((2, 2), strides=2)(C.relu(h))
    y = Convolution((3, 3), 16, pad=True, init=C.glorot_uniform(seed=seed + 1))(h)
    return x, y


def resnet_like(cin=16, c=16, seed=7):
    """A residual block: conv-BN-relu-conv-BN, plus the block's input, relu, then pooling
    and a conv-BN-relu."""
    x = C.input_variable((cin, 8, 8))
    init = C.glorot_uniform(seed=seed)
    stem = C.relu(BatchNormalization(map_rank=1, normalization_time_constant=50)(
        Convolution((3, 3), c, pad=True, init=init, bias=False)(x)))
    h = C.relu(BatchNormalization(map_rank=1, normalization_time_constant=50)(
        Convolution((3, 3), c, pad=True, init=C.glorot_uniform(seed=seed + 1), bias=False)(stem)))
    h = BatchNormalization(map_rank=1, normalization_time_constant=50)(
        Convolution((3, 3), c, pad=True, init=C.glorot_uniform(seed=seed + 2), bias=False)(h))
    h = C.relu(h + stem)
    h = MaxPooling((2, 2), strides=2)(h)
    y = C.relu(BatchNormalization(map_rank=1, normalization_time_constant=50)(
        Convolution((3, 3), 2 * c, pad=True, init=C.glorot_uniform(seed=seed + 3), bias=False)(h)))
    return x, y


def train_steps(build, xd, on, steps=3, classes=10):
    """A few momentum-SGD steps on a Dense head over build()'s output; returns the final
    parameters and running statistics (by name), and the last step's outputs."""
    x, y = build()
    z = Dense(classes, init=C.glorot_uniform(seed=11))(y)
    t = C.input_variable(classes)
    loss = C.cross_entropy_with_softmax(z, t)
    labels = np.eye(classes, dtype=np.float32)[np.arange(xd.shape[0]) % classes]
    learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.05), C.momentum_schedule(0.9))
    trainer = C.Trainer(z, (loss, None), [learner])
    with blocked_mode(on):
        for _ in range(steps):
            trainer.train_minibatch({x: xd, t: labels})
    params = [np.asarray(p.value).copy() for p in z.parameters]
    return params, running_statistics(z)


def check_training_alike(build, xd, steps=3):
    p_on, s_on = train_steps(build, xd, True, steps)
    p_off, s_off = train_steps(build, xd, False, steps)
    for a, b in zip(p_on, p_off):
        close(a, b)
    assert [n for n, _ in s_on] == [n for n, _ in s_off]
    assert len(s_on) > 0
    for (_, a), (_, b) in zip(s_on, s_off):
        close(a, b)
    return s_on


def bn_train_pass(build, xd, on):
    x, y = build()
    o, g, fwd, bwd = run(y, {x: xd}, [y.output], [x] + list(y.parameters), on=on)
    return o[y.output], [g[v] for v in [x] + list(y.parameters)], running_statistics(y), fwd, bwd


@pytest.mark.parametrize('tc,blend', [(100, 0), (0, 0), (np.inf, 0), (100, 2.0)])
def test_batch_normalization_training_matches_plain_layout(tc, blend):
    xd = data((4, 16, 8, 8), seed=2)
    on = bn_train_pass(lambda: bn_chain(tc=tc, blend=blend), xd, True)
    off = bn_train_pass(lambda: bn_chain(tc=tc, blend=blend), xd, False)
    close(on[0], off[0])
    for a, b in zip(on[1], off[1]):
        close(a, b)
    # The running statistics get the plain path's update from the same statistics.
    for (_, a), (_, b) in zip(on[2], off[2]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.onednn('counts the reorders around values kept in oneDNN layouts')
def test_batch_normalization_training_reorders_nothing_around_it():
    xd = data((2, 16, 8, 8))
    *_, fwd_on, bwd_on = bn_train_pass(bn_chain, xd, True)
    *_, fwd_off, bwd_off = bn_train_pass(bn_chain, xd, False)
    # Kept: the input in and the result out, forward and backward, as for inference.
    assert (fwd_on, bwd_on) == (2, 2)
    assert (fwd_off, bwd_off) == (4, 4)


@pytest.mark.onednn('counts the reorders around values kept in oneDNN layouts')
def test_batch_normalization_training_with_blending_stays_plain():
    # A positive blend_time_constant normalizes with blended statistics after the first
    # minibatch: the plain path computes that, so the BN's neighbours reorder around it.
    xd = data((2, 16, 8, 8))
    x, y = bn_chain(blend=2.0)
    counts = [run(y, {x: xd}, [y.output], [x], on=True)[2] for _ in range(2)]
    assert counts[0] == 2      # the first minibatch uses the batch's statistics alone
    assert counts[1] == 4


def chain_reorders(build, xd):
    x, y = build()
    _, _, fwd, bwd = run(y, {x: xd}, [y.output], [x], on=True)
    return fwd, bwd


def plain_chain(c1=16, seed=3):
    """bn_chain without its batch normalization."""
    x = C.input_variable((16, 8, 8))
    h = Convolution((3, 3), c1, pad=True, init=C.glorot_uniform(seed=seed), init_bias=0.2)(x)
    h = MaxPooling((2, 2), strides=2)(C.relu(h))
    return x, Convolution((3, 3), 16, pad=True, init=C.glorot_uniform(seed=seed + 1))(h)


def test_batch_normalization_training_channels_not_a_block_multiple():
    # 12 channels in a 16-channel blocked layout: the padded channels stay out of the statistics.
    xd = data((3, 16, 8, 8), seed=4)
    on = bn_train_pass(lambda: bn_chain(c1=12), xd, True)
    off = bn_train_pass(lambda: bn_chain(c1=12), xd, False)
    close(on[0], off[0])
    for a, b in zip(on[1], off[1]):
        close(a, b)
    for (_, a), (_, b) in zip(on[2], off[2]):
        np.testing.assert_array_equal(a, b)
    # The batch normalization adds no reorder to the chain (whose second convolution
    # takes 12 input channels in a layout of its own choosing).
    assert chain_reorders(lambda: bn_chain(c1=12), xd) == chain_reorders(lambda: plain_chain(c1=12), xd)


@pytest.mark.onednn('counts the reorders around values kept in oneDNN layouts')
def test_batch_normalization_not_spatial_over_a_conv_output_stays_plain():
    # Per-element statistics (map_rank=None) are not oneDNN's per-channel ones.
    xd = data((3, 16, 8, 8), seed=5)
    on = bn_train_pass(lambda: bn_chain(map_rank=None), xd, True)
    off = bn_train_pass(lambda: bn_chain(map_rank=None), xd, False)
    close(on[0], off[0])
    for a, b in zip(on[1], off[1]):
        close(a, b)
    for (_, a), (_, b) in zip(on[2], off[2]):
        np.testing.assert_array_equal(a, b)
    assert on[3] == 4


def test_conv_bn_chain_training_steps_alike():
    check_training_alike(bn_chain, data((4, 16, 8, 8), seed=6), steps=4)


def test_resnet_like_block_training_steps_alike():
    stats = check_training_alike(resnet_like, data((4, 16, 8, 8), seed=8), steps=3)
    # Four BNs, each with a running mean, variance and count.
    assert len(stats) == 12


@pytest.mark.onednn('counts the reorders around values kept in oneDNN layouts')
def test_resnet_like_block_gradients_match_plain_layout():
    xd = data((2, 16, 8, 8), seed=9)
    on = bn_train_pass(resnet_like, xd, True)
    off = bn_train_pass(resnet_like, xd, False)
    close(on[0], off[0])
    for a, b in zip(on[1], off[1]):
        close(a, b)
    # The first statistics are the plain path's to the bit; later ones see inputs that
    # differ in the last bits (oneDNN normalizes in float32).
    for (_, a), (_, b) in zip(on[2], off[2]):
        close(a, b)
    assert on[3] < off[3] and on[4] < off[4]


def lrn_chain(c1=16, radius=2, bias=2.0, alpha=1e-4, beta=0.75, seed=3):
    x = C.input_variable((16, 8, 8))
    h = Convolution((3, 3), c1, pad=True, init=C.glorot_uniform(seed=seed), init_bias=0.1)(x)
    h = C.local_response_normalization(C.relu(h), radius, bias, alpha, beta)
    h = MaxPooling((2, 2), strides=2)(h)
    y = Convolution((3, 3), 16, pad=True, init=C.glorot_uniform(seed=seed + 1))(h)
    return x, y


@pytest.mark.parametrize('c1,radius,bias,alpha,beta', [
    (16, 2, 2.0, 1e-4, 0.75),     # AlexNet's settings
    (16, 1, 1.0, 1.0, 0.5),       # CNTK's defaults of the layer library, a large alpha
    (12, 3, 0.5, 0.3, 1.25),      # channels not a block multiple, a wide window
])
@pytest.mark.onednn('counts the reorders around values kept in oneDNN layouts')
def test_lrn_matches_plain_layout(c1, radius, bias, alpha, beta):
    x, y = lrn_chain(c1, radius, bias, alpha, beta)
    xd = data((3, 16, 8, 8), seed=10)
    (fwd_on, bwd_on), (fwd_off, bwd_off) = check_same(y, {x: xd})
    # LRN adds no reorder to the chain.
    assert chain_reorders(lambda: lrn_chain(c1, radius, bias, alpha, beta), xd) == \
        chain_reorders(lambda: plain_chain(c1), xd)
    if c1 == 16:
        assert (fwd_on, bwd_on) == (2, 2)
        assert (fwd_off, bwd_off) == (4, 4)


def test_lrn_requested_output_and_plain_reader():
    x, y = lrn_chain()
    h = C.local_response_normalization(
        Convolution((3, 3), 16, pad=True, init=C.glorot_uniform(seed=1))(x), 2, 2.0, 1e-4, 0.75)
    f = C.combine([C.convolution(C.parameter(init=data((8, 16, 3, 3), seed=12) * 0.1), h), C.reduce_sum(h), h])
    check_same(f, {x: data((2, 16, 8, 8), seed=13)}, outputs=f.outputs)


def test_batch_normalization_training_over_padded_sequences_matches_plain_layout():
    # Sequences of different lengths: the padding rows stay out of the statistics, which
    # the plain path computes; both modes agree.
    results = {}
    seqs = [data((3, 16, 6, 6), seed=20), data((1, 16, 6, 6), seed=21), data((2, 16, 6, 6), seed=22)]
    for on in (True, False):
        x = C.sequence.input_variable((16, 6, 6))
        h = Convolution((3, 3), 16, pad=True, init=C.glorot_uniform(seed=3), init_bias=0.2)(x)
        h = C.relu(BatchNormalization(map_rank=1, normalization_time_constant=100)(h))
        y = Convolution((3, 3), 16, pad=True, init=C.glorot_uniform(seed=4))(h)
        with blocked_mode(on):
            state, outs = y.forward({x: seqs}, [y.output], keep_for_backward=[y.output])
            outs = [np.asarray(v) for v in outs[y.output]]
            roots = [np.random.RandomState(k).standard_normal(v.shape).astype(np.float32) for k, v in enumerate(outs)]
            grads = y.backward(state, {y.output: roots}, list(y.parameters))
        results[on] = (outs, [np.asarray(grads[p]) for p in y.parameters], running_statistics(y))
    assert [v.shape[0] for v in results[True][0]] == [3, 1, 2]
    for a, b in zip(results[True][0], results[False][0]):
        close(a, b)
    for a, b in zip(results[True][1], results[False][1]):
        close(a, b)
    for (_, a), (_, b) in zip(results[True][2], results[False][2]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.onednn('counts the reorders around values kept in oneDNN layouts')
@pytest.mark.parametrize('act', ['relu', 'sigmoid', 'tanh', 'elu', 'leaky_relu'])
@pytest.mark.parametrize('channels', [8, 32])
def test_activation_between_pooling_and_convolution_stays_in_layout(act, channels):
    # conv -> pool -> activation -> conv: the activation reads the pooled value in oneDNN's layout
    # (8 channels: a partly padded block) and hands its result to the next convolution in it, so
    # it reorders exactly as often as the same chain without it.
    x = C.input_variable((16, 12, 12))
    w1, w2 = param((channels, 16, 3, 3), 21), param((16, channels, 3, 3), 22)
    h = C.pooling(C.convolution(w1, x), C.MAX_POOLING, (2, 2), strides=(2, 2))
    args = {x: data((3, 16, 12, 12), seed=23)}
    y = C.convolution(w2, getattr(C, act)(h))
    (fwd_on, bwd_on), (fwd_off, bwd_off) = check_same(y, args, wrt=[x] + list(y.parameters))
    bare = C.convolution(w2, h)
    (bare_fwd, bare_bwd), _ = check_same(bare, args, wrt=[x] + list(bare.parameters))
    assert (fwd_on, bwd_on) == (bare_fwd, bare_bwd)
    assert fwd_on <= fwd_off and bwd_on <= bwd_off
    if channels == 32:  # whole blocks: nothing between the two convolutions' own reorders
        assert (fwd_on, bwd_on, fwd_off, bwd_off) == (2, 2, 4, 4)


def test_leaky_relu_gradient_at_zero_in_layout():
    # CNTK's leaky ReLU has slope 1 at 0; oneDNN's relu backward gives alpha there, which the
    # layout path corrects. A zero kernel makes every pooled value exactly 0.
    x = C.input_variable((16, 12, 12))
    w1 = C.parameter(init=np.zeros((32, 16, 3, 3), np.float32))
    w2 = param((16, 32, 3, 3), 22)
    h = C.pooling(C.convolution(w1, x), C.MAX_POOLING, (2, 2), strides=(2, 2))
    y = C.convolution(w2, C.leaky_relu(h))
    args = {x: data((2, 16, 12, 12), seed=5)}
    check_same(y, args, wrt=[w1])
    ref = C.convolution(w2, h)  # slope 1 everywhere at 0: the same gradient as without the activation
    g = np.asarray(y.grad(args, wrt=[w1]))
    close(g, np.asarray(ref.grad(args, wrt=[w1])))
