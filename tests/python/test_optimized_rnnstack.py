"""optimized_rnnstack (the OptimizedRNNStack primitive) against a NumPy model of cuDNN's
packed weights and equations, its float64 gradients against central differences, the
float32 path against float64, save/load, and cntk.misc.optimized_rnnstack_converter."""
import os

import numpy as np
import pytest

import cntk as C
from seq_harness import as_sequences, random_sequences, seq_gradcheck
from op_harness import covers_op

GATES = {'lstm': 4, 'gru': 3, 'rnnTanh': 1, 'rnnReLU': 1}
LENGTHS = [4, 1, 3]


# ------------------------------------------------------------------ NumPy model

def weight_count(recurrent_op, input_size, hidden, num_layers, bidirectional):
    g, dirs, n, inp = GATES[recurrent_op], 2 if bidirectional else 1, 0, input_size
    for _ in range(num_layers):
        n += dirs * (g * hidden * (inp + hidden) + 2 * g * hidden)
        inp = dirs * hidden
    return n


def unpack(flat, recurrent_op, input_size, hidden, num_layers, bidirectional):
    """cuDNN's packing as CNTK uses it: every layer's and direction's W [G*H, in] and
    R [G*H, H] first (layer by layer, forward direction first), then every layer's and
    direction's two bias vectors bW, bR [G*H]."""
    g, dirs = GATES[recurrent_op], 2 if bidirectional else 1
    flat = np.asarray(flat).reshape(-1)
    pos, blocks, inp = 0, [], input_size
    for _ in range(num_layers):
        layer = []
        for _ in range(dirs):
            W = flat[pos:pos + g * hidden * inp].reshape(g * hidden, inp)
            pos += W.size
            R = flat[pos:pos + g * hidden * hidden].reshape(g * hidden, hidden)
            pos += R.size
            layer.append([W, R])
        blocks.append(layer)
        inp = dirs * hidden
    for layer in blocks:
        for wr in layer:
            wr.append(flat[pos:pos + g * hidden])
            wr.append(flat[pos + g * hidden:pos + 2 * g * hidden])
            pos += 2 * g * hidden
    assert pos == flat.size
    return blocks


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def run_direction(xs, W, R, bW, bR, recurrent_op, hidden, final=None):
    """One direction over one sequence xs [T, in], left to right; `final` (a list)
    receives the final h and c."""
    h, c, out = np.zeros(hidden), np.zeros(hidden), []
    H = hidden
    for x in xs:
        gx, gr = W @ x + bW, R @ h + bR
        if recurrent_op == 'lstm':
            a = gx + gr
            i, f, gg, o = sigmoid(a[:H]), sigmoid(a[H:2 * H]), np.tanh(a[2 * H:3 * H]), sigmoid(a[3 * H:])
            c = f * c + i * gg
            h = o * np.tanh(c)
        elif recurrent_op == 'gru':
            r = sigmoid(gx[:H] + gr[:H])
            z = sigmoid(gx[H:2 * H] + gr[H:2 * H])
            n = np.tanh(gx[2 * H:] + r * gr[2 * H:])
            h = (1 - z) * n + z * h
        elif recurrent_op == 'rnnTanh':
            h = np.tanh(gx + gr)
        else:
            h = np.maximum(gx + gr, 0)
        out.append(h)
    if final is not None:
        final.extend([h, c])
    return np.array(out).reshape(len(xs), hidden)


def reference(seqs, flat, recurrent_op, hidden, num_layers, bidirectional, finals=None):
    """The outputs per sequence; `finals` (a list) receives per sequence the final
    states h and c, each [num_layers * D, hidden] (row layer * D + direction)."""
    blocks = unpack(flat, recurrent_op, seqs[0].shape[1], hidden, num_layers, bidirectional)
    outs = []
    for xs in seqs:
        inp = np.asarray(xs, dtype=np.float64)
        hs, cs = [], []
        for layer in blocks:
            fwd, bwd = [], []
            parts = [run_direction(inp, *layer[0], recurrent_op, hidden, fwd)]
            hs.append(fwd[0]), cs.append(fwd[1])
            if bidirectional:
                parts.append(run_direction(inp[::-1], *layer[1], recurrent_op, hidden, bwd)[::-1])
                hs.append(bwd[0]), cs.append(bwd[1])
            inp = np.concatenate(parts, axis=1)
        outs.append(inp)
        if finals is not None:
            finals.append((np.array(hs), np.array(cs)))
    return outs


# ------------------------------------------------------------------ helpers

def make_stack(input_size, hidden, num_layers, bidirectional, recurrent_op, dtype=np.float64, seed=0):
    x = C.sequence.input_variable(input_size, dtype=dtype, name='x')
    W = C.parameter((C.InferredDimension, hidden), init=C.uniform(0.5, seed=seed), dtype=dtype, name='W')
    return x, W, C.optimized_rnnstack(x, W, hidden, num_layers, bidirectional, recurrent_op, name='stack')


CONFIGS = [(op, layers, bidi) for op in ('lstm', 'gru', 'rnnTanh', 'rnnReLU')
           for layers, bidi in ((1, False), (2, True))]


# ------------------------------------------------------------------ forward

@covers_op('OptimizedRNNStack', 'forward')
@pytest.mark.parametrize("recurrent_op,num_layers,bidirectional", CONFIGS)
def test_forward_matches_numpy_model(recurrent_op, num_layers, bidirectional):
    rng = np.random.RandomState(1)
    x, W, f = make_stack(3, 5, num_layers, bidirectional, recurrent_op)
    n = weight_count(recurrent_op, 3, 5, num_layers, bidirectional)
    assert W.shape == (n // 5, 5)
    W.value = rng.uniform(-0.6, 0.6, W.shape)
    assert f.output.shape == ((2 if bidirectional else 1) * 5,)
    seqs = random_sequences(rng, LENGTHS, (3,))
    got = as_sequences(f.eval({x: seqs}))
    want = reference(seqs, W.value, recurrent_op, 5, num_layers, bidirectional)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_each_sequence_is_independent_of_the_others():
    # CNTK's own example: the shorter sequence's outputs equal the longer one's first steps.
    x = C.sequence.input_variable(4)
    W = C.parameter((C.InferredDimension, 4), init=0.1)
    f = C.optimized_rnnstack(x, W, 8, 2)
    s = np.arange(20.0, dtype=np.float32).reshape(5, 4) / 20
    t = np.arange(12.0, dtype=np.float32).reshape(3, 4) / 20
    r = f.eval({x: [s, t]})
    assert len(r) == 2 and r[0].shape == (5, 8) and r[1].shape == (3, 8)
    np.testing.assert_allclose(r[0][:3], r[1], rtol=1e-6, atol=1e-7)
    alone = f.eval({x: [t]})
    np.testing.assert_allclose(as_sequences(alone)[0], r[1], rtol=1e-6, atol=1e-7)


def test_batch_without_sequence_axis_is_one_step_sequences():
    rng = np.random.RandomState(2)
    x = C.input_variable(3, dtype=np.float64)
    W = C.parameter((C.InferredDimension, 4), init=C.uniform(0.5, seed=3), dtype=np.float64)
    f = C.optimized_rnnstack(x, W, 4, 1, True, 'gru')
    data = rng.standard_normal((2, 3))
    got = f.eval({x: data})
    want = reference([d[None] for d in data], W.value, 'gru', 4, 1, True)
    np.testing.assert_allclose(np.asarray(got).reshape(2, 8), np.concatenate(want), rtol=1e-10)


# ------------------------------------------------------------------ gradients

@covers_op('OptimizedRNNStack', 'gradient:0', 'gradient:1')
@pytest.mark.parametrize("recurrent_op,num_layers,bidirectional", CONFIGS)
def test_gradients_float64(recurrent_op, num_layers, bidirectional):
    rng = np.random.RandomState(3)
    x, W, f = make_stack(2, 3, num_layers, bidirectional, recurrent_op, seed=4)
    if recurrent_op == 'rnnReLU':  # keep pre-activations away from the kink
        W.value = W.value + 0.05
    seqs = random_sequences(rng, LENGTHS, (2,))
    seq_gradcheck(f, {x: seqs}, wrt=[x, W], rtol=1e-5, atol=1e-8)


def test_gradients_without_sequence_axis():
    rng = np.random.RandomState(12)
    x = C.input_variable(2, dtype=np.float64)
    W = C.parameter((C.InferredDimension, 3), init=C.uniform(0.5, seed=13), dtype=np.float64)
    f = C.optimized_rnnstack(x, W, 3, 2, True, 'lstm')
    seq_gradcheck(f, {x: rng.standard_normal((3, 2))}, wrt=[x, W], rtol=1e-5, atol=1e-8)


# ------------------------------------------------------------------ float32

@pytest.fixture
def rnn_fusion():
    """set_rnn_fusion for one test: float32 on oneDNN's RNN primitives or on the reference loops."""
    before = C.cntk_py.rnn_fusion_enabled()
    yield C.cntk_py.set_rnn_fusion
    C.cntk_py.set_rnn_fusion(before)


@pytest.mark.parametrize("fusion", ['1', '0'])  # oneDNN's RNN primitives; the reference loops
@pytest.mark.parametrize("recurrent_op,num_layers,bidirectional", CONFIGS)
def test_float32_matches_float64(recurrent_op, num_layers, bidirectional, fusion, rnn_fusion):
    rnn_fusion(fusion == '1')
    rng = np.random.RandomState(5)
    x32, W32, f32 = make_stack(6, 7, num_layers, bidirectional, recurrent_op, dtype=np.float32)
    x64, W64, f64 = make_stack(6, 7, num_layers, bidirectional, recurrent_op, dtype=np.float64)
    w = rng.uniform(-0.4, 0.4, W64.shape)
    W64.value = w
    W32.value = w.astype(np.float32)
    seqs = random_sequences(rng, [5, 2, 7, 1], (6,))
    y32 = as_sequences(f32.eval({x32: [s.astype(np.float32) for s in seqs]}))
    y64 = as_sequences(f64.eval({x64: seqs}))
    for a, b in zip(y32, y64):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    # gradients too
    weights = [rng.standard_normal(a.shape) for a in y64]
    grads = {}
    for x, W, f, dt in ((x32, W32, f32, np.float32), (x64, W64, f64, np.float64)):
        state, outs = f.forward({x: [s.astype(dt) for s in seqs]}, [f.output], keep_for_backward=[f.output])
        g = f.backward(state, {f.output: [w_.astype(dt) for w_ in weights]}, [x, W])
        grads[dt] = (as_sequences(g[x]), np.asarray(g[W]))
    for a, b in zip(grads[np.float32][0], grads[np.float64][0]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads[np.float32][1], grads[np.float64][1], rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ return_full_state

@pytest.mark.onednn('observes the fused float32 path on oneDNN')
def test_set_rnn_fusion_switches_the_float32_path(rnn_fusion):
    # oneDNN's primitives and the reference loops agree to rounding, not bit for bit: the
    # bits tell which path ran, and each setting gives its own bits again when switched back.
    rng = np.random.RandomState(9)
    x, W, f = make_stack(6, 16, 2, True, 'lstm', dtype=np.float32)
    W.value = rng.uniform(-0.4, 0.4, W.shape).astype(np.float32)
    seqs = [s.astype(np.float32) for s in random_sequences(rng, [9, 4, 7], (6,))]

    def run(fused):
        rnn_fusion(fused)
        return np.concatenate([np.asarray(y).ravel() for y in as_sequences(f.eval({x: seqs}))])

    fused, loops = run(True), run(False)
    np.testing.assert_allclose(fused, loops, rtol=1e-5, atol=1e-5)
    assert not np.array_equal(fused, loops)
    np.testing.assert_array_equal(run(True), fused)
    np.testing.assert_array_equal(run(False), loops)


def make_full_stack(input_size, hidden, num_layers, bidirectional, recurrent_op, dtype=np.float64, seed=0):
    x = C.sequence.input_variable(input_size, dtype=dtype, name='x')
    W = C.parameter((C.InferredDimension, hidden), init=C.uniform(0.5, seed=seed), dtype=dtype, name='W')
    f = C.optimized_rnnstack(x, W, hidden, num_layers, bidirectional, recurrent_op, name='stack',
                             return_full_state=True)
    return x, W, f


FULL_CONFIGS = CONFIGS + [('lstm', 3, True), ('gru', 2, False)]


@pytest.mark.parametrize("recurrent_op,num_layers,bidirectional", FULL_CONFIGS)
def test_full_state_matches_numpy_model(recurrent_op, num_layers, bidirectional):
    rng = np.random.RandomState(31)
    x, W, f = make_full_stack(3, 4, num_layers, bidirectional, recurrent_op)
    units = num_layers * (2 if bidirectional else 1)
    lstm = recurrent_op == 'lstm'
    assert len(f.outputs) == (3 if lstm else 2)
    for o in f.outputs[1:]:
        assert o.shape == (units, 4)
        assert len(o.dynamic_axes) == 1 and o.dynamic_axes[0] == C.Axis.default_batch_axis()
    W.value = rng.uniform(-0.6, 0.6, W.shape)
    seqs = random_sequences(rng, [4, 1, 6, 3], (3,))
    got = f.eval({x: seqs}, outputs=list(f.outputs))
    finals = []
    want = reference(seqs, W.value, recurrent_op, 4, num_layers, bidirectional, finals)
    for g, w in zip(as_sequences(got[f.outputs[0]]), want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    h = np.asarray(got[f.outputs[1]])
    assert h.shape == (len(seqs), units, 4)
    np.testing.assert_allclose(h, np.array([fh for fh, _ in finals]), rtol=1e-10, atol=1e-12)
    if lstm:
        np.testing.assert_allclose(np.asarray(got[f.outputs[2]]), np.array([fc for _, fc in finals]),
                                   rtol=1e-10, atol=1e-12)
    # The top layer's forward final state is its output at the sequence's last item,
    # the backward one's its output at the first item.
    top = (num_layers - 1) * (2 if bidirectional else 1)
    for b, w in enumerate(want):
        np.testing.assert_allclose(h[b, top], w[-1, :4], rtol=1e-10)
        if bidirectional:
            np.testing.assert_allclose(h[b, top + 1], w[0, 4:], rtol=1e-10)


def _through_states(f, lstm):
    """A scalar per sequence that reads the final states and the outputs."""
    h, c = f.outputs[1], (f.outputs[2] if lstm else None)
    terms = [C.reduce_sum(C.reshape(C.sin(h) * C.constant(np.linspace(0.5, 1.5, h.shape[0] * h.shape[1],
                                                                       dtype=np.float64).reshape(h.shape)),
                                    (-1,)))]
    if lstm:
        terms.append(C.reduce_sum(C.reshape(C.square(c), (-1,))))
    y = C.reduce_sum(f.outputs[0])
    terms.append(C.sequence.reduce_sum(y) if len(f.outputs[0].dynamic_axes) == 2 else y)
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


@pytest.mark.parametrize("recurrent_op,num_layers,bidirectional", FULL_CONFIGS)
def test_full_state_gradients_float64(recurrent_op, num_layers, bidirectional):
    rng = np.random.RandomState(32)
    x, W, f = make_full_stack(2, 3, num_layers, bidirectional, recurrent_op, seed=33)
    if recurrent_op == 'rnnReLU':  # keep pre-activations away from the kink
        W.value = W.value + 0.05
    seqs = random_sequences(rng, [4, 1, 3], (2,))
    lstm = recurrent_op == 'lstm'
    # Each final state on its own, then everything together.
    seq_gradcheck(C.combine([f.outputs[1]]), {x: seqs}, wrt=[x, W], rtol=1e-5, atol=1e-8)
    if lstm:
        seq_gradcheck(C.combine([f.outputs[2]]), {x: seqs}, wrt=[x, W], rtol=1e-5, atol=1e-8)
    seq_gradcheck(_through_states(f, lstm), {x: seqs}, wrt=[x, W], rtol=1e-5, atol=1e-8)


def test_full_state_without_sequence_axis():
    # A batch without a sequence axis is a batch of one-step sequences.
    rng = np.random.RandomState(34)
    x = C.input_variable(2, dtype=np.float64)
    W = C.parameter((C.InferredDimension, 3), init=C.uniform(0.5, seed=35), dtype=np.float64)
    f = C.optimized_rnnstack(x, W, 3, 2, True, 'lstm', return_full_state=True)
    data = rng.standard_normal((4, 2))
    got = f.eval({x: data}, outputs=list(f.outputs))
    finals = []
    want = reference([d[None] for d in data], W.value, 'lstm', 3, 2, True, finals)
    np.testing.assert_allclose(np.asarray(got[f.outputs[0]]), np.array([w[0] for w in want]), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(got[f.outputs[1]]), np.array([fh for fh, _ in finals]), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(got[f.outputs[2]]), np.array([fc for _, fc in finals]), rtol=1e-10)
    seq_gradcheck(_through_states(f, True), {x: data}, wrt=[x, W], rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("fusion", ['1', '0'])
@pytest.mark.parametrize("recurrent_op,num_layers,bidirectional", FULL_CONFIGS)
def test_full_state_float32_matches_float64_and_the_onednn_path(recurrent_op, num_layers, bidirectional, fusion,
                                                                  rnn_fusion):
    # float32 with final states runs on oneDNN one layer per call (GRU and plain RNNs;
    # an LSTM's final c needs the reference loops), or on the reference loops with
    # set_rnn_fusion(False).
    rnn_fusion(fusion == '1')
    rng = np.random.RandomState(36)
    lstm = recurrent_op == 'lstm'
    x32, W32, f32 = make_full_stack(5, 6, num_layers, bidirectional, recurrent_op, dtype=np.float32)
    x64, W64, f64 = make_full_stack(5, 6, num_layers, bidirectional, recurrent_op, dtype=np.float64)
    # The same stack without final states (all layers in one oneDNN call when fused).
    xd, Wd, fd = make_stack(5, 6, num_layers, bidirectional, recurrent_op, dtype=np.float32)
    w = rng.uniform(-0.4, 0.4, W64.shape)
    W64.value = w
    W32.value = w.astype(np.float32)
    Wd.value = w.astype(np.float32)
    seqs = random_sequences(rng, [5, 2, 7, 1], (5,))
    seqs32 = [s.astype(np.float32) for s in seqs]
    got32 = f32.eval({x32: seqs32}, outputs=list(f32.outputs))
    got64 = f64.eval({x64: seqs}, outputs=list(f64.outputs))
    for a, b in zip(as_sequences(got32[f32.outputs[0]]), as_sequences(got64[f64.outputs[0]])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    for k in range(1, len(f32.outputs)):
        np.testing.assert_allclose(np.asarray(got32[f32.outputs[k]]), np.asarray(got64[f64.outputs[k]]),
                                   rtol=1e-5, atol=1e-5)
    y_dnnl = as_sequences(fd.eval({xd: seqs32}))
    for a, b in zip(y_dnnl, as_sequences(got32[f32.outputs[0]])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    # The outputs at each sequence's ends are the top layer's final h.
    top = (num_layers - 1) * (2 if bidirectional else 1)
    h32 = np.asarray(got32[f32.outputs[1]])
    for b, y in enumerate(y_dnnl):
        np.testing.assert_allclose(h32[b, top], y[-1, :6], rtol=1e-5, atol=1e-5)
        if bidirectional:
            np.testing.assert_allclose(h32[b, top + 1], y[0, 6:], rtol=1e-5, atol=1e-5)
    # Gradients through the outputs and the final states agree between the dtypes.
    grads = {}
    for x, W, f, dt in ((x32, W32, f32, np.float32), (x64, W64, f64, np.float64)):
        outs = list(f.outputs)
        state, vals = f.forward({x: [s.astype(dt) for s in seqs]}, outs, keep_for_backward=outs)
        r = np.random.RandomState(37)
        root = {outs[0]: [r.standard_normal(np.shape(v)).astype(dt) for v in as_sequences(vals[outs[0]])]}
        for o in outs[1:]:
            root[o] = r.standard_normal(np.shape(vals[o])).astype(dt)
        g = f.backward(state, root, [x, W])
        grads[dt] = (as_sequences(g[x]), np.asarray(g[W]))
    for a, b in zip(grads[np.float32][0], grads[np.float64][0]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grads[np.float32][1], grads[np.float64][1], rtol=1e-4, atol=1e-4)


def test_full_state_keeps_2_7_argument_order_and_checks_its_type(tmpdir):
    x = C.sequence.input_variable(3)
    W = C.parameter((C.InferredDimension, 4))
    # CNTK 2.7's positional order is unchanged: name is still the seventh argument.
    f = C.optimized_rnnstack(x, W, 4, 1, False, 'gru', 'named')
    assert f.name == 'named' and len(f.outputs) == 1
    assert 'returnFullState' not in f.root_function.attributes
    with pytest.raises(TypeError, match='return_full_state'):
        C.optimized_rnnstack(x, W, 4, 1, return_full_state='yes')
    g = C.optimized_rnnstack(x, C.parameter((C.InferredDimension, 4)), 4, 2, True, 'rnnTanh', return_full_state=True)
    assert len(g.outputs) == 2 and g.outputs[1].shape == (4, 4)
    # Saved and loaded, the stack keeps its final-state output.
    path = os.path.join(str(tmpdir), 'full.model')
    g.save(path)
    h = C.load_model(path)
    assert len(h.outputs) == 2 and h.outputs[1].shape == (4, 4)
    seqs = [np.random.RandomState(38).standard_normal((n, 3)).astype(np.float32) for n in (2, 5)]
    a = g.eval({g.arguments[0]: seqs}, outputs=list(g.outputs))
    b = h.eval({h.arguments[0]: seqs}, outputs=list(h.outputs))
    np.testing.assert_allclose(np.asarray(a[g.outputs[1]]), np.asarray(b[h.outputs[1]]), rtol=1e-6)


@pytest.mark.parametrize("recurrent_op,num_layers,bidirectional",
                         [('lstm', 2, True), ('gru', 1, True), ('rnnTanh', 2, False)])
def test_converter_keeps_the_final_states(recurrent_op, num_layers, bidirectional):
    # A stack with return_full_state converts into Recurrences whose final items give
    # the same final states; a model reading them converts as a whole.
    rng = np.random.RandomState(39)
    x, W, f = make_full_stack(3, 4, num_layers, bidirectional, recurrent_op)
    W.value = rng.uniform(-0.5, 0.5, W.shape)
    model = C.combine([C.sequence.last(f.outputs[0])] + [C.reshape(o, (-1,)) for o in f.outputs[1:]])
    converted = C.misc.convert_optimized_rnnstack(model)
    assert _stack_ops(converted) == []
    assert [o.shape for o in converted.outputs] == [o.shape for o in model.outputs]
    seqs = random_sequences(rng, [4, 1, 3], (3,))
    want = model.eval({x: seqs}, outputs=list(model.outputs))
    got = converted.eval({converted.arguments[0]: seqs}, outputs=list(converted.outputs))
    for a, b in zip(model.outputs, converted.outputs):
        np.testing.assert_allclose(np.asarray(got[b]), np.asarray(want[a]), rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ errors

def test_bad_arguments_raise_clear_errors():
    x = C.sequence.input_variable(3)
    W = C.parameter((C.InferredDimension, 4))
    with pytest.raises(ValueError, match='recurrent_op'):
        C.optimized_rnnstack(x, W, 4, 1, recurrent_op='sigmoid')
    with pytest.raises(TypeError, match='hidden_size'):
        C.optimized_rnnstack(x, W, 2.5, 1)
    with pytest.raises(ValueError, match='hidden_size'):
        C.optimized_rnnstack(x, W, 0, 1)
    with pytest.raises(ValueError, match='num_layers'):
        C.optimized_rnnstack(x, W, 4, 0)
    with pytest.raises(ValueError, match='rank 1'):
        C.optimized_rnnstack(C.sequence.input_variable((2, 3)), C.parameter((C.InferredDimension, 4)), 4, 1)
    with pytest.raises(ValueError, match='dynamic'):
        C.optimized_rnnstack(C.constant(np.ones(3, np.float32)), C.parameter((C.InferredDimension, 4)), 4, 1)
    with pytest.raises(ValueError, match='needs'):
        C.optimized_rnnstack(x, C.parameter((7, 4)), 4, 1)


# ------------------------------------------------------------------ save / load

def test_save_load_round_trip(tmpdir):
    rng = np.random.RandomState(6)
    x, W, f = make_stack(3, 4, 2, True, 'lstm', dtype=np.float32)
    path = os.path.join(str(tmpdir), 'stack.model')
    f.save(path)
    g = C.load_model(path)
    assert g.root_function.op_name == 'OptimizedRNNStack'
    attrs = g.root_function.attributes
    assert attrs['hiddenSize'] == 4 and attrs['numLayers'] == 2
    assert attrs['bidirectional'] is True or attrs['bidirectional'] == 1
    assert attrs['recurrentOp'] == 'lstm'
    assert g.parameters[0].shape == W.shape
    np.testing.assert_array_equal(g.parameters[0].value, W.value)
    seqs = random_sequences(rng, LENGTHS, (3,), dtype=np.float32)
    for a, b in zip(as_sequences(f.eval({x: seqs})), as_sequences(g.eval({g.arguments[0]: seqs}))):
        np.testing.assert_allclose(a, b, rtol=1e-6)


# ------------------------------------------------------------------ converter

def _stack_ops(f):
    return C.logging.graph.depth_first_search(
        f, lambda n: isinstance(n, C.Function) and n.root_function.op_name == 'OptimizedRNNStack', depth=-1)


CONVERTER_CONFIGS = [(1, True, 'lstm'), (2, False, 'lstm'), (2, True, 'rnnReLU'), (1, False, 'rnnTanh'),
                     (2, True, 'gru')]


@pytest.mark.parametrize("num_layers,bidirectional,recurrent_op", CONVERTER_CONFIGS)
def test_converter_gives_the_same_outputs(num_layers, bidirectional, recurrent_op, tmpdir):
    rng = np.random.RandomState(7)
    input_dim, hidden = 4, 3
    x = C.sequence.input_variable(input_dim, name='features')
    W1 = C.parameter((-1, 1), init=C.glorot_uniform(seed=1))
    W2 = C.parameter((-1, 1), init=C.glorot_uniform(seed=2))
    r1 = C.optimized_rnnstack(x, W1, hidden, num_layers, bidirectional, recurrent_op, name='r1')
    d1 = C.layers.Dense(hidden)(r1)
    r2 = C.optimized_rnnstack(d1, W2, hidden, num_layers, bidirectional, recurrent_op)
    d2 = C.layers.Dense(hidden)(r2)
    r3 = C.optimized_rnnstack(d2, W2, hidden, num_layers, bidirectional, recurrent_op)  # shares W2

    def blocked(dim):
        Wb = C.parameter((-1, dim), init=C.glorot_uniform(seed=dim))

        @C.ops.functions.BlockFunction('Stacked', 'stacked')
        def func(v):
            return C.optimized_rnnstack(v, Wb, dim, 1, recurrent_op='lstm')
        return func

    model = C.layers.Sequential([blocked(hidden), blocked(2 * hidden)])(r3)
    data = random_sequences(rng, [5, 2, 7], (input_dim,), dtype=np.float32)
    before = as_sequences(model.eval({x: data}))
    assert len(_stack_ops(model)) == 5

    converted = C.misc.convert_optimized_rnnstack(model)
    assert _stack_ops(converted) == []
    assert len(converted.arguments) == 1 and converted.arguments[0].shape == (input_dim,)
    after = as_sequences(converted.eval({converted.arguments[0]: data}))
    again = as_sequences(model.eval({x: data}))  # the original model is left as it was
    for a, b, c in zip(before, after, again):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(c, a)
    # Its blocks now hold recurrent loops; the model saves and loads with them.
    path = os.path.join(str(tmpdir), 'converted.model')
    converted.save(path)
    loaded = C.load_model(path)
    for a, b in zip(after, as_sequences(loaded.eval({loaded.arguments[0]: data}))):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)


def test_converted_model_saves_and_loads(tmpdir):
    # The converted model is plain ops: it saves and loads like any other.
    rng = np.random.RandomState(14)
    x = C.sequence.input_variable(3)
    W1 = C.parameter((-1, 1), init=C.glorot_uniform(seed=15))
    W2 = C.parameter((-1, 1), init=C.glorot_uniform(seed=16))
    model = C.optimized_rnnstack(C.optimized_rnnstack(x, W1, 4, 2, True, 'gru'), W2, 2, 1, False, 'lstm')
    converted = C.misc.convert_optimized_rnnstack(model)
    path = os.path.join(str(tmpdir), 'converted.model')
    converted.save(path)
    loaded = C.load_model(path)
    data = random_sequences(rng, [4, 1, 6], (3,), dtype=np.float32)
    for a, b in zip(as_sequences(model.eval({x: data})), as_sequences(loaded.eval({loaded.arguments[0]: data}))):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_converter_leaves_models_without_stacks_alone_and_rejects_uninitialized_ones():
    x = C.sequence.input_variable(3)
    plain = C.layers.Dense(2)(x)
    assert C.misc.convert_optimized_rnnstack(plain) is plain
    p = C.placeholder()
    open_stack = C.optimized_rnnstack(p, C.parameter((-1, 1)), 2, 1)
    with pytest.raises(ValueError, match='not initialized'):
        C.misc.convert_optimized_rnnstack(open_stack)


def test_convert_substitutes_what_the_filter_selects():
    x = C.input_variable(3)
    y = C.sigmoid(C.plus(x, 1))
    z = C.exp(y)
    out = C.misc.converter.convert(z, lambda f: isinstance(f, C.Function) and f.op_name == 'StableSigmoid',
                                   lambda f: C.tanh(f.inputs[0]))
    data = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
    np.testing.assert_allclose(out.eval({out.arguments[0]: data}), np.exp(np.tanh(data + 1)), rtol=1e-6)
    np.testing.assert_allclose(z.eval({x: data}), np.exp(1 / (1 + np.exp(-(data + 1)))), rtol=1e-6)


def test_documented_short_names_of_the_plain_rnn_cells():
    # CNTK's docstring names the plain cells 'relu' and 'tanh'; the op stores CNTK's own names.
    x = C.sequence.input_variable(2, dtype=np.float64)
    for short, full in (('relu', 'rnnReLU'), ('tanh', 'rnnTanh')):
        W = C.parameter((C.InferredDimension, 3), init=C.uniform(0.5, seed=8), dtype=np.float64)
        f = C.optimized_rnnstack(x, W, 3, 1, recurrent_op=short)
        assert f.root_function.attributes['recurrentOp'] == full
        seqs = random_sequences(np.random.RandomState(9), [3, 2], (2,))
        for g, w in zip(as_sequences(f.eval({x: seqs})), reference(seqs, W.value, full, 3, 1, False)):
            np.testing.assert_allclose(g, w, rtol=1e-10)


# ------------------------------------------------------------------ training

def test_trains_with_a_learner():
    # A sequence classifier on the last step of a bidirectional GRU stack learns a toy task
    # (is the sum of the sequence positive?), so the weight gradient reaches the learner.
    rng = np.random.RandomState(10)
    x = C.sequence.input_variable(2)
    y = C.input_variable(2)
    W = C.parameter((C.InferredDimension, 4), init=C.glorot_uniform(seed=11))
    h = C.sequence.last(C.optimized_rnnstack(x, W, 4, 1, True, 'gru'))
    z = C.layers.Dense(2, init=C.glorot_uniform(seed=12))(h)
    loss = C.cross_entropy_with_softmax(z, y)
    trainer = C.Trainer(z, (loss, C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.5))])
    seqs = [rng.standard_normal((rng.randint(1, 6), 2)).astype(np.float32) for _ in range(64)]
    labels = np.array([[1, 0] if s.sum() > 0 else [0, 1] for s in seqs], dtype=np.float32)
    losses = []
    for epoch in range(30):
        trainer.train_minibatch({x: seqs, y: labels})
        losses.append(trainer.previous_minibatch_loss_average)
    assert losses[-1] < 0.5 * losses[0], losses


def test_block_holding_a_recurrent_loop_saves_and_loads(tmpdir):
    # What the converter makes of a stack inside a block: a block whose inside is a loop.
    x = C.sequence.input_variable(3)
    rnn = C.layers.Recurrence(C.layers.LSTM(4))  # parameters are made outside the def, as CNTK requires

    @C.ops.functions.BlockFunction('Stacked', 'stacked')
    def block(v):
        return rnn(v)
    model = block(x)
    path = os.path.join(str(tmpdir), 'block.model')
    model.save(path)
    loaded = C.load_model(path)
    assert loaded.root_function.is_block and loaded.root_function.op_name == 'Stacked'
    data = random_sequences(np.random.RandomState(17), [3, 5], (3,), dtype=np.float32)
    for a, b in zip(as_sequences(model.eval({x: data})), as_sequences(loaded.eval({loaded.arguments[0]: data}))):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def test_converter_ignores_callers_default_options():
    x = C.sequence.input_variable(3)
    W = C.parameter((-1, 1), init=C.glorot_uniform(seed=18))
    model = C.optimized_rnnstack(x, W, 4, 1, True, 'lstm')
    with C.layers.default_options(enable_self_stabilization=True, use_peepholes=True):
        converted = C.misc.convert_optimized_rnnstack(model)
    data = random_sequences(np.random.RandomState(19), [4, 2], (3,), dtype=np.float32)
    for a, b in zip(as_sequences(model.eval({x: data})), as_sequences(converted.eval({converted.arguments[0]: data}))):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
