"""Recurrent loops across minibatches (truncated BPTT: a sequence cut into pieces
continues from the state its previous piece left) and the lifetime of graphs with
loops (freed with their last handle, although their delays read back into them)."""
import gc

import numpy as np
import pytest

import cntk as C
from cntk.layers import Recurrence, LSTM, GRU, Dense, Sequential


def _live():
    gc.collect()
    return C.cntk_py.live_functions()


# ---- graphs with loops are freed ------------------------------------------------

def test_recurrence_model_is_freed_with_its_last_handle():
    before = _live()
    x = C.sequence.input_variable(3)
    model = Sequential([Recurrence(LSTM(4)), Recurrence(GRU(3), go_backwards=True), Dense(2)])(x)
    data = [np.ones((5, 3), np.float32), np.ones((2, 3), np.float32)]
    model.eval({x: data})
    copy = model.clone(C.CloneMethod.clone)
    copy.eval({copy.arguments[0]: data})
    loss = C.reduce_sum(model)
    loss.grad({x: data}, wrt=loss.parameters)
    assert _live() > before
    del model, copy, loss
    assert _live() == before


def test_loop_kept_alive_by_what_is_built_on_it():
    # The step returns (c, h) and only h is kept: c's function is reached from h only
    # through the loop's back edge, yet the loop must keep working.
    before = _live()
    x = C.sequence.input_variable(1, dtype=np.float64)

    def step(h, c, x):
        c_new = C.sigmoid(x + h)
        h_new = C.tanh(x + c)
        return c_new, h_new

    ph_c = C.placeholder(name='c')
    ph_h = C.placeholder(name='h')
    prev_h = C.sequence.past_value(ph_h, initial_state=0.25)
    prev_c = C.sequence.past_value(ph_c, initial_state=0.25)
    both = C.combine(list(step(prev_h, prev_c, x)))
    both.replace_placeholders({ph_c: both.outputs[0], ph_h: both.outputs[1]})
    only_h = C.combine([both.outputs[1]])
    del both, prev_h, prev_c
    xs = np.array([[0.3], [-0.7], [1.1], [0.2]])
    y = np.asarray(only_h.eval({x: [xs]})).reshape(-1)
    h, c = 0.25, 0.25
    for t in range(4):
        h, c = np.tanh(xs[t, 0] + c), 1 / (1 + np.exp(-(xs[t, 0] + h)))
        assert y[t] == pytest.approx(h, abs=1e-12)
    del only_h, x
    assert _live() == before


def test_loop_read_by_a_function_made_before_the_loop_was_closed():
    before = _live()
    x = C.sequence.input_variable(1, dtype=np.float64)
    ph = C.placeholder()
    prev = C.sequence.past_value(ph, initial_state=0.5)
    out = prev * 10.0  # reads the loop from outside; made before the loop is closed
    state = C.combine([prev + x])
    state.replace_placeholders({ph: state.output})
    del state
    y = out.eval({x: [np.array([[1.0], [2.0], [3.0]])]})
    # s[t] = s[t-1] + x[t] from s[-1] = 0.5; out[t] = 10 * s[t-1]
    np.testing.assert_allclose(np.asarray(y[0]).reshape(-1), [5.0, 15.0, 35.0])
    del out
    # the delay's own function, made before the loop was closed, keeps the loop too
    z = prev.eval({x: [np.array([[1.0], [2.0], [3.0]])]})
    np.testing.assert_allclose(np.asarray(z[0]).reshape(-1), [0.5, 1.5, 3.5])
    del prev, x, y, z
    assert _live() == before


# ---- no allocation per time step -------------------------------------------------

def test_lstm_recurrence_allocates_nothing_per_time_step():
    x = C.sequence.input_variable(4)
    loss = C.reduce_sum(C.sequence.reduce_sum(Recurrence(LSTM(8))(x)))
    params = loss.parameters

    def requests(T):
        data = [np.ones((T, 4), np.float32)] * 3
        loss.grad({x: data}, wrt=params)  # plans and warms up
        before = C.cntk_py.storage_requests()
        loss.grad({x: data}, wrt=params)
        return C.cntk_py.storage_requests() - before

    assert requests(5) == requests(30)


def _broadcast_steps():
    w = C.parameter((4,), init=0.3)
    b = C.parameter((4,), init=0.1)
    s = C.parameter((), init=0.5)
    w24 = C.parameter((2, 4), init=0.2)
    W = C.parameter((4, 4), init=0.1)
    return {
        'times_a_parameter': lambda h, x, c: C.tanh(h * w + x),
        'plus_a_bias': lambda h, x, c: C.tanh(h + b + x),
        'minus_a_parameter': lambda h, x, c: C.sigmoid(h - w + x),
        'times_a_scalar_parameter': lambda h, x, c: C.tanh(h * s + x),
        'divided_by_a_parameter_expression': lambda h, x, c: C.tanh(h / (w * w + 1) + x),
        'times_a_per_sequence_input': lambda h, x, c: C.tanh(h * c + x),
        'state_broadcast_against_a_matrix': lambda h, x, c: C.reduce_sum(C.tanh(C.reshape(h, (1, 4)) * w24),
                                                                         axis=0) + x,
        'dense': lambda h, x, c: C.tanh(C.times(h, W) + b + x),
    }


@pytest.mark.parametrize("name", sorted(_broadcast_steps()))
def test_loop_broadcasting_a_parameter_allocates_nothing_per_time_step(name):
    # Backward of a step that broadcasts a parameter (or a value read whole at every
    # step) sums the step's gradient to its shape: that sum and the full-step
    # temporary before it live in buffers the loop keeps, not in new storage per step.
    step = _broadcast_steps()[name]
    x = C.sequence.input_variable(4)
    c = C.input_variable(4)
    h_fwd = C.placeholder()
    h = step(C.sequence.past_value(h_fwd), x, c)
    h.replace_placeholders({h_fwd: h.output})
    loss = C.reduce_sum(C.sequence.reduce_sum(h))
    params = loss.parameters
    wanted = list(params) + [x]

    def requests(T):
        args = {x: [np.linspace(-1, 1, T * 4, dtype=np.float32).reshape(T, 4)] * 3}
        if c in loss.arguments:
            args[c] = np.full((3, 4), 0.7, np.float32)
        loss.grad(args, wrt=wanted)  # plans and warms up
        before = C.cntk_py.storage_requests()
        loss.grad(args, wrt=wanted)
        return C.cntk_py.storage_requests() - before

    assert requests(5) == requests(30)


def test_loop_broadcast_gradients_stay_right_with_reused_buffers():
    # The buffers reused at every step hold the right sums: float64 finite differences
    # of a loop whose steps broadcast parameters (times, minus, a matrix broadcast).
    from seq_harness import random_sequences, seq_gradcheck
    rng = np.random.RandomState(41)
    x = C.sequence.input_variable(4, dtype=np.float64)
    w = C.parameter((4,), init=rng.uniform(-0.5, 0.5, 4), dtype=np.float64)
    v = C.parameter((4,), init=rng.uniform(-0.5, 0.5, 4), dtype=np.float64)
    w24 = C.parameter((2, 4), init=rng.uniform(-0.5, 0.5, (2, 4)), dtype=np.float64)
    h_fwd = C.placeholder()
    prev = C.sequence.past_value(h_fwd)
    h = C.tanh(prev * w - v + C.reduce_sum(C.reshape(prev, (1, 4)) * w24, axis=0) + x)
    h.replace_placeholders({h_fwd: h.output})
    seq_gradcheck(h, {x: random_sequences(rng, [4, 1, 3], (4,))})


# ---- state across minibatches ------------------------------------------------------

def _pieces(seqs, length):
    """Cuts sequences into pieces of `length` steps, as a reader with truncation_length does:
    call k holds piece k of every sequence that still has one, in order."""
    calls = []
    k = 0
    while True:
        piece = [s[k * length:(k + 1) * length] for s in seqs if len(s) > k * length]
        if not piece:
            return calls
        calls.append((piece, [k == 0] * len(piece)))
        k += 1


def _run_in_pieces(model, x, seqs, length):
    outs = [[] for _ in seqs]
    for piece, starts in _pieces(seqs, length):
        value = C.Value.create(x, piece, seq_starts=starts)
        res = model.eval({x: value})
        for b, r in enumerate(res):
            outs[b].append(np.asarray(r))
    return [np.concatenate(o) for o in outs]


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("length", [1, 2, 3])
def test_recurrence_fed_in_truncated_pieces_matches_whole_sequences(length, fused):
    C.cntk_py.set_rnn_fusion(fused)  # the step-by-step loops and the fused oneDNN path both carry the state
    rng = np.random.RandomState(length)
    x = C.sequence.input_variable(3)
    model = Sequential([Recurrence(LSTM(5)), Recurrence(GRU(4))])(x)
    for p in model.parameters:
        p.value = rng.uniform(-0.5, 0.5, p.shape).astype(np.float32)
    seqs = [rng.randn(n, 3).astype(np.float32) for n in (7, 5, 3)]
    whole = model.eval({x: seqs})
    pieces = _run_in_pieces(model, x, seqs, length)
    for w, p in zip(whole, pieces):
        np.testing.assert_allclose(p, np.asarray(w), rtol=1e-5, atol=1e-6)


def test_pieces_continue_after_a_fused_call():
    """A fused recurrence keeps the state of its sequences for the next call, which
    continues them fused as well; the loop, given the same pieces, agrees."""
    assert C.cntk_py.rnn_fusion_enabled()
    x = C.sequence.input_variable(3)
    model = Recurrence(LSTM(5))(x)
    rng = np.random.RandomState(0)
    seqs = [rng.randn(4, 3).astype(np.float32), rng.randn(2, 3).astype(np.float32)]
    fused = _run_in_pieces(model, x, seqs, 2)
    C.cntk_py.set_rnn_fusion(False)
    loop = _run_in_pieces(model, x, seqs, 2)
    for a, b in zip(fused, loop):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_past_value_outside_a_loop_continues_over_pieces(offset):
    rng = np.random.RandomState(offset)
    x = C.sequence.input_variable(2, dtype=np.float64)
    y = C.sequence.past_value(x, initial_state=0.5, time_step=offset)
    seqs = [rng.randn(n, 2) for n in (6, 4)]
    pieces = _run_in_pieces(y, x, seqs, 2)
    for s, p in zip(seqs, pieces):
        ref = np.array([s[t - offset] if t >= offset else np.full(2, 0.5) for t in range(len(s))])
        np.testing.assert_allclose(p, ref, rtol=0, atol=0)


def test_no_gradient_flows_into_the_previous_minibatch():
    x = C.sequence.input_variable(2, dtype=np.float64, needs_gradient=True)
    init = C.Parameter((2,), init=np.array([0.1, 0.2]), dtype=np.float64)
    y = C.sequence.past_value(x, initial_state=init)
    first = np.array([[1.0, 2.0], [3.0, 4.0]])
    second = np.array([[5.0, 6.0], [7.0, 8.0]])
    g = y.grad({x: C.Value.create(x, [first], seq_starts=[True])}, wrt=[init])
    np.testing.assert_allclose(np.asarray(g), [1.0, 1.0])
    value = C.Value.create(x, [second], seq_starts=[False])
    out = np.asarray(y.eval({x: value})[0])
    np.testing.assert_allclose(out, [[3.0, 4.0], [5.0, 6.0]])  # starts from the last item of `first`
    y.eval({x: C.Value.create(x, [first], seq_starts=[True])})
    g = y.grad({x: value}, wrt=[init, x])
    np.testing.assert_allclose(np.asarray(g[init]), [0.0, 0.0])
    np.testing.assert_allclose(np.asarray(g[x][0]), [[1.0, 1.0], [0.0, 0.0]])


def test_continued_sequence_without_a_previous_piece_is_a_value_error():
    x = C.sequence.input_variable(2)
    y = C.sequence.past_value(x)
    with pytest.raises(ValueError, match="previous minibatch"):
        y.eval({x: C.Value.create(x, [np.ones((2, 2), np.float32)], seq_starts=[False])})
    y.eval({x: [np.ones((3, 2), np.float32)]})  # one sequence
    with pytest.raises(ValueError, match="previous minibatch"):  # now two continue
        y.eval({x: C.Value.create(x, [np.ones((2, 2), np.float32)] * 2, seq_starts=[False, False])})


def test_future_value_over_continued_sequences_is_not_implemented():
    x = C.sequence.input_variable(2)
    y = C.sequence.future_value(x)
    y.eval({x: [np.ones((3, 2), np.float32)]})
    with pytest.raises(NotImplementedError, match="future_value"):
        y.eval({x: C.Value.create(x, [np.ones((2, 2), np.float32)], seq_starts=[False])})


def _copy_task_ctf(path, n=60, seed=0):
    """Sequences of random tokens out of 4 whose label at t is the token at t - 1."""
    rng = np.random.RandomState(seed)
    lines = []
    for i in range(n):
        toks = rng.randint(0, 4, size=rng.randint(5, 12))
        for t, tok in enumerate(toks):
            prev = toks[t - 1] if t > 0 else 0
            lines.append("%d |x %d:1 |y %d:1" % (i, tok, prev))
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_training_with_a_truncated_reader_runs_and_learns(tmp_path):
    path = _copy_task_ctf(tmp_path / "copy.ctf")
    streams = C.io.StreamDefs(x=C.io.StreamDef('x', 4, is_sparse=True), y=C.io.StreamDef('y', 4, is_sparse=True))
    assert C.cntk_py.rnn_fusion_enabled()
    src = C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), truncation_length=3, randomize=False)
    assert C.cntk_py.rnn_fusion_enabled()  # fused recurrences carry the pieces' state too
    x = C.sequence.input_variable(4, is_sparse=True)
    label = C.sequence.input_variable(4, is_sparse=True)
    C.cntk_py.set_fixed_random_seed(1)
    z = Sequential([Recurrence(LSTM(16)), Dense(4)])(x)
    loss = C.cross_entropy_with_softmax(z, label)
    err = C.classification_error(z, label)
    trainer = C.Trainer(z, (loss, err), [C.adam(z.parameters, C.learning_parameter_schedule_per_sample(0.02),
                                                 C.momentum_schedule(0.9))])
    losses = []
    for _ in range(150):
        mb = src.next_minibatch(12)
        trainer.train_minibatch({x: mb[src.streams.x], label: mb[src.streams.y]})
        losses.append(trainer.previous_minibatch_loss_average)
    assert np.all(np.isfinite(losses))
    assert np.mean(losses[-20:]) < 0.5 * np.mean(losses[:20])
