"""past_value / future_value / delay, and graphs whose delays form recurrent loops,
over minibatches of sequences of different lengths."""
import numpy as np
import pytest

import cntk as C
from seq_harness import as_sequences, random_sequences, seq_gradcheck

LENGTHS = [4, 1, 3]


def seq_input(shape, dtype=np.float64, name='x'):
    return C.sequence.input_variable(shape, dtype=dtype, name=name)


def ref_past(seq, offset, init):
    out = np.empty_like(seq)
    for t in range(len(seq)):
        out[t] = seq[t - offset] if t - offset >= 0 else init
    return out


def ref_future(seq, offset, init):
    out = np.empty_like(seq)
    for t in range(len(seq)):
        out[t] = seq[t + offset] if t + offset < len(seq) else init
    return out


# ---- the delay ops on their own -------------------------------------------------

@pytest.mark.parametrize("offset", [1, 2, 3])
@pytest.mark.parametrize("init", [0.0, 1.5, np.array([0.5, -1.0, 2.0])])
def test_past_and_future_value_forward(offset, init):
    rng = np.random.RandomState(offset)
    x = seq_input(3)
    data = random_sequences(rng, LENGTHS, (3,))
    for op, ref in ((C.sequence.past_value, ref_past), (C.sequence.future_value, ref_future)):
        y = op(x, initial_state=init, time_step=offset)
        assert y.shape == (3,) and len(y.dynamic_axes) == 2
        got = as_sequences(y.eval({x: data}))
        for g, s in zip(got, data):
            np.testing.assert_allclose(g, ref(s, offset, np.broadcast_to(init, (3,))))


def test_default_initial_state_is_zero_and_time_step_one():
    x = seq_input(2)
    data = [np.arange(6.0).reshape(3, 2)]
    got = as_sequences(C.sequence.past_value(x).eval({x: data}))[0]
    np.testing.assert_allclose(got, [[0, 0], [0, 1], [2, 3]])
    got = as_sequences(C.sequence.future_value(x).eval({x: data}))[0]
    np.testing.assert_allclose(got, [[2, 3], [4, 5], [0, 0]])


def test_delay_picks_past_future_or_identity():
    x = seq_input(1)
    data = random_sequences(np.random.RandomState(1), LENGTHS, (1,))
    for step, ref in ((2, lambda s: ref_past(s, 2, 7.0)), (-2, lambda s: ref_future(s, 2, 7.0)), (0, lambda s: s)):
        got = as_sequences(C.sequence.delay(x, initial_state=7.0, time_step=step).eval({x: data}))
        for g, s in zip(got, data):
            np.testing.assert_allclose(g, ref(s))


def test_initial_state_per_sequence():
    # An initial state with a batch axis (no sequence axis) gives each sequence its own.
    x = seq_input(2)
    s0 = C.input_variable(2, dtype=np.float64, name='s0')
    rng = np.random.RandomState(2)
    data = random_sequences(rng, LENGTHS, (2,))
    init = rng.standard_normal((3, 2))
    y = C.sequence.past_value(x, initial_state=s0, time_step=2)
    got = as_sequences(y.eval({x: data, s0: init}))
    for b, (g, s) in enumerate(zip(got, data)):
        np.testing.assert_allclose(g, ref_past(s, 2, init[b]))
    y = C.sequence.future_value(x, initial_state=s0)
    got = as_sequences(y.eval({x: data, s0: init}))
    for b, (g, s) in enumerate(zip(got, data)):
        np.testing.assert_allclose(g, ref_future(s, 1, init[b]))


@pytest.mark.parametrize("op", [C.sequence.past_value, C.sequence.future_value])
@pytest.mark.parametrize("offset", [1, 2])
def test_delay_gradients(op, offset):
    rng = np.random.RandomState(3)
    x = seq_input(3)
    init = C.Parameter((3,), init=rng.standard_normal(3), dtype=np.float64, name='init')
    y = op(C.tanh(x), initial_state=init, time_step=offset)
    seq_gradcheck(y, {x: random_sequences(rng, LENGTHS, (3,))})


def test_delay_gradient_of_per_sequence_and_scalar_initial_states():
    rng = np.random.RandomState(4)
    x = seq_input(2)
    s0 = C.input_variable(2, dtype=np.float64, name='s0')
    y = C.sequence.past_value(x, initial_state=s0, time_step=2) * 2.0
    seq_gradcheck(y, {x: random_sequences(rng, LENGTHS, (2,)), s0: rng.standard_normal((3, 2))})
    scalar = C.Parameter((), init=0.3, dtype=np.float64, name='scalar_init')
    y = C.sequence.future_value(x, initial_state=scalar, time_step=1)
    seq_gradcheck(y, {x: random_sequences(rng, LENGTHS, (2,))})


def test_delay_argument_errors():
    x = seq_input(2)
    with pytest.raises(TypeError):
        C.sequence.past_value(x, time_step=1.5)
    with pytest.raises(ValueError):
        C.sequence.past_value(x, time_step=-1)
    with pytest.raises(ValueError):  # not a sequence
        C.sequence.past_value(C.input_variable(2))
    with pytest.raises(ValueError):  # an initial state that does not fit an item
        C.sequence.future_value(x, initial_state=np.zeros(3))


# ---- recurrent loops ------------------------------------------------------------

def loop(step, x, init=0.0, backwards=False, shape=None):
    """h = step(delay(h), x), built by hand with a placeholder."""
    h_fwd = C.placeholder(name='h_fwd')
    delayed = (C.sequence.future_value if backwards else C.sequence.past_value)(h_fwd, initial_state=init)
    h = step(delayed, x)
    h.replace_placeholders({h_fwd: h.output})
    return h


@pytest.mark.parametrize("backwards", [False, True])
def test_cumulative_sum_loop(backwards):
    x = seq_input(2)
    y = loop(lambda h, x: h + x, x, init=np.array([0.0, 0.5]), backwards=backwards)
    assert y.shape == (2,)
    data = random_sequences(np.random.RandomState(5), LENGTHS, (2,))
    got = as_sequences(y.eval({x: data}))
    for g, s in zip(got, data):
        ref = np.cumsum(s[::-1], axis=0)[::-1] if backwards else np.cumsum(s, axis=0)
        np.testing.assert_allclose(g, ref + [0.0, 0.5])


def numpy_rnn(seq, w, u, init, backwards=False):
    h = init
    out = np.empty((len(seq), len(w[0])))
    order = range(len(seq) - 1, -1, -1) if backwards else range(len(seq))
    for t in order:
        h = np.tanh(h @ w + seq[t] @ u)
        out[t] = h
    return out


@pytest.mark.parametrize("backwards", [False, True])
def test_tanh_rnn_loop_forward_and_gradients(backwards):
    rng = np.random.RandomState(6)
    x = seq_input(3)
    w = C.Parameter((2, 2), init=rng.standard_normal((2, 2)) * 0.5, dtype=np.float64, name='w')
    u = C.Parameter((3, 2), init=rng.standard_normal((3, 2)) * 0.5, dtype=np.float64, name='u')
    init = C.Parameter((2,), init=rng.standard_normal(2), dtype=np.float64, name='h0')
    y = loop(lambda h, x: C.tanh(C.times(h, w) + C.times(x, u)), x, init=init, backwards=backwards)
    data = random_sequences(rng, LENGTHS, (3,))
    got = as_sequences(y.eval({x: data}))
    for g, s in zip(got, data):
        np.testing.assert_allclose(g, numpy_rnn(s, w.value, u.value, init.value, backwards), rtol=1e-10)
    seq_gradcheck(y, {x: data})


def test_loop_with_offset_two_and_per_sequence_initial_state():
    rng = np.random.RandomState(7)
    x = seq_input(2)
    s0 = C.input_variable(2, dtype=np.float64, name='s0')
    h_fwd = C.placeholder()
    h = C.sequence.past_value(h_fwd, initial_state=s0, time_step=2) * 0.5 + x
    h.replace_placeholders({h_fwd: h.output})
    data = random_sequences(rng, LENGTHS, (2,))
    init = rng.standard_normal((3, 2))
    got = as_sequences(h.eval({x: data, s0: init}))
    for b, (g, s) in enumerate(zip(got, data)):
        ref = np.empty_like(s)
        for t in range(len(s)):
            ref[t] = 0.5 * (ref[t - 2] if t >= 2 else init[b]) + s[t]
        np.testing.assert_allclose(g, ref)
    seq_gradcheck(h, {x: data, s0: init})


def test_two_loops_and_non_loop_ops_in_one_graph():
    rng = np.random.RandomState(8)
    x = seq_input(2)
    w = C.Parameter((2, 2), init=rng.standard_normal((2, 2)) * 0.5, dtype=np.float64, name='w')
    fwd = loop(lambda h, x: C.tanh(C.times(h, w) + x), x, init=np.zeros(2))
    bwd = loop(lambda h, x: C.sigmoid(h * 0.5 + x), C.sin(x), backwards=True)
    y = fwd * bwd + C.sequence.past_value(x)
    data = random_sequences(rng, LENGTHS, (2,))
    got = as_sequences(y.eval({x: data}))
    for g, s in zip(got, data):
        f = numpy_rnn(s, w.value, np.eye(2), np.zeros(2))
        hb = np.zeros(2)
        bref = np.empty_like(s)
        for t in range(len(s) - 1, -1, -1):
            hb = 1 / (1 + np.exp(-(hb * 0.5 + np.sin(s[t]))))
            bref[t] = hb
        np.testing.assert_allclose(g, f * bref + ref_past(s, 1, 0.0), rtol=1e-10)
    seq_gradcheck(y, {x: data})


def test_loop_over_equal_lengths_matches_ragged():
    x = seq_input(2)
    y = loop(lambda h, x: h * 0.5 + x, x)
    data = random_sequences(np.random.RandomState(9), [3, 3], (2,))
    padded = np.stack(data)
    np.testing.assert_allclose(np.asarray(y.eval({x: padded})), np.stack(as_sequences(y.eval({x: data}))))


def test_loop_errors():
    x = seq_input(2)
    # past and future in one loop
    h_fwd = C.placeholder()
    h = C.sequence.past_value(h_fwd) + C.sequence.future_value(h_fwd) + x
    h.replace_placeholders({h_fwd: h.output})
    with pytest.raises(ValueError, match="opposite directions"):
        h.eval({x: [np.ones((2, 2))]})
    # a cycle without a delay
    g_fwd = C.placeholder()
    g = C.plus(g_fwd, x)
    g.replace_placeholders({g_fwd: g.output})
    with pytest.raises(ValueError):
        g.eval({x: [np.ones((2, 2))]})


def test_loop_clone_and_call():
    x = seq_input(2)
    y = loop(lambda h, x: h * 0.5 + x, x)
    z = y.clone('share')
    data = random_sequences(np.random.RandomState(10), LENGTHS, (2,))
    for a, b in zip(as_sequences(y.eval({x: data})), as_sequences(z.eval({z.arguments[0]: data}))):
        np.testing.assert_allclose(a, b)


def other_axis_input(shape, name='s'):
    return C.sequence.input_variable(shape, dtype=np.float64, sequence_axis=C.Axis('other_axis'), name=name)


@pytest.mark.parametrize("op", [C.sequence.past_value, C.sequence.future_value])
def test_initial_state_that_is_a_sequence_uses_its_last_or_first_item(op):
    # As CNTK documents for RecurrenceFrom: past_value reads the last item of an
    # initial state that is a sequence (over its own axis), future_value the first.
    rng = np.random.RandomState(11)
    x = seq_input(2)
    s = other_axis_input(2)
    data = random_sequences(rng, LENGTHS, (2,))
    init = random_sequences(rng, [2, 3, 1], (2,))
    y = op(x, initial_state=s, time_step=1)
    got = as_sequences(y.eval({x: data, s: init}))
    for g, seq, i in zip(got, data, init):
        if op is C.sequence.past_value:
            np.testing.assert_allclose(g, ref_past(seq, 1, i[-1]))
        else:
            np.testing.assert_allclose(g, ref_future(seq, 1, i[0]))
    seq_gradcheck(y * 1.0, {x: data, s: init})


def test_loop_from_a_sequence_initial_state():
    rng = np.random.RandomState(12)
    x = seq_input(2)
    s = other_axis_input(2)
    h_fwd = C.placeholder()
    h = C.tanh(C.sequence.past_value(h_fwd, initial_state=s) * 0.5 + x)
    h.replace_placeholders({h_fwd: h.output})
    data = random_sequences(rng, LENGTHS, (2,))
    init = random_sequences(rng, [2, 3, 1], (2,))
    got = as_sequences(h.eval({x: data, s: init}))
    for g, seq, i in zip(got, data, init):
        state, ref = i[-1], []
        for t in range(len(seq)):
            state = np.tanh(state * 0.5 + seq[t])
            ref.append(state)
        np.testing.assert_allclose(g, np.array(ref))
    seq_gradcheck(h, {x: data, s: init})


def test_scalar_initial_state_takes_its_shape_from_the_step_output():
    # A loop's state that starts from a scalar learns its shape from what the step
    # function returns (here from `+ x`), as CNTK infers it; the Dense inside the loop
    # then takes its input size from that state.
    from cntk.layers import Dense, Recurrence
    rng = np.random.RandomState(21)
    x = seq_input(4)
    data = random_sequences(rng, LENGTHS, (4,))
    # The layers are made outside the step functions: a step function may not create
    # parameters (CNTK raises TypeError, as for any @Function body).
    for init in (0, 0.1):
        d = Dense(4, init=C.glorot_uniform(seed=3))
        r = Recurrence(lambda h, x: d(h) + x, initial_state=init)(x)
        assert r.shape == (4,) and sorted(p.shape for p in r.parameters) == [(4,), (4, 4)]
        W = next(p for p in r.parameters if p.shape == (4, 4)).value
        b = next(p for p in r.parameters if p.shape == (4,)).value
        got = as_sequences(r.eval({x: data}))
        for g, seq in zip(got, data):
            state, ref = np.full(4, init, dtype=np.float64), []
            for t in range(len(seq)):
                state = state @ W + b + seq[t]
                ref.append(state)
            np.testing.assert_allclose(g, np.array(ref), rtol=1e-5, atol=1e-6)
    # The explicit state shape keeps working, and gives the same parameter shapes.
    d = Dense(4)
    r = Recurrence(lambda h, x: d(h) + x, initial_state=np.zeros(4))(x)
    assert r.shape == (4,) and sorted(p.shape for p in r.parameters) == [(4,), (4, 4)]


def test_scalar_initial_state_through_layers_and_gradients():
    # Variants: RecurrenceFrom with a constant scalar state, Fold, go_backwards and a
    # step whose state comes out of a nonlinearity; float64 gradients.
    from cntk.layers import Dense, Fold, Recurrence, RecurrenceFrom
    rng = np.random.RandomState(22)
    x = seq_input(3)
    data = random_sequences(rng, LENGTHS, (3,))
    with C.layers.default_options(dtype=np.float64):
        def stepper():
            d = Dense(3, init=C.glorot_uniform(seed=5))
            return lambda h, x: C.tanh(d(h) + x)
        rec = Recurrence(stepper(), go_backwards=True, initial_state=0.2)(x)
        fold = Fold(stepper())(x)
        frm = RecurrenceFrom(stepper())(C.Constant(0.5, dtype=np.float64), x)
    W = next(p for p in rec.parameters if p.shape == (3, 3)).value
    b = next(p for p in rec.parameters if p.shape == (3,)).value
    got = as_sequences(rec.eval({x: data}))
    for g, seq in zip(got, data):
        state, ref = np.full(3, 0.2), []
        for t in reversed(range(len(seq))):
            state = np.tanh(state @ W + b + seq[t])
            ref.append(state)
        np.testing.assert_allclose(g, np.array(ref[::-1]), rtol=1e-5, atol=1e-6)
    seq_gradcheck(rec, {x: data})
    assert fold.shape == (3,)
    seq_gradcheck(fold, {x: data})
    assert frm.shape == (3,)
    seq_gradcheck(frm, {x: data})


def test_scalar_initial_state_of_steps_whose_parameters_need_the_state_shape():
    # The state's shape comes from a Dense's output size even where the Dense reads the
    # state spliced with the input (its weight then takes the spliced size), also when
    # the input is bound after the loop is closed.
    from cntk.layers import Dense, Recurrence
    rng = np.random.RandomState(23)
    x = seq_input(3)
    data = random_sequences(rng, LENGTHS, (3,))
    with C.layers.default_options(dtype=np.float64):
        d = Dense(3, activation=C.tanh, init=C.glorot_uniform(seed=4))
        r = Recurrence(lambda h, x: d(C.splice(h, x)), initial_state=0.1)(x)
    assert r.shape == (3,) and sorted(p.shape for p in r.parameters) == [(3,), (6, 3)]
    W = next(p for p in r.parameters if p.shape == (6, 3)).value
    b = next(p for p in r.parameters if p.shape == (3,)).value
    for g, seq in zip(as_sequences(r.eval({x: data})), data):
        state, ref = np.full(3, np.float32(0.1), dtype=np.float64), []  # the literal is a float32 constant
        for item in seq:
            state = np.tanh(np.concatenate([state, item]) @ W + b)
            ref.append(state)
        np.testing.assert_allclose(g, np.array(ref), rtol=1e-12)
    seq_gradcheck(r, {x: data})
    # By hand: the loop closed over a placeholder input, bound afterwards.
    ph, x_ph = C.placeholder(), C.placeholder()
    prev = C.sequence.past_value(ph, initial_state=0.1)
    out = Dense(3)(C.splice(prev, x_ph))
    out.replace_placeholders({ph: out.output})
    out.replace_placeholders({x_ph: x})
    assert out.shape == (3,) and prev.output.shape == (3,)
    assert sorted(p.shape for p in out.parameters) == [(3,), (6, 3)]


def test_scalar_initial_state_that_never_gets_a_shape_is_a_clear_error():
    # Nothing in the step tells the state's shape (a Dense without bias, plus a scalar): a clear error that says what to give.
    from cntk.layers import Dense, Recurrence
    x = seq_input(())
    with pytest.raises(ValueError, match="initial_state of the state's shape"):
        d = Dense(4, bias=False)
        Recurrence(lambda h, x: d(h) + x)(x)
    # A step whose Dense output does not fit the input it is added to: the op says so.
    with pytest.raises(ValueError, match="Plus.*broadcast"):
        d = Dense(2)
        Recurrence(lambda h, x: d(h) + x)(seq_input(3))


def test_a_step_function_may_not_create_parameters_or_use_other_variables():
    from cntk.layers import Dense, Recurrence
    with pytest.raises(TypeError, match="parameters cannot be created"):
        Recurrence(lambda h, x: Dense(3)(h) + x)
    v = C.input_variable(1)
    with pytest.raises(TypeError):
        Recurrence(lambda h, x: h * v * x)
    # one step function per number of states, up to CNTK's 10
    for n in (4, 10):
        step = C.layers.sequence._sanitize_function(eval("lambda %s, x: (%s)" % (
            ", ".join("s%d" % i for i in range(n)), ", ".join("s%d * x" % i for i in range(n)))))
        assert len(Recurrence(step)(seq_input(2)).outputs) == 1
    with pytest.raises(ValueError):
        Recurrence(eval("lambda %s, x: (%s)" % (", ".join("s%d" % i for i in range(11)),
                                                  ", ".join("s%d * x" % i for i in range(11)))))


def test_loop_reading_a_per_sequence_input_and_a_parameter():
    # Inside a loop, inputs without a sequence axis are read whole at every step and
    # their gradients summed over the steps.
    rng = np.random.RandomState(13)
    x = seq_input(2)
    c = C.input_variable(2, dtype=np.float64, name='c')
    w = C.Parameter((2,), init=rng.standard_normal(2), dtype=np.float64, name='w')
    h = loop(lambda h, x: C.tanh(h * w + x + c), x, init=np.zeros(2))
    data = random_sequences(rng, LENGTHS, (2,))
    cs = rng.standard_normal((3, 2))
    got = as_sequences(h.eval({x: data, c: cs}))
    for b, (g, s) in enumerate(zip(got, data)):
        state, ref = np.zeros(2), []
        for t in range(len(s)):
            state = np.tanh(state * w.value + s[t] + cs[b])
            ref.append(state)
        np.testing.assert_allclose(g, np.array(ref), rtol=1e-12)
    seq_gradcheck(h, {x: data, c: cs})


def test_continued_sequences_need_a_previous_piece():
    # Truncated BPTT (more in test_loop_state.py): a continued sequence starts from
    # the previous call's state at its position; without one it is a ValueError.
    x = seq_input(2)
    y = C.sequence.past_value(x)
    data = [np.ones((2, 2)), np.ones((1, 2))]
    v = C.Value.create(x, data, seq_starts=[True, False])
    with pytest.raises(ValueError, match="previous minibatch"):
        y.eval({x: v})
    y.eval({x: [np.ones((1, 2)), 3 * np.ones((4, 2))]})
    np.testing.assert_allclose(as_sequences(y.eval({x: v}))[1], [[3, 3]])
    np.testing.assert_allclose(as_sequences(y.eval({x: C.Value.create(x, data, seq_starts=[True, True])}))[0],
                               [[0, 0], [1, 1]])


def test_a_loop_that_reads_no_outside_data_keeps_unknown_axes():
    # past_value of its own output and constants only: nothing gives the loop dynamic
    # axes, so they stay unknown (as in CNTK) instead of being guessed batch-only.
    state = C.placeholder()
    z = C.abs(C.sequence.past_value(state))
    z.replace_placeholders({state: z.output})
    assert [a.name for a in z.output.dynamic_axes] == ['UnknownAxes']
    # A loop that does read an input learns the input's axes.
    x = C.sequence.input_variable(3)
    h = C.placeholder()
    r = C.sequence.past_value(h) + x
    r.replace_placeholders({h: r.output})
    assert len(r.output.dynamic_axes) == 2 and r.output.shape == (3,)
