"""Two independent fused recurrences next to each other in a plan (a bidirectional layer's
directions) run side by side, one per thread (set_recurrence_concurrency): the same
outputs, gradients and trained parameters as one after the other, their profiler events
overlap in time, and a recurrence reading the other's output runs after it."""
import tempfile

import numpy as np
import pytest

import cntk as C
from cntk.layers import LSTM, GRU, Dense, Recurrence

TOL = dict(rtol=1e-5, atol=1e-6)


@pytest.fixture(autouse=True)
def _restore_switches():
    before = C._cntk.recurrence_concurrency(), C._cntk.rnn_fusion_enabled()
    yield
    C._cntk.set_recurrence_concurrency(before[0])
    C._cntk.set_rnn_fusion(before[1])


def bidirectional(cell=LSTM, dim=6, hidden=32, seed=0):
    x = C.sequence.input_variable(dim, name='x')
    fwd = Recurrence(cell(hidden))(x)
    bwd = Recurrence(cell(hidden), go_backwards=True)(x)
    z = C.splice(fwd, bwd)
    rng = np.random.RandomState(seed)
    for p in z.parameters:
        p.value = (rng.standard_normal(p.shape) * 0.3).astype(np.float32)
    return x, z


def data(seed=1, lengths=(40, 7, 25), dim=6):
    rng = np.random.RandomState(seed)
    return [rng.standard_normal((n, dim)).astype(np.float32) for n in lengths]


def forward_backward(x, z, xs, together):
    C._cntk.set_recurrence_concurrency(together)
    state, outs = z.forward({x: xs}, [z.output], keep_for_backward=[z.output])
    rng = np.random.RandomState(5)
    root = [rng.standard_normal(y.shape).astype(np.float32) for y in outs[z.output]]
    wrt = [x] + list(z.parameters)
    grads = z.backward(state, {z.output: root}, wrt)
    return outs[z.output], [grads[w] for w in wrt]


@pytest.mark.onednn('runs the fused RNN steps oneDNN computes')
@pytest.mark.parametrize("cell", [LSTM, GRU])
def test_side_by_side_gives_the_same_outputs_and_gradients(cell):
    x, z = bidirectional(cell)
    xs = data()
    y1, g1 = forward_backward(x, z, xs, True)
    y0, g0 = forward_backward(x, z, xs, False)
    for a, b in zip(y1, y0):
        np.testing.assert_allclose(a, b, **TOL)
    for a, b in zip(g1, g0):
        if isinstance(a, list):
            for p, q in zip(a, b):
                np.testing.assert_allclose(p, q, **TOL)
        else:
            np.testing.assert_allclose(a, b, **TOL)


@pytest.mark.onednn('runs the fused RNN steps oneDNN computes')
def test_the_two_directions_overlap_in_time():
    x, z = bidirectional(hidden=64)
    xs = data(lengths=(200, 180, 190, 150))
    C._cntk.set_recurrence_concurrency(True)
    with tempfile.TemporaryDirectory() as d:
        C.debugging.start_profiler(d)
        C.debugging.enable_profiler()
        try:
            forward_backward(x, z, xs, True)
            events = C._cntk.profiler_events()
        finally:
            C.debugging.stop_profiler()
    fused = [e for e in events if e[0].startswith('FusedRecurrence')]
    for kind in ('node.forward', 'node.backward'):
        spans = [(e[2], e[3]) for e in fused if e[1] == kind]
        assert len(spans) == 2, fused
        (a0, a1), (b0, b1) = spans
        assert max(a0, b0) < min(a1, b1), (kind, spans)  # they ran at the same time


@pytest.mark.onednn('runs the fused RNN steps oneDNN computes')
def test_training_gives_the_same_parameters():
    def train(together):
        C._cntk.set_recurrence_concurrency(together)
        x, h = bidirectional(seed=3)
        y = C.input_variable(2)
        z = Dense(2, init=0.1)(C.sequence.last(h))
        loss = C.cross_entropy_with_softmax(z, y)
        tr = C.Trainer(z, (loss, None), [C.adam(z.parameters, C.learning_parameter_schedule(0.01), 0.9)])
        rng = np.random.RandomState(4)
        for step in range(4):
            xs = data(seed=10 + step)
            ys = np.eye(2, dtype=np.float32)[rng.randint(0, 2, len(xs))]
            tr.train_minibatch({x: xs, y: ys})
        return [p.value for p in z.parameters]  # the same order for the same graph
    for a, b in zip(train(True), train(False)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.onednn('runs the fused RNN steps oneDNN computes')
def test_a_recurrence_over_the_others_output_runs_after_it():
    # Stacked: the second recurrence reads the first one's output, so they must not run
    # side by side; the results are those of the switch off.
    x = C.sequence.input_variable(6)
    z = Recurrence(LSTM(8), go_backwards=True)(Recurrence(LSTM(8))(x))
    rng = np.random.RandomState(2)
    for p in z.parameters:
        p.value = (rng.standard_normal(p.shape) * 0.3).astype(np.float32)
    xs = data()
    y1, g1 = forward_backward(x, z, xs, True)
    y0, g0 = forward_backward(x, z, xs, False)
    for a, b in zip(y1, y0):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(g1[0][0], g0[0][0])


def test_the_switch():
    C._cntk.set_recurrence_concurrency(False)
    assert not C._cntk.recurrence_concurrency()
    C._cntk.set_recurrence_concurrency(True)
    assert C._cntk.recurrence_concurrency()
