"""sequence.gather / sequence.scatter with new_sequence_axis_typeinfo: a declared
(scaling, additive) length of the new sequence axis, which names that axis after the
source axis so that results declared alike share it (CNTK's GetDerivedDynamicAxes)."""
import numpy as np
import pytest

import cntk as C
from test_ops_sequence import LENGTHS, make_seqs, seq_gradcheck, seq_input


def axis_names(f):
    return [a.name for a in f.output.dynamic_axes]


def test_gather_one_step_per_sequence_drops_the_sequence_axis():
    # CNTK's own example: the last steps of two inputs over one axis, added.
    a, b = seq_input((1,), 'a'), seq_input((1,), 'b')
    a_last = C.sequence.gather(a, C.sequence.is_last(a), new_sequence_axis_typeinfo=(0, 1))
    b_last = C.sequence.gather(b, C.sequence.is_last(b), new_sequence_axis_typeinfo=(0, 1))
    assert axis_names(a_last) == ['defaultBatchAxis']
    z = a_last + b_last
    xa, xb = make_seqs((1,), seed=1), make_seqs((1,), seed=2)
    np.testing.assert_allclose(z.eval({a: xa, b: xb}), np.array([p[-1] + q[-1] for p, q in zip(xa, xb)]),
                               rtol=1e-12)
    # Without the declaration each condition makes its own axis, and the sum is refused.
    with pytest.raises(ValueError):
        C.sequence.gather(a, C.sequence.is_last(a)) + C.sequence.gather(b, C.sequence.is_last(b))


def test_gather_one_step_gradient():
    x = seq_input((2,))
    first_big = C.sequence.is_first(x)
    f = C.sequence.gather(x, first_big, new_sequence_axis_typeinfo=(0, 1)) * 3.0
    seqs = make_seqs((2,))
    np.testing.assert_allclose(f.eval({x: seqs}), np.array([3 * s[0] for s in seqs]), rtol=1e-12)
    seq_gradcheck(f, {x: seqs}, [x])


def test_declared_ratio_names_a_shared_axis():
    a, b = seq_input((2,), 'a'), seq_input((2,), 'b')
    twice = lambda v: C.sequence.broadcast_as(C.constant(2.0, dtype=np.float64), v)  # noqa: E731
    ga = C.sequence.gather(a, twice(a), new_sequence_axis_typeinfo=(2, 0))
    gb = C.sequence.gather(b, twice(b), new_sequence_axis_typeinfo=(2, 0))
    assert axis_names(ga) == axis_names(gb) == ['defaultBatchAxis', 'defaultDynamicAxis_times_2_minus_0']
    z = ga - gb
    xa, xb = make_seqs((2,), seed=3), make_seqs((2,), seed=4)
    got = z.eval({a: xa, b: xb})
    for g, p, q in zip(got, xa, xb):
        np.testing.assert_allclose(g, np.repeat(p - q, 2, axis=0), rtol=1e-12)
    seq_gradcheck(z, {a: xa, b: xb}, [a, b])
    # Another ratio is another axis.
    g3 = C.sequence.gather(a, C.sequence.broadcast_as(C.constant(3.0, dtype=np.float64), a),
                           new_sequence_axis_typeinfo=(3, -1))
    assert axis_names(g3)[1] == 'defaultDynamicAxis_times_3_minus_1'
    with pytest.raises(ValueError):
        ga + g3


def test_scale_one_keeps_the_source_axis():
    x = seq_input((2,))
    keep = C.sequence.gather(x, C.greater(C.reduce_sum(x), -1e9), new_sequence_axis_typeinfo=(1, 0))
    assert keep.output.dynamic_axes == x.dynamic_axes
    seqs = make_seqs((2,))
    for g, s in zip((keep + x).eval({x: seqs}), seqs):
        np.testing.assert_allclose(g, 2 * s, rtol=1e-12)
    # A condition that drops steps breaks the declaration: a clear error at run time.
    some = C.sequence.gather(x, C.greater(C.reduce_sum(x), 0), new_sequence_axis_typeinfo=(1, 0))
    data = [np.array([[1.0, 1.0], [-1.0, -1.0]]), np.array([[2.0, 0.0]])]
    with pytest.raises(ValueError, match="new_sequence_axis_typeinfo"):
        (some + x).eval({x: data})


def test_fixed_slice_of_the_first_steps():
    x = seq_input((2,))
    # 1 on the first step and (delayed by one) on the second
    first_two = C.sequence.is_first(x) + C.sequence.past_value(C.sequence.is_first(x))
    head = C.sequence.gather(x, first_two, new_sequence_axis_typeinfo=(0, 2))
    assert axis_names(head)[1] == 'defaultDynamicAxis_fixedSliceOf_2'
    seqs = make_seqs((2,), lengths=[3, 2, 4])
    for g, s in zip(head.eval({x: seqs}), seqs):
        np.testing.assert_allclose(g, s[:2], rtol=1e-12)
    with pytest.raises(ValueError, match="declared"):
        head.eval({x: make_seqs((2,), lengths=LENGTHS)})  # a sequence of 1 step has no 2 steps


def test_scatter_with_the_declared_axis():
    x = seq_input((2,))
    cond = C.sequence.is_last(x)
    last = C.sequence.gather(x, cond, new_sequence_axis_typeinfo=(0, 1))
    back = C.sequence.scatter(last * 2.0, cond, new_sequence_axis_typeinfo=(0, 1))
    assert back.output.dynamic_axes == x.dynamic_axes
    seqs = make_seqs((2,))
    for g, s in zip(back.eval({x: seqs}), seqs):
        want = np.zeros_like(s)
        want[-1] = 2 * s[-1]
        np.testing.assert_allclose(g, want, rtol=1e-12)
    seq_gradcheck(back, {x: seqs}, [x])
    # scatter's operand must be over the declared axis
    with pytest.raises(ValueError):
        C.sequence.scatter(x, cond, new_sequence_axis_typeinfo=(0, 1))
    twice = C.sequence.broadcast_as(C.constant(2.0, dtype=np.float64), x)
    rep = C.sequence.gather(x, twice, new_sequence_axis_typeinfo=(2, 0))
    with pytest.raises(ValueError):
        C.sequence.scatter(rep, cond, new_sequence_axis_typeinfo=(0, 1))


def test_typeinfo_errors():
    x = seq_input((2,))
    c = C.sequence.is_last(x)
    for bad in [(0, 0), (0, -2), (-1, 3)]:
        with pytest.raises(ValueError, match="new_sequence_axis_typeinfo"):
            C.sequence.gather(x, c, new_sequence_axis_typeinfo=bad)
    for bad in [3, (1,), (1.5, 0), ('a', 1), (True, 0)]:
        with pytest.raises(TypeError, match="new_sequence_axis_typeinfo"):
            C.sequence.gather(x, c, new_sequence_axis_typeinfo=bad)
        with pytest.raises(TypeError, match="new_sequence_axis_typeinfo"):
            C.sequence.scatter(x, c, new_sequence_axis_typeinfo=bad)


def test_declared_axis_survives_save_and_load(tmp_path):
    a, b = seq_input((1,), 'a'), seq_input((1,), 'b')
    z = (C.sequence.gather(a, C.sequence.is_last(a), new_sequence_axis_typeinfo=(0, 1)) +
         C.sequence.gather(b, C.sequence.is_first(b), new_sequence_axis_typeinfo=(0, 1)))
    path = str(tmp_path / 'm.model')
    z.save(path)
    y = C.Function.load(path)
    assert [ax.name for ax in y.output.dynamic_axes] == ['defaultBatchAxis']
    xa, xb = make_seqs((1,), seed=5), make_seqs((1,), seed=6)
    args = {y.arguments[0]: xa, y.arguments[1]: xb} if y.arguments[0].name == 'a' else \
        {y.arguments[0]: xb, y.arguments[1]: xa}
    np.testing.assert_allclose(y.eval(args), np.array([p[-1] + q[0] for p, q in zip(xa, xb)]), rtol=1e-12)


def test_inputs_sharing_an_axis_must_agree_on_every_length():
    # One axis, one length per sequence: data whose longest sequences agree but whose
    # individual lengths differ is refused rather than combined step by step.
    a, b = seq_input((1,), 'a'), seq_input((1,), 'b')
    z = a + b
    with pytest.raises(ValueError, match="different lengths"):
        z.eval({a: make_seqs((1,), lengths=[3, 1]), b: make_seqs((1,), lengths=[1, 3])})
    xa, xb = make_seqs((1,), lengths=[3, 1], seed=1), make_seqs((1,), lengths=[3, 1], seed=2)
    for g, p, q in zip(z.eval({a: xa, b: xb}), xa, xb):
        np.testing.assert_allclose(g, p + q, rtol=1e-12)
