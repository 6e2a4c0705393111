"""Fused recurrences (oneDNN) across minibatches: a sequence cut into pieces (truncated
BPTT) continues from the state its previous piece left, as on the step-by-step loop.
Outputs and gradients of every piece agree with the loop to 1e-5 (LSTM, GRU, RNNStep),
by hand and through a MinibatchSource with truncation_length, which keeps fusion on."""

import numpy as np
import pytest

import cntk as C
from cntk.layers import Recurrence, LSTM, GRU, RNNStep, Dense, Sequential
from seq_harness import as_sequences
from test_rnn_fused import event_names

TOL = dict(rtol=1e-5, atol=1e-5)

CELLS = {
    'lstm': lambda n: LSTM(n),
    'gru': lambda n: GRU(n),
    'rnn_tanh': lambda n: RNNStep(n, activation=C.tanh),
    'rnn_sigmoid': lambda n: RNNStep(n),
}


def randomize(f, rng, scale=0.5):
    for p in f.parameters:
        p.value = (rng.standard_normal(p.shape) * scale).astype(np.float32)


def pieces(seqs, length):
    """Call k holds piece k of every sequence that still has one (as a reader with
    truncation_length cuts them): a continued piece had the full length before."""
    calls, k = [], 0
    while any(len(s) > k * length for s in seqs):
        calls.append(([s[k * length:(k + 1) * length] for s in seqs if len(s) > k * length],
                      [k == 0] * sum(len(s) > k * length for s in seqs)))
        k += 1
    return calls


def fused_event_count(work):
    return sum(1 for e in event_names(work) if e.startswith('FusedRecurrence') and not e.endswith('(backward)'))


def run_pieces(model, x, calls, fused, seed=0):
    """Per call: the outputs and the gradients of sum(w * output) for x and every parameter."""
    C.cntk_py.set_rnn_fusion(fused)
    out = model.output
    rng = np.random.RandomState(seed)
    results = []
    for seqs, starts in calls:
        value = C.Value.create(x, seqs, seq_starts=starts)
        wrt = [x] + list(model.parameters)
        state, outs = model.forward({x: value}, [out], keep_for_backward=[out])
        y = as_sequences(outs[out])
        w = [rng.standard_normal(a.shape).astype(np.float32) for a in y]
        grads = model.backward(state, {out: w}, wrt)
        results.append((y, {v.uid: grads[v] for v in wrt}))
    return results


def assert_results_agree(a, b):
    assert len(a) == len(b)
    for (ya, ga), (yb, gb) in zip(a, b):
        for p, q in zip(ya, yb):
            np.testing.assert_allclose(p, q, **TOL)
        assert ga.keys() == gb.keys()
        for k in ga:
            if isinstance(ga[k], list):
                for p, q in zip(ga[k], gb[k]):
                    np.testing.assert_allclose(np.asarray(p), np.asarray(q), err_msg=k, **TOL)
            else:
                np.testing.assert_allclose(np.asarray(ga[k]), np.asarray(gb[k]), err_msg=k, **TOL)


@pytest.mark.onednn('observes the fused RNN steps oneDNN runs')
@pytest.mark.parametrize("cell", sorted(CELLS))
@pytest.mark.parametrize("length", [1, 3])
def test_fused_pieces_match_step_by_step(cell, length):
    rng = np.random.RandomState(length * 10 + sorted(CELLS).index(cell))
    x = C.sequence.input_variable(3)
    model = Recurrence(CELLS[cell](5), initial_state=0.25)(x)
    randomize(model, rng)
    seqs = [rng.standard_normal((n, 3)).astype(np.float32) for n in (8, 6, 3)]
    calls = pieces(seqs, length)
    fused = run_pieces(model, x, calls, True)
    loop = run_pieces(model, x, calls, False)
    assert_results_agree(fused, loop)
    # The pieces end where the whole sequences do.
    C.cntk_py.set_rnn_fusion(False)
    whole = as_sequences(model.eval({x: seqs}))
    for b, w in enumerate(whole):
        got = np.concatenate([r[0][b] for r in fused if b < len(r[0])])
        np.testing.assert_allclose(got, w, **TOL)
    # and the continuing calls did run fused
    C.cntk_py.set_rnn_fusion(True)
    assert fused_event_count(lambda: run_pieces(model, x, calls, True)) == len(calls)


def test_stacked_layers_and_a_parameter_initial_state():
    # Two fused layers over Dense; the initial state's gradient comes only from the
    # sequences that start in the call, none from those that continue.
    rng = np.random.RandomState(4)
    x = C.sequence.input_variable(4)
    h0 = C.Parameter((5,), init=0.1, name='h0')
    model = Sequential([Dense(6), Recurrence(LSTM(5), initial_state=(h0, 0.3)), Recurrence(GRU(4))])(x)
    randomize(model, rng)
    seqs = [rng.standard_normal((n, 4)).astype(np.float32) for n in (7, 4, 2)]
    calls = pieces(seqs, 2)
    fused = run_pieces(model, x, calls, True)
    assert_results_agree(fused, run_pieces(model, x, calls, False))
    assert all(np.all(np.asarray(g[h0.uid]) == 0) for _, g in fused[1:])  # no sequence starts there
    assert np.any(np.asarray(fused[0][1][h0.uid]) != 0)


def test_new_sequence_in_a_continuing_call_starts_fresh():
    # Position 1 holds a new sequence (start flag True) next to a continued one.
    rng = np.random.RandomState(5)
    x = C.sequence.input_variable(2)
    model = Recurrence(LSTM(3), initial_state=0.5)(x)
    randomize(model, rng)
    a, b, c = (rng.standard_normal((n, 2)).astype(np.float32) for n in (3, 3, 2))
    calls = [([a, b], [True, True]), ([a[::-1], c], [False, True])]
    fused = run_pieces(model, x, calls, True)
    assert_results_agree(fused, run_pieces(model, x, calls, False))
    C.cntk_py.set_rnn_fusion(True)
    alone = as_sequences(model.eval({x: [c]}))[0]
    np.testing.assert_allclose(fused[1][0][1], alone, **TOL)


@pytest.mark.onednn('observes the fused RNN steps oneDNN runs')
def test_lstm_continuing_a_shorter_piece_is_a_clear_error():
    # The fused LSTM keeps the cell state only of the sequences that spanned the whole
    # previous call: a shorter piece that continues (no reader with truncation_length
    # makes one) is refused with a clear error, not computed from a wrong state.
    x = C.sequence.input_variable(2)
    model = Recurrence(LSTM(3))(x)
    C.cntk_py.set_rnn_fusion(True)
    model.eval({x: C.Value.create(x, [np.ones((3, 2), np.float32), np.ones((2, 2), np.float32)],
                                  seq_starts=[True, True])})
    ok = C.Value.create(x, [np.ones((2, 2), np.float32)], seq_starts=[False])  # position 0 had all 3 steps
    model.eval({x: ok})
    model.eval({x: C.Value.create(x, [np.ones((3, 2), np.float32), np.ones((2, 2), np.float32)],
                                  seq_starts=[True, True])})
    both = C.Value.create(x, [np.ones((2, 2), np.float32)] * 2, seq_starts=[False, False])
    with pytest.raises(ValueError, match="span the whole minibatch"):
        model.eval({x: both})


def test_gru_continuing_a_shorter_piece_matches_the_loop():
    # GRU and RNNStep have no state but h, which the fused path keeps for every sequence.
    rng = np.random.RandomState(6)
    x = C.sequence.input_variable(2)
    model = Recurrence(GRU(3))(x)
    randomize(model, rng)
    s = [rng.standard_normal((n, 2)).astype(np.float32) for n in (4, 2, 3, 3)]
    calls = [([s[0], s[1]], [True, True]), ([s[2], s[3]], [False, False])]
    assert_results_agree(run_pieces(model, x, calls, True), run_pieces(model, x, calls, False))


def test_go_backwards_over_continued_sequences_is_not_implemented():
    x = C.sequence.input_variable(2)
    model = Recurrence(GRU(3), go_backwards=True)(x)
    C.cntk_py.set_rnn_fusion(True)
    model.eval({x: [np.ones((2, 2), np.float32)]})
    with pytest.raises(NotImplementedError, match="future_value"):
        model.eval({x: C.Value.create(x, [np.ones((2, 2), np.float32)], seq_starts=[False])})


def _ctf(path, n=24, seed=0):
    rng = np.random.RandomState(seed)
    lines = []
    for i in range(n):
        toks = rng.randint(0, 5, size=rng.randint(4, 11))
        for t, tok in enumerate(toks):
            lines.append("%d |x %d:1 |y %d:1" % (i, tok, toks[t - 1] if t > 0 else 0))
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.onednn('observes the fused RNN steps oneDNN runs')
@pytest.mark.parametrize("cell", ['lstm', 'gru', 'rnn_tanh'])
def test_truncated_reader_keeps_fusion_and_matches_the_loop(tmp_path, cell):
    path = _ctf(tmp_path / "seq.ctf")
    streams = C.io.StreamDefs(x=C.io.StreamDef('x', 5, is_sparse=True), y=C.io.StreamDef('y', 5, is_sparse=True))
    C.cntk_py.set_rnn_fusion(True)
    src = C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), truncation_length=3, randomize=False,
                               max_sweeps=1)
    assert C.cntk_py.rnn_fusion_enabled()  # the fused path carries the pieces' state itself
    x = C.sequence.input_variable(5, is_sparse=True)
    label = C.sequence.input_variable(5, is_sparse=True)
    z = Sequential([Recurrence(CELLS[cell](6)), Dense(5)])(x)
    randomize(z, np.random.RandomState(7), 0.4)
    loss = C.cross_entropy_with_softmax(z, label)
    mbs = []
    while True:
        mb = src.next_minibatch(9)
        if not mb:
            break
        mbs.append(mb)
    assert len(mbs) > 4
    assert any(np.any(np.asarray(mb[src.streams.x].mask)[:, 0] == 1) for mb in mbs[1:])  # some pieces continue

    def run(fused):
        C.cntk_py.set_rnn_fusion(fused)
        res = []
        for mb in mbs:
            state, outs = loss.forward({x: mb[src.streams.x], label: mb[src.streams.y]}, [loss.output],
                                       keep_for_backward=[loss.output])
            y = as_sequences(outs[loss.output])
            g = loss.backward(state, {loss.output: [np.ones_like(a) for a in y]}, z.parameters)
            res.append((np.concatenate([a.reshape(-1) for a in y]), {p.uid: np.asarray(g[p]) for p in z.parameters}))
        return res
    fused, loop = run(True), run(False)
    for (la, ga), (lb, gb) in zip(fused, loop):
        np.testing.assert_allclose(la, lb, **TOL)
        for k in ga:
            np.testing.assert_allclose(ga[k], gb[k], err_msg=k, **TOL)
    C.cntk_py.set_rnn_fusion(True)
    assert fused_event_count(lambda: run(True)) == len(mbs)


@pytest.mark.parametrize("cell", ['lstm', 'gru'])
def test_weights_converted_again_after_a_parameter_changes(cell):
    # The fused step keeps its weights in oneDNN's layout between calls: a new value
    # (set_value, a learner's update) must reach the next call.
    rng = np.random.RandomState(8)
    x = C.sequence.input_variable(3)
    model = Recurrence(CELLS[cell](4))(x)
    data = [rng.standard_normal((n, 3)).astype(np.float32) for n in (3, 2)]

    def both():
        C.cntk_py.set_rnn_fusion(True)
        fused = as_sequences(model.eval({x: data}))
        C.cntk_py.set_rnn_fusion(False)
        loop = as_sequences(model.eval({x: data}))
        for a, b in zip(fused, loop):
            np.testing.assert_allclose(a, b, **TOL)
        return fused[0]
    randomize(model, rng)
    first = both()
    for p in model.parameters:  # each parameter in turn
        p.value = p.value * 0.5 + 0.1
        changed = both()
        assert not np.allclose(changed, first)
        first = changed
    learner = C.sgd(model.parameters, C.learning_parameter_schedule(0.5))
    C.cntk_py.set_rnn_fusion(True)
    state, outs = model.forward({x: data}, [model.output], keep_for_backward=[model.output])
    grads = model.backward(state, {model.output: [np.ones_like(a) for a in as_sequences(outs[model.output])]},
                           model.parameters)
    learner.update({p: grads[p] for p in model.parameters}, 5)
    assert not np.allclose(both(), first)


def test_weights_converted_again_after_an_in_place_write_to_a_parameters_data():
    # p.data aliases the parameter's storage: copy_from / fill write the value in place without
    # set_value, and the fused step must still see the new weights.
    rng = np.random.RandomState(9)
    x = C.sequence.input_variable(3)
    model = Recurrence(CELLS['lstm'](4))(x)
    data = [rng.standard_normal((n, 3)).astype(np.float32) for n in (3, 2)]
    randomize(model, rng)
    C.cntk_py.set_rnn_fusion(True)
    before = as_sequences(model.eval({x: data}))[0]
    W = [p for p in model.parameters if p.name == 'W'][0]
    W.data.copy_from(C.NDArrayView.from_dense(W.value * -0.5))
    after = as_sequences(model.eval({x: data}))[0]
    C.cntk_py.set_rnn_fusion(False)
    loop = as_sequences(model.eval({x: data}))[0]
    np.testing.assert_allclose(after, loop, **TOL)
    assert not np.allclose(after, before)
    C.cntk_py.set_rnn_fusion(True)
    W.data.fill(0.25)
    filled = as_sequences(model.eval({x: data}))[0]
    C.cntk_py.set_rnn_fusion(False)
    np.testing.assert_allclose(filled, as_sequences(model.eval({x: data}))[0], **TOL)
