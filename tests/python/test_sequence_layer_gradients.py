"""Float64 gradient checks, with forward values against NumPy, of the sequence layers
that had none over minibatches of sequences of different lengths, forward and backward
in time: Delay, PastValueWindow, Fold, RecurrenceFrom, UnfoldFrom, and BatchNormalization with
map_rank=1 over sequences."""
import numpy as np
import pytest

import cntk as C
from cntk.layers import (BatchNormalization, Delay, Fold, PastValueWindow, RecurrenceFrom, UnfoldFrom,
                          default_options)
from seq_harness import as_sequences, random_sequences, seq_gradcheck

LENGTHS = [4, 1, 3, 2]


def seq_input(shape, name='x'):
    return C.sequence.input_variable(shape, dtype=np.float64, name=name)


def shifted(seq, T, init):
    """Delay(T): item t reads item t - T (T < 0: a future item), `init` outside."""
    out = np.empty_like(seq)
    for t in range(len(seq)):
        out[t] = seq[t - T] if 0 <= t - T < len(seq) else init
    return out


# ---- Delay -------------------------------------------------------------------------

@pytest.mark.parametrize("T,init", [(1, 0.0), (-1, 0.0), (2, 0.5), (-2, -1.5), (0, 0.0)])
def test_delay_layer_forward_and_gradient(T, init):
    rng = np.random.RandomState(50 + T)
    x = seq_input(3)
    y = Delay(T, initial_state=init)(C.tanh(x))
    data = random_sequences(rng, LENGTHS, (3,))
    for got, seq in zip(as_sequences(y.eval({x: data})), data):
        np.testing.assert_allclose(got, shifted(np.tanh(seq), T, init), rtol=1e-12)
    seq_gradcheck(y, {x: data})


def test_delay_layer_with_a_learnable_initial_state():
    rng = np.random.RandomState(56)
    x = seq_input(2)
    init = C.Parameter((2,), init=rng.standard_normal(2), dtype=np.float64, name='init')
    for T in (1, -2):
        y = Delay(T, initial_state=init)(x) * 2.0
        seq_gradcheck(y, {x: random_sequences(rng, LENGTHS, (2,))})


# ---- PastValueWindow ------------------------------------------------------------------

@pytest.mark.parametrize("go_backwards", [False, True])
def test_past_value_window_forward_and_gradient(go_backwards):
    rng = np.random.RandomState(57)
    x = seq_input(2)
    value, valid = PastValueWindow(3, axis=-2, go_backwards=go_backwards)(x).outputs
    data = random_sequences(rng, LENGTHS, (2,))
    out = C.combine([value, valid]).eval({x: data})
    values, valids = np.asarray(out[value]), np.asarray(out[valid])
    assert values.shape == (len(data), 3, 2) and valids.shape == (len(data), 3, 1)
    for b, seq in enumerate(data):
        # Item k of the window: the k-th last item (k-th first with go_backwards), zero
        # and invalid where the sequence is shorter.
        for k in range(3):
            have = k < len(seq)
            want = (seq[k] if go_backwards else seq[len(seq) - 1 - k]) if have else np.zeros(2)
            np.testing.assert_allclose(values[b, k], want, rtol=1e-12)
            assert valids[b, k, 0] == (1.0 if have else 0.0)
    seq_gradcheck(C.combine([value]) * C.constant(np.linspace(1, 2, 6).reshape(3, 2)), {x: data})


# ---- Fold ------------------------------------------------------------------------------

@pytest.mark.parametrize("go_backwards", [False, True])
def test_fold_forward_and_gradient(go_backwards):
    rng = np.random.RandomState(58)
    x = seq_input(3)
    W = C.Parameter((3, 3), init=rng.uniform(-0.5, 0.5, (3, 3)), dtype=np.float64, name='W')
    b = C.Parameter((3,), init=rng.uniform(-0.5, 0.5, 3), dtype=np.float64, name='b')
    h0 = 0.25
    folded = Fold(lambda h, x: C.tanh(C.times(h, W) + b + x), go_backwards=go_backwards, initial_state=h0)(x)
    data = random_sequences(rng, LENGTHS, (3,))
    got = np.asarray(folded.eval({x: data}))
    for k, seq in enumerate(data):
        state = np.full(3, h0)
        for item in (seq[::-1] if go_backwards else seq):
            state = np.tanh(state @ W.value + b.value + item)
        np.testing.assert_allclose(got[k], state, rtol=1e-12)
    seq_gradcheck(folded, {x: data})


# ---- RecurrenceFrom --------------------------------------------------------------------

@pytest.mark.parametrize("go_backwards", [False, True])
def test_recurrence_from_two_states_forward_and_gradient(go_backwards):
    # Two state variables, their initial states as data (one per sequence), both
    # directions; gradients for the input, the initial states and the parameters.
    rng = np.random.RandomState(59)
    x = seq_input(2)
    h0 = C.input_variable(2, dtype=np.float64, name='h0')
    c0 = C.input_variable(2, dtype=np.float64, name='c0')
    W = C.Parameter((2, 2), init=rng.uniform(-0.6, 0.6, (2, 2)), dtype=np.float64, name='W')

    def step(h, c, x):
        c_new = 0.5 * c + C.tanh(C.times(h, W) + x)
        return C.combine([C.tanh(c_new) * 0.9 + 0.1 * h, c_new])
    model = RecurrenceFrom(step, go_backwards=go_backwards, return_full_state=True)(h0, c0, x)
    h_out, c_out = model.outputs
    data = random_sequences(rng, LENGTHS, (2,))
    H0, C0 = rng.standard_normal((len(data), 2)), rng.standard_normal((len(data), 2))
    out = model.eval({x: data, h0: H0, c0: C0})
    for b, seq in enumerate(data):
        h, c = H0[b], C0[b]
        hs, cs = [None] * len(seq), [None] * len(seq)
        for t in (range(len(seq) - 1, -1, -1) if go_backwards else range(len(seq))):
            c = 0.5 * c + np.tanh(h @ W.value + seq[t])
            h = np.tanh(c) * 0.9 + 0.1 * h
            hs[t], cs[t] = h, c
        # The step's literals (0.5, 0.9, 0.1) meet untyped placeholders when the step
        # is built, so they are float32 constants, as in CNTK.
        np.testing.assert_allclose(as_sequences(out[h_out])[b], np.array(hs), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(as_sequences(out[c_out])[b], np.array(cs), rtol=1e-6, atol=1e-7)
    args = {x: data, h0: H0, c0: C0}
    seq_gradcheck(C.combine([h_out]), args, wrt=[x, h0, c0, W])
    seq_gradcheck(C.combine([c_out]), args, wrt=[x, h0, c0, W])


# ---- BatchNormalization(map_rank=1) over sequences ------------------------------------

def _training_objective(fn, args, weights):
    out = fn.output
    _, outs = fn.forward(args, [out], keep_for_backward=[out])
    return float(sum(np.sum(np.asarray(a) * w) for a, w in zip(as_sequences(outs[out]), weights)))


def test_batch_normalization_map_rank_1_over_sequences_forward_and_gradient():
    # Training mode normalizes each channel (the first axis) over every valid item of
    # every sequence; the padding enters neither the statistics nor the gradients.
    rng = np.random.RandomState(60)
    x = seq_input((2, 3))
    with default_options(dtype=np.float64):
        bn = BatchNormalization(map_rank=1, init_scale=1.5, normalization_time_constant=0)
    f = bn(x)
    bn_scale = f.scale
    bn_bias = f.bias
    bn_scale.value = np.array([1.5, 0.7])
    bn_bias.value = np.array([0.2, -0.4])
    data = random_sequences(rng, LENGTHS, (2, 3))
    data[1] = data[1] * 3 + 2
    out = f.output
    state, outs = f.forward({x: data}, [out], keep_for_backward=[out])
    allx = np.concatenate(data)  # [items, 2, 3]
    mu = allx.mean(axis=(0, 2))
    var = allx.var(axis=(0, 2))
    for got, seq in zip(as_sequences(outs[out]), data):
        want = (bn_scale.value[None, :, None] * (seq - mu[None, :, None]) / np.sqrt(var + 1e-5)[None, :, None]
                + bn_bias.value[None, :, None])
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)
    # Gradients of sum(w * y) against central differences of the training-mode forward.
    weights = [rng.standard_normal(s.shape) for s in data]
    grads = f.backward(state, {out: weights}, [x, bn_scale, bn_bias])
    eps = 1e-6
    args = {x: [s.copy() for s in data]}
    for k, seq in enumerate(data):
        numeric = np.zeros_like(seq)
        for idx in np.ndindex(*seq.shape):
            for sign in (1, -1):
                args[x][k][idx] += sign * eps
                numeric[idx] += sign * _training_objective(f, args, weights) / (2 * eps)
                args[x][k][idx] -= sign * eps
        np.testing.assert_allclose(as_sequences(grads[x])[k], numeric, rtol=1e-5, atol=1e-7)
    for p in (bn_scale, bn_bias):
        base = np.array(p.value)
        numeric = np.zeros_like(base)
        for idx in np.ndindex(*base.shape):
            for sign in (1, -1):
                trial = base.copy()
                trial[idx] += sign * eps
                p.value = trial
                numeric[idx] += sign * _training_objective(f, args, weights) / (2 * eps)
        p.value = base
        np.testing.assert_allclose(np.asarray(grads[p]), numeric, rtol=1e-5, atol=1e-7)


# ---- UnfoldFrom (CNTK 2.7's two-argument form) -----------------------------------------

def test_unfold_from_takes_the_seed_and_the_length_sequence_as_cntk_2_7_does():
    # UnfoldFrom(f) returns a function of (initial_state, dynamic_axes_like): a seed per
    # sequence here, and sequences of different lengths that give the output lengths.
    rng = np.random.RandomState(61)
    x = seq_input(1)
    s0 = C.input_variable(2, dtype=np.float64, name='s0')
    w = C.Parameter((2,), init=np.array([0.6, -0.4]), dtype=np.float64, name='w')
    b = C.Parameter((2,), init=np.array([0.2, 0.3]), dtype=np.float64, name='b')
    gen = UnfoldFrom(lambda s: C.tanh(s * w + b))
    assert [a.name for a in gen.arguments] == ['initial_state', 'dynamic_axes_like']
    y = gen(s0, x)
    data = [np.zeros((n, 1)) for n in (3, 1, 2)]
    seeds = rng.standard_normal((3, 2))
    got = as_sequences(y.eval({x: data, s0: seeds}))
    for g, seq, seed in zip(got, data, seeds):
        state, want = seed, []
        for _ in range(len(seq)):
            state = np.tanh(state * w.value + b.value)
            want.append(state)
        np.testing.assert_allclose(g, np.array(want), rtol=1e-12)
    seq_gradcheck(y, {x: data, s0: seeds}, wrt=[s0, w, b])
    # A constant seed for all sequences, and a generator with an output apart from its state.
    pair = UnfoldFrom(lambda s: (s * 10.0, s + 1.0))(C.Constant(np.array([0.0, 1.0])), x)
    got = as_sequences(pair.eval({x: data}))
    for g, seq in zip(got, data):
        np.testing.assert_allclose(g, [[10.0 * k, 10.0 * (k + 1)] for k in range(len(seq))])


def test_unfold_from_until_predicate_with_a_seed_per_sequence():
    x = seq_input(1)
    s0 = C.input_variable(1, dtype=np.float64, name='s0')
    gen = UnfoldFrom(lambda s: s + 1.0, until_predicate=lambda y: C.greater(y, 2.5), length_increase=2)(s0, x)
    data = [np.zeros((3, 1)), np.zeros((2, 1))]
    got = as_sequences(gen.eval({x: data, s0: np.array([[0.0], [2.0]])}))
    np.testing.assert_allclose(got[0].reshape(-1), [1.0, 2.0, 3.0])  # stops at the first item above 2.5
    np.testing.assert_allclose(got[1].reshape(-1), [3.0])


@pytest.mark.parametrize("go_backwards", [False, True])
def test_fold_of_an_lstm_with_full_state(go_backwards):
    # Fold(LSTM, return_full_state=True) gives the final h and c of each sequence: the
    # last items (first with go_backwards) of the Recurrence's h and c, with gradients.
    from cntk.layers import LSTM, Recurrence
    rng = np.random.RandomState(62)
    x = seq_input(2)
    with default_options(dtype=np.float64):
        cell = LSTM(3, init=C.glorot_uniform(seed=7))
        folded = Fold(cell, go_backwards=go_backwards, return_full_state=True)(x)
        rec = Recurrence(cell, go_backwards=go_backwards, return_full_state=True)(x)
    assert len(folded.outputs) == 2 and all(o.shape == (3,) for o in folded.outputs)
    data = random_sequences(rng, LENGTHS, (2,))
    fo = folded.eval({x: data}, outputs=list(folded.outputs))
    ro = rec.eval({x: data}, outputs=list(rec.outputs))
    for fk, rk in zip(folded.outputs, rec.outputs):
        for b, seq in enumerate(as_sequences(ro[rk])):
            np.testing.assert_allclose(np.asarray(fo[fk])[b], seq[0] if go_backwards else seq[-1], rtol=1e-12)
    seq_gradcheck(C.combine([folded.outputs[0]]), {x: data})
    seq_gradcheck(C.combine([folded.outputs[1]]), {x: data})
