"""Reshaping, slicing, splicing, gathering and padding. Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from op_harness import f64_input
from op_catalogue.common import Built, case, F64, RULE, ZERO


# ------------------------------------------------------------------ movement

@case('Reshape', (RULE,))
def reshape(rng):
    x = f64_input((2, 3))
    d = rng.standard_normal((2, 2, 3))
    return Built(C.reshape(x, (3, 2)), {x: d}, d.reshape(2, 3, 2))


@case('Slice', (RULE,))
def slice_(rng):
    x = f64_input((3, 5))
    d = rng.standard_normal((2, 3, 5))
    return Built(C.slice(x, [0, 1], [1, 0], [3, 5], [1, 2]), {x: d}, d[:, 1:3, 0:5:2])


@case('Splice', (RULE,), variadic=True)
def splice(rng):
    a, b = f64_input((2, 3)), f64_input((2, 2))
    w = C.parameter((2, 1), init=rng.standard_normal((2, 1)), dtype=F64)
    da, db = rng.standard_normal((2, 2, 3)), rng.standard_normal((2, 2, 2))
    return Built(C.splice(a, b, w, axis=1), {a: da, b: db},
                 np.concatenate([da, db, np.broadcast_to(w.value, (2, 2, 1))], axis=2))


@case('TransposeAxes', (RULE,))
def transpose(rng):
    x = f64_input((2, 3, 4))
    d = rng.standard_normal((2, 2, 3, 4))
    return Built(C.transpose(x, (2, 0, 1)), {x: d}, d.transpose(0, 3, 1, 2))


@case('Squeeze', (RULE,))
def squeeze(rng):
    x = f64_input((2, 1, 3))
    d = rng.standard_normal((2, 2, 1, 3))
    return Built(C.squeeze(x), {x: d}, d.reshape(2, 2, 3))


@case('Pad', (RULE,))
def pad_reflect(rng):
    x = f64_input((3, 4))
    d = rng.standard_normal((2, 3, 4))
    return Built(C.pad(x, pattern=[(1, 1), (2, 1)], mode=C.ops.REFLECT_PAD), {x: d},
                 np.pad(d, [(0, 0), (1, 1), (2, 1)], mode='reflect'))


@case('Pad', (RULE,))
def pad_constant(rng):
    x = f64_input((2, 3))
    d = rng.standard_normal((2, 2, 3))
    return Built(C.pad(x, pattern=[(1, 0), (0, 2)], mode=C.ops.CONSTANT_PAD, constant_value=1.5),
                 {x: d}, np.pad(d, [(0, 0), (1, 0), (0, 2)], constant_values=1.5))


@case('Pad', (RULE,))
def pad_symmetric(rng):
    x = f64_input((3, 4))
    d = rng.standard_normal((2, 3, 4))
    return Built(C.pad(x, pattern=[(2, 0), (1, 2)], mode=C.ops.SYMMETRIC_PAD), {x: d},
                 np.pad(d, [(0, 0), (2, 0), (1, 2)], mode='symmetric'))


@case('Reshape', (RULE,))
def reshape_axis_range(rng):
    # Only axes [1, 3) are reshaped.
    x = f64_input((2, 3, 4))
    d = rng.standard_normal((2, 2, 3, 4))
    return Built(C.reshape(x, (12,), begin_axis=1, end_axis=3), {x: d}, d.reshape(2, 2, 12))


@case('TransposeAxes', (RULE,))
def swapaxes(rng):
    x = f64_input((2, 3, 4))
    d = rng.standard_normal((2, 2, 3, 4))
    return Built(C.swapaxes(x, 0, 2), {x: d}, d.swapaxes(1, 3))


@case('Splice', (RULE,), variadic=True)
def splice_new_axis(rng):
    a, b = f64_input((2, 3)), f64_input((2, 3))
    da, db = rng.standard_normal((2, 2, 3)), rng.standard_normal((2, 2, 3))
    return Built(C.splice(a, b, axis=C.Axis.new_leading_axis()), {a: da, b: db}, np.stack([da, db], axis=1))


@case('Gather', (ZERO, RULE))
def gather_axis(rng):
    idx = f64_input(2)
    ref = C.parameter((3, 4), init=rng.standard_normal((3, 4)), dtype=F64)
    di = np.array([[3., 0.], [1., 1.]])
    return Built(C.gather(ref, idx, axis=1), {idx: di},
                 np.stack([ref.value[:, i.astype(int)] for i in di]))


@case('OneHot', (ZERO,))
def one_hot_axis(rng):
    x = f64_input((2, 3))
    d = np.array([[[0., 2., 1.], [1., 1., 0.]]])
    return Built(C.one_hot(x, 3, axis=0), {x: d}, np.moveaxis(np.eye(3)[d.astype(int)], -1, 1))


@case('Gather', (ZERO, RULE))
def gather(rng):
    # CNTK's gather(reference, indices) holds the indices first among its inputs.
    idx = f64_input(3)
    ref = C.parameter((4, 2), init=rng.standard_normal((4, 2)), dtype=F64)
    di = np.array([[0., 3., 1.], [2., 2., 0.]])
    return Built(C.gather(ref, idx), {idx: di}, ref.value[di.astype(int)])


@case('OneHot', (ZERO,))
def one_hot(rng):
    x = f64_input(3)
    d = np.array([[0., 4., 2.], [1., 1., 3.]])
    return Built(C.one_hot(x, 5), {x: d}, np.eye(5)[d.astype(int)])


@case('TopK', (RULE,))
def top_k(rng):
    x = f64_input(6)
    d = rng.standard_normal((2, 6))
    values = C.top_k(x, 3).outputs[0]
    return Built(C.combine([values]), {x: d}, -np.sort(-d, axis=1)[:, :3])


@case('TopK', (RULE,))
def top_k_indices(rng):
    x = f64_input(6)
    d = rng.standard_normal((2, 6))
    indices = C.top_k(x, 2).outputs[1]
    return Built(C.combine([indices]), {x: d}, np.argsort(-d, axis=1)[:, :2].astype(F64), wrt={0: x})
