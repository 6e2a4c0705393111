"""Movement ops: NumPy-reference forward and float64 gradient checks, bad arguments,
Variable indexing and times_transpose."""
import itertools

import numpy as np
import pytest

import cntk as C
from cntk.axis import Axis
from cntk.ops._prim import prim
from op_harness import check_forward, gradcheck, f64_input

B = 2  # batch size of the test data


def _data(shape, batch=B):
    return np.random.standard_normal((batch,) + tuple(shape))


def _per_sample(fn, data):
    return np.stack([fn(s) for s in data])


def _f64_param(value):
    value = np.asarray(value, dtype=np.float64)
    return C.parameter(value.shape, init=value, dtype=np.float64)


# ------------------------------------------------------------------ reshape

RESHAPE = [
    # input shape, new shape, begin_axis, end_axis, expected shape
    ((2, 3), (3, 2), None, None, (3, 2)),
    ((2, 3, 4), (-1,), None, None, (24,)),
    ((2, 3, 4), (4, -1), None, None, (4, 6)),
    ((2, 3, 4), (0, 2), None, None, (12, 2)),
    ((2, 3), (1,), 0, 0, (1, 2, 3)),
    ((2, 3), (1, 1), Axis.new_leading_axis(), Axis.new_leading_axis(), (2, 3, 1, 1)),
    ((2, 3, 5), (-1,), 0, Axis(2), (6, 5)),
    ((2, 3, 5), (-1,), Axis(-3), -1, (6, 5)),
    ((6, 5), (2, -1), 0, 1, (2, 3, 5)),
    ((2, 3, 4), (12,), -2, None, (2, 12)),
]


@pytest.mark.parametrize('shape,new,begin,end,expected', RESHAPE)
def test_reshape(shape, new, begin, end, expected):
    x = f64_input(shape)
    f = C.reshape(x, new, begin, end)
    assert f.shape == expected
    d = _data(shape)
    check_forward(f, {x: d}, d.reshape((B,) + expected))
    gradcheck(f, {x: d})


def test_reshape_of_parameter_without_batch():
    w = _f64_param(np.arange(6.0).reshape(2, 3))
    f = C.reshape(w, (3, 2)) * np.arange(6.0).reshape(3, 2)
    check_forward(f, {}, np.arange(6.0).reshape(3, 2) ** 2)
    gradcheck(f, {})


def test_reshape_free_dimension():
    x = C.input_variable((C.FreeDimension, 2, 2))
    y = C.reshape(x, (-1,), 0, 2)
    assert y.shape == (C.FreeDimension, 2)
    for n in (1, 2, 3):
        d = np.arange(n * 4, dtype=np.float32).reshape(1, n, 2, 2)
        np.testing.assert_array_equal(y.eval({x: d}), d.reshape(1, 2 * n, 2))
    z = C.reshape(x, (-1,), 1, 3)
    d = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    np.testing.assert_array_equal(z.eval({x: d}), d.reshape(1, 2, 4))


def test_reshape_all_free_dimensions():
    x = C.input_variable((C.FreeDimension, C.FreeDimension))
    y = C.reshape(x, (3, -1))
    d = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    np.testing.assert_array_equal(y.eval({x: d}), d.reshape(1, 3, 2))


def test_reshape_on_sequences():
    x = C.sequence.input_variable((2, 3), dtype=np.float64)
    f = C.reshape(x, (3, 2))
    seqs = [np.random.standard_normal((3, 2, 3)), np.random.standard_normal((1, 2, 3))]
    out = f.eval({x: seqs})
    for o, s in zip(out, seqs):
        np.testing.assert_allclose(o, s.reshape(-1, 3, 2))


# -------------------------------------------------------------------- slice

def _np_slice(x, axes, begins, ends, strides):
    """CNTK's slice semantics in NumPy (x without the batch axis)."""
    for ax, b, e, s in zip(axes, begins, ends, strides):
        n = x.shape[ax]
        rb = b if b >= 0 else b + n
        re = e if e > 0 else e + n
        idx = list(range(rb, re, s)) if s > 0 else list(range(re - 1, rb - 1, s))
        x = np.take(x, idx, axis=ax)
    return x


SLICE = [
    # shape, axis, begin, end, strides
    ((3, 4), 0, 1, 3, None),
    ((3, 4), 1, -3, 0, None),
    ((3, 4), -1, 0, 4, 2),
    ((3, 4), 0, 0, 3, -1),
    ((3, 4), 1, 0, 4, -3),
    ((5, 2), 0, 0, 5, -2),
    ((3, 4), [0, 1], [1, 0], [3, 2], None),
    ((3, 4), [0, -1], [0, 1], [3, 4], [2, -1]),
    ((2, 3, 4), -2, 1, -1, None),
    ((2, 3, 4), [2, 2], [1, 0], [4, 2], None),  # the same axis twice: applied in turn
    ((4,), 0, -1, 0, None),
]


@pytest.mark.parametrize('shape,axis,begin,end,strides', SLICE)
def test_slice(shape, axis, begin, end, strides):
    x = f64_input(shape)
    f = C.slice(x, axis, begin, end, strides)
    L = lambda v: list(v) if isinstance(v, (list, tuple)) else [v]  # noqa: E731
    axes = [a % len(shape) for a in L(axis)]
    steps = [1] * len(axes) if strides is None else L(strides)
    d = _data(shape)
    expected = _per_sample(lambda s: _np_slice(s, axes, L(begin), L(end), steps), d)
    assert f.shape == expected.shape[1:]
    check_forward(f, {x: d}, expected)
    gradcheck(f, {x: d})


def test_slice_docstring_examples():
    x1 = C.input_variable((2, 3))
    d = np.asarray([[[1, 2, -3], [4, 5, 6]]], dtype=np.float32)
    np.testing.assert_array_equal(C.slice(x1, 0, 1, 2).eval({x1: d}), [[[4, 5, 6]]])
    np.testing.assert_array_equal(C.slice(x1, 1, 0, 1).eval({x1: d}), [[[1], [4]]])
    np.testing.assert_array_equal(C.slice(x1, 0, 0, 2, 2).eval({x1: d}), [[[1, 2, -3]]])
    np.testing.assert_array_equal(C.slice(x1, 0, 0, 2, -1).eval({x1: d}), [[[4, 5, 6], [1, 2, -3]]])
    np.testing.assert_array_equal(C.slice(x1, [0, 1], [1, 0], [2, 1]).eval({x1: d}), [[[4]]])
    c = C.constant(d[0])
    np.testing.assert_array_equal(C.slice(c, 1, 0, 1).eval(), [[1], [4]])


def test_slice_free_dimension():
    x = C.input_variable((C.FreeDimension, 3))
    y = C.slice(x, 0, 1, 0)  # from 1 to the end: the size follows the data
    assert y.shape == (C.FreeDimension, 3)
    for n in (2, 4):
        d = np.arange(n * 3, dtype=np.float32).reshape(1, n, 3)
        np.testing.assert_array_equal(y.eval({x: d}), d[:, 1:])
    z = C.slice(x, 0, 0, 2)
    assert z.shape == (2, 3)
    with pytest.raises(ValueError, match='Slice'):
        z.eval({x: np.zeros((1, 1, 3), np.float32)})


def test_slice_on_sequences_with_gradient():
    x = C.sequence.input_variable((3, 4), dtype=np.float64, needs_gradient=True)
    f = C.slice(x, 1, 1, 3)
    seqs = [np.random.standard_normal((2, 3, 4)), np.random.standard_normal((3, 3, 4))]
    out = f.eval({x: seqs})
    for o, s in zip(out, seqs):
        np.testing.assert_allclose(o, s[:, :, 1:3])
    g = f.grad({x: seqs}, wrt=[x])
    for gi, s in zip(g, seqs):
        expected = np.zeros_like(s)
        expected[:, :, 1:3] = 1
        np.testing.assert_allclose(gi, expected)


# ------------------------------------------------------------------- splice

def _np_splice(arrays, axis):
    """CNTK's splice on per-sample arrays: left-pad ranks, broadcast 1s, concatenate."""
    max_rank = max(a.ndim for a in arrays)
    if axis == 'new':
        rank, pos = max_rank + 1, 0
    elif axis >= 0:
        rank, pos = max_rank, axis
    else:
        rank = max(max_rank, -axis)
        pos = rank + axis
    arrays = [a.reshape((1,) * (rank - a.ndim) + a.shape) for a in arrays]
    out_dims = [max(a.shape[k] for a in arrays) for k in range(rank)]
    parts = []
    for a in arrays:
        target = list(out_dims)
        target[pos] = a.shape[pos]
        parts.append(np.broadcast_to(a, target))
    return np.concatenate(parts, axis=pos)


SPLICE = [
    # shapes, axis
    ([(2, 3), (2, 3)], 0),
    ([(2, 3), (2, 2)], -1),
    ([(2, 3), (4, 3), (1, 3)], 0),
    ([(2, 3), (3,)], 0),
    ([(1, 3), (2, 2)], 1),
    ([(2, 3), (2, 3)], 'new'),
    ([(2, 3), (2, 3)], -3),
    ([(3,), (3,)], -2),
    ([(2, 1, 4), (2, 3, 4)], -2),
]


@pytest.mark.parametrize('shapes,axis', SPLICE)
def test_splice(shapes, axis):
    xs = [f64_input(s) for s in shapes]
    f = C.splice(*xs, axis=Axis.new_leading_axis() if axis == 'new' else axis)
    ds = [_data(s) for s in shapes]
    expected = np.stack([_np_splice([d[b] for d in ds], axis) for b in range(B)])
    assert f.shape == expected.shape[1:]
    args = dict(zip(xs, ds))
    check_forward(f, args, expected)
    gradcheck(f, args)


def test_splice_batch_with_non_batch_operands():
    a = f64_input((2, 3))
    b = f64_input((1, 3), batch=False)
    w = _f64_param(np.random.standard_normal((2, 2)))
    f = C.splice(a, b, axis=0)
    da, db = _data((2, 3)), np.random.standard_normal((1, 3))
    check_forward(f, {a: da, b: db}, np.concatenate([da, np.broadcast_to(db, (B, 1, 3))], axis=1))
    gradcheck(f, {a: da, b: db})
    g = C.splice(a, w, axis=1)
    check_forward(g, {a: da}, np.concatenate([da, np.broadcast_to(w.value, (B, 2, 2))], axis=2))
    gradcheck(g, {a: da})


def test_splice_ragged_sequences_with_a_batch_operand():
    x = C.sequence.input_variable((2, 3), dtype=np.float64, needs_gradient=True)
    b = C.input_variable((2, 1), dtype=np.float64, needs_gradient=True)
    f = C.splice(x, b, axis=1)
    seqs = [np.random.standard_normal((3, 2, 3)), np.random.standard_normal((1, 2, 3))]
    bd = np.random.standard_normal((2, 2, 1))
    out = f.eval({x: seqs, b: bd})
    for k in range(2):
        n = len(seqs[k])
        np.testing.assert_allclose(out[k], np.concatenate([seqs[k], np.broadcast_to(bd[k], (n, 2, 1))], axis=2))
    g = f.grad({x: seqs, b: bd}, wrt=[x, b])
    # b is broadcast over each sequence's steps; padded steps add nothing.
    np.testing.assert_allclose(g[b], [np.full((2, 1), 3.0), np.full((2, 1), 1.0)])
    for gk, s in zip(g[x], seqs):
        np.testing.assert_allclose(gk, np.ones_like(s))


def test_splice_free_dimension_broadcasts_over_one():
    x = C.input_variable((C.FreeDimension, 2))
    y = C.input_variable((1, 3))
    f = C.splice(x, y, axis=1)
    assert f.shape == (C.FreeDimension, 5)
    dx, dy = np.random.rand(2, 4, 2).astype(np.float32), np.random.rand(2, 1, 3).astype(np.float32)
    np.testing.assert_allclose(f.eval({x: dx, y: dy}), np.concatenate([dx, np.broadcast_to(dy, (2, 4, 3))], axis=2))
    g = f.grad({x: dx, y: dy}, wrt=[y])
    np.testing.assert_allclose(g, np.full((2, 1, 3), 4.0))


def test_splice_single_input_and_list():
    x = C.input_variable(3)
    d = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(C.splice(x).eval({x: d}), d)
    y = C.input_variable(3)
    np.testing.assert_array_equal(C.splice([x, y], axis=0).eval({x: d, y: d}), np.concatenate([d, d], axis=1))


def test_splice_docstring_example():
    x = C.constant(np.asarray([[[1, 2], [4, 5]]], dtype=np.float32))
    y = C.constant(np.asarray([[[10, 20], [30, 40], [50, 60]]], dtype=np.float32))
    np.testing.assert_array_equal(C.splice(x, y, axis=1).eval(),
                                  [[[1, 2], [4, 5], [10, 20], [30, 40], [50, 60]]])


# ---------------------------------------------------------------- transpose

@pytest.mark.parametrize('perm', list(itertools.permutations(range(3))) + [(-1, 0, -2), (1, 0)])
def test_transpose(perm):
    x = f64_input((2, 3, 4))
    f = C.transpose(x, perm)
    d = _data((2, 3, 4))
    n = len(perm)  # a permutation of n < 3 axes reorders the last n axes
    full = list(range(3 - n)) + [3 - n + p % n for p in perm]
    expected = np.transpose(d, [0] + [1 + p for p in full])
    check_forward(f, {x: d}, expected)
    gradcheck(f, {x: d})


def test_transpose_default_and_docstring():
    a = np.arange(24).reshape(2, 3, 4).astype('f')
    assert np.array_equal(C.transpose(a, perm=(2, 0, 1)).eval(), np.transpose(a, (2, 0, 1)))
    assert np.array_equal(C.transpose(a).eval(), np.transpose(a))
    b = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    for p in itertools.permutations(range(4)):
        assert np.array_equal(C.transpose(b, p).eval(), np.transpose(b, p))


@pytest.mark.parametrize('a1,a2', [(0, 2), (-1, 0), (1, 1), (1, -2)])
def test_swapaxes(a1, a2):
    x = f64_input((2, 3, 4))
    f = C.swapaxes(x, a1, a2)
    d = _data((2, 3, 4))
    check_forward(f, {x: d}, np.swapaxes(d, 1 + a1 % 3, 1 + a2 % 3))
    gradcheck(f, {x: d})


def test_swapaxes_docstring_and_low_rank():
    np.testing.assert_array_equal(C.swapaxes([[[0, 1], [2, 3], [4, 5]]], 1, 2).eval(),
                                  [[[0, 2, 4], [1, 3, 5]]])
    with pytest.raises(ValueError, match='TransposeAxes'):
        C.swapaxes(C.input_variable(()))
    with pytest.raises(ValueError, match='TransposeAxes'):
        C.swapaxes(C.input_variable(2))


# ---------------------------------------------------------------------- pad

PAD = [
    ((2, 3), [(1, 1), (2, 2)]),
    ((3, 4), [(0, 2), (1, 0)]),
    ((2, 3, 4), [(1, 0), (0, 0), (2, 3)]),
]
MODES = [(C.CONSTANT_PAD, 'constant'), (C.REFLECT_PAD, 'reflect'), (C.SYMMETRIC_PAD, 'symmetric')]


@pytest.mark.parametrize('shape,pattern', PAD)
@pytest.mark.parametrize('mode,np_mode', MODES)
def test_pad(shape, pattern, mode, np_mode):
    x = f64_input(shape)
    kw = {'constant_values': 1.5} if np_mode == 'constant' else {}
    f = C.pad(x, pattern, mode=mode, constant_value=1.5)
    d = _data(shape)
    expected = np.pad(d, [(0, 0)] + pattern, mode=np_mode, **kw)
    assert f.shape == expected.shape[1:]
    check_forward(f, {x: d}, expected)
    gradcheck(f, {x: d})


def test_pad_docstring_and_cntk_gradients():
    data = np.arange(6, dtype=np.float32).reshape((2, 3))
    x = C.constant(value=data)
    np.testing.assert_array_equal(C.pad(x, [(1, 1), (2, 2)], mode=C.ops.CONSTANT_PAD, constant_value=1).eval(),
                                  np.pad(data, [(1, 1), (2, 2)], constant_values=1))
    p = C.parameter(init=np.arange(6.0).reshape((2, 3)))
    grad = C.pad(p, mode=C.ops.SYMMETRIC_PAD, pattern=[(1, 0), (2, 1)]).grad({}, [p])
    np.testing.assert_array_equal(grad, [[4, 4, 4], [2, 2, 2]])
    grad2 = C.pad(p, mode=C.ops.REFLECT_PAD, pattern=[(1, 1), (2, 2)]).grad({}, [p])
    np.testing.assert_array_equal(grad2, [[4, 6, 4], [4, 6, 4]])


def test_pad_free_dimension():
    x = C.input_variable((C.FreeDimension, 3))
    f = C.pad(x, [(1, 1), (2, 2)], mode=C.SYMMETRIC_PAD)
    d = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    np.testing.assert_array_equal(f.eval({x: d}), np.pad(d, [(0, 0), (1, 1), (2, 2)], mode='symmetric'))


# ------------------------------------------------------ squeeze, expand_dims

SQUEEZE = [((1, 3, 1), None), ((1, 3, 1), 0), ((1, 3, 1), -1), ((1, 3, 1), [0, 2]), ((2, 1, 3), 1),
           ((1, 1, 1), None), ((1, 2, 1), (-3, -1))]


@pytest.mark.parametrize('shape,axes', SQUEEZE)
def test_squeeze(shape, axes):
    x = f64_input(shape)
    f = C.squeeze(x, axes)
    d = _data(shape)
    np_axes = None if axes is None else tuple(1 + a % len(shape) for a in (axes if isinstance(axes, (list, tuple))
                                                                              else [axes]))
    expected = np.squeeze(d, np_axes) if np_axes is not None else d.reshape((B,) + tuple(s for s in shape if s != 1))
    assert f.shape == expected.shape[1:]
    check_forward(f, {x: d}, expected)
    gradcheck(f, {x: d})


def test_squeeze_keeps_free_dimensions():
    x = C.input_variable((C.FreeDimension, 1, 3))
    f = C.squeeze(x)
    assert f.shape == (C.FreeDimension, 3)
    d = np.arange(3, dtype=np.float32).reshape(1, 1, 1, 3)
    assert f.eval({x: d}).shape == (1, 1, 3)


@pytest.mark.parametrize('axis', [-3, -2, -1, 0, 1])
def test_expand_dims(axis):
    # CNTK 2.7 counts a non-negative axis a as the gap after axis a (its documented example).
    x = f64_input((2, 3))
    f = C.expand_dims(x, axis)
    d = _data((2, 3))
    expected = _per_sample(lambda s: np.expand_dims(s, axis + 1 if axis >= 0 else axis), d)
    assert f.shape == expected.shape[1:]
    check_forward(f, {x: d}, expected)
    gradcheck(f, {x: d})


def test_squeeze_and_expand_dims_on_placeholders():
    p = C.placeholder()
    f = C.squeeze(p, 0)
    x = C.input_variable((1, 3))
    g = f.replace_placeholders({p: x})
    assert g.shape == (3,)
    q = C.placeholder()
    h = C.expand_dims(q, -1).replace_placeholders({q: x})
    assert h.shape == (1, 3, 1)


# ------------------------------------------------------------------ flatten

def test_expand_dims_docstring():
    x0 = np.arange(12).reshape((2, 2, 3)).astype('f')
    x = C.input_variable((2, 3))
    np.testing.assert_array_equal(C.expand_dims(x, 0).eval({x: x0}), x0.reshape(2, 2, 1, 3))
    np.testing.assert_array_equal(C.expand_dims(x, -3).eval({x: x0}), x0.reshape(2, 1, 2, 3))


@pytest.mark.parametrize('axis', [None, 0, 1, 2, 3, -1, -2, -3, -4])
def test_flatten(axis):
    # A negative axis counts the gaps between axes from the end: -1 is the end (CNTK 2.7).
    shape = (2, 3, 4)
    x = f64_input(shape)
    f = C.flatten(x, axis)
    a = 0 if axis is None else axis if axis >= 0 else axis + 4
    outer = int(np.prod(shape[:a]))
    d = _data(shape)
    expected = d.reshape(B, outer, -1)
    assert f.shape == expected.shape[1:]
    check_forward(f, {x: d}, expected)
    gradcheck(f, {x: d})


def test_flatten_docstring_and_free_dimension():
    shape = (2, 3, 4)
    data = np.reshape(np.arange(np.prod(shape), dtype=np.float32), shape)
    np.testing.assert_array_equal(C.flatten(data, 1).eval(), data.reshape(2, 12))
    x = C.input_variable((C.FreeDimension, 3, 2))
    f = C.flatten(x, 1)
    d = np.arange(24, dtype=np.float32).reshape(1, 4, 3, 2)
    np.testing.assert_array_equal(f.eval({x: d}), d.reshape(1, 4, 6))
    g = C.flatten(x, -2)
    np.testing.assert_array_equal(g.eval({x: d}), d.reshape(1, 12, 2))
    h = C.flatten(x, -1)
    np.testing.assert_array_equal(h.eval({x: d}), d.reshape(1, 24, 1))
    k = C.flatten(x)
    np.testing.assert_array_equal(k.eval({x: d}), d.reshape(1, 1, 24))


# ------------------------------------------------------------------- gather

def test_gather_docstring_and_gradient():
    c = np.asarray([[[0], [1]], [[4], [5]]]).astype('f')
    x = C.input_variable((2, 1))
    d = np.arange(12).reshape(6, 2).astype('f')
    y = C.constant(d)
    np.testing.assert_array_equal(C.gather(y, x).eval({x: c}),
                                  [[[[0, 1]], [[2, 3]]], [[[8, 9]], [[10, 11]]]])
    a = C.input_variable((2, 1))
    r = C.parameter(shape=d.shape, init=d)
    g = C.gather(r, a).grad({a: [[[0], [1]], [[3], [4]]]}, wrt=[r])
    np.testing.assert_array_equal(g, [[1, 1], [1, 1], [0, 0], [1, 1], [1, 1], [0, 0]])


@pytest.mark.parametrize('idx_shape,ref_shape', [((2, 1), (6, 2)), ((3,), (5,)), ((2, 2), (4, 3, 2))])
def test_gather_forward_and_gradient(idx_shape, ref_shape):
    ref = _f64_param(np.random.standard_normal(ref_shape))
    idx = f64_input(idx_shape)
    f = C.gather(ref, idx)
    di = np.random.randint(0, ref_shape[0], size=(B,) + idx_shape).astype(np.float64)
    di.flat[0] = di.flat[1]  # a repeated index: the gradient adds up
    expected = ref.value[di.astype(int)]
    assert f.shape == idx_shape + ref_shape[1:]
    check_forward(f, {idx: di}, expected)
    gradcheck(f, {idx: di}, wrt=[ref])


def test_gather_indices_get_zero_gradient():
    ref = _f64_param(np.random.standard_normal((4, 2)))
    idx = C.input_variable(3, dtype=np.float64, needs_gradient=True)
    f = C.gather(ref, idx)
    g = f.grad({idx: np.array([[0, 3, 1]], np.float64)}, wrt=[idx, ref])
    assert not np.any(g[idx])
    np.testing.assert_array_equal(g[ref], [[1, 1], [1, 1], [0, 0], [1, 1]])


@pytest.mark.parametrize('axis,ref_shape,idx_shape', [(1, (3, 4), (2,)), (-1, (2, 3, 5), (3,)),
                                                      (2, (2, 3, 4), (2,)), (1, (3, 4), (2, 5)), (0, (3, 4), (2,))])
def test_gather_with_axis(axis, ref_shape, idx_shape):
    ref = _f64_param(np.random.standard_normal(ref_shape))
    idx = f64_input(idx_shape)
    f = C.gather(ref, idx, axis=axis)
    a = axis % len(ref_shape)
    di = np.random.randint(0, ref_shape[a], size=(B,) + idx_shape).astype(np.float64)
    r = ref.value

    def ref_gather(i):  # CNTK: swap axes 0 and a, gather rows, swap axes 0 and a back
        return np.swapaxes(np.take(np.swapaxes(r, 0, a), i.astype(int), axis=0), 0, a)
    expected = _per_sample(ref_gather, di)
    if len(idx_shape) == 1:
        np.testing.assert_allclose(expected, np.stack([np.take(r, i.astype(int), axis=a) for i in di]))
    assert f.shape == expected.shape[1:]
    check_forward(f, {idx: di}, expected)
    gradcheck(f, {idx: di}, wrt=[ref])


def test_gather_non_batch_reference_input():
    data = np.array([[1.0, 1.2, 1.9], [2.3, 3.4, 3.9], [4.5, 5.7, 5.9]])
    x = C.input_variable((3, 3), dynamic_axes=[], needs_gradient=True, dtype=np.float64)
    i = C.constant(np.array([0, 2]), dtype=np.float64)
    y = C.gather(x, i)
    np.testing.assert_allclose(y.eval({x: data}), data[[0, 2]])
    np.testing.assert_allclose(y.grad({x: data}, wrt=[x]), [[1, 1, 1], [0, 0, 0], [1, 1, 1]])


def test_gather_ragged_sequence_indices():
    emb = _f64_param(np.arange(20.0).reshape(5, 4))
    i = C.sequence.input_variable(1, dtype=np.float64)
    e = C.gather(emb, i)
    seqs = [np.array([[1.0], [2.0], [3.0]]), np.array([[4.0]])]
    out = e.eval({i: seqs})
    for o, s in zip(out, seqs):
        np.testing.assert_allclose(o, emb.value[s.astype(int)])
    # Padded steps of the shorter sequence take no part in the gradient.
    np.testing.assert_allclose(e.grad({i: seqs}, wrt=[emb]), [[0] * 4, [1] * 4, [1] * 4, [1] * 4, [1] * 4])


def test_gather_index_out_of_range_is_a_value_error():
    ref = C.constant(np.arange(6.0).reshape(3, 2))
    idx = C.input_variable(2)
    f = C.gather(ref, idx)
    with pytest.raises(ValueError, match='Gather'):
        f.eval({idx: np.array([[0, 3]], np.float32)})
    with pytest.raises(ValueError, match='Gather'):
        f.eval({idx: np.array([[-1, 0]], np.float32)})


# ------------------------------------------------------------------ one_hot

def _np_one_hot(x, n, axis):
    out = (np.arange(n) == x[..., None]).astype(np.float64)
    out[(x < 0) | (x >= n)] = 0
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize('shape,axis', [((2,), -1), ((2,), 0), ((2, 3), 1), ((2, 3), -2), ((3,), 1), ((), 0)])
def test_one_hot(shape, axis):
    x = f64_input(shape)
    f = C.one_hot(x, 5, axis=axis)
    d = np.random.randint(-1, 6, size=(B,) + shape).astype(np.float64)  # includes out-of-range values
    expected = np.stack([_np_one_hot(s, 5, axis) for s in d])
    assert f.shape == expected.shape[1:]
    check_forward(f, {x: d}, expected)


def test_one_hot_docstring_and_zero_gradient():
    data = np.asarray([[1, 2], [4, 5]], dtype=np.float32)
    x = C.input_variable((2,))
    np.testing.assert_array_equal(C.one_hot(x, 6, False).eval({x: data}), _np_one_hot(data, 6, -1))
    f = C.one_hot(x, 6, sparse_output=True)
    assert f.root_function.attributes['oneHotOutputSparse'] is True
    xg = C.input_variable(2, dtype=np.float64, needs_gradient=True)
    w = _f64_param(np.random.standard_normal((2, 6)))
    g = (C.one_hot(xg, 6) * w).grad({xg: np.array([[1, 3]], np.float64)}, wrt=[xg, w])
    assert not np.any(g[xg])
    np.testing.assert_array_equal(g[w], _np_one_hot(np.array([1, 3]), 6, -1))


# ----------------------------------------------------------- Variable[...]

INDEXING = [
    (1,), (-1,), (slice(1, 3),), (slice(None, None, 2),), (slice(None, None, -1),), (slice(3, 0, -2),),
    (0, slice(1, None)), (Ellipsis, 2), (1, [2, 0]), ([0, 2],), (None, 1), (Ellipsis, None),
    (slice(-3, -1), slice(None), None),
]


def _np_index(d, key):
    """NumPy indexing with CNTK's convention that an int keeps its axis (size 1)."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if isinstance(k, int):
            out.append(slice(k, k + 1) if k != -1 else slice(-1, None))
        else:
            out.append(k)
    r = d[(slice(None),) + tuple(o for o in out if not isinstance(o, list))]
    return r


@pytest.mark.parametrize('key', INDEXING, ids=[str(k) for k in INDEXING])
def test_variable_getitem(key):
    x = f64_input((4, 3))
    f = x[key]
    d = _data((4, 3))
    if any(isinstance(k, list) for k in key):
        # A list picks positions along its axis.
        expected = d
        for ax, k in enumerate(k for k in key if k is not None and k is not Ellipsis):
            if isinstance(k, list):
                expected = np.take(expected, k, axis=1 + ax)
            elif isinstance(k, int):
                expected = np.take(expected, [k], axis=1 + ax)
    else:
        expected = _np_index(d, key)
    assert f.shape == expected.shape[1:]
    check_forward(f, {x: d}, expected)
    gradcheck(f, {x: d})


def test_variable_getitem_docstring_and_errors():
    data = np.asarray([[1, 2, -3], [4, 5, 6]], dtype=np.float32)
    x = C.constant(value=data)
    np.testing.assert_array_equal(x[0].eval(), [[1, 2, -3]])
    np.testing.assert_array_equal(x[0, [1, 2]].eval(), [[2, -3]])
    np.testing.assert_array_equal(x[1].eval(), [[4, 5, 6]])
    np.testing.assert_array_equal(x[:, :2, ...].eval(), [[1, 2], [4, 5]])
    f = x + 0
    np.testing.assert_array_equal(f[1, 2].eval(), [[6]])
    with pytest.raises(IndexError):
        x[2]
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(IndexError):
        x[1:1]


def test_variable_getitem_on_free_dimension():
    x = C.input_variable((C.FreeDimension, 3))
    d = np.arange(12, dtype=np.float32).reshape(1, 4, 3)
    np.testing.assert_array_equal(x[-1].eval({x: d}), d[:, -1:])
    np.testing.assert_array_equal(x[1:].eval({x: d}), d[:, 1:])


# ---------------------------------------------------------- times_transpose

def test_times_transpose_docstring():
    a = np.array([[1, 2], [3, 4]], dtype=np.float32)
    b = np.array([2, -1], dtype=np.float32)
    c = np.array([[2, -1]], dtype=np.float32)
    d = np.reshape(np.arange(24, dtype=np.float32), (4, 3, 2))
    cases = [(a, a, [[5, 11], [11, 25]]), (a, b, [[0], [2]]), (a, c, [[0], [2]]), (b, a, [0, 2]), (b, b, [5]),
             (b, c, [5]), (c, a, [[0, 2]]), (c, b, [[5]]), (c, c, [[5]])]
    for left, right, expected in cases:
        np.testing.assert_array_equal(C.times_transpose(left, right).eval(), expected)
    np.testing.assert_array_equal(C.times_transpose(d, a).eval(), d @ a.T)
    np.testing.assert_array_equal(C.times_transpose(d, b).eval(), d @ b.reshape(1, -1).T)


def test_times_transpose_gradient():
    x = f64_input((3,))
    w = _f64_param(np.random.standard_normal((4, 3)))
    f = C.times_transpose(x, w)
    d = _data((3,))
    check_forward(f, {x: d}, d @ w.value.T)
    gradcheck(f, {x: d})


# ------------------------------------------------------------ bad arguments

BAD = [
    # (op name in the message, callable building the graph)
    ('Reshape', lambda: C.reshape(C.input_variable((2, 3)), (4,))),
    ('Reshape', lambda: C.reshape(C.input_variable((2, 3)), (-1, -1))),
    ('Reshape', lambda: C.reshape(C.input_variable((2, 3)), (5, -1))),
    ('Reshape', lambda: C.reshape(C.input_variable((2, 3)), (6,), begin_axis=5)),
    ('Reshape', lambda: C.reshape(C.input_variable((2, 3)), (6,), begin_axis=1, end_axis=0)),
    ('Reshape', lambda: C.reshape(C.input_variable((2, 3)), (6,), begin_axis=C.Axis.default_batch_axis())),
    ('Slice', lambda: C.slice(C.input_variable((2, 3)), 0, 0, 5)),
    ('Slice', lambda: C.slice(C.input_variable((2, 3)), 1, 2, 1)),
    ('Slice', lambda: C.slice(C.input_variable((2, 3)), 1, 0, 2, 0)),
    ('Slice', lambda: C.slice(C.input_variable((2, 3)), 2, 0, 1)),
    ('Slice', lambda: C.slice(C.input_variable((2, 3)), -3, 0, 1)),
    ('Slice', lambda: C.slice(C.input_variable((2, 3)), C.Axis.default_batch_axis(), 0, 1)),
    ('Slice', lambda: C.slice(C.input_variable((2, 3)), [0, 1], [0], [1, 1])),
    ('Splice', lambda: C.splice(C.input_variable((2, 3)), C.input_variable((3, 3)), axis=1)),
    ('Splice', lambda: C.splice(C.input_variable((2, 3)), C.input_variable((2, 3)), axis=2)),
    ('Splice', lambda: C.splice(C.input_variable((2, 3)), C.input_variable((2, 3)), axis=C.Axis.default_batch_axis())),
    ('TransposeAxes', lambda: C.transpose(C.input_variable((2, 3)), (0, 0))),
    ('TransposeAxes', lambda: C.transpose(C.input_variable((2, 3)), (0, 2))),
    ('TransposeAxes', lambda: C.transpose(C.input_variable((2, 3)), (0, 1, 2))),
    ('TransposeAxes', lambda: C.swapaxes(C.input_variable((2, 3)), 0, 2)),
    ('Pad', lambda: C.pad(C.input_variable((2, 3)), [(1, 1)])),
    ('Pad', lambda: C.pad(C.input_variable((2, 3)), [(1, 1), (1, 2, 3)])),
    ('Pad', lambda: C.pad(C.input_variable((2, 3)), [(2, 0), (0, 0)], mode=C.REFLECT_PAD)),
    ('Pad', lambda: C.pad(C.input_variable((2, 3)), [(0, 0), (0, 4)], mode=C.SYMMETRIC_PAD)),
    ('Pad', lambda: C.pad(C.input_variable((2, 3)), [(-1, 0), (0, 0)])),
    ('Pad', lambda: C.pad(C.input_variable((2, 3)), [(0, 0), (0, 0)], mode=7)),
    ('Squeeze', lambda: C.squeeze(C.input_variable((1, 3)), 1)),
    ('Squeeze', lambda: C.squeeze(C.input_variable((1, 3)), 2)),
    ('expand_dims', lambda: C.expand_dims(C.input_variable((2, 3)), 2)),
    ('expand_dims', lambda: C.expand_dims(C.input_variable((2, 3)), -4)),
    ('flatten', lambda: C.flatten(C.input_variable((2, 3)), 3)),
    ('flatten', lambda: C.flatten(C.input_variable((2, 3)), -4)),
    ('Gather', lambda: C.gather(C.input_variable((4, 2)), C.input_variable(3))),
    ('Gather', lambda: C.gather(C.constant(np.zeros((4, 2))), C.input_variable(3), axis=2)),
    ('Gather', lambda: C.gather(C.input_variable((), dynamic_axes=[]), C.input_variable(3))),
    ('OneHot', lambda: C.one_hot(C.input_variable(3), 0)),
    ('OneHot', lambda: C.one_hot(C.input_variable(3), 4, axis=2)),
    ('OneHot', lambda: C.one_hot(C.input_variable(3), 4, axis=C.Axis.default_batch_axis())),
]


@pytest.mark.parametrize('op,build', BAD, ids=['%s-%d' % (b[0], i) for i, b in enumerate(BAD)])
def test_bad_arguments_raise_at_construction(op, build):
    with pytest.raises((ValueError, TypeError), match=op):
        build()


# The native shape rules check too, whatever the Python layer lets through.
BAD_NATIVE = [
    ('Reshape', 'Reshape', {}),
    ('Reshape', 'Reshape', {'newShape': [2, -1, 0]}),
    ('Slice', 'Slice', {'axis': C.Axis(0), 'beginIndex': 0}),
    ('Slice', 'Slice', {'axisVec': [C.Axis(0)], 'beginIndexVec': [0, 1], 'endIndexVec': [1]}),
    ('TransposeAxes', 'TransposeAxes', {'axisVec': [C.Axis(1), C.Axis(1)]}),
    ('TransposeAxes', 'TransposeAxes', {'axis1': C.Axis(0)}),
    ('Pad', 'Pad', {'paddingHead': [0, 0], 'paddingFoot': [0, 0], 'paddingMode': 9}),
    ('Pad', 'Pad', {'paddingHead': [0], 'paddingFoot': [0, 0]}),
    ('Squeeze', 'Squeeze', {'axisVec': [C.Axis(5)]}),
    ('OneHot', 'OneHot', {'numClass': -2}),
    ('OneHot', 'OneHot', {}),
    ('Splice', 'Splice', {'axis': C.Axis.default_batch_axis()}),
]


@pytest.mark.parametrize('op_name,match,attrs', BAD_NATIVE, ids=['%s-%d' % (b[0], i) for i, b in enumerate(BAD_NATIVE)])
def test_bad_native_attributes_raise(op_name, match, attrs):
    x = C.input_variable((2, 3))
    with pytest.raises((ValueError, TypeError), match=match):
        prim(op_name, [x], attrs)


def test_transpose_rejects_an_int_permutation():
    with pytest.raises(TypeError, match='swapaxes'):
        C.transpose(C.input_variable((2, 3)), 1)
