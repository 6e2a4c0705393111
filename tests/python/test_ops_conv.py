"""Convolution and pooling ops: convolution, convolution_transpose, pooling, unpooling,
roipooling. Forward against NumPy references written here (cross-correlation, CNTK's
geometry), CNTK's documented examples, PyTorch cross-checks where torch is installed,
and float64 finite-difference gradients for each differentiable input."""
import itertools

import numpy as np
import pytest

import cntk as C
from op_harness import check_forward, gradcheck, f64_input, covers_op


# ------------------------------------------------------------ NumPy references

def geometry(n, k, s=1, d=1, autopad=False, lo=0, hi=0, ceil=False):
    """CNTK's per-axis geometry: (output size, lower padding). With auto padding the
    first window is centred at extra // 2 (extra: input left over by the strided outputs),
    so odd leftovers and even kernels pad one more at the end."""
    ke = (k - 1) * d + 1
    padded = n + ke - 1 if autopad else n + lo + hi
    num = padded - ke
    out = (-(-num // s) if ceil else num // s) + 1
    if autopad:
        extra = n - ((out - 1) * s + 1)
        center = int(extra / 2)  # truncation toward zero, as C++
        lo = (ke - 1) // 2 - center
    return out, lo


def np_conv(x, w, strides, dilation, lo, out_shape, groups=1):
    """Cross-correlation of x (N, C, *in) with w (O, C/groups, *k), window o reading
    input positions o*stride - lo + j*dilation (zero outside)."""
    N, Cin = x.shape[:2]
    O, k = w.shape[0], w.shape[2:]
    n = len(k)
    Cg, Og = Cin // groups, O // groups
    y = np.zeros((N, O) + tuple(out_shape))
    for o in np.ndindex(*out_shape):
        patch = np.zeros((N, Cin) + tuple(k))
        for j in np.ndindex(*k):
            p = tuple(o[i] * strides[i] - lo[i] + j[i] * dilation[i] for i in range(n))
            if all(0 <= p[i] < x.shape[2 + i] for i in range(n)):
                patch[(slice(None), slice(None)) + j] = x[(slice(None), slice(None)) + p]
        for g in range(groups):
            axes = list(range(1, 2 + n))
            y[(slice(None), slice(g * Og, (g + 1) * Og)) + o] = np.tensordot(
                patch[:, g * Cg:(g + 1) * Cg], w[g * Og:(g + 1) * Og], axes=(axes, axes))
    return y


def np_conv_transpose(x, w, strides, dilation, lo, out_shape):
    """Transposed convolution: x (N, C, *in), w (C, O, *k); every input value scatters
    w times itself to positions o*stride - lo + j*dilation of the output."""
    N = x.shape[0]
    O, k = w.shape[1], w.shape[2:]
    n = len(k)
    y = np.zeros((N, O) + tuple(out_shape))
    for o in np.ndindex(*x.shape[2:]):
        for j in np.ndindex(*k):
            p = tuple(o[i] * strides[i] - lo[i] + j[i] * dilation[i] for i in range(n))
            if all(0 <= p[i] < out_shape[i] for i in range(n)):
                at = (slice(None), slice(None))
                y[at + p] += x[at + o] @ w[at + j]
    return y


def np_pool(x, kind, window, strides, lo, hi, out_shape, include_pad=False):
    """Pooling of x (N, *dims) over windows on every axis; padding never wins a max;
    the average divides by the valid count, or the count inside the padded input."""
    N = x.shape[0]
    dims = x.shape[1:]
    y = np.zeros((N,) + tuple(out_shape))
    for o in np.ndindex(*out_shape):
        vals, padded_count = [], 1
        ranges = []
        for i in range(len(dims)):
            start = o[i] * strides[i] - lo[i]
            ranges.append(range(start, start + window[i]))
            padded_count *= sum(1 for p in ranges[-1] if -lo[i] <= p < dims[i] + hi[i])
        for p in itertools.product(*ranges):
            if all(0 <= p[i] < dims[i] for i in range(len(dims))):
                vals.append(x[(slice(None),) + p])
        vals = np.stack(vals, axis=-1)
        if kind == 'max':
            y[(slice(None),) + o] = vals.max(axis=-1)
        else:
            y[(slice(None),) + o] = vals.sum(axis=-1) / (padded_count if include_pad else vals.shape[-1])
    return y


def conv_case(in_shape, k, strides=None, dilation=None, autopad=None, lo=None, hi=None):
    n = len(k)
    strides = strides or (1,) * n
    dilation = dilation or (1,) * n
    autopad = autopad if autopad is not None else (False,) * n
    lo = lo or (0,) * n
    hi = hi or (0,) * n
    g = [geometry(in_shape[i], k[i], strides[i], dilation[i], autopad[i], lo[i], hi[i]) for i in range(n)]
    return tuple(o for o, _ in g), tuple(p for _, p in g)


# ------------------------------------------------------------- convolution

def test_convolution_cntk_doc_example():
    img = np.reshape(np.arange(25.0, dtype=np.float32), (1, 5, 5))
    x = C.input_variable(img.shape)
    kernel = C.constant(value=np.reshape(np.array([2, -1, -1, 2], dtype=np.float32), (1, 2, 2)))
    got = C.convolution(kernel, x, auto_padding=[False]).eval({x: [img]})
    expected = [[[[6., 8., 10., 12.], [16., 18., 20., 22.], [26., 28., 30., 32.], [36., 38., 40., 42.]]]]
    np.testing.assert_allclose(got, expected)
    assert got.shape == (1, 1, 4, 4)


# (input spatial shape, kernel, strides, dilation, auto_padding per spatial axis, groups, C, O)
CONV_CASES = [
    ((7, 6), (3, 3), (1, 1), (1, 1), (True, True), 1, 3, 4),
    ((7, 6), (3, 3), (1, 1), (1, 1), (False, False), 1, 3, 4),
    ((8, 7), (3, 2), (2, 3), (1, 1), (True, True), 1, 2, 3),
    ((9, 8), (2, 2), (2, 1), (1, 1), (True, True), 1, 2, 2),     # even kernel: extra pad at the end
    ((9, 8), (3, 3), (1, 1), (2, 2), (True, False), 1, 2, 3),    # dilation, padding per axis
    ((6, 6), (3, 3), (1, 1), (1, 1), (True, True), 2, 4, 6),     # groups
    ((6, 5), (3, 3), (2, 2), (1, 1), (True, True), 4, 4, 8),     # depthwise, multiplier 2
    ((9, 9), (1, 1), (3, 3), (1, 1), (True, True), 1, 2, 2),     # centred stride: negative lower pad
    ((10,), (4,), (3,), (1,), (True,), 1, 2, 3),                 # 1-D
    ((5, 4, 6), (3, 2, 3), (1, 2, 2), (1, 1, 1), (True, False, True), 1, 2, 2),  # 3-D
    ((4, 3, 4, 3), (2, 2, 3, 1), (1, 1, 2, 1), (1, 1, 1, 1), (True, False, True, False), 1, 2, 2),  # 4-D
]


def _conv_ids(c):
    return "in%s_k%s_s%s_d%s_pad%s_g%d" % (c[0], c[1], c[2], c[3], ''.join('T' if p else 'F' for p in c[4]), c[5])


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('case', CONV_CASES, ids=[_conv_ids(c) for c in CONV_CASES])
def test_convolution_forward_against_numpy(case, dtype):
    in_sp, k, strides, dilation, autopad, groups, Cin, O = case
    x = C.input_variable((Cin,) + in_sp, dtype=dtype)
    w = np.random.randn(O, Cin // groups, *k).astype(dtype)
    d = np.random.randn(2, Cin, *in_sp).astype(dtype)
    f = C.convolution(C.constant(w), x, strides=strides, auto_padding=(False,) + autopad, dilation=dilation,
                      groups=groups)
    out, lo = conv_case(in_sp, k, strides, dilation, autopad)
    assert f.shape == (O,) + out
    tol = 1e-4 if dtype == np.float32 else 1e-10
    check_forward(f, {x: d}, np_conv(d, w, strides, dilation, lo, out, groups), rtol=tol, atol=tol)


def test_convolution_even_kernel_pads_the_end():
    # kernel (1, 10) over 1..5 with auto padding: windows [i, i+1], the last one padded at the end.
    x = C.input_variable((1, 5))
    w = C.constant(np.array([[[1., 10.]]], dtype=np.float32))
    got = C.convolution(w, x).eval({x: np.arange(1., 6., dtype=np.float32).reshape(1, 1, 5)})
    np.testing.assert_allclose(got, [[[21., 32., 43., 54., 5.]]])


def test_convolution_strided_auto_padding_centres_the_windows():
    # A 1-wide kernel with stride 3 over 9 positions reads positions 1, 4, 7 (CNTK centres
    # the output positions in the input), not 0, 3, 6.
    x = C.input_variable((1, 9))
    got = C.convolution(C.constant(np.ones((1, 1, 1), np.float32)), x, strides=3).eval(
        {x: np.arange(9., dtype=np.float32).reshape(1, 1, 9)})
    np.testing.assert_allclose(got, [[[1., 4., 7.]]])


def test_convolution_default_auto_padding_keeps_the_size_and_ignores_the_channel_axis():
    x = C.input_variable((3, 6, 5))
    w = np.random.randn(4, 3, 3, 3).astype(np.float32)
    f = C.convolution(w, x)  # auto_padding=[True] for every axis: the channel axis is reduced whole
    assert f.shape == (4, 6, 5)
    d = np.random.randn(1, 3, 6, 5).astype(np.float32)
    check_forward(f, {x: d}, np_conv(d, w, (1, 1), (1, 1), (1, 1), (6, 5)), rtol=1e-4, atol=1e-4)


def test_convolution_explicit_lower_and_upper_pad():
    x = C.input_variable((2, 5, 6))
    w = np.random.randn(3, 2, 3, 2).astype(np.float32)
    f = C.convolution(w, x, auto_padding=[False], lower_pad=(0, 2, 1), upper_pad=(0, 1, 0), strides=(1, 2, 1))
    out, lo = conv_case((5, 6), (3, 2), strides=(2, 1), lo=(2, 1), hi=(1, 0))
    assert f.shape == (3,) + out
    d = np.random.randn(2, 2, 5, 6).astype(np.float32)
    check_forward(f, {x: d}, np_conv(d, w, (2, 1), (1, 1), lo, out), rtol=1e-4, atol=1e-4)


def test_convolution_reduction_rank_0():
    x = C.input_variable((6, 5))
    w = np.random.randn(3, 2, 3).astype(np.float32)
    f = C.convolution(w, x, reduction_rank=0, auto_padding=[False])
    assert f.shape == (3, 5, 3)
    d = np.random.randn(2, 6, 5).astype(np.float32)
    check_forward(f, {x: d}, np_conv(d[:, None], w[:, None], (1, 1), (1, 1), (0, 0), (5, 3)), rtol=1e-4, atol=1e-4)


def test_convolution_reduction_rank_0_kernel_of_spatial_axes_only():
    # CNTK takes a bare (k1, k2) kernel with reduction_rank=0: one output map, kept as an axis.
    x = C.input_variable((6, 5))
    w = np.random.randn(2, 3).astype(np.float32)
    f = C.convolution(w, x, reduction_rank=0, auto_padding=[False])
    assert f.shape == (1, 5, 3)
    d = np.random.randn(2, 6, 5).astype(np.float32)
    check_forward(f, {x: d}, np_conv(d[:, None], w[None, None], (1, 1), (1, 1), (0, 0), (5, 3)), rtol=1e-4, atol=1e-4)
    t = C.convolution_transpose(w, C.input_variable((5, 3)), reduction_rank=0, auto_padding=[False])
    assert t.shape == (1, 6, 5)


def test_convolution_kernel_without_output_axis_gives_one_map():
    x = C.input_variable((2, 4, 4))
    w = np.random.randn(2, 3, 3).astype(np.float32)
    f = C.convolution(w, x, auto_padding=[False])
    assert f.shape == (1, 2, 2)
    d = np.random.randn(1, 2, 4, 4).astype(np.float32)
    check_forward(f, {x: d}, np_conv(d, w[None], (1, 1), (1, 1), (0, 0), (2, 2)), rtol=1e-4, atol=1e-4)


def test_convolution_accepts_max_temp_mem_size_and_sequences():
    x = C.sequence.input_variable((1, 4, 4))
    w = np.random.randn(2, 1, 3, 3).astype(np.float32)
    f = C.convolution(w, x, max_temp_mem_size_in_samples=16)
    seqs = [np.random.randn(3, 1, 4, 4).astype(np.float32), np.random.randn(1, 1, 4, 4).astype(np.float32)]
    got = f.eval({x: seqs})
    for s, g in zip(seqs, got):
        np.testing.assert_allclose(g, np_conv(s, w, (1, 1), (1, 1), (1, 1), (4, 4)), rtol=1e-4, atol=1e-4)


def test_convolution_and_pooling_with_free_dimensions():
    x = C.input_variable((2, C.FreeDimension, C.FreeDimension))
    w = np.random.randn(3, 2, 3, 3).astype(np.float32)
    f = C.pooling(C.convolution(w, x, auto_padding=[False], strides=2), C.MAX_POOLING, (2, 2), (2, 2))
    assert f.shape == (3, C.FreeDimension, C.FreeDimension)
    for h, wd in [(9, 11), (13, 7)]:
        d = np.random.randn(2, 2, h, wd).astype(np.float32)
        conv = np_conv(d, w, (2, 2), (1, 1), (0, 0), ((h - 3) // 2 + 1, (wd - 3) // 2 + 1))
        out = tuple(s // 2 for s in conv.shape[2:])
        ref = np_pool(conv.reshape((2 * 3,) + conv.shape[2:]), 'max', (2, 2), (2, 2), (0, 0), (0, 0), out)
        check_forward(f, {x: d}, ref.reshape((2, 3) + out), rtol=1e-4, atol=1e-4)


def test_convolution_float32_and_float64_paths_agree():
    # float32 runs on oneDNN, float64 on the reference loops.
    d = np.random.randn(3, 4, 9, 8)
    w = np.random.randn(6, 2, 3, 3)
    outs = []
    for dtype in (np.float32, np.float64):
        x = C.input_variable((4, 9, 8), dtype=dtype)
        f = C.convolution(C.constant(w.astype(dtype)), x, strides=(2, 1), groups=2)
        outs.append(f.eval({x: d.astype(dtype)}))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-4)


GRAD_CASES = [
    ((5, 4), (3, 3), (1, 1), (1, 1), (True, True), 1, 2, 2),
    ((5, 5), (2, 3), (2, 2), (1, 1), (True, False), 1, 2, 2),
    ((6, 5), (2, 2), (1, 1), (2, 1), (True, True), 1, 1, 2),
    ((4, 4), (3, 3), (1, 1), (1, 1), (True, True), 2, 2, 4),
    ((7,), (3,), (2,), (1,), (True,), 1, 2, 2),
    ((3, 3, 4), (2, 2, 3), (1, 1, 2), (1, 1, 1), (True, False, True), 1, 1, 2),
]


@pytest.mark.parametrize('case', GRAD_CASES, ids=[_conv_ids(c) for c in GRAD_CASES])
def test_convolution_gradients(case):
    in_sp, k, strides, dilation, autopad, groups, Cin, O = case
    x = f64_input((Cin,) + in_sp)
    W = C.parameter(init=np.random.randn(O, Cin // groups, *k))
    f = C.convolution(W, x, strides=strides, auto_padding=(False,) + autopad, dilation=dilation, groups=groups)
    gradcheck(f, {x: np.random.randn(2, Cin, *in_sp)}, wrt=[x, W])


def test_convolution_gradients_reduction_rank_0():
    x = f64_input((4, 5))
    W = C.parameter(init=np.random.randn(2, 2, 3))
    f = C.convolution(W, x, reduction_rank=0, strides=(1, 2))
    gradcheck(f, {x: np.random.randn(2, 4, 5)}, wrt=[x, W])


def test_convolution_float32_gradients_match_float64():
    # The oneDNN backward passes (float32) against the reference loops (float64).
    d = np.random.randn(2, 4, 7, 6)
    w0 = np.random.randn(6, 2, 3, 2)
    grads = []
    for dtype in (np.float32, np.float64):
        x = C.input_variable((4, 7, 6), dtype=dtype, needs_gradient=True)
        W = C.parameter(init=w0.astype(dtype))
        f = C.reduce_sum(C.square(C.convolution(W, x, strides=(2, 1), groups=2)))
        g = f.grad({x: d.astype(dtype)}, wrt=[x, W])
        grads.append((g[x], g[W]))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-3, atol=1e-3)


def test_convolution_errors():
    x = C.input_variable((3, 5, 5))
    with pytest.raises(ValueError, match='channels'):
        C.convolution(np.ones((2, 2, 3, 3), np.float32), x)
    with pytest.raises(ValueError, match='rank'):
        C.convolution(np.ones((2, 3, 3), np.float32), C.input_variable((3, 5, 5, 5)))
    with pytest.raises(ValueError, match='does not fit'):
        C.convolution(np.ones((2, 3, 7, 7), np.float32), x, auto_padding=[False])
    with pytest.raises(ValueError, match='groups'):
        C.convolution(np.ones((2, 1, 3, 3), np.float32), x, groups=3)
    with pytest.raises(ValueError, match='groups'):
        C.convolution(np.ones((2, 3, 3, 3), np.float32), x, groups=0)
    with pytest.raises(ValueError, match='reduction_rank'):
        C.convolution(np.ones((2, 3, 3, 3), np.float32), x, reduction_rank=2)
    with pytest.raises(ValueError, match='strides'):
        C.convolution(np.ones((2, 3, 3, 3), np.float32), x, strides=0)
    with pytest.raises(NotImplementedError, match='sharing'):
        C.convolution(np.ones((2, 3, 3, 3), np.float32), x, sharing=[False])
    with pytest.raises(ValueError, match='sequence axis'):  # sequential=True: see test_conv_sequential.py
        C.convolution(np.ones((2, 3, 3, 3), np.float32), x, sequential=True)
    with pytest.raises(TypeError):
        C.convolution(np.ones((2, 3, 3, 3), np.float32), x, strides='2')


# --------------------------------------------------- convolution_transpose

def test_convolution_transpose_cntk_doc_example():
    img = np.reshape(np.arange(9.0, dtype=np.float32), (1, 3, 3))
    x = C.input_variable(img.shape)
    kernel = C.constant(value=np.reshape(np.array([2, -1, -1, 2], dtype=np.float32), (1, 2, 2)))
    got = C.convolution_transpose(kernel, x, auto_padding=[False]).eval({x: [img]})
    expected = [[[[0., 2., 3., -2.], [6., 4., 6., -1.], [9., 10., 12., 2.], [-6., 5., 6., 16.]]]]
    np.testing.assert_allclose(got, expected)


# (input spatial, kernel, strides, auto_padding, output_shape or None, C, O)
TRANSPOSE_CASES = [
    ((4, 3), (3, 3), (1, 1), (True, True), None, 2, 3),
    ((4, 3), (3, 2), (2, 2), (False, False), None, 2, 3),
    ((4, 4), (3, 3), (2, 2), (True, True), (8, 8), 3, 2),   # even output after stride 2
    ((4, 4), (3, 3), (2, 2), (True, True), None, 3, 2),     # 7 x 7 without output_shape
    ((5,), (4,), (3,), (True,), None, 2, 2),
    ((3, 2, 3), (2, 2, 3), (1, 2, 1), (False, True, True), None, 2, 1),
]


def _transpose_geometry(in_sp, k, strides, autopad, output_shape):
    if output_shape is None:
        output_shape = tuple((n - 1) * s + 1 if a else (n - 1) * s + kk
                             for n, kk, s, a in zip(in_sp, k, strides, autopad))
    g = [geometry(output_shape[i], k[i], strides[i], 1, autopad[i]) for i in range(len(k))]
    assert tuple(o for o, _ in g) == tuple(in_sp)
    return tuple(output_shape), tuple(p for _, p in g)


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('case', TRANSPOSE_CASES, ids=[str(c[:5]) for c in TRANSPOSE_CASES])
def test_convolution_transpose_forward_against_numpy(case, dtype):
    in_sp, k, strides, autopad, output_shape, Cin, O = case
    x = C.input_variable((Cin,) + in_sp, dtype=dtype)
    w = np.random.randn(Cin, O, *k).astype(dtype)
    f = C.convolution_transpose(C.constant(w), x, strides=strides, auto_padding=(False,) + autopad,
                                output_shape=output_shape)
    out, lo = _transpose_geometry(in_sp, k, strides, autopad, output_shape)
    assert f.shape == (O,) + out
    d = np.random.randn(2, Cin, *in_sp).astype(dtype)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    check_forward(f, {x: d}, np_conv_transpose(d, w, strides, (1,) * len(k), lo, out), rtol=tol, atol=tol)


@pytest.mark.parametrize('autopad', [False, True])
def test_convolution_transpose_with_dilation(autopad):
    x = C.input_variable((2, 4, 3), dtype=np.float64)
    w = np.random.randn(2, 3, 3, 2)
    pad = [False, autopad, autopad]
    f = C.convolution_transpose(C.constant(w), x, strides=(1, 2), dilation=(2, 1), auto_padding=pad)
    ke = (5, 2)
    out = tuple((n - 1) * s + 1 if autopad else (n - 1) * s + k for n, s, k in zip((4, 3), (1, 2), ke))
    lo = tuple(geometry(out[i], (3, 2)[i], (1, 2)[i], (2, 1)[i], autopad)[1] for i in range(2))
    assert f.shape == (3,) + out
    d = np.random.randn(2, 2, 4, 3)
    check_forward(f, {x: d}, np_conv_transpose(d, w, (1, 2), (2, 1), lo, out), rtol=1e-10, atol=1e-10)
    xg = f64_input((2, 4, 3))
    W = C.parameter(init=w)
    gradcheck(C.convolution_transpose(W, xg, strides=(1, 2), dilation=(2, 1), auto_padding=pad),
              {xg: d[:1]}, wrt=[xg, W])


def test_convolution_transpose_is_the_gradient_of_convolution():
    # <conv(x), y> == <x, conv_transpose(y)> with the same kernel and geometry.
    w = np.random.randn(3, 2, 3, 3)
    xs = np.random.randn(1, 2, 8, 8)
    x = C.input_variable((2, 8, 8), dtype=np.float64)
    y_fwd = C.convolution(C.constant(w), x, strides=2).eval({x: xs})
    ys = np.random.randn(*y_fwd.shape)
    y = C.input_variable(ys.shape[1:], dtype=np.float64)
    back = C.convolution_transpose(C.constant(w), y, strides=2, output_shape=(8, 8)).eval({y: ys})
    np.testing.assert_allclose(np.sum(y_fwd * ys), np.sum(xs * back), rtol=1e-10)


@pytest.mark.parametrize('case', [TRANSPOSE_CASES[1], TRANSPOSE_CASES[2], TRANSPOSE_CASES[4]],
                         ids=['valid', 'output_shape', '1d'])
def test_convolution_transpose_gradients(case):
    in_sp, k, strides, autopad, output_shape, Cin, O = case
    in_sp = tuple(min(n, 3) for n in in_sp)
    if output_shape is not None:
        output_shape = tuple(n * s for n, s in zip(in_sp, strides))
    x = f64_input((Cin,) + in_sp)
    W = C.parameter(init=np.random.randn(Cin, O, *k))
    f = C.convolution_transpose(W, x, strides=strides, auto_padding=(False,) + autopad, output_shape=output_shape)
    gradcheck(f, {x: np.random.randn(2, Cin, *in_sp)}, wrt=[x, W])


def test_convolution_transpose_errors():
    x = C.input_variable((2, 4, 4))
    with pytest.raises(ValueError, match='channels'):
        C.convolution_transpose(np.ones((3, 2, 3, 3), np.float32), x)
    with pytest.raises(ValueError, match='convolve back'):
        C.convolution_transpose(np.ones((2, 2, 3, 3), np.float32), x, strides=2, output_shape=(12, 12))
    with pytest.raises(ValueError, match='output_shape'):
        C.convolution_transpose(np.ones((2, 2, 3, 3), np.float32), x, output_shape=(4, 4, 4, 4))


# ------------------------------------------------------------------- pooling

def test_pooling_cntk_doc_examples():
    img = np.reshape(np.arange(16, dtype=np.float32), [1, 4, 4])
    x = C.input_variable(img.shape)
    np.testing.assert_allclose(C.pooling(x, C.AVG_POOLING, (2, 2), (2, 2)).eval({x: [img]}),
                               [[[[2.5, 4.5], [10.5, 12.5]]]])
    np.testing.assert_allclose(C.pooling(x, C.MAX_POOLING, (2, 2), (2, 2)).eval({x: [img]}),
                               [[[[5., 7.], [13., 15.]]]])


# (operand shape, window, strides, auto_padding (per window axis), ceil_out_dim, include_pad)
POOL_CASES = [
    ((2, 6, 6), (2, 2), (2, 2), (False, False), False, False),
    ((2, 7, 6), (3, 3), (2, 2), (False, False), False, False),
    ((2, 7, 6), (3, 3), (2, 2), (False, False), True, False),
    ((2, 7, 6), (3, 3), (2, 2), (True, True), False, False),
    ((2, 7, 6), (3, 3), (2, 2), (True, True), False, True),
    ((2, 7, 6), (2, 3), (1, 2), (True, False), True, True),
    ((3, 9), (4,), (3,), (True,), False, False),
    ((2, 5, 4, 5), (2, 2, 3), (2, 1, 2), (True, False, True), True, False),
    ((4, 5, 5), (2, 3, 3), (2, 2, 2), (False, False, False), False, False),   # pools the channels too
]


def _pool_geometry(shape, window, strides, autopad, ceil):
    r, wr = len(shape), len(window)
    win = (1,) * (r - wr) + tuple(window)
    st = (1,) * (r - wr) + tuple(strides)
    ap = (False,) * (r - wr) + tuple(autopad)
    outs, los, his = [], [], []
    for i in range(r):
        o, lo = geometry(shape[i], win[i], st[i], 1, ap[i], ceil=ceil)
        outs.append(o)
        los.append(lo)
        his.append((o - 1) * st[i] + win[i] - shape[i] - lo if ap[i] else 0)
    return win, st, tuple(outs), los, his


@pytest.mark.parametrize('kind', ['max', 'avg'])
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('case', POOL_CASES, ids=[str(c) for c in POOL_CASES])
def test_pooling_forward_against_numpy(case, dtype, kind):
    shape, window, strides, autopad, ceil, include_pad = case
    x = C.input_variable(shape, dtype=dtype)
    f = C.pooling(x, C.MAX_POOLING if kind == 'max' else C.AVG_POOLING, window, strides=strides,
                  auto_padding=list(autopad), ceil_out_dim=ceil, include_pad=include_pad)
    win, st, out, lo, hi = _pool_geometry(shape, window, strides, autopad, ceil)
    assert f.shape == out
    d = np.random.randn(3, *shape).astype(dtype)
    check_forward(f, {x: d}, np_pool(d, kind, win, st, lo, hi, out, include_pad), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('kind', ['max', 'avg'])
@pytest.mark.parametrize('case', [POOL_CASES[1], POOL_CASES[4], POOL_CASES[5], POOL_CASES[6]],
                         ids=['valid', 'autopad_include_pad', 'ceil', '1d'])
def test_pooling_gradients(case, kind):
    shape, window, strides, autopad, ceil, include_pad = case
    x = f64_input(shape)
    f = C.pooling(x, C.MAX_POOLING if kind == 'max' else C.AVG_POOLING, window, strides=strides,
                  auto_padding=list(autopad), ceil_out_dim=ceil, include_pad=include_pad)
    # Distinct values so that no two inputs tie for a maximum within the finite difference.
    d = np.random.permutation(np.prod(shape) * 2).reshape((2,) + shape) * 0.01
    gradcheck(f, {x: d})


def test_pooling_max_gradient_goes_to_the_first_maximum():
    x = C.input_variable((1, 2, 2), needs_gradient=True)
    f = C.pooling(x, C.MAX_POOLING, (2, 2))
    g = f.grad({x: np.ones((1, 1, 2, 2), np.float32)}, wrt=[x])
    np.testing.assert_allclose(g, [[[[1., 0.], [0., 0.]]]])


def test_pooling_errors():
    x = C.input_variable((2, 4, 4))
    with pytest.raises(ValueError, match='pooling_type'):
        C.pooling(x, 3, (2, 2))
    with pytest.raises(ValueError, match='does not fit'):
        C.pooling(x, C.MAX_POOLING, (5, 5))
    with pytest.raises(ValueError, match='more axes'):
        C.pooling(x, C.MAX_POOLING, (1, 1, 2, 2))
    with pytest.raises(ValueError, match='pooling_window_shape'):
        C.pooling(x, C.MAX_POOLING, ())


# ----------------------------------------------------------------- unpooling

def test_unpooling_cntk_doc_example():
    img = np.reshape(np.arange(16, dtype=np.float32), [1, 4, 4])
    x = C.input_variable(img.shape)
    y = C.pooling(x, C.MAX_POOLING, (2, 2), (2, 2))
    got = C.unpooling(y, x, C.MAX_UNPOOLING, (2, 2), (2, 2)).eval({x: [img]})
    np.testing.assert_allclose(got, [[[[0., 0., 0., 0.], [0., 5., 0., 7.], [0., 0., 0., 0.], [0., 13., 0., 15.]]]])


def np_unpool(v, pin, window, strides, lo, out):
    y = np.zeros_like(pin)
    N, Cc = pin.shape[:2]
    for n, c in np.ndindex(N, Cc):
        for o in np.ndindex(*out):
            best = None
            for j in np.ndindex(*window):
                p = tuple(o[i] * strides[i] - lo[i] + j[i] for i in range(len(window)))
                if all(0 <= p[i] < pin.shape[2 + i] for i in range(len(window))):
                    if best is None or pin[(n, c) + p] > pin[(n, c) + best]:
                        best = p
            y[(n, c) + best] = v[(n, c) + o]
    return y


@pytest.mark.parametrize('autopad', [False, True])
def test_unpooling_forward_against_numpy_and_gradient(autopad):
    shape = (2, 5, 4)
    x = f64_input(shape)
    pooled = C.pooling(x, C.MAX_POOLING, (2, 2), (2, 2), auto_padding=[autopad])
    v = f64_input(pooled.shape)
    f = C.unpooling(v, x, C.MAX_UNPOOLING, (2, 2), (2, 2), auto_padding=[autopad])
    assert f.shape == shape
    _, _, out, lo, _ = _pool_geometry(shape, (2, 2), (2, 2), (autopad, autopad), False)
    pin = np.random.randn(2, *shape)
    vals = np.random.randn(2, *out)
    check_forward(f, {x: pin, v: vals}, np_unpool(vals, pin, (2, 2), (2, 2), lo[1:], out[1:]))
    # gradient with respect to the values (the pooling input only selects positions)
    gradcheck(f, {x: pin, v: vals}, wrt=[v])


def test_unpooling_errors():
    x = C.input_variable((1, 4, 4))
    v = C.input_variable((1, 3, 3))
    with pytest.raises(ValueError, match="operand's shape"):
        C.unpooling(v, x, C.MAX_UNPOOLING, (2, 2), (2, 2))
    with pytest.raises(ValueError, match='MAX_UNPOOLING'):
        C.unpooling(v, x, C.AVG_POOLING, (2, 2), (2, 2))


# ---------------------------------------------------------------- roipooling

def np_roipool(x, rois, ph, pw, scale):
    """Caffe's ROI max pooling, which CNTK 2.1+ follows."""
    N, Cc, H, W = x.shape
    R = rois.shape[1]
    y = np.zeros((N, R, Cc, ph, pw))
    for n, r in np.ndindex(N, R):
        x1, y1, x2, y2 = [int(np.floor(v * scale + 0.5)) for v in rois[n, r]]
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bh, bw = rh / ph, rw / pw
        for i, j in np.ndindex(ph, pw):
            h0 = min(max(int(np.floor(i * bh)) + y1, 0), H)
            h1 = min(max(int(np.ceil((i + 1) * bh)) + y1, 0), H)
            w0 = min(max(int(np.floor(j * bw)) + x1, 0), W)
            w1 = min(max(int(np.ceil((j + 1) * bw)) + x1, 0), W)
            if h1 > h0 and w1 > w0:
                y[n, r, :, i, j] = x[n, :, h0:h1, w0:w1].max(axis=(1, 2))
    return y


ROIS = np.array([[[0, 0, 15, 11], [4, 2, 9, 9], [8, 8, 30, 30]],
                 [[2, 3, 3, 4], [0, 4, 12, 7], [6, 0, 13, 15]]], dtype=np.float64)


@covers_op('ROIPooling', 'forward')
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_roipooling_forward_against_numpy(dtype):
    x = C.input_variable((3, 8, 9), dtype=dtype)
    r = C.input_variable((3, 4), dtype=dtype)
    f = C.roipooling(x, r, C.MAX_POOLING, (2, 3), 0.5)
    assert f.shape == (3, 3, 2, 3)
    d = np.random.randn(2, 3, 8, 9).astype(dtype)
    check_forward(f, {x: d, r: ROIS.astype(dtype)}, np_roipool(d, ROIS, 2, 3, 0.5))


@covers_op('ROIPooling', 'gradient:0')
def test_roipooling_gradient():
    x = f64_input((2, 6, 7))
    r = f64_input((2, 4))
    f = C.roipooling(x, r, C.MAX_POOLING, (2, 2), 1.0)
    d = np.random.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) * 0.01
    gradcheck(f, {x: d, r: ROIS[:, :2] * 0.5}, wrt=[x])


def test_roipooling_errors():
    x = C.input_variable((3, 8, 9))
    r = C.input_variable((3, 4))
    with pytest.raises(ValueError, match='MAX_POOLING'):
        C.roipooling(x, r, C.AVG_POOLING, (2, 2), 1.0)
    with pytest.raises(ValueError, match='rois'):
        C.roipooling(x, C.input_variable((3, 5)), C.MAX_POOLING, (2, 2), 1.0)
    with pytest.raises(ValueError, match='roi_output_shape'):
        C.roipooling(x, r, C.MAX_POOLING, (2, 2, 2), 1.0)


# ---------------------------------------------------------------- PyTorch

def test_convolution_matches_pytorch():
    torch = pytest.importorskip('torch')
    F = torch.nn.functional
    for (in_sp, k, strides, dilation, groups, Cin, O) in [((9, 8), (3, 3), (2, 1), (1, 2), 1, 4, 6),
                                                          ((7, 7), (5, 3), (1, 2), (1, 1), 4, 4, 8),
                                                          ((6, 5), (3, 3), (1, 1), (1, 1), 2, 4, 2)]:
        d = np.random.randn(2, Cin, *in_sp).astype(np.float32)
        w = np.random.randn(O, Cin // groups, *k).astype(np.float32)
        x = C.input_variable((Cin,) + in_sp)
        got = C.convolution(C.constant(w), x, strides=strides, dilation=dilation, groups=groups,
                            auto_padding=[False]).eval({x: d})
        ref = F.conv2d(torch.from_numpy(d), torch.from_numpy(w), stride=strides, dilation=dilation, groups=groups)
        np.testing.assert_allclose(got, ref.numpy(), rtol=1e-4, atol=1e-4)
        # auto padding with odd kernels and stride 1 is PyTorch's symmetric 'same' padding
        if strides == (1, 1) and dilation == (1, 1):
            got = C.convolution(C.constant(w), x, groups=groups).eval({x: d})
            ref = F.conv2d(torch.from_numpy(d), torch.from_numpy(w), padding=tuple(kk // 2 for kk in k),
                           groups=groups)
            np.testing.assert_allclose(got, ref.numpy(), rtol=1e-4, atol=1e-4)


def test_convolution_gradients_match_pytorch():
    torch = pytest.importorskip('torch')
    d = np.random.randn(2, 4, 9, 8).astype(np.float32)
    w = np.random.randn(6, 2, 3, 3).astype(np.float32)
    x = C.input_variable((4, 9, 8), needs_gradient=True)
    W = C.parameter(init=w)
    f = C.reduce_sum(C.square(C.convolution(W, x, strides=2, groups=2, auto_padding=[False])))
    g = f.grad({x: d}, wrt=[x, W])
    tx, tw = torch.tensor(d, requires_grad=True), torch.tensor(w, requires_grad=True)
    (torch.nn.functional.conv2d(tx, tw, stride=2, groups=2) ** 2).sum().backward()
    np.testing.assert_allclose(g[x], tx.grad.numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(g[W], tw.grad.numpy(), rtol=1e-3, atol=1e-3)


def test_convolution_transpose_matches_pytorch():
    torch = pytest.importorskip('torch')
    d = np.random.randn(2, 3, 4, 5).astype(np.float32)
    w = np.random.randn(3, 2, 3, 2).astype(np.float32)
    x = C.input_variable((3, 4, 5))
    got = C.convolution_transpose(C.constant(w), x, strides=(2, 3), auto_padding=[False]).eval({x: d})
    ref = torch.nn.functional.conv_transpose2d(torch.from_numpy(d), torch.from_numpy(w), stride=(2, 3))
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('ceil', [False, True])
def test_pooling_matches_pytorch(ceil):
    torch = pytest.importorskip('torch')
    F = torch.nn.functional
    d = np.random.randn(2, 3, 9, 8).astype(np.float32)
    x = C.input_variable((3, 9, 8))
    got = C.pooling(x, C.MAX_POOLING, (3, 2), (2, 2), ceil_out_dim=ceil).eval({x: d})
    np.testing.assert_allclose(got, F.max_pool2d(torch.from_numpy(d), (3, 2), (2, 2), ceil_mode=ceil).numpy())
    got = C.pooling(x, C.AVG_POOLING, (3, 2), (2, 2), ceil_out_dim=ceil).eval({x: d})
    ref = F.avg_pool2d(torch.from_numpy(d), (3, 2), (2, 2), ceil_mode=ceil, count_include_pad=False)
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-5, atol=1e-6)
    # odd windows with stride 1: CNTK's auto padding is PyTorch's symmetric padding
    for include_pad in (False, True):
        got = C.pooling(x, C.AVG_POOLING, (3, 3), (1, 1), auto_padding=[True], include_pad=include_pad).eval({x: d})
        ref = F.avg_pool2d(torch.from_numpy(d), 3, 1, padding=1, count_include_pad=include_pad)
        np.testing.assert_allclose(got, ref.numpy(), rtol=1e-5, atol=1e-6)


def test_roipooling_matches_torchvision():
    torch = pytest.importorskip('torch')
    try:
        import torchvision as tv
        tv.ops.roi_pool  # a torchvision built for another torch fails here or at import
    except Exception as e:  # noqa: BLE001
        pytest.skip("torchvision is not usable here: %s" % e)
    d = np.random.randn(2, 3, 8, 9).astype(np.float32)
    x = C.input_variable((3, 8, 9))
    r = C.input_variable((3, 4))
    got = C.roipooling(x, r, C.MAX_POOLING, (2, 3), 0.5).eval({x: d, r: ROIS.astype(np.float32)})
    boxes = [torch.from_numpy(ROIS[n].astype(np.float32)) for n in range(2)]
    ref = tv.ops.roi_pool(torch.from_numpy(d), boxes, (2, 3), 0.5).numpy().reshape(2, 3, 3, 2, 3)
    np.testing.assert_allclose(got, ref, rtol=1e-6)
