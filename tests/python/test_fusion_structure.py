"""Fusion matches blocks by their wiring, not by names. Step blocks that carry the
names of LSTM/GRU/RNNStep and of their parameters (W, H, H1, b), and hold the same
ops, but are wired otherwise than the cell oneDNN computes, must run step by step
(no FusedRecurrence step) and give the results of NumPy's reference for their own
wiring; a hand-built block wired as the cell fuses whatever it is named. A
convolution chain whose bias is not per channel is not fused either."""

import numpy as np
import pytest

import cntk as C
from cntk.layers import Recurrence
from cntk.layers.blocks import Stabilizer, layer
from seq_harness import as_sequences
from test_rnn_fused import event_names


@pytest.fixture(autouse=True)
def _restore_fusion():
    before = C._cntk.rnn_fusion_enabled()
    yield
    C._cntk.set_rnn_fusion(before)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def params(rng, shapes):
    return {n: C.Parameter(s, init=(rng.standard_normal(s) * 0.4).astype(np.float32), name=n)
            for n, s in shapes.items()}


def gate(t, k, n):
    return C.slice(t, -1, k * n, (k + 1) * n)


def passthrough(on):
    """What the layers put on the previous state: a Stabilizer block that, without
    self-stabilization, passes it through (or nothing)."""
    return Stabilizer(enable_self_stabilization=False) if on else (lambda v: v)


# Step blocks over a hidden size n and input size m. Each `*_block` builds the block
# Function named as the layer would be, and `*_ref` computes one step in NumPy from the
# parameter values (p) for its own wiring.

def lstm_block(p, n, order=(0, 1, 2, 3), name='LSTM', stabilizer=True):
    i_, c_, f_, o_ = order  # where each gate sits in the stacked projection
    s = passthrough(stabilizer)

    def lstm(dh, dc, x):
        dh = s(dh)
        proj = C.plus(C.plus(p['b'], C.times(x, p['W'])), C.times(dh, p['H']))
        it = C.sigmoid(gate(proj, i_, n))
        bit = C.element_times(it, C.tanh(gate(proj, c_, n)))
        ft = C.sigmoid(gate(proj, f_, n))
        ct = C.plus(C.element_times(ft, dc), bit)
        ot = C.sigmoid(gate(proj, o_, n))
        return (C.element_times(ot, C.tanh(ct)), ct)
    return layer(name, lstm)


def lstm_ref(v, n, order=(0, 1, 2, 3)):
    i_, c_, f_, o_ = order

    def step(h, c, x):
        z = v['b'] + x @ v['W'] + h @ v['H']
        g = [z[k * n:(k + 1) * n] for k in range(4)]
        c = sigmoid(g[f_]) * c + sigmoid(g[i_]) * np.tanh(g[c_])
        return sigmoid(g[o_]) * np.tanh(c), c
    return step


def gru_block(p, n, reset_after=False, swap_update=False, name='GRU'):
    s = passthrough(True)

    def gru(dh, x):
        dh = s(dh)
        px = C.plus(p['b'], C.times(x, p['W']))
        ph = C.times(dh, p['H'])
        zt = C.sigmoid(C.plus(gate(px, 0, n), gate(ph, 0, n)))
        rt = C.sigmoid(C.plus(gate(px, 1, n), gate(ph, 1, n)))
        if reset_after:  # the reset gate scales h H1 instead of h
            ct = C.tanh(C.plus(gate(px, 2, n), C.element_times(C.times(dh, p['H1']), rt)))
        else:
            ct = C.tanh(C.plus(gate(px, 2, n), C.times(C.element_times(dh, rt), p['H1'])))
        if swap_update:  # z keeps the candidate instead of the state
            return C.plus(C.element_times(C.minus(1, zt), dh), C.element_times(zt, ct))
        return C.plus(C.element_times(C.minus(1, zt), ct), C.element_times(zt, dh))
    return layer(name, gru)


def gru_ref(v, n, reset_after=False, swap_update=False):
    def step(h, x):
        px = v['b'] + x @ v['W']
        ph = h @ v['H']
        z = sigmoid(px[:n] + ph[:n])
        r = sigmoid(px[n:2 * n] + ph[n:2 * n])
        c = np.tanh(px[2 * n:] + ((h @ v['H1']) * r if reset_after else (h * r) @ v['H1']))
        return (1 - z) * h + z * c if swap_update else (1 - z) * c + z * h
    return step


def rnn_block(p, bias_outside=False, name='RNNStep'):
    s = passthrough(True)

    def rnn(dh, x):
        dh = s(dh)
        if bias_outside:  # the bias after the activation
            return C.plus(C.tanh(C.plus(C.times(x, p['W']), C.times(dh, p['H']))), p['b'])
        return C.tanh(C.plus(C.plus(C.times(x, p['W']), C.times(dh, p['H'])), p['b']))
    return layer(name, rnn)


def rnn_ref(v, bias_outside=False):
    def step(h, x):
        z = x @ v['W'] + h @ v['H']
        return np.tanh(z) + v['b'] if bias_outside else np.tanh(z + v['b'])
    return step


def reference(step, seqs, n, cells):
    """The step function run over each sequence from zero states (h, or h and c)."""
    out = []
    for s in seqs:
        state = [np.zeros(n, np.float64) for _ in range(cells)]
        ys = []
        for x in s.astype(np.float64):
            r = step(*state, x)
            state = list(r) if isinstance(r, tuple) else [r]
            ys.append(state[0])
        out.append(np.array(ys))
    return out


M, N = 3, 4
LSTM_SHAPES = {'W': (M, 4 * N), 'H': (N, 4 * N), 'b': (4 * N,)}
GRU_SHAPES = {'W': (M, 3 * N), 'H': (N, 2 * N), 'H1': (N, N), 'b': (3 * N,)}
RNN_SHAPES = {'W': (M, N), 'H': (N, N), 'b': (N,)}

CASES = {
    # gates in another order than CNTK's (input, cell input, forget, output)
    'lstm_permuted_gates': (LSTM_SHAPES, lambda p: lstm_block(p, N, (2, 1, 0, 3)),
                            lambda v: lstm_ref(v, N, (2, 1, 0, 3)), 2, False),
    'lstm_output_gate_swapped': (LSTM_SHAPES, lambda p: lstm_block(p, N, (0, 3, 2, 1)),
                                 lambda v: lstm_ref(v, N, (0, 3, 2, 1)), 2, False),
    'gru_reset_after': (GRU_SHAPES, lambda p: gru_block(p, N, reset_after=True),
                        lambda v: gru_ref(v, N, reset_after=True), 1, False),
    'gru_update_swapped': (GRU_SHAPES, lambda p: gru_block(p, N, swap_update=True),
                           lambda v: gru_ref(v, N, swap_update=True), 1, False),
    'rnn_bias_outside': (RNN_SHAPES, lambda p: rnn_block(p, bias_outside=True),
                         lambda v: rnn_ref(v, bias_outside=True), 1, False),
    # wired as the cell: fuses, whatever the block is named
    'lstm_standard': (LSTM_SHAPES, lambda p: lstm_block(p, N), lambda v: lstm_ref(v, N), 2, True),
    'lstm_standard_other_name': (LSTM_SHAPES, lambda p: lstm_block(p, N, name='MyCell', stabilizer=False),
                                 lambda v: lstm_ref(v, N), 2, True),
    'gru_standard': (GRU_SHAPES, lambda p: gru_block(p, N), lambda v: gru_ref(v, N), 1, True),
    'rnn_standard': (RNN_SHAPES, lambda p: rnn_block(p), lambda v: rnn_ref(v), 1, True),
}


def run_case(case, fused):
    """The model's outputs for the case's sequences, NumPy's, and whether a fused step ran."""
    shapes, make, ref, cells, _ = CASES[case]
    rng = np.random.RandomState(sorted(CASES).index(case))
    p = params(rng, shapes)
    x = C.sequence.input_variable(M)
    model = Recurrence(make(p))(x)
    seqs = [rng.standard_normal((k, M)).astype(np.float32) for k in (5, 2, 4)]
    expected = reference(ref({k: np.asarray(q.value, np.float64) for k, q in p.items()}), seqs, N, cells)
    C._cntk.set_rnn_fusion(fused)
    got = []
    names = event_names(lambda: got.extend(as_sequences(model.eval({x: seqs}))))
    return got, expected, any(n.startswith('FusedRecurrence') for n in names)


@pytest.mark.parametrize('case', sorted(CASES))
@pytest.mark.parametrize('fused', [True, False])
def test_step_blocks_compute_their_own_wiring(case, fused):
    got, expected, took_fused = run_case(case, fused)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
    if not fused or not CASES[case][4]:
        assert not took_fused


@pytest.mark.onednn('observes the fused RNN steps oneDNN runs')
@pytest.mark.parametrize('case', sorted(c for c in CASES if CASES[c][4]))
def test_cell_wiring_fuses_whatever_its_names(case):
    assert run_case(case, True)[2]


@pytest.mark.parametrize('case', ['lstm_permuted_gates', 'gru_reset_after', 'lstm_standard'])
def test_gradients_match_the_loop(case):
    """Training through a block (fused or not) gives the loop's gradients."""
    shapes, make, _, _, _ = CASES[case]
    rng = np.random.RandomState(7)
    p = params(rng, shapes)
    x = C.sequence.input_variable(M)
    model = Recurrence(make(p))(x)
    seqs = [rng.standard_normal((k, M)).astype(np.float32) for k in (3, 5)]
    wrt = list(model.parameters)
    results = []
    for fused in (True, False):
        C._cntk.set_rnn_fusion(fused)
        state, outs = model.forward({x: seqs}, [model.output], keep_for_backward=[model.output])
        roots = [np.ones_like(a) for a in as_sequences(outs[model.output])]
        results.append(model.backward(state, {model.output: roots}, wrt))
    for q in wrt:
        np.testing.assert_allclose(np.asarray(results[0][q]), np.asarray(results[1][q]), rtol=1e-5, atol=1e-5)


def test_conv_bias_not_per_channel_is_not_fused():
    """A bias that varies over the image (not one value per output channel) stays a Plus."""
    rng = np.random.RandomState(3)
    w = C.parameter(init=(rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), name='W')
    b = C.parameter(init=rng.standard_normal((8, 7, 7)).astype(np.float32), name='b')
    x = C.input_variable((3, 9, 9))
    f = C.relu(C.convolution(w, x, auto_padding=[False, False, False]) + b)
    d = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    before = C._cntk.fused_steps_planned()
    y = np.asarray(f.eval({x: d}))
    assert C._cntk.fused_steps_planned() == before
    wv = np.asarray(w.value, np.float64)
    z = np.zeros((2, 8, 7, 7))
    for i in range(3):
        for j in range(3):
            z += np.einsum('nchw,oc->nohw', d[:, :, i:i + 7, j:j + 7].astype(np.float64), wv[:, :, i, j])
    np.testing.assert_allclose(y, np.maximum(z + np.asarray(b.value), 0), rtol=1e-4, atol=1e-4)
