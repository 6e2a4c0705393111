"""The plan's fusion pass: Convolution -> Plus(per-channel bias) -> activation runs as
one oneDNN convolution with post-ops. Fused and unfused plans (set_conv_fusion(False)) must
give the same outputs and gradients; chains whose intermediate results are read
elsewhere, or requested, must not fuse."""
import contextlib

import numpy as np
import pytest

import cntk as C
from cntk.layers import BatchNormalization, Convolution, MaxPooling

RTOL = 1e-6


def fused_count():
    return C._cntk.fused_steps_planned()


@contextlib.contextmanager
def conv_fusion(on):
    """The fusion pass on or off for a block (restoring the caller's setting)."""
    old = C.cntk_py.conv_fusion_enabled()
    C.cntk_py.set_conv_fusion(on)
    try:
        yield
    finally:
        C.cntk_py.set_conv_fusion(old)


def run(fn, args, outputs, wrt, fused, seed=0):
    """Forward (keeping state) then backward with fixed random root gradients.
    Returns (outputs, gradients, fused steps planned)."""
    with conv_fusion(fused):
        before = fused_count()
        state, outs = fn.forward(args, outputs, keep_for_backward=outputs)
        rng = np.random.RandomState(seed)
        roots = {o: rng.standard_normal(np.asarray(outs[o]).shape).astype(np.float32) for o in outputs}
        grads = fn.backward(state, roots, wrt)
        planned = fused_count() - before
    return ({o: np.asarray(outs[o]) for o in outputs}, {v: np.asarray(grads[v]) for v in wrt}, planned)


def close(a, b):
    scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * scale)


def check_same(fn, args, outputs=None, wrt=None, expect_fused=1):
    outputs = outputs or [fn.output]
    wrt = wrt or (list(args.keys()) + list(fn.parameters))
    o_f, g_f, n_f = run(fn, args, outputs, wrt, fused=True)
    o_u, g_u, n_u = run(fn, args, outputs, wrt, fused=False)
    assert n_u == 0
    assert n_f == expect_fused
    for o in outputs:
        close(o_f[o], o_u[o])
    for v in wrt:
        close(g_f[v], g_u[v])
    return o_f, g_f


def data(shape, seed=1):
    return np.random.RandomState(seed).standard_normal(shape).astype(np.float32)


def conv_parts(cin=3, cout=8, k=3, seed=2):
    rng = np.random.RandomState(seed)
    w = C.parameter(init=(rng.standard_normal((cout, cin, k, k)) * 0.3).astype(np.float32), name='W')
    b = C.parameter(init=(rng.standard_normal((cout, 1, 1))).astype(np.float32), name='b')
    return w, b


def numpy_conv_same(x, w):
    """Cross-correlation with zero padding keeping the size (odd kernels), x [N, C, H, W]."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)))
    y = np.zeros((n, o, h, wd), np.float64)
    for i in range(kh):
        for j in range(kw):
            y += np.einsum('nchw,oc->nohw', xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return y


@pytest.mark.onednn('counts the fused convolution steps oneDNN runs')
@pytest.mark.parametrize('act', [C.relu, C.sigmoid, C.tanh, C.elu])
def test_conv_bias_activation_fuses_and_matches(act):
    x = C.input_variable((3, 9, 9))
    w, b = conv_parts()
    f = act(C.convolution(w, x, auto_padding=[False, True, True]) + b)
    d = data((4, 3, 9, 9))
    o, _ = check_same(f, {x: d})
    # and against NumPy, as a check that the fused primitive computes the chain
    z = numpy_conv_same(d.astype(np.float64), np.asarray(w.value, np.float64)) + np.asarray(b.value)
    ref = {C.relu: lambda v: np.maximum(v, 0), C.sigmoid: lambda v: 1 / (1 + np.exp(-v)), C.tanh: np.tanh,
           C.elu: lambda v: np.where(v > 0, v, np.exp(np.minimum(v, 0)) - 1)}[act](z)
    np.testing.assert_allclose(o[f.output], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.onednn('counts the fused convolution steps oneDNN runs')
def test_convolution_layer_with_relu_fuses():
    x = C.input_variable((2, 8, 8))
    f = Convolution((3, 3), 5, activation=C.relu, pad=True, init=C.glorot_uniform(seed=1), init_bias=0.1)(x)
    check_same(f, {x: data((3, 2, 8, 8))})


@pytest.mark.onednn('counts the fused convolution steps oneDNN runs')
def test_bias_on_the_left_scalar_bias_and_no_activation():
    x = C.input_variable((3, 7, 7))
    w, _ = conv_parts()
    b = C.parameter(init=np.array([0.5], np.float32))
    f = b + C.convolution(w, x)            # valid convolution, bias first, one bias for every channel
    check_same(f, {x: data((2, 3, 7, 7))})


@pytest.mark.onednn('counts the fused convolution steps oneDNN runs')
def test_conv_relu_pool_chain():
    x = C.input_variable((3, 10, 10))
    w, _ = conv_parts()
    f = MaxPooling((2, 2), strides=2)(C.relu(C.convolution(w, x, auto_padding=[False, True, True])))
    check_same(f, {x: data((2, 3, 10, 10))})


@pytest.mark.onednn('counts the fused convolution steps oneDNN runs')
def test_conv_bn_relu_chain_fuses_only_conv_and_bias():
    x = C.input_variable((3, 8, 8))
    conv = Convolution((3, 3), 6, pad=True, init=C.glorot_uniform(seed=3), init_bias=0.2)(x)
    f = C.relu(BatchNormalization(map_rank=1, normalization_time_constant=0)(conv))
    # the running statistics are updated by each training pass: use a fresh graph per pass
    args = {x: data((4, 3, 8, 8))}
    outputs, wrt = [f.output], [x] + list(f.parameters)
    o_f, g_f, n_f = run(f, args, outputs, wrt, fused=True)
    g2 = f.clone(C.CloneMethod.clone)
    args2 = {g2.arguments[0]: args[x]}
    o_u, g_u, n_u = run(g2, args2, [g2.output], [g2.arguments[0]] + list(g2.parameters), fused=False)
    assert n_f == 1 and n_u == 0
    close(o_f[f.output], o_u[g2.output])
    close(g_f[x], g_u[g2.arguments[0]])
    by_name = {p.name + str(p.shape): g_u[p] for p in g2.parameters}
    for p in f.parameters:
        if p.name == 'b':
            # Batch normalization takes out any per-channel constant: the convolution
            # bias's exact gradient is 0, and both passes give float32 rounding noise.
            assert np.max(np.abs(g_f[p])) < 1e-4 and np.max(np.abs(by_name[p.name + str(p.shape)])) < 1e-4
            continue
        close(g_f[p], by_name[p.name + str(p.shape)])


def test_second_reader_of_conv_output_stops_the_fusion():
    x = C.input_variable((3, 6, 6))
    w, b = conv_parts()
    z = C.convolution(w, x, auto_padding=[False, True, True])
    f = C.relu(z + b) * z                   # z is read twice: nothing fuses
    check_same(f, {x: data((2, 3, 6, 6))}, expect_fused=0)


@pytest.mark.onednn('counts the fused convolution steps oneDNN runs')
def test_second_reader_of_biased_result_fuses_conv_and_bias_only():
    x = C.input_variable((3, 6, 6))
    w, b = conv_parts()
    a = C.convolution(w, x, auto_padding=[False, True, True]) + b
    f = C.relu(a) * a                       # conv + bias fuse; relu reads a fused result
    check_same(f, {x: data((2, 3, 6, 6))}, expect_fused=1)


@pytest.mark.onednn('counts the fused convolution steps oneDNN runs')
def test_requested_intermediate_outputs_are_computed():
    x = C.input_variable((3, 6, 6))
    w, b = conv_parts()
    z = C.convolution(w, x, auto_padding=[False, True, True])
    a = z + b
    f = C.relu(a)
    d = {x: data((2, 3, 6, 6))}
    # z requested: nothing fuses (its reader chain would hide it)
    o, _ = check_same(f, d, outputs=[z.output, f.output], expect_fused=0)
    np.testing.assert_allclose(o[f.output], np.maximum(o[z.output] + np.asarray(b.value), 0), rtol=1e-6, atol=1e-6)
    # a requested: conv + bias fuse and give a, relu runs on it
    o, _ = check_same(f, d, outputs=[a.output, f.output], expect_fused=1)
    np.testing.assert_array_equal(o[f.output], np.maximum(o[a.output], 0))


@pytest.mark.onednn('counts the fused convolution steps oneDNN runs')
@pytest.mark.parametrize('act', [C.relu, C.tanh, None])
def test_gradient_for_a_fused_away_intermediate(act):
    # z and z + b are fused away (only f is requested) yet asked for as gradient targets:
    # both get the activation's input gradient, as the unfused plan computes them
    x = C.input_variable((3, 6, 6))
    w, b = conv_parts()
    z = C.convolution(w, x, auto_padding=[False, True, True])
    a = z + b
    f = act(a) if act else a
    d = {x: data((2, 3, 6, 6))}
    _, g = check_same(f, d, wrt=[z.output, a.output, w, x], expect_fused=1)
    o, _, _ = run(f, d, [f.output], [], fused=True)
    root = np.random.RandomState(0).standard_normal(o[f.output].shape)
    y = o[f.output].astype(np.float64)
    want = root * (y > 0) if act is C.relu else root * (1 - y * y) if act is C.tanh else root
    close(g[z.output], want)
    close(g[a.output], want)
    # only the intermediate wanted, nothing upstream of it (the fused plan above is reused)
    _, g2 = check_same(f, d, wrt=[z.output], expect_fused=0)
    close(g2[z.output], want)


def test_gradient_for_a_fused_away_intermediate_of_sequences():
    x = C.sequence.input_variable((2, 5, 5))
    w, b = conv_parts(cin=2, cout=4)
    z = C.convolution(w, x, auto_padding=[False, True, True])
    f = C.sequence.reduce_sum(C.relu(z + b))
    rng = np.random.RandomState(3)
    seqs = [rng.standard_normal((n, 2, 5, 5)).astype(np.float32) for n in (3, 1, 2)]
    got = {}
    for fused in (True, False):
        with conv_fusion(fused):
            state, outs = f.forward({x: seqs}, [f.output], keep_for_backward=[f.output])
            root = np.ones_like(np.asarray(outs[f.output]))
            got[fused] = f.backward(state, {f.output: root}, [z.output])[z.output]
    zv = z.eval({x: seqs})
    assert [len(s) for s in got[True]] == [3, 1, 2]
    for gf, gu, zs in zip(got[True], got[False], zv):
        close(np.asarray(gf), np.asarray(gu))
        np.testing.assert_array_equal(np.asarray(gf), (np.asarray(zs) + np.asarray(b.value) > 0).astype(np.float32))


@pytest.mark.onednn('counts the fused convolution steps oneDNN runs')
def test_geometry_onednn_cannot_express_runs_part_by_part():
    # kernel 2, stride 3, auto padding on 6: CNTK centres the windows with a negative lower pad
    x = C.input_variable((3, 6, 6))
    w, b = conv_parts(k=2)
    f = C.relu(C.convolution(w, x, strides=(1, 3, 3), auto_padding=[False, True, True]) + b)
    assert f.shape == (8, 2, 2)
    check_same(f, {x: data((2, 3, 6, 6))}, expect_fused=1)


@pytest.mark.onednn('counts the fused convolution steps oneDNN runs')
def test_sequence_operand_fuses():
    x = C.sequence.input_variable((2, 5, 5))
    w, b = conv_parts(cin=2, cout=4)
    f = C.tanh(C.convolution(w, x, auto_padding=[False, True, True]) + b)
    seqs = [data((3, 2, 5, 5), seed=4), data((2, 2, 5, 5), seed=5)]
    o_f = f.eval({x: seqs})
    with conv_fusion(False):
        o_u = f.eval({x: seqs})
    for a, b_ in zip(o_f, o_u):
        close(np.asarray(a), np.asarray(b_))
    check_same(f, {x: [data((3, 2, 5, 5), seed=4)]})


def test_float64_does_not_fuse():
    x = C.input_variable((2, 5, 5), dtype=np.float64)
    w = C.parameter(init=np.random.RandomState(0).standard_normal((3, 2, 3, 3)), dtype=np.float64)
    b = C.parameter(init=np.zeros((3, 1, 1)), dtype=np.float64)
    f = C.relu(C.convolution(w, x) + b)
    before = fused_count()
    f.eval({x: np.ones((1, 2, 5, 5))})
    assert fused_count() == before


@pytest.mark.onednn('counts the fused convolution steps oneDNN runs')
def test_no_fusion_setting_rebuilds_the_plan():
    x = C.input_variable((3, 6, 6))
    w, b = conv_parts()
    f = C.relu(C.convolution(w, x) + b)
    d = {x: data((1, 3, 6, 6))}
    before = fused_count()
    y1 = f.eval(d)
    assert fused_count() == before + 1
    with conv_fusion(False):
        plans = C._cntk.plans_compiled()
        y2 = f.eval(d)
        assert C._cntk.plans_compiled() == plans + 1
    close(y1, y2)
