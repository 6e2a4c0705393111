"""cntk.ops.sequence (all but the delays) and the ops between dynamic and static axes:
NumPy-reference forwards and float64 finite-difference gradients, always with
sequences of different lengths in one minibatch."""
import numpy as np
import pytest

import cntk as C

LENGTHS = [3, 1, 4]


def seq_input(shape=(2,), name='x', **kw):
    return C.sequence.input_variable(shape, dtype=np.float64, name=name, **kw)


def make_seqs(shape=(2,), lengths=LENGTHS, seed=0):
    rng = np.random.RandomState(seed)
    return [rng.standard_normal((n,) + tuple(shape)) for n in lengths]


def as_list(y):
    return [np.asarray(a, dtype=np.float64) for a in y] if isinstance(y, list) else [np.asarray(y, np.float64)]


def assert_seqs_close(got, expected, rtol=1e-10, atol=1e-12):
    got = as_list(got)
    expected = as_list(expected) if not isinstance(expected, list) else [np.asarray(e) for e in expected]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def seq_gradcheck(fn, args, wrt, output=None, eps=1e-6, rtol=1e-5, atol=1e-8, seed=1):
    """The gradient of sum(w * fn(args)) (w random, one weight per output element, padding
    excluded) with respect to each variable in `wrt`, against central differences.
    Arguments may be lists of sequences of different lengths or plain batches."""
    out = output if output is not None else fn.output
    rng = np.random.RandomState(seed)
    state, outs = fn.forward(args, [out], keep_for_backward=[out])
    y = outs[out]
    if isinstance(y, list):
        weights = [rng.standard_normal(np.shape(a)) for a in y]
    else:
        weights = rng.standard_normal(np.shape(y))
    analytic = fn.backward(state, {out: weights}, wrt)

    def value():
        got = fn.eval(args, outputs=[out])
        return sum(float(np.sum(g * w)) for g, w in zip(as_list(got), as_list(weights)))

    for v in wrt:
        base = args[v]
        parts = [np.array(a, dtype=np.float64) for a in base] if isinstance(base, list) else [np.array(base, np.float64)]
        got_parts = as_list(analytic[v])
        for p, (part, got) in enumerate(zip(parts, got_parts)):
            numeric = np.zeros_like(part)
            for idx in np.ndindex(*part.shape):
                for sign in (1, -1):
                    trial = [q.copy() for q in parts]
                    trial[p][idx] += sign * eps
                    args[v] = trial if isinstance(base, list) else trial[0]
                    numeric[idx] += sign * value() / (2 * eps)
            args[v] = base
            np.testing.assert_allclose(got.reshape(part.shape), numeric, rtol=rtol, atol=atol,
                                       err_msg="gradient of %s, part %d" % (v, p))
    return analytic


# ----------------------------------------------------------- sequence data

def test_sequence_input_and_values_of_different_lengths():
    x = C.sequence.input_variable((2, 3))
    assert len(x.dynamic_axes) == 2 and x.dynamic_axes[1].is_sequence_axis
    seqs = [np.arange(n * 6, dtype=np.float32).reshape(n, 2, 3) for n in (2, 5, 1)]
    got = (x * 2).eval({x: seqs})
    assert isinstance(got, list) and [g.shape for g in got] == [(2, 2, 3), (5, 2, 3), (1, 2, 3)]
    for g, s in zip(got, seqs):
        np.testing.assert_array_equal(g, s * 2)
    v = C.Value.create(x, seqs)
    np.testing.assert_array_equal(v.mask, [[2, 1, 0, 0, 0], [2, 1, 1, 1, 1], [2, 0, 0, 0, 0]])


def test_sequence_typing_annotation():
    from cntk.layers.typing import Sequence, Tensor

    @C.Function
    def f(x: Sequence[Tensor[3]]):
        return C.sequence.reduce_sum(x)
    assert len(f.arguments[0].dynamic_axes) == 2
    seqs = [np.ones((n, 3), np.float32) for n in (1, 4)]
    np.testing.assert_allclose(f(seqs), [[1, 1, 1], [4, 4, 4]])


def test_one_hot_and_csr_sequences_give_the_same_result_as_dense():
    import scipy.sparse as sp
    x = C.sequence.input_variable(5, is_sparse=True)
    f = C.sequence.reduce_sum(x * 1)
    idx = [[0, 3, 3], [4], [1, 2]]
    dense = [np.eye(5, dtype=np.float32)[i] for i in idx]
    expected = np.stack([d.sum(0) for d in dense])
    np.testing.assert_allclose(f.eval({x: C.Value.one_hot(idx, 5)}), expected)
    np.testing.assert_allclose(f.eval({x: [sp.csr_matrix(d) for d in dense]}), expected)
    np.testing.assert_allclose(f.eval({x: dense}), expected)


# ------------------------------------------------------------ is_first/last

def test_is_first_is_last():
    x = seq_input()
    d = make_seqs()
    assert_seqs_close(C.sequence.is_first(x).eval({x: d}), [np.eye(1, n, 0)[0] for n in LENGTHS])
    assert_seqs_close(C.sequence.is_last(x).eval({x: d}), [np.eye(1, n, n - 1)[0] for n in LENGTHS])
    assert C.sequence.is_first(x).shape == ()
    # No gradient flows through the flags.
    y = x * C.sequence.is_first(x)
    seq_gradcheck(y, {x: d}, [x])


# ------------------------------------------------------------------- slice

SLICES = [(0, 2), (1, 0), (-2, 0), (0, -1), (1, 3), (-3, -1), (2, 5)]


@pytest.mark.parametrize('begin,end', SLICES)
def test_slice_forward_and_gradient(begin, end):
    x = seq_input()
    d = make_seqs()
    f = C.sequence.slice(x, begin, end)
    expected = []
    for s in d:
        n = len(s)
        b = max(n + begin, 0) if begin < 0 else min(begin, n)
        e = max(n + end, 0) if end <= 0 else min(end, n)
        expected.append(s[b:max(e, b)])
    assert_seqs_close(f.eval({x: d}), expected)
    seq_gradcheck(f, {x: d}, [x])


def test_slice_arguments():
    x = seq_input()
    with pytest.raises(TypeError):
        C.sequence.slice(x, 0.5, 2)
    with pytest.raises(ValueError):
        C.sequence.slice(x, 2, 1)
    with pytest.raises(ValueError):
        C.sequence.slice(C.input_variable(2), 0, 1)


# -------------------------------------------------------------- first/last

@pytest.mark.parametrize('op,pick', [(C.sequence.first, 0), (C.sequence.last, -1)])
def test_first_last(op, pick):
    x = seq_input((2, 3))
    d = make_seqs((2, 3))
    f = op(x)
    assert len(f.output.dynamic_axes) == 1 and f.shape == (2, 3)
    np.testing.assert_allclose(f.eval({x: d}), np.stack([s[pick] for s in d]), rtol=1e-12)
    seq_gradcheck(f, {x: d}, [x])


def test_first_cntk_example():
    x = C.sequence.input_variable((3, 2))
    x0 = np.reshape(np.arange(24.0, dtype=np.float32), (1, 4, 3, 2))
    np.testing.assert_array_equal(C.sequence.first(x).eval({x: x0}), [[[0, 1], [2, 3], [4, 5]]])
    np.testing.assert_array_equal(C.sequence.last(x).eval({x: x0}), [[[18, 19], [20, 21], [22, 23]]])


# -------------------------------------------------------------- reductions

def test_reduce_sum_and_max_forward_and_gradient():
    x = seq_input((2, 3))
    d = make_seqs((2, 3))
    s = C.sequence.reduce_sum(x)
    m = C.sequence.reduce_max(x)
    assert len(s.output.dynamic_axes) == 1 and s.shape == (2, 3)
    np.testing.assert_allclose(s.eval({x: d}), np.stack([a.sum(0) for a in d]), rtol=1e-12)
    np.testing.assert_allclose(m.eval({x: d}), np.stack([a.max(0) for a in d]), rtol=1e-12)
    seq_gradcheck(s, {x: d}, [x])
    seq_gradcheck(m, {x: d}, [x])


def test_reduce_max_ignores_padding():
    x = seq_input((1,))
    d = [np.array([[-5.0], [-3.0]]), np.array([[-7.0]])]  # padding (zero) would win a max
    np.testing.assert_allclose(C.sequence.reduce_max(x).eval({x: d}), [[-3.0], [-7.0]])
    np.testing.assert_allclose(C.sequence.reduce_max(C.exp(x)).eval({x: d}), np.exp([[-3.0], [-7.0]]))


@pytest.mark.parametrize('op,ref', [(C.reduce_sum, np.sum), (C.reduce_mean, np.mean), (C.reduce_max, np.max),
                                    (C.reduce_min, np.min), (C.reduce_log_sum_exp, None), (C.reduce_prod, np.prod)])
def test_reduce_elements_over_the_sequence_axis(op, ref):
    x = seq_input((2,))
    d = make_seqs((2,))
    f = op(x, axis=C.Axis.default_dynamic_axis())
    assert len(f.output.dynamic_axes) == 1
    if ref is None:
        expected = np.stack([np.log(np.sum(np.exp(a), 0)) for a in d])
    else:
        expected = np.stack([ref(a, 0) for a in d])
    np.testing.assert_allclose(f.eval({x: d}), expected, rtol=1e-10)
    seq_gradcheck(f, {x: d}, [x])


def test_reduce_over_all_axes_skips_padding():
    x = seq_input((2,))
    d = make_seqs((2,))
    flat = np.concatenate(d)
    np.testing.assert_allclose(C.reduce_sum(C.exp(x), axis=C.Axis.all_axes()).eval({x: d}),
                               np.exp(flat).sum(), rtol=1e-10)
    f = C.reduce_mean(x, axis=C.Axis.all_axes())
    np.testing.assert_allclose(f.eval({x: d}), flat.mean(), rtol=1e-10)
    seq_gradcheck(f, {x: d}, [x])


def test_reduce_over_batch_but_not_sequence_is_refused():
    x = seq_input((2,))
    with pytest.raises(NotImplementedError):
        C.reduce_sum(x, axis=C.Axis.default_batch_axis()).eval({x: make_seqs()})


# ------------------------------------------------------------------ softmax

def test_softmax_over_the_sequence():
    x = seq_input((2,))
    d = make_seqs((2,))
    f = C.sequence.softmax(x)
    expected = [np.exp(a - a.max(0)) / np.exp(a - a.max(0)).sum(0) for a in d]
    assert_seqs_close(f.eval({x: d}), expected)
    seq_gradcheck(f, {x: d}, [x])


# ------------------------------------------------------ where/gather/scatter

def test_where_indices_and_counts():
    c = C.sequence.input_variable(1, dtype=np.float64)
    w = C.sequence.where(c)
    assert w.shape == ()
    cond = [np.array([[0.], [1.], [1.]]), np.array([[0.]]), np.array([[1.], [0.], [2.], [1.]])]
    assert_seqs_close(w.eval({c: cond}), [[1, 2], np.zeros(0), [0, 2, 2, 3]])


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_where_fractional_counts_round_the_running_sum_up(dtype):
    # CNTK's WhereNode: after each step, as many items as the running sum, rounded up
    # (within the type's epsilon, so that 3 x 1/3 gives one item, not two).
    c = C.sequence.input_variable(1, dtype=dtype)
    w = C.sequence.where(c)
    cond = [np.full((3, 1), 1.6, dtype), np.full((5, 1), 1.6, dtype), np.full((3, 1), 1 / 3., dtype),
            np.array([[0.5], [0.], [0.5], [0.4]], dtype)]
    assert_seqs_close(w.eval({c: cond}), [[0, 0, 1, 1, 2], [0, 0, 1, 1, 2, 3, 3, 4], [0], [0, 3]])


def test_where_cntk_example():
    x = C.sequence.input_variable((3, 2))
    z = C.greater(C.reduce_sum(x), 60)
    x0 = np.reshape(np.arange(24.0, dtype=np.float32), (1, 4, 3, 2))
    np.testing.assert_array_equal(C.sequence.where(z).eval({x: x0})[0], [2, 3])


def test_gather_forward_and_gradient():
    x = seq_input((2,))
    c = C.sequence.input_variable(1, dtype=np.float64, sequence_axis=x.dynamic_axes[1])
    d = make_seqs((2,))
    cond = [np.array([[1.], [0.], [1.]]), np.array([[0.]]), np.array([[0.], [1.], [1.], [0.]])]
    f = C.sequence.gather(x, c)
    expected = [a[b[:, 0] > 0] for a, b in zip(d, cond)]
    assert_seqs_close(f.eval({x: d, c: cond}), expected)
    seq_gradcheck(f, {x: d, c: cond}, [x])
    # where(c) and gather(x, c) share the new sequence axis: they combine.
    g = f * C.sequence.where(c)
    assert_seqs_close(g.eval({x: d, c: cond}), [e * np.nonzero(b[:, 0])[0][:, None] for e, b in zip(expected, cond)])


def test_gather_by_a_computed_condition():
    x = seq_input((3,))
    d = make_seqs((3,))
    f = C.sequence.gather(x, C.greater(C.reduce_sum(x), 0))
    assert_seqs_close(f.eval({x: d}), [a[a.sum(1) > 0] for a in d])


def test_scatter_forward_and_gradient():
    x = seq_input((2,))
    d = make_seqs((2,))
    cond = C.sequence.is_last(x)
    g = C.sequence.gather(x, cond)          # one step per sequence, on a new axis
    f = C.sequence.scatter(g * 3, cond)     # back at the last step of x's layout
    expected = []
    for a in d:
        e = np.zeros_like(a)
        e[-1] = 3 * a[-1]
        expected.append(e)
    assert_seqs_close(f.eval({x: d}), expected)
    seq_gradcheck(f, {x: d}, [x])


def test_scatter_needs_the_conditions_axis():
    x = seq_input((2,))
    with pytest.raises(ValueError):
        C.sequence.scatter(x, C.sequence.is_first(x))


# ------------------------------------------------------------ broadcast_as

def test_broadcast_as_forward_and_gradient():
    x = seq_input((2,))
    b = C.input_variable(3, dtype=np.float64, name='b')
    d = make_seqs((2,))
    bd = np.random.RandomState(3).standard_normal((3, 3))
    f = C.sequence.broadcast_as(b, x)
    assert len(f.output.dynamic_axes) == 2 and f.shape == (3,)
    assert_seqs_close(f.eval({x: d, b: bd}), [np.tile(bd[i], (n, 1)) for i, n in enumerate(LENGTHS)])
    seq_gradcheck(f, {x: d, b: bd}, [b])
    # The CNTK example: the last step broadcast along the sequence.
    y = C.sequence.broadcast_as(C.sequence.last(x), x) * x
    assert_seqs_close(y.eval({x: d}), [a * a[-1] for a in d])
    seq_gradcheck(y, {x: d}, [x])


def test_broadcast_as_over_a_batch_takes_its_axes():
    # As in CNTK, the result has broadcast_as_operand's dynamic axes, a sequence axis or not.
    ones = C.sequence.input_variable(1)
    x = C.input_variable(1)
    y = C.sequence.broadcast_as(C.sequence.last(ones), x)
    assert y.dynamic_axes == x.dynamic_axes
    with pytest.raises(ValueError):  # a sequence for the batch-only input
        y.eval({x: [np.ones((4, 1), np.float32)], ones: [np.ones((1, 1), np.float32)]})


def test_reconcile_dynamic_axes():
    x = seq_input((2,))
    b = C.input_variable(2, dtype=np.float64)
    d = make_seqs((2,))
    bd = np.arange(6.0).reshape(3, 2)
    f = C.reconcile_dynamic_axes(b, x) + x
    assert_seqs_close(f.eval({x: d, b: bd}), [a + bd[i] for i, a in enumerate(d)])
    seq_gradcheck(f, {x: d, b: bd}, [x, b])
    # A sequence over another axis with the same layout adopts x's axis.
    y = C.sequence.input_variable(2, dtype=np.float64, sequence_axis=C.Axis('other'))
    g = C.reconcile_dynamic_axes(y, x) * x
    yd = make_seqs((2,), seed=5)
    assert_seqs_close(g.eval({x: d, y: yd}), [a * e for a, e in zip(d, yd)])
    with pytest.raises(ValueError):
        g.eval({x: d, y: make_seqs((2,), lengths=[2, 2, 2])})


# ------------------------------------------------------------------- unpack

def test_unpack_forward_and_gradient():
    x = seq_input((2,))
    d = make_seqs((2,))
    f = C.sequence.unpack(x, padding_value=-1.5)
    assert len(f.outputs) == 2
    data, mask = f.outputs
    assert data.shape == (C.FreeDimension, 2) and len(data.dynamic_axes) == 1
    got = f.eval({x: d})
    T = max(LENGTHS)
    expected = np.full((3, T, 2), -1.5)
    for i, a in enumerate(d):
        expected[i, :len(a)] = a
    np.testing.assert_allclose(got[data], expected)
    np.testing.assert_array_equal(got[mask], [[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]])
    seq_gradcheck(f, {x: d}, [x], output=data)
    g = C.sequence.unpack(x, 0, no_mask_output=True)
    assert len(g.outputs) == 1
    with pytest.raises(TypeError):
        C.sequence.unpack(x, 'pad')


# -------------------------------------------------- to_sequence and friends

def test_to_sequence_with_and_without_lengths():
    x = C.input_variable((4, 2), dtype=np.float64)
    n = C.input_variable(1, dtype=np.float64)
    xd = np.random.RandomState(2).standard_normal((3, 4, 2))
    f = C.to_sequence(x)
    assert len(f.output.dynamic_axes) == 2 and f.shape == (2,)
    assert_seqs_close(f.eval({x: xd}), list(xd))
    g = C.to_sequence(x, n)
    nd = np.array([[2.], [4.], [1.]])
    assert_seqs_close(g.eval({x: xd, n: nd}), [xd[i, :int(k)] for i, k in enumerate(nd[:, 0])])
    seq_gradcheck(g, {x: xd, n: nd}, [x])
    with pytest.raises(ValueError):
        g.eval({x: xd, n: np.array([[2.], [5.], [1.]])})
    with pytest.raises(ValueError):
        C.to_sequence(C.sequence.input_variable(3))


def test_to_sequence_like_and_unpack_round_trip():
    x = seq_input((2,))
    d = make_seqs((2,))
    u = C.sequence.unpack(x, 0, no_mask_output=True)
    back = C.to_sequence_like(u * 2, x)
    assert back.output.dynamic_axes == x.dynamic_axes
    assert_seqs_close(back.eval({x: d}), [2 * a for a in d])
    seq_gradcheck(back, {x: d}, [x])
    with pytest.raises(ValueError):
        C.to_sequence_like(u, C.input_variable(2))


def test_unpack_batch_and_to_batch():
    x = C.input_variable((2,), dtype=np.float64)
    xd = np.random.RandomState(4).standard_normal((5, 2))
    u = C.unpack_batch(x)
    assert u.output.dynamic_axes == () or len(u.output.dynamic_axes) == 0
    assert u.shape == (C.FreeDimension, 2)
    np.testing.assert_allclose(u.eval({x: xd}), xd)
    # Softmax over the batch as a static axis, then back to a batch.
    f = C.to_batch(C.softmax(u, axis=0))
    assert len(f.output.dynamic_axes) == 1 and f.shape == (2,)
    e = np.exp(xd - xd.max(0))
    np.testing.assert_allclose(f.eval({x: xd}), e / e.sum(0), rtol=1e-10)
    seq_gradcheck(f, {x: xd}, [x])
    with pytest.raises(ValueError):
        C.to_batch(x)
    with pytest.raises(ValueError):
        C.unpack_batch(seq_input())
    c = C.to_batch(C.constant(np.arange(6.0).reshape(3, 2)))
    np.testing.assert_allclose(c.eval(), np.arange(6.0).reshape(3, 2))


def test_sequence_ops_refuse_non_sequences():
    b = C.input_variable(2)
    for op in (C.sequence.is_first, C.sequence.is_last, C.sequence.first, C.sequence.last, C.sequence.where,
               C.sequence.reduce_sum, C.sequence.reduce_max, C.sequence.softmax):
        with pytest.raises(ValueError):
            op(b)
    with pytest.raises(ValueError):
        C.sequence.gather(b, b)


def test_sequence_ops_in_float32():
    x = C.sequence.input_variable(2)
    d = [a.astype(np.float32) for a in make_seqs((2,))]
    got = C.sequence.gather(C.sequence.softmax(x), C.sequence.is_last(x)).eval({x: d})
    for g, a in zip(got, d):
        e = np.exp(a - a.max(0))
        np.testing.assert_allclose(g, (e / e.sum(0))[-1:], rtol=1e-5)
        assert g.dtype == np.float32


def test_to_sequence_like_refuses_a_different_length():
    x = C.input_variable((3, 2))
    s = C.sequence.input_variable(2)
    f = C.to_sequence_like(x, s)
    with pytest.raises(ValueError):
        f.eval({x: np.zeros((2, 3, 2), np.float32), s: [np.zeros((4, 2), np.float32), np.zeros((1, 2), np.float32)]})


def test_broadcast_as_of_a_parameter_sums_its_gradient_over_valid_steps():
    x = seq_input((2,))
    p = C.parameter((2,), init=np.array([1.0, -2.0]), dtype=np.float64)
    f = C.sequence.broadcast_as(p, x) * x
    d = make_seqs((2,))
    assert_seqs_close(f.eval({x: d}), [a * [1.0, -2.0] for a in d])
    state, _ = f.forward({x: d}, [f.output], keep_for_backward=[f.output])
    g = f.backward(state, {f.output: [np.ones_like(a) for a in d]}, [p])[p]
    np.testing.assert_allclose(g, np.concatenate(d).sum(0), rtol=1e-12)


def test_gather_needs_a_condition_over_the_same_axis():
    x = seq_input((2,))
    c = C.sequence.input_variable(1, dtype=np.float64, sequence_axis=C.Axis('elsewhere'))
    with pytest.raises(ValueError):
        C.sequence.gather(x, c)


@pytest.mark.parametrize('offset', [2, -2])
def test_delay_reads_several_items_of_an_initial_state_sequence(offset):
    # As CNTK: with an offset above 1, the steps the initial state fills read its last
    # (past) or first (future) `offset` items in order; a one-item state fills them all.
    x = C.sequence.input_variable(2, needs_gradient=True)
    init = C.sequence.input_variable(2, needs_gradient=True, sequence_axis=C.Axis('init_axis'))
    f = C.sequence.delay(x, init, offset)
    dx = np.arange(8, dtype=np.float32).reshape(1, 4, 2)
    di = 100 + np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    out = np.asarray(f.eval({x: dx, init: di}))[0]
    if offset > 0:
        expected = np.concatenate([di[0, 1:], dx[0, :2]])
        gi = [[0, 0], [1, 1], [1, 1]]
    else:
        expected = np.concatenate([dx[0, 2:], di[0, :2]])
        gi = [[1, 1], [1, 1], [0, 0]]
    np.testing.assert_array_equal(out, expected)
    g = f.grad({x: dx, init: di}, wrt=[init])
    np.testing.assert_array_equal(np.asarray(g)[0], gi)
    one = di[:, :1]
    np.testing.assert_array_equal(np.asarray(f.grad({x: dx, init: one}, wrt=[init]))[0], [[2, 2]])


def test_scatter_of_a_value_without_a_sequence_axis():
    # As CNTK: one item per sequence, placed at the step where the condition holds.
    a = C.sequence.input_variable(3)
    f = C.sequence.scatter(C.sequence.last(a), C.sequence.is_first(a))
    data = [np.eye(3, dtype=np.float32)[[0, 1, 2]], np.eye(3, dtype=np.float32)[[1, 0]]]
    out = f.eval({a: data})
    np.testing.assert_array_equal(out[0], [[0, 0, 1], [0, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(out[1], [[1, 0, 0], [0, 0, 0]])


def test_sequence_slice_of_one_step_has_no_sequence_axis():
    # As CNTK: slice(1, 2) (and first/last) give one item per sequence, without a sequence axis.
    a = C.sequence.input_variable((2,), needs_gradient=True)
    f = C.sequence.slice(a, 1, 2)
    assert len(f.dynamic_axes) == 1 and f.shape == (2,)
    data = [np.arange(6, dtype=np.float32).reshape(3, 2), np.arange(4, dtype=np.float32).reshape(2, 2) + 10]
    np.testing.assert_array_equal(f.eval({a: data}), [[2, 3], [12, 13]])
    g = f.grad({a: data}, wrt=[a])
    np.testing.assert_array_equal(g[0], [[0, 0], [1, 1], [0, 0]])
    assert len(C.sequence.slice(a, 0, 2).dynamic_axes) == 2
