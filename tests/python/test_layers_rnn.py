"""Recurrent layers: Recurrence, RecurrenceFrom, Fold, Delay, PastValueWindow and the
step functions LSTM, GRU and RNNStep, against NumPy implementations of CNTK's
equations, with float64 gradient checks over sequences of different lengths."""
import numpy as np
import pytest

import cntk as C
from cntk.layers import (Recurrence, RecurrenceFrom, Fold, Delay, PastValueWindow, UnfoldFrom, LSTM, GRU,
                         RNNStep, RNNUnit, Stabilizer, Dense, Sequential)
from cntk.layers import default_options
from seq_harness import as_sequences, random_sequences, seq_gradcheck

LENGTHS = [3, 1, 4]


def seq_input(dim, dtype=np.float64):
    return C.sequence.input_variable(dim, dtype=dtype, name='x')


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def stab(alpha):
    # Stabilizer scale: softplus(4 * alpha) / 4
    return np.log1p(np.exp(4 * alpha)) / 4


def params_by_name(f):
    out = {}
    for p in f.parameters:
        out.setdefault(p.name, []).append(p)
    return out


def randomize(f, rng, alpha=None):
    """Gives every parameter random values (stabilizer scales `alpha`); returns them by name."""
    vals = {}
    for name, ps in params_by_name(f).items():
        for p in ps:
            if name == 'alpha':
                p.value = np.full(p.shape, alpha)
            else:
                p.value = rng.standard_normal(p.shape) * 0.5
        vals[name] = ps[0].value
    return vals


def run_steps(seq, step, state, backwards):
    order = range(len(seq) - 1, -1, -1) if backwards else range(len(seq))
    out = [None] * len(seq)
    for t in order:
        state = step(state, seq[t])
        out[t] = state
    return out


def numpy_lstm(seq, p, dim, peep=False, s=1.0, proj=False, backwards=False, init=0.0):
    cdim = p['b'].shape[0] // 4
    hdim = p['P'].shape[1] if proj else cdim

    def step(state, x):
        dh, dc = state
        z = p['b'] + x @ p['W'] + (s * dh) @ p['H']
        g = [z[k * cdim:(k + 1) * cdim] for k in range(4)]
        dcs = s * dc
        i = sigmoid(g[0] + (p['Ci'] * dcs if peep else 0))
        f = sigmoid(g[2] + (p['Cf'] * dcs if peep else 0))
        c = f * dc + i * np.tanh(g[1])
        o = sigmoid(g[3] + (p['Co'] * (s * c) if peep else 0))
        h = o * np.tanh(c)
        if proj:
            h = (s * h) @ p['P']
        return (h, c)
    states = run_steps(seq, step, (np.full(hdim, init), np.full(cdim, init)), backwards)
    return np.array([st[0] for st in states]), np.array([st[1] for st in states])


def numpy_gru(seq, p, s=1.0, backwards=False, init_state=None):
    d = p['H1'].shape[1]

    def step(dh, x):
        dhs = s * dh
        px = p['b'] + x @ p['W']
        ph = dhs @ p['H']
        z = sigmoid(px[:d] + ph[:d])
        r = sigmoid(px[d:2 * d] + ph[d:2 * d])
        c = np.tanh(px[2 * d:] + (dhs * r) @ p['H1'])
        return (1 - z) * c + z * dhs
    return np.array(run_steps(seq, step, np.zeros(d) if init_state is None else init_state, backwards))


def numpy_rnn_step(seq, p, act=sigmoid, s=1.0, backwards=False):
    d = p['b'].shape[0]
    return np.array(run_steps(seq, lambda dh, x: act(x @ p['W'] + (s * dh) @ p['H'] + p['b']), np.zeros(d),
                              backwards))


# ---- forward against NumPy ---------------------------------------------------------

@pytest.mark.parametrize("peep,stabilize,proj,backwards", [
    (False, False, False, False), (True, False, False, False), (False, True, False, True),
    (True, True, True, False), (False, False, True, True)])
def test_lstm_forward_matches_numpy(peep, stabilize, proj, backwards):
    rng = np.random.RandomState(0)
    x = seq_input(3)
    with default_options(dtype=np.float64):
        cell = LSTM(2, cell_shape=4 if proj else None, use_peepholes=peep, enable_self_stabilization=stabilize)
        model = Recurrence(cell, go_backwards=backwards, return_full_state=True)(x)
    assert [o.shape for o in model.outputs] == [(2,), (4,) if proj else (2,)]
    p = randomize(model, rng, alpha=0.3)
    s = stab(0.3) if stabilize else 1.0
    data = random_sequences(rng, LENGTHS, (3,))
    h, c = model.eval({x: data}).values() if isinstance(model.eval({x: data}), dict) else model.eval({x: data})
    for hs, cs, seq in zip(as_sequences(h), as_sequences(c), data):
        ref_h, ref_c = numpy_lstm(seq, p, 2, peep, s, proj, backwards)
        np.testing.assert_allclose(hs, ref_h, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(cs, ref_c, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("stabilize,backwards", [(False, False), (True, True)])
def test_gru_forward_matches_numpy(stabilize, backwards):
    rng = np.random.RandomState(1)
    x = seq_input(3)
    with default_options(dtype=np.float64):
        model = Recurrence(GRU(2, enable_self_stabilization=stabilize), go_backwards=backwards)(x)
    p = randomize(model, rng, alpha=-0.2)
    s = stab(-0.2) if stabilize else 1.0
    data = random_sequences(rng, LENGTHS, (3,))
    for got, seq in zip(as_sequences(model.eval({x: data})), data):
        np.testing.assert_allclose(got, numpy_gru(seq, p, s, backwards), rtol=1e-9, atol=1e-12)


def test_rnn_step_forward_matches_numpy_default_sigmoid_and_relu():
    rng = np.random.RandomState(2)
    x = seq_input(3)
    with default_options(dtype=np.float64):
        m_sig = Recurrence(RNNStep(4))(x)
        m_relu = Recurrence(RNNStep(4, activation=C.relu), go_backwards=True)(x)
    data = random_sequences(rng, LENGTHS, (3,))
    for model, act, back in ((m_sig, sigmoid, False), (m_relu, lambda z: np.maximum(z, 0), True)):
        p = randomize(model, rng)
        for got, seq in zip(as_sequences(model.eval({x: data})), data):
            np.testing.assert_allclose(got, numpy_rnn_step(seq, p, act, backwards=back), rtol=1e-9, atol=1e-12)


def test_lstm_signature_and_parameter_shapes():
    cell = LSTM(5, cell_shape=7, use_peepholes=True)
    assert len(cell.arguments) == 3 and len(cell.outputs) == 2
    x = C.sequence.input_variable(3)
    r = Recurrence(cell)(x)
    shapes = {p.name: p.shape for p in r.parameters}
    assert shapes['W'] == (3, 28) and shapes['H'] == (5, 28) and shapes['b'] == (28,)
    assert shapes['Ci'] == (7,) and shapes['P'] == (7, 5)
    assert r.shape == (5,)
    with pytest.raises(ValueError):
        LSTM((2, 3))
    assert len(GRU(3).arguments) == 2 and len(RNNStep(3).outputs) == 1


def test_recurrence_initial_state_and_plain_functions():
    x = seq_input(2)
    cum = Recurrence(C.plus, initial_state=C.Constant(np.array([0.0, 0.5])))(x)
    data = [np.array([[3.0, 2.0], [13.0, 42.0], [-100.0, 100.0]])]
    np.testing.assert_allclose(as_sequences(cum.eval({x: data}))[0], [[3, 2.5], [16, 44.5], [-84, 144.5]])
    with pytest.raises(ValueError):
        Recurrence(LSTM(2), initial_state=(0, 0, 0))


def test_recurrence_from_takes_initial_state_as_data():
    rng = np.random.RandomState(3)
    x = seq_input(3)
    h0 = C.input_variable(2, dtype=np.float64, name='h0')
    c0 = C.input_variable(2, dtype=np.float64, name='c0')
    with default_options(dtype=np.float64):
        dec = RecurrenceFrom(LSTM(2))
    model = dec(h0, c0, x)
    p = randomize(model, rng)
    data = random_sequences(rng, LENGTHS, (3,))
    H0, C0 = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    got = as_sequences(model.eval({x: data, h0: H0, c0: C0}))
    for b, (g, seq) in enumerate(zip(got, data)):
        cdim = 2

        def step(state, xt):
            dh, dc = state
            z = p['b'] + xt @ p['W'] + dh @ p['H']
            gg = [z[k * cdim:(k + 1) * cdim] for k in range(4)]
            c = sigmoid(gg[2]) * dc + sigmoid(gg[0]) * np.tanh(gg[1])
            return (sigmoid(gg[3]) * np.tanh(c), c)
        ref = np.array([st[0] for st in run_steps(seq, step, (H0[b], C0[b]), False)])
        np.testing.assert_allclose(g, ref, rtol=1e-9)
    seq_gradcheck(model, {x: data, h0: H0, c0: C0}, wrt=[x, h0, c0])


def test_delay_layer():
    x = seq_input(2)
    data = [np.arange(6.0).reshape(3, 2)]
    trigram = Sequential([(Delay(-1), Delay(0), Delay(1)), C.splice])(x)
    np.testing.assert_allclose(as_sequences(trigram.eval({x: data}))[0],
                               [[2, 3, 0, 1, 0, 0], [4, 5, 2, 3, 0, 1], [0, 0, 4, 5, 2, 3]])
    d = Delay(2, initial_state=9.0)(x)
    np.testing.assert_allclose(as_sequences(d.eval({x: data}))[0], [[9, 9], [9, 9], [0, 1]])


# ---- gradients -------------------------------------------------------------------

@pytest.mark.parametrize("make,backwards", [
    (lambda: LSTM(2), False), (lambda: LSTM(2, use_peepholes=True, enable_self_stabilization=True), True),
    (lambda: LSTM(2, cell_shape=3), False), (lambda: GRU(2), True), (lambda: GRU(2, enable_self_stabilization=True), False),
    (lambda: RNNStep(2, activation=C.tanh), False), (lambda: RNNStep(2), True)])
def test_recurrent_layer_gradients(make, backwards):
    rng = np.random.RandomState(4)
    x = seq_input(2)
    with default_options(dtype=np.float64):
        model = Recurrence(make(), go_backwards=backwards)(x)
    randomize(model, rng, alpha=0.1)
    seq_gradcheck(model, {x: random_sequences(rng, [3, 1, 2], (2,))})


def test_recurrence_of_a_function_that_wraps_a_cell_call():
    # A step function that calls a GRU on its input spliced with a projection of the
    # state (CNTK_204's pattern) starts from the GRU's state shape: the projection's
    # weight infers its input size from the state.
    rng = np.random.RandomState(11)
    x = seq_input(3)
    with default_options(dtype=np.float64):
        cell = GRU(2)
        proj = Dense(1, bias=False)

    @C.Function
    def step(h, xt):
        return cell(h, C.splice(xt, proj(h)))
    z = Recurrence(step)(x)
    assert z.shape == (2,)
    p = randomize(z, rng)
    P = next(q.value for q in z.parameters if q.shape == (2, 1))
    W = next(q.value for q in z.parameters if q.shape == (4, 6))
    data = random_sequences(rng, LENGTHS, (3,))
    for got, seq in zip(as_sequences(z.eval({x: data})), data):
        h, ref = np.zeros(2), []
        for xt in seq:
            xin = np.concatenate([xt, h @ P])
            h = numpy_gru(xin[None], dict(p, W=W), init_state=h)[0]
            ref.append(h)
        np.testing.assert_allclose(got, np.array(ref), rtol=1e-9)
    seq_gradcheck(z, {x: data})


def test_learnable_initial_state_gradient():
    rng = np.random.RandomState(5)
    x = seq_input(2)
    h0 = C.Parameter((2,), init=rng.standard_normal(2), dtype=np.float64, name='h0')
    with default_options(dtype=np.float64):
        model = Recurrence(GRU(2), initial_state=h0)(x)
    randomize(model, rng)
    h0.value = rng.standard_normal(2)
    seq_gradcheck(model, {x: random_sequences(rng, LENGTHS, (2,))}, wrt=[h0])


def test_stabilizer_scale_starts_at_one():
    x = C.input_variable(3, dtype=np.float64)
    with default_options(dtype=np.float64):
        s = Stabilizer()(x)
    data = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(s.eval({x: data}), data, rtol=1e-6)


# ---- layers built on other sequence ops ---------------------------------------------

def _sequence_ops_available():
    try:
        C.sequence.last(C.sequence.input_variable(1))
        return True
    except NotImplementedError:
        return False


needs_seq_ops = pytest.mark.skipif(not _sequence_ops_available(),
                                   reason="needs cntk.sequence.last/first/broadcast_as")


@needs_seq_ops
def test_fold_returns_final_state():
    x = seq_input(2)
    data = [np.array([[1.0, 2], [6, 3], [4, 2], [8, 1], [6, 0]])]
    np.testing.assert_allclose(np.asarray(Fold(C.element_max)(x).eval({x: data})).reshape(-1), [8, 3])
    np.testing.assert_allclose(np.asarray(Fold(C.plus)(x).eval({x: data})).reshape(-1), [25, 8])
    np.testing.assert_allclose(np.asarray(Fold(C.plus, go_backwards=True)(x).eval({x: data})).reshape(-1), [25, 8])


@needs_seq_ops
def test_past_value_window():
    x = seq_input(2)
    value, valid = PastValueWindow(4, axis=-2)(x).outputs
    data = [np.arange(6.0).reshape(3, 2)]
    f = C.combine([value, valid])
    out = f.eval({x: data})
    np.testing.assert_allclose(np.asarray(out[value]).reshape(4, 2), [[4, 5], [2, 3], [0, 1], [0, 0]])
    np.testing.assert_allclose(np.asarray(out[valid]).reshape(4, 1), [[1], [1], [1], [0]])


def numpy_unfold(step, state, n_max, stop=None):
    """The items f(s), f(f(s)), ... (step returns (output, new state)), at most n_max,
    up to and including the first for which stop(output) holds."""
    out = []
    for _ in range(n_max):
        y, state = step(state)
        out.append(y)
        if stop is not None and stop(y):
            break
    return np.array(out)


@needs_seq_ops
@pytest.mark.parametrize("increase", [1, 2, 1.5, 0.5])
def test_unfold_from_length_increase(increase):
    x = seq_input(1)
    gen = UnfoldFrom(lambda s: s * 0.5 + 1.0, length_increase=increase, initial_state=np.array([1.0, 2.0]))(x)
    lengths = [3, 1, 4]
    got = as_sequences(gen.eval({x: [np.zeros((n, 1)) for n in lengths]}))
    for g, n in zip(got, lengths):
        n_out = int(np.ceil(n * increase - 1e-9))  # CNTK's where: the running count rounded up
        ref = numpy_unfold(lambda s: (s * 0.5 + 1.0,) * 2, np.array([1.0, 2.0]), n_out)
        np.testing.assert_allclose(np.asarray(g).reshape(-1, 2), ref.reshape(-1, 2))


@needs_seq_ops
def test_unfold_from_until_predicate():
    x = seq_input(1)
    # outputs 1.5, 1.75, 1.875, ... (first element): the predicate first holds on the third
    until = lambda y: C.greater(C.slice(y, 0, 0, 1), 1.8)  # noqa: E731
    gen = UnfoldFrom(lambda s: s * 0.5 + 1.0, until_predicate=until, length_increase=2,
                     initial_state=np.array([1.0, 2.0]))(x)
    lengths = [3, 1, 2]
    got = as_sequences(gen.eval({x: [np.zeros((n, 1)) for n in lengths]}))
    assert [len(g) for g in got] == [3, 2, 3]
    for g, n in zip(got, lengths):
        ref = numpy_unfold(lambda s: (s * 0.5 + 1.0,) * 2, np.array([1.0, 2.0]), 2 * n, lambda y: y[0] > 1.8)
        np.testing.assert_allclose(g, ref)
    # a generator with (output, new state), and a predicate that never holds: the full length
    pair = UnfoldFrom(lambda s: (s * 10.0, s + 1.0), until_predicate=lambda y: C.greater(y, 25.0),
                      initial_state=np.array([0.0]))(x)
    got = as_sequences(pair.eval({x: [np.zeros((5, 1)), np.zeros((2, 1))]}))
    np.testing.assert_allclose(np.asarray(got[0]).reshape(-1), [0.0, 10.0, 20.0, 30.0])
    np.testing.assert_allclose(np.asarray(got[1]).reshape(-1), [0.0, 10.0])


@needs_seq_ops
def test_unfold_from_until_predicate_gradient():
    rng = np.random.RandomState(9)
    x = seq_input(1)
    w = C.Parameter((2,), init=np.array([0.6, -0.4]), dtype=np.float64, name='w')
    b = C.Parameter((2,), init=np.array([0.9, 0.3]), dtype=np.float64, name='b')
    gen = UnfoldFrom(lambda s: C.tanh(s * w + b), until_predicate=lambda y: C.greater(C.slice(y, 0, 0, 1), 0.8),
                     length_increase=2, initial_state=np.array([0.5, 0.5]))(x)
    data = [np.zeros((n, 1)) for n in (3, 1)]
    got = as_sequences(gen.eval({x: data}))
    for g, n in zip(got, (3, 1)):
        ref = numpy_unfold(lambda s: (np.tanh(s * w.value + b.value),) * 2, np.array([0.5, 0.5]), 2 * n,
                           lambda y: y[0] > 0.8)
        assert len(ref) < 2 * n or n == 1
        np.testing.assert_allclose(g, ref, rtol=1e-12)
    seq_gradcheck(gen, {x: data}, wrt=[w, b], seed=rng.randint(100))


def test_unfold_from_arguments_are_checked():
    with pytest.raises(ValueError, match='length_increase'):
        UnfoldFrom(lambda s: s, length_increase=0)
    with pytest.raises(TypeError, match='until_predicate'):
        UnfoldFrom(lambda s: s, until_predicate=3)
    with pytest.raises(TypeError):
        UnfoldFrom(lambda a, b: a)


def test_rnn_unit_is_the_deprecated_name_of_rnn_step():
    rng = np.random.RandomState(10)
    x = seq_input(3)
    with default_options(dtype=np.float64):
        with pytest.warns(DeprecationWarning, match='RNNStep'):
            unit = RNNUnit(4, init=C.glorot_uniform(seed=3), init_bias=0.25)
        step = RNNStep(4, init=C.glorot_uniform(seed=3), init_bias=0.25)
    a, b = Recurrence(unit)(x), Recurrence(step)(x)
    pa, pb = params_by_name(a), params_by_name(b)
    assert sorted(pa) == sorted(pb) == ['H', 'W', 'b']  # no stabilizer by default
    for n in pa:
        assert pa[n][0].shape == pb[n][0].shape
        np.testing.assert_array_equal(pa[n][0].value, pb[n][0].value)
    data = random_sequences(rng, LENGTHS, (3,))
    for ga, gb, seq in zip(as_sequences(a.eval({x: data})), as_sequences(b.eval({x: data})), data):
        np.testing.assert_allclose(ga, gb, rtol=0, atol=0)
        # sigmoid is the default activation
        np.testing.assert_allclose(ga, numpy_rnn_step(seq, {n: v[0].value for n, v in pa.items()}), rtol=1e-9)
    # its options: default_options_for(RNNUnit, ...), cell_shape, self-stabilization
    from cntk.default_options import default_options_for
    with default_options_for(RNNUnit, activation=C.relu), default_options(dtype=np.float64):
        with pytest.warns(DeprecationWarning):
            relu_unit = Recurrence(RNNUnit(4, enable_self_stabilization=True), go_backwards=True)(x)
    p = randomize(relu_unit, rng, alpha=0.2)
    for g, seq in zip(as_sequences(relu_unit.eval({x: data})), data):
        np.testing.assert_allclose(g, numpy_rnn_step(seq, p, lambda z: np.maximum(z, 0), s=stab(0.2),
                                                     backwards=True), rtol=1e-9)
    with pytest.warns(DeprecationWarning):
        projected = Recurrence(RNNUnit(2, cell_shape=5))(x)
    assert projected.shape == (2,) and params_by_name(projected)['P'][0].shape == (5, 2)
    seq_gradcheck(a, {x: data}, wrt=[x] + pa['W'] + pa['H'] + pa['b'])


# ---- training --------------------------------------------------------------------

def test_sequence_model_trains():
    # Tag each token with the previous token's class: needs the recurrent state.
    rng = np.random.RandomState(6)
    n = 4
    x = C.sequence.input_variable(n, name='x')
    y = C.sequence.input_variable(n, name='y')
    z = Sequential([Recurrence(LSTM(8)), Dense(n)])(x)
    loss = C.cross_entropy_with_softmax(z, y)
    err = C.classification_error(z, y)
    trainer = C.Trainer(z, (loss, err), [C.adam(z.parameters, lr=C.learning_parameter_schedule_per_sample(0.02),
                                                momentum=C.momentum_schedule(0.9))])

    def batch(size):
        xs, ys = [], []
        for _ in range(size):
            k = rng.randint(2, 7)
            tokens = rng.randint(0, n, k)
            prev = np.concatenate([[0], tokens[:-1]])
            xs.append(np.eye(n, dtype=np.float32)[tokens])
            ys.append(np.eye(n, dtype=np.float32)[prev])
        return xs, ys
    losses = []
    for _ in range(60):
        xs, ys = batch(16)
        trainer.train_minibatch({x: xs, y: ys})
        losses.append(trainer.previous_minibatch_loss_average)
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:5])
    xs, ys = batch(32)
    assert trainer.test_minibatch({x: xs, y: ys}) < 0.2


def test_encoder_decoder_with_sequence_initial_state():
    # RecurrenceFrom starts from the last item of an initial state that is a sequence
    # over another axis (CNTK's sequence-to-sequence pattern).
    rng = np.random.RandomState(7)
    en = C.sequence.input_variable(3, dtype=np.float64, sequence_axis=C.Axis('m'), name='en')
    fr = C.sequence.input_variable(2, dtype=np.float64, sequence_axis=C.Axis('n'), name='fr')
    with default_options(dtype=np.float64):
        encoder = Recurrence(LSTM(2), return_full_state=True)
        decoder = RecurrenceFrom(LSTM(2))
    h, c = encoder(en).outputs
    z = decoder(h, c, fr)
    pe, pd = randomize(encoder, rng), randomize(decoder, rng)
    en_data = random_sequences(rng, [2, 4], (3,))
    fr_data = random_sequences(rng, [3, 1], (2,))
    got = as_sequences(z.eval({en: en_data, fr: fr_data}))
    for g, e, f in zip(got, en_data, fr_data):
        eh, ec = numpy_lstm(e, pe, 2)
        cdim = 2

        def step(state, xt):
            dh, dc = state
            zz = pd['b'] + xt @ pd['W'] + dh @ pd['H']
            gg = [zz[k * cdim:(k + 1) * cdim] for k in range(4)]
            cc = sigmoid(gg[2]) * dc + sigmoid(gg[0]) * np.tanh(gg[1])
            return (sigmoid(gg[3]) * np.tanh(cc), cc)
        ref = np.array([st[0] for st in run_steps(f, step, (eh[-1], ec[-1]), False)])
        np.testing.assert_allclose(g, ref, rtol=1e-9)
    seq_gradcheck(z, {en: en_data, fr: fr_data}, wrt=[en, fr])


def test_unfold_from_generates_one_item_per_input_item():
    x = seq_input(1)
    gen = UnfoldFrom(lambda s: s * 0.5 + 1.0, initial_state=np.array([1.0, 2.0]))(x)
    assert gen.shape == (2,)
    got = as_sequences(gen.eval({x: [np.zeros((3, 1)), np.zeros((1, 1))]}))
    state, ref = np.array([1.0, 2.0]), []
    for _ in range(3):
        state = state * 0.5 + 1.0
        ref.append(state)
    np.testing.assert_allclose(got[0], np.array(ref))
    np.testing.assert_allclose(got[1], np.array(ref[:1]))
    # a generator returning (output, new state)
    pair = UnfoldFrom(lambda s: (s * 10.0, s + 1.0), initial_state=np.array([0.0]))(x)
    np.testing.assert_allclose(as_sequences(pair.eval({x: [np.zeros((3, 1))]}))[0], [[0.0], [10.0], [20.0]])


def test_recurrence_options_initial_state_tuple_and_default_direction():
    rng = np.random.RandomState(8)
    x = seq_input(3)
    with default_options(dtype=np.float64):
        cell = LSTM(2)
    h0, c0 = np.array([0.5, -0.5]), np.array([1.0, 2.0])
    fwd = Recurrence(cell, initial_state=(h0, c0))(x)
    assert len(fwd.outputs) == 1  # only h without return_full_state
    p = randomize(fwd, rng)
    data = random_sequences(rng, LENGTHS, (3,))

    def ref(seq, backwards):
        def step(state, xt):
            dh, dc = state
            z = p['b'] + xt @ p['W'] + dh @ p['H']
            g = [z[k * 2:(k + 1) * 2] for k in range(4)]
            c = sigmoid(g[2]) * dc + sigmoid(g[0]) * np.tanh(g[1])
            return (sigmoid(g[3]) * np.tanh(c), c)
        return np.array([st[0] for st in run_steps(seq, step, (h0, c0), backwards)])
    for got, seq in zip(as_sequences(fwd.eval({x: data})), data):
        np.testing.assert_allclose(got, ref(seq, False), rtol=1e-9)
    from cntk.default_options import default_options_for
    with default_options_for(Recurrence, go_backwards=True):
        bwd = Recurrence(cell, initial_state=(h0, c0))(x)
    for got, seq in zip(as_sequences(bwd.eval({x: data})), data):
        np.testing.assert_allclose(got, ref(seq, True), rtol=1e-9)


def test_names_and_signatures_follow_cntk_2_7():
    import importlib
    import inspect
    import os
    tsv = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'reference', 'cntk27_python_api.tsv')
    if not os.path.exists(tsv):
        pytest.skip("the reference list is absent")
    wanted = {('cntk.layers.sequence', n) for n in ('Delay', 'PastValueWindow', 'RecurrenceFrom', 'Recurrence',
                                                    'Fold', 'UnfoldFrom')}
    wanted |= {('cntk.layers.blocks', n) for n in ('LSTM', 'GRU', 'RNNStep', 'RNNUnit', 'Stabilizer')}
    wanted |= {('cntk.layers.models.attention', 'AttentionModel')}
    wanted |= {('cntk.ops.sequence', n) for n in ('past_value', 'future_value', 'delay')}
    seen = set()
    with open(tsv) as f:
        for line in f:
            module, kind, sig = (line.rstrip('\n').split('\t') + ['', '', ''])[:3]
            name = sig.split('(')[0]
            if (module, name) not in wanted:
                continue
            seen.add((module, name))
            expected = [a.strip() for a in sig[sig.index('(') + 1:-1].split(',') if a.strip()]
            got = list(inspect.signature(getattr(importlib.import_module(module), name)).parameters)
            assert got[:len(expected)] == expected, (module, name, got, expected)
    assert seen == wanted
    import cntk.layers as L
    for n in ('Recurrence', 'RecurrenceFrom', 'Fold', 'UnfoldFrom', 'Delay', 'PastValueWindow', 'LSTM', 'GRU',
              'RNNStep', 'RNNUnit', 'AttentionModel'):
        assert hasattr(L, n)


# ---- step functions that delay their own input ----------------------------------
# The step function's past_value/future_value of x is not part of the loop; it must
# build when the Recurrence is made with its input still a placeholder.

def delayed(seq, offset, init):
    """x delayed by `offset` steps within one sequence (negative: from the future)."""
    out = np.empty_like(seq)
    for t in range(len(seq)):
        s = t - offset
        out[t] = seq[s] if 0 <= s < len(seq) else init
    return out


def numpy_delay_step_recurrence(seq, step, init, offset, x_init=0.0, backwards=False):
    dx = delayed(seq, offset, x_init)
    return np.array(run_steps(list(dx), step, np.broadcast_to(init, seq.shape[1:]), backwards))


def check_delay_step_model(model, x, data, step_np, init, offset, x_init=0.0, backwards=False):
    got = as_sequences(model.eval({x: data}))
    assert len(got) == len(data)
    for g, seq in zip(got, data):
        np.testing.assert_allclose(g, numpy_delay_step_recurrence(seq, step_np, init, offset, x_init, backwards),
                                   rtol=1e-9, atol=1e-12)


def test_recurrence_of_a_step_that_takes_past_value_of_its_input():
    # The model of the bug report: it builds, and its output follows the recurrence.
    rng = np.random.RandomState(20)
    x = seq_input(2)
    data = random_sequences(rng, LENGTHS, (2,))
    model = Recurrence(lambda h, x: C.element_times(h, C.sequence.past_value(x)))(x)
    assert model.shape == (2,) and len(model.dynamic_axes) == 2
    check_delay_step_model(model, x, data, lambda h, d: h * d, 0.0, 1)
    # With non-zero initial states the values are not all zero.
    model = Recurrence(lambda h, x: C.element_times(h, C.sequence.past_value(x, initial_state=1.0)),
                       initial_state=1.5)(x)
    got = as_sequences(model.eval({x: data}))
    assert abs(got[0][1, 0]) > 0
    check_delay_step_model(model, x, data, lambda h, d: h * d, 1.5, 1, x_init=1.0)


def test_recurrence_of_delayed_input_saves_loads_and_clones(tmp_path):
    rng = np.random.RandomState(24)
    x = seq_input(2)
    data = random_sequences(rng, LENGTHS, (2,))
    model = Recurrence(lambda h, x: C.element_times(h, C.sequence.past_value(x, initial_state=1.0)) + 0.5,
                       initial_state=1.5)(x)
    expected = as_sequences(model.eval({x: data}))
    path = str(tmp_path / 'delayed_input.model')
    model.save(path)
    copies = [C.load_model(path)] + [model.clone(m) for m in (C.CloneMethod.clone, C.CloneMethod.freeze)]
    for copy in copies:
        assert copy.shape == (2,) and len(copy.dynamic_axes) == 2
        for g, e in zip(as_sequences(copy.eval({copy.arguments[0]: data})), expected):
            np.testing.assert_allclose(g, e, rtol=1e-12)


@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("delay, offset", [(lambda x: C.sequence.past_value(x, initial_state=0.5), 1),
                                           (lambda x: C.sequence.future_value(x, initial_state=0.5), -1),
                                           (lambda x: C.sequence.past_value(x, initial_state=0.5, time_step=2), 2),
                                           (lambda x: C.sequence.delay(x, initial_state=0.5, time_step=-2), -2)])
def test_recurrence_of_delayed_input_forward_and_gradient(delay, offset, go_backwards):
    rng = np.random.RandomState(21)
    x = seq_input(3)
    w = C.Parameter((3,), init=rng.standard_normal(3), dtype=np.float64, name='w')
    h0 = C.Parameter((3,), init=rng.standard_normal(3), dtype=np.float64, name='h0')

    def step(h, x):
        d = delay(x)  # the step reads x only through its delay
        return C.tanh(C.element_times(h, d) + C.element_times(w, d))
    model = Recurrence(step, go_backwards=go_backwards, initial_state=h0)(x)
    data = random_sequences(rng, LENGTHS, (3,))
    for g, seq in zip(as_sequences(model.eval({x: data})), data):
        dx = delayed(seq, offset, 0.5)
        order = range(len(seq) - 1, -1, -1) if go_backwards else range(len(seq))
        h, ref = h0.value, [None] * len(seq)
        for t in order:
            h = np.tanh(h * dx[t] + w.value * dx[t])
            ref[t] = h
        np.testing.assert_allclose(g, np.array(ref), rtol=1e-9, atol=1e-12)
    seq_gradcheck(model, {x: data}, wrt=[x, w, h0])


def test_recurrence_from_with_delayed_input_and_constant_or_sequence_initial_state():
    rng = np.random.RandomState(22)
    x = seq_input(2)
    data = random_sequences(rng, LENGTHS, (2,))

    def step(h, x):
        d = C.sequence.past_value(x, initial_state=1.0)
        return C.tanh(C.element_times(h, d) + d)

    def step_np(h, d):
        return np.tanh(h * d + d)

    def reference(seq, h):
        dx = delayed(seq, 1, 1.0)
        out = []
        for t in range(len(seq)):
            h = step_np(h, dx[t])
            out.append(h)
        return np.array(out)
    rec = RecurrenceFrom(step)
    # A constant initial state bound while the input is still a placeholder.
    ph = C.placeholder(name='later')
    model = rec(C.Constant(np.array([0.3, -0.7]), dtype=np.float64), ph)
    model = model.replace_placeholders({ph: x})
    for g, seq in zip(as_sequences(model.eval({x: data})), data):
        np.testing.assert_allclose(g, reference(seq, np.array([0.3, -0.7])), rtol=1e-9)
    seq_gradcheck(model, {x: data}, wrt=[x])
    # An initial state per sequence, and one that is a sequence (its last item is used).
    s0 = C.input_variable(2, dtype=np.float64, name='s0')
    init = rng.standard_normal((len(LENGTHS), 2))
    model = rec(s0, x)
    for g, seq, i in zip(as_sequences(model.eval({x: data, s0: init})), data, init):
        np.testing.assert_allclose(g, reference(seq, i), rtol=1e-9)
    s = C.sequence.input_variable(2, dtype=np.float64, sequence_axis=C.Axis('other_axis'), name='s')
    init_seqs = random_sequences(rng, [2, 1, 3], (2,))
    model = rec(s, x)
    for g, seq, i in zip(as_sequences(model.eval({x: data, s: init_seqs})), data, init_seqs):
        np.testing.assert_allclose(g, reference(seq, i[-1]), rtol=1e-9)
    seq_gradcheck(model, {x: data, s: init_seqs}, wrt=[x, s])


def test_recurrence_of_delayed_input_inside_sequential_after_embedding():
    rng = np.random.RandomState(23)
    x = seq_input(4)
    with default_options(dtype=np.float64):
        model = Sequential([C.layers.Embedding(3),
                            Recurrence(lambda h, x: C.tanh(C.element_times(h, C.sequence.past_value(x)) + 0.5),
                                       initial_state=0.25)])
    z = model(x)
    assert z.shape == (3,) and len(z.dynamic_axes) == 2
    E = rng.standard_normal((4, 3)) * 0.5
    z.parameters[0].value = E
    data = random_sequences(rng, LENGTHS, (4,))
    for g, seq in zip(as_sequences(z.eval({x: data})), data):
        e = seq @ E
        dx = delayed(e, 1, 0.0)
        h, ref = np.full(3, 0.25), []
        for t in range(len(e)):
            h = np.tanh(h * dx[t] + 0.5)
            ref.append(h)
        np.testing.assert_allclose(g, np.array(ref), rtol=1e-9)
    seq_gradcheck(z, {x: data})
