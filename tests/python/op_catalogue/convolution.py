"""Convolution and pooling. Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from op_harness import f64_input
from seq_harness import random_sequences
from op_catalogue.common import Built, case, covered, F64, RULE, seq_input, ZERO
from op_catalogue.sequences import find_op


def _roi_zeros(rng):
    x, r = f64_input((2, 6, 7)), f64_input((2, 4))
    f = C.roipooling(x, r, C.MAX_POOLING, (2, 2), 1.0)
    return Built(f, {x: rng.standard_normal((1, 2, 6, 7)), r: np.array([[[0., 0., 3., 3.], [1., 1., 4., 5.]]])}, None)


# ------------------------------------------------------------------ convolution and pooling

def _np_conv_valid(x, w):
    """Cross-correlation of x (C, H, W) with w (O, C, kh, kw), no padding."""
    o, _, kh, kw = w.shape
    h, wd = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    y = np.zeros((o, h, wd))
    for i, j in np.ndindex(h, wd):
        y[:, i, j] = np.tensordot(w, x[:, i:i + kh, j:j + kw], axes=3)
    return y


@case('Convolution', (RULE, RULE))
def convolution(rng):
    x = f64_input((2, 4, 5))
    w = C.parameter((3, 2, 2, 3), init=rng.standard_normal((3, 2, 2, 3)) * 0.5, dtype=F64)
    d = rng.standard_normal((2, 2, 4, 5))
    f = C.convolution(w, x, auto_padding=[False])
    return Built(f, {x: d}, np.stack([_np_conv_valid(s, w.value) for s in d]))


@case('Convolution', (RULE, RULE))
def convolution_transpose(rng):
    # The transpose is the gradient of the convolution: scatter each input pixel times
    # the kernel.
    x = f64_input((3, 2, 2))
    w = C.parameter((3, 2, 2, 2), init=rng.standard_normal((3, 2, 2, 2)) * 0.5, dtype=F64)
    d = rng.standard_normal((2, 3, 2, 2))
    f = C.convolution_transpose(w, x, auto_padding=[False])
    want = np.zeros((2, 2, 3, 3))
    for b, i, j in np.ndindex(2, 2, 2):
        want[b, :, i:i + 2, j:j + 2] += np.tensordot(d[b, :, i, j], w.value, axes=1)
    return Built(f, {x: d}, want)


@case('ConvolutionSequenceShape', (ZERO, ZERO))
def convolution_sequence_shape(rng):
    # The op a convolution over the sequence axis takes its output lengths from: without
    # padding, L - 2 for a kernel of 3 steps, never below 0.
    x = seq_input((1, 3))
    w = C.parameter((2, 1, 3, 3), init=rng.standard_normal((2, 1, 3, 3)), dtype=F64)
    conv = C.convolution(w, x, sequential=True, auto_padding=[False])
    node = find_op(conv, 'ConvolutionSequenceShape')
    d = random_sequences(rng, [4, 1, 3], (1, 3))
    return Built(C.as_composite(node), {x: d}, np.array([[2.], [0.], [1.]]))


def _np_pool(x, k, s, reduce):
    c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    y = np.zeros((c, oh, ow))
    for i, j in np.ndindex(oh, ow):
        y[:, i, j] = reduce(x[:, i * s:i * s + k, j * s:j * s + k].reshape(c, -1), axis=1)
    return y


@case('Pooling', (RULE,))
def max_pooling(rng):
    x = f64_input((2, 4, 6))
    d = rng.standard_normal((2, 2, 4, 6))
    f = C.pooling(x, C.MAX_POOLING, (2, 2), strides=(2, 2))
    return Built(f, {x: d}, np.stack([_np_pool(s, 2, 2, np.max) for s in d]))


@case('Pooling', (RULE,))
def average_pooling(rng):
    x = f64_input((2, 5, 5))
    d = rng.standard_normal((2, 2, 5, 5))
    f = C.pooling(x, C.AVG_POOLING, (3, 3), strides=(1, 1))
    return Built(f, {x: d}, np.stack([_np_pool(s, 3, 1, np.mean) for s in d]))


@case('Unpooling', (RULE, ZERO))
def max_unpooling(rng):
    # Each value goes to the place of its window's maximum in the pooling input.
    x, u = f64_input((1, 4, 4)), f64_input((1, 2, 2))
    dx = rng.permutation(32).reshape(2, 1, 4, 4).astype(F64)
    du = rng.standard_normal((2, 1, 2, 2))
    want = np.zeros_like(dx)
    for b, i, j in np.ndindex(2, 2, 2):
        win = dx[b, 0, 2 * i:2 * i + 2, 2 * j:2 * j + 2]
        r, c = np.unravel_index(np.argmax(win), (2, 2))
        want[b, 0, 2 * i + r, 2 * j + c] = du[b, 0, i, j]
    f = C.unpooling(u, x, C.MAX_UNPOOLING, (2, 2), strides=(2, 2))
    return Built(f, {x: dx, u: du}, want)


covered('ROIPooling', (RULE, ZERO), forward='test_ops_conv::test_roipooling_forward_against_numpy',
        gradients='test_ops_conv::test_roipooling_gradient', zeros=_roi_zeros)
