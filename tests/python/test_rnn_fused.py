"""Recurrence(LSTM/GRU/RNNStep) on oneDNN's fused RNN primitives against the
step-by-step loop: outputs and every gradient agree to 1e-5 in float32, forward and
go_backwards, over sequences of different lengths; the fused step is really taken
(its profiler event), and whatever oneDNN cannot compute stays on the loop."""
import tempfile

import numpy as np
import pytest

import cntk as C
from cntk.layers import Recurrence, RecurrenceFrom, LSTM, GRU, RNNStep, Dense, Sequential, Embedding
from seq_harness import as_sequences

TOL = dict(rtol=1e-5, atol=1e-5)


@pytest.fixture(autouse=True)
def _restore_fusion():
    before = C._cntk.rnn_fusion_enabled()
    yield
    C._cntk.set_rnn_fusion(before)


def randomize(f, rng, scale=0.5):
    for p in f.parameters:
        p.value = (rng.standard_normal(p.shape) * scale).astype(np.float32)


def run(model, args, fused, seed=0):
    """Outputs and the gradients of sum(w * output) for every argument and parameter."""
    C._cntk.set_rnn_fusion(fused)
    out = model.output
    wrt = list(args.keys()) + list(model.parameters)
    state, outs = model.forward(args, [out], keep_for_backward=[out])
    y = as_sequences(outs[out])
    rng = np.random.RandomState(seed)
    weights = [rng.standard_normal(a.shape).astype(np.float32) for a in y]
    root = weights if isinstance(outs[out], list) else np.stack(weights)
    grads = model.backward(state, {out: root}, wrt)
    return y, {v.uid: grads[v] for v in wrt}


def assert_paths_agree(model, args):
    y_f, g_f = run(model, args, True)
    y_s, g_s = run(model, args, False)
    for a, b in zip(y_f, y_s):
        np.testing.assert_allclose(a, b, **TOL)
    assert g_f.keys() == g_s.keys()
    for k in g_f:
        a, b = g_f[k], g_s[k]
        if isinstance(a, list):
            for p, q in zip(a, b):
                np.testing.assert_allclose(p, q, err_msg=k, **TOL)
        else:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), err_msg=k, **TOL)
    return y_f


def event_names(work):
    with tempfile.TemporaryDirectory() as d:
        C.debugging.start_profiler(d)
        C.debugging.enable_profiler()
        try:
            work()
            events = C._cntk.profiler_events()
        finally:
            C.debugging.stop_profiler()
    return [e[0] for e in events]


def fused_events(model, args):
    """The fused steps' profiler event names of one forward and backward pass."""
    C._cntk.set_rnn_fusion(True)
    names = event_names(lambda: run(model, args, True))
    return [n for n in names if n.startswith('FusedRecurrence')]


def sequences(rng, lengths, dim):
    return [rng.standard_normal((n, dim)).astype(np.float32) for n in lengths]


CELLS = {
    'lstm': lambda n: LSTM(n),
    'gru': lambda n: GRU(n),
    'rnn_sigmoid': lambda n: RNNStep(n),
    'rnn_tanh': lambda n: RNNStep(n, activation=C.tanh),
    'rnn_relu': lambda n: RNNStep(n, activation=C.relu),
}


@pytest.mark.onednn('observes the fused RNN steps oneDNN runs')
@pytest.mark.parametrize("cell", sorted(CELLS))
@pytest.mark.parametrize("backwards", [False, True])
def test_fused_matches_step_by_step(cell, backwards):
    rng = np.random.RandomState(sorted(CELLS).index(cell) * 2 + int(backwards))
    x = C.sequence.input_variable(3, name='x')
    model = Recurrence(CELLS[cell](5), go_backwards=backwards)(x)  # 5: not a multiple of 8
    randomize(model, rng)
    args = {x: sequences(rng, [4, 1, 6, 3], 3)}
    assert_paths_agree(model, args)
    names = fused_events(model, args)
    assert any(not n.endswith('(backward)') for n in names), names
    assert any(n.endswith('(backward)') for n in names), names


@pytest.mark.parametrize("cell", ['lstm', 'gru', 'rnn_tanh'])
def test_batch_of_one_and_equal_lengths(cell):
    rng = np.random.RandomState(3)
    x = C.sequence.input_variable(4)
    model = Recurrence(CELLS[cell](7), go_backwards=True)(x)
    randomize(model, rng)
    assert_paths_agree(model, {x: sequences(rng, [5], 4)})
    assert_paths_agree(model, {x: sequences(rng, [3, 3], 4)})


@pytest.mark.onednn('observes the fused RNN steps oneDNN runs')
def test_fused_matches_numpy_lstm():
    # The fused path on its own against CNTK's LSTM equations (gates i, c~, f, o).
    rng = np.random.RandomState(4)
    x = C.sequence.input_variable(2)
    model = Recurrence(LSTM(3))(x)
    randomize(model, rng)
    p = {q.name: q.value for q in model.parameters}
    data = sequences(rng, [3, 2], 2)
    C._cntk.set_rnn_fusion(True)
    got = as_sequences(model.eval({x: data}))

    def sig(z):
        return 1 / (1 + np.exp(-z))
    for seq, g in zip(data, got):
        h = c = np.zeros(3)
        for t, xt in enumerate(seq):
            z = p['b'] + xt @ p['W'] + h @ p['H']
            i, cc, f, o = (z[k * 3:(k + 1) * 3] for k in range(4))
            c = sig(f) * c + sig(i) * np.tanh(cc)
            h = sig(o) * np.tanh(c)
            np.testing.assert_allclose(g[t], h, rtol=1e-5, atol=1e-6)
    assert fused_events(model, {x: data})


@pytest.mark.onednn('observes the fused RNN steps oneDNN runs')
@pytest.mark.parametrize("backwards", [False, True])
def test_initial_states_and_stacked_layers(backwards):
    # A constant initial state (broadcast to every sequence), a Parameter one whose
    # gradient is summed over the batch, and two layers over an embedding.
    rng = np.random.RandomState(5)
    x = C.sequence.input_variable(6)
    h0 = C.Parameter((4,), init=0.1, name='h0')
    model = Sequential([Dense(5),
                        Recurrence(LSTM(4), go_backwards=backwards, initial_state=(h0, 0.25)),
                        Recurrence(GRU(3), go_backwards=not backwards, initial_state=0.5)])(x)
    randomize(model, rng)
    args = {x: sequences(rng, [2, 5, 3], 6)}
    assert_paths_agree(model, args)
    assert len({n for n in fused_events(model, args) if not n.endswith('(backward)')}) == 2


@pytest.mark.onednn('observes the fused RNN steps oneDNN runs')
def test_recurrence_from_with_per_sequence_state():
    rng = np.random.RandomState(6)
    x = C.sequence.input_variable(3)
    s = C.input_variable(4)
    model = RecurrenceFrom(GRU(4))(s, x)
    randomize(model, rng)
    args = {s: rng.standard_normal((2, 4)).astype(np.float32), x: sequences(rng, [3, 5], 3)}
    assert_paths_agree(model, args)
    assert fused_events(model, args)


def test_training_gives_same_parameters():
    # A few SGD steps on each path end at the same parameters.
    def train(fused):
        C._cntk.set_rnn_fusion(fused)
        rng = np.random.RandomState(7)
        x = C.sequence.input_variable(10, is_sparse=False)
        y = C.sequence.input_variable(3)
        z = Sequential([Recurrence(LSTM(6)), Dense(3)])(x)
        randomize(z, np.random.RandomState(8), 0.3)
        loss = C.cross_entropy_with_softmax(z, y)
        tr = C.Trainer(z, (loss, None), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
        for _ in range(3):
            lens = [4, 2, 6]
            xs = [rng.standard_normal((n, 10)).astype(np.float32) for n in lens]
            ys = [np.eye(3, dtype=np.float32)[rng.randint(0, 3, n)] for n in lens]
            tr.train_minibatch({x: xs, y: ys})
        return [p.value for p in sorted(z.parameters, key=lambda p: p.name + str(p.shape))]
    for a, b in zip(train(True), train(False)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("make", [
    lambda: LSTM(4, use_peepholes=True),
    lambda: LSTM(4, enable_self_stabilization=True),
    lambda: LSTM(4, cell_shape=5),
    lambda: LSTM(4, activation=C.relu),
    lambda: GRU(4, enable_self_stabilization=True),
    lambda: GRU(4, activation=C.relu),
    lambda: RNNStep(4, activation=C.softplus),
])
def test_options_onednn_lacks_stay_on_the_loop(make):
    rng = np.random.RandomState(9)
    x = C.sequence.input_variable(3)
    model = Recurrence(make())(x)
    randomize(model, rng, 0.3)
    args = {x: sequences(rng, [3, 2], 3)}
    assert fused_events(model, args) == []
    assert_paths_agree(model, args)


def test_full_state_and_float64_stay_on_the_loop():
    rng = np.random.RandomState(10)
    x = C.sequence.input_variable(3)
    full = Recurrence(LSTM(4), return_full_state=True)(x)  # the cell state is an output too
    data = sequences(rng, [3, 2], 3)
    C._cntk.set_rnn_fusion(True)
    names = event_names(lambda: full.eval({x: data}))
    assert not any(n.startswith('FusedRecurrence') for n in names) and any(n.startswith('Tanh') for n in names)
    x64 = C.sequence.input_variable(3, dtype=np.float64)
    with C.layers.default_options(dtype=np.float64):
        m64 = Recurrence(LSTM(4))(x64)
    assert fused_events(m64, {x64: [s.astype(np.float64) for s in sequences(rng, [3, 2], 3)]}) == []


@pytest.mark.onednn('observes the fused RNN steps oneDNN runs')
def test_fusion_switch():
    C._cntk.set_rnn_fusion(False)
    assert C._cntk.rnn_fusion_enabled() is False
    x = C.sequence.input_variable(3)
    model = Recurrence(LSTM(4))(x)
    args = {x: sequences(np.random.RandomState(11), [2], 3)}
    names = event_names(lambda: run(model, args, False))
    assert not any(n.startswith('FusedRecurrence') for n in names)
    assert any(n.startswith('Tanh') for n in names)
    assert fused_events(model, args)  # switched back on: the cached plan is recompiled


@pytest.fixture
def lstm_steps_restored():
    before = C._cntk.lstm_steps_enabled()
    yield
    C._cntk.set_lstm_steps(before)


@pytest.mark.onednn('observes the fused RNN steps oneDNN runs')
@pytest.mark.parametrize("steps", [False, True])
@pytest.mark.parametrize("backwards", [False, True])
def test_lstm_on_each_kernel(steps, backwards, lstm_steps_restored):
    # float32 LSTMs run on the step-by-step kernel unless set_lstm_steps(False) keeps
    # oneDNN's primitive; either agrees with the loop, stacked and from initial states.
    C._cntk.set_lstm_steps(steps)
    assert C._cntk.lstm_steps_enabled() is steps
    rng = np.random.RandomState(20 + int(backwards))
    x = C.sequence.input_variable(3)
    model = Sequential([Recurrence(LSTM(5), go_backwards=backwards, initial_state=(0.1, 0.25)),
                        Recurrence(LSTM(4), go_backwards=not backwards)])(x)
    randomize(model, rng)
    args = {x: sequences(rng, [4, 1, 6, 3], 3)}
    assert_paths_agree(model, args)
    names = event_names(lambda: run(model, args, True))
    assert names.count('LSTM steps') == (2 if steps else 0), names
    assert names.count('LSTM steps (backward)') == (2 if steps else 0), names
    assert sum(n.startswith('FusedRecurrence') for n in names) == 4


@pytest.mark.onednn('observes the fused RNN steps oneDNN runs')
@pytest.mark.parametrize("steps", [False, True])
def test_one_hot_input_gives_what_its_dense_form_gives(steps, lstm_steps_restored):
    # A sparse one-hot sequence reaches the fused step as it is (the step-by-step kernel
    # gathers w_x's rows; oneDNN's reads it densified): outputs and weight gradients
    # equal those of the same data fed dense.
    C._cntk.set_lstm_steps(steps)
    C._cntk.set_rnn_fusion(True)
    n, rng = 7, np.random.RandomState(22)
    layer = Recurrence(LSTM(5))
    xs, xd = C.sequence.input_variable(n, is_sparse=True), C.sequence.input_variable(n)
    sparse_model, dense_model = layer(xs), layer(xd)
    randomize(sparse_model, rng)
    ids = [rng.randint(0, n, size=k) for k in (4, 1, 6)]
    y_s, g_s = run(sparse_model, {xs: C.Value.one_hot([list(i) for i in ids], n)}, True)
    y_d, g_d = run(dense_model, {xd: [np.eye(n, dtype=np.float32)[i] for i in ids]}, True)
    for a, b in zip(y_s, y_d):
        np.testing.assert_allclose(a, b, **TOL)
    for p in sparse_model.parameters:
        np.testing.assert_allclose(g_s[p.uid], g_d[p.uid], err_msg=p.name, **TOL)
    names = event_names(lambda: run(sparse_model, {xs: C.Value.one_hot([list(i) for i in ids], n)}, True))
    assert ('LSTM steps' in names) is steps


@pytest.mark.onednn('observes the fused RNN steps oneDNN runs')
def test_saved_model_keeps_cntk_composition(tmp_path):
    rng = np.random.RandomState(12)
    x = C.sequence.input_variable(3)
    model = Recurrence(LSTM(4))(x)
    randomize(model, rng)
    path = str(tmp_path / 'lstm.model')
    model.save(path)
    loaded = C.load_model(path)
    ops = {f.op_name for f in C.logging.graph.depth_first_search(loaded, lambda f: isinstance(f, C.Function))
           if isinstance(f, C.Function)}
    assert 'LSTM' in ops and 'PastValue' in ops and not any('Fused' in o for o in ops)
    data = sequences(rng, [3, 1], 3)
    arg = loaded.arguments[0]
    C._cntk.set_rnn_fusion(True)
    a = as_sequences(loaded.eval({arg: data}))
    C._cntk.set_rnn_fusion(False)
    b = as_sequences(model.eval({x: data}))
    for p, q in zip(a, b):
        np.testing.assert_allclose(p, q, **TOL)
    assert fused_events(loaded, {arg: data})  # the loaded composition is recognized too
