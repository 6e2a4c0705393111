"""ONNX recurrences: LSTM/GRU/RNN nodes read as engine graphs (ONNX Runtime is the
reference for single nodes; PyTorch for an exported language model)."""
import io

import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

S, B, F, H = 5, 3, 4, 6


def _node_model(op, direction='forward', initial=False, lens=None, peep=False, **attrs):
    """A model of one `op` node with random weights; returns (model bytes, feeds)."""
    rng = np.random.default_rng(7)
    g = {'LSTM': 4, 'GRU': 3, 'RNN': 1}[op]
    d = 2 if direction == 'bidirectional' else 1
    inits = [numpy_helper.from_array(rng.normal(0, .5, (d, g * H, F)).astype(np.float32), 'W'),
             numpy_helper.from_array(rng.normal(0, .5, (d, g * H, H)).astype(np.float32), 'R'),
             numpy_helper.from_array(rng.normal(0, .5, (d, 2 * g * H)).astype(np.float32), 'B')]
    ins = ['X', 'W', 'R', 'B', '', '', '']
    feeds = {'X': rng.normal(0, 1, (S, B, F)).astype(np.float32)}
    graph_in = [helper.make_tensor_value_info('X', TensorProto.FLOAT, [S, B, F])]
    if lens is not None:
        inits.append(numpy_helper.from_array(np.array(lens, np.int32), 'L'))
        ins[4] = 'L'
    if initial:
        inits.append(numpy_helper.from_array(rng.normal(0, 1, (d, B, H)).astype(np.float32), 'h0'))
        ins[5] = 'h0'
        if op == 'LSTM':
            inits.append(numpy_helper.from_array(rng.normal(0, 1, (d, B, H)).astype(np.float32), 'c0'))
            ins[6] = 'c0'
    if peep:
        inits.append(numpy_helper.from_array(rng.normal(0, .5, (d, 3 * H)).astype(np.float32), 'P'))
        ins.append('P')
    while ins[-1] == '':
        ins.pop()
    outs = ['Y', 'Y_h'] + (['Y_c'] if op == 'LSTM' else [])
    node = helper.make_node(op, ins, outs, hidden_size=H, direction=direction, **attrs)
    graph = helper.make_graph([node], 'rnn', graph_in,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    m.ir_version = 8
    return m.SerializeToString(), feeds, outs


CASES = [
    ('LSTM', dict()),
    ('LSTM', dict(direction='reverse')),
    ('LSTM', dict(direction='bidirectional', initial=True)),
    ('LSTM', dict(peep=True, initial=True)),
    ('LSTM', dict(lens=[5, 2, 3])),
    ('LSTM', dict(direction='bidirectional', lens=[1, 5, 3], initial=True)),
    ('GRU', dict()),
    ('GRU', dict(linear_before_reset=1, initial=True)),
    ('GRU', dict(direction='bidirectional', lens=[4, 5, 1])),
    ('RNN', dict()),
    ('RNN', dict(direction='reverse', initial=True, activations=['Relu'])),
    ('RNN', dict(direction='bidirectional', activations=['Tanh', 'Sigmoid'])),
]


@pytest.mark.parametrize('op,kw', CASES, ids=[f'{o}-{i}' for i, (o, _) in enumerate(CASES)])
def test_an_onnx_recurrence_reads_as_onnxruntime_computes_it(op, kw):
    data, feeds, outs = _node_model(op, **kw)
    want = ort.InferenceSession(data).run(outs, feeds)
    z = C.load_model(data, format=C.ModelFormat.ONNX)
    assert len(z.outputs) == len(outs)
    got = z.eval({z.arguments[0]: feeds['X']})
    for o, name, w in zip(z.outputs, outs, want):
        np.testing.assert_allclose(np.asarray(got[o]).reshape(w.shape), w, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize('op,kw', CASES, ids=[f'{o}-{i}' for i, (o, _) in enumerate(CASES)])
def test_an_onnx_recurrence_over_a_symbolic_seq_dimension_runs_as_a_loop(op, kw):
    """A symbolic seq dimension is not unrolled: the node runs as a recurrence over a
    sequence axis, for any length fed."""
    data, feeds, outs = _node_model(op, **kw)
    m = onnx.load_from_string(data)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = 'seq'
    data = m.SerializeToString()
    z = C.load_model(data, format=C.ModelFormat.ONNX)
    s = ort.InferenceSession(data)
    lens = kw.get('lens')
    for T in ([S] if lens else [S, 2, 8]):  # sequence_lens must not exceed the length fed
        x = np.random.default_rng(T).normal(0, 1, (T, B, F)).astype(np.float32)
        want = s.run(outs, {'X': x})
        got = z.eval({z.arguments[0]: x})
        for o, name, w in zip(z.outputs, outs, want):
            np.testing.assert_allclose(np.asarray(got[o]).reshape(w.shape), w, rtol=1e-5, atol=1e-5,
                                       err_msg=f'{name} T={T}')

def _lstm_language_model():
    torch = pytest.importorskip('torch')
    torch.manual_seed(0)

    class LM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(50, 16)
            self.lstm = torch.nn.LSTM(16, 24, num_layers=2)
            self.out = torch.nn.Linear(24, 50)

        def forward(self, tokens):
            y, _ = self.lstm(self.emb(tokens))
            return self.out(y)

    model = LM().eval()
    tokens = torch.randint(0, 50, (7, 2))  # [seq, batch]
    buf = io.BytesIO()
    torch.onnx.export(model, (tokens,), buf, opset_version=17, dynamo=False, input_names=['tokens'])
    with torch.no_grad():
        want = model(tokens).numpy()
    return buf.getvalue(), tokens.numpy(), want


def _import_and_compare(data, tokens, want):
    z = C.load_model(data, format=C.ModelFormat.ONNX)
    got = np.asarray(z.eval({z.arguments[0]: tokens.astype(np.float32)}))
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-4)


def test_a_pytorch_two_layer_lstm_language_model_imports_and_matches_pytorch():
    """The file as torch.onnx.export writes it: the initial states come from a
    Shape -> Gather(scalar index) -> Unsqueeze -> Concat -> Expand chain."""
    _import_and_compare(*_lstm_language_model())


def test_the_pytorch_language_model_with_its_shape_arithmetic_folded_matches_pytorch(tmp_path):
    """The same model after ONNX Runtime's constant folding (no Shape/Gather chains): the
    Embedding's Gather, both LSTM layers and the Linear layer."""
    data, tokens, want = _lstm_language_model()
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = str(tmp_path / 'folded.onnx')
    ort.InferenceSession(data, so)
    folded = onnx.load(str(tmp_path / 'folded.onnx'))
    assert [n.op_type for n in folded.graph.node].count('LSTM') == 2
    _import_and_compare(folded.SerializeToString(), tokens, want)

def _cell(kind, n):
    return {'lstm': lambda: C.layers.LSTM(n), 'gru': lambda: C.layers.GRU(n), 'rnn': lambda: C.layers.RNNStep(n),
            'rnn_relu': lambda: C.layers.RNNStep(n, activation=C.relu)}[kind]()


def _check_in_onnxruntime(z, x, path, ops, lengths=(1, 4, 9)):
    z.save(path, format=C.ModelFormat.ONNX)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    assert sorted(n.op_type for n in m.graph.node if n.op_type in ('LSTM', 'GRU', 'RNN')) == sorted(ops)
    s = ort.InferenceSession(path)
    rng = np.random.default_rng(3)
    for T in lengths:  # sequences of different lengths, one at a time
        d = rng.normal(0, 1, (1, T, x.shape[0])).astype(np.float32)
        want = np.asarray(z.eval({x: d}))
        got = s.run(None, {s.get_inputs()[0].name: d.transpose(1, 0, 2)})[0]  # [Sequence, batch, ...]
        np.testing.assert_allclose(got.transpose(1, 0, 2).reshape(want.shape), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('kind', ['lstm', 'gru', 'rnn', 'rnn_relu'])
@pytest.mark.parametrize('backwards', [False, True])
def test_a_recurrence_exports_as_one_onnx_node_and_runs_in_onnxruntime(tmp_path, kind, backwards):
    x = C.sequence.input_variable(3, name='x')
    z = C.layers.Recurrence(_cell(kind, 5), go_backwards=backwards)(x)
    op = {'lstm': 'LSTM', 'gru': 'GRU'}.get(kind, 'RNN')
    _check_in_onnxruntime(z, x, str(tmp_path / 'r.onnx'), [op])
    m = onnx.load(str(tmp_path / 'r.onnx'))
    node = [n for n in m.graph.node if n.op_type == op][0]
    direction = [a.s for a in node.attribute if a.name == 'direction'][0]
    assert direction == (b'reverse' if backwards else b'forward')


def test_a_stacked_bidirectional_lstm_exports_and_runs_in_onnxruntime(tmp_path):
    x = C.sequence.input_variable(4, name='x')
    fwd = C.layers.Recurrence(C.layers.LSTM(6))(x)
    bwd = C.layers.Recurrence(C.layers.LSTM(6), go_backwards=True)(x)
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.GRU(5)), C.layers.Dense(2)])(C.splice(fwd, bwd))
    _check_in_onnxruntime(z, x, str(tmp_path / 'bi.onnx'), ['LSTM', 'GRU'])
    lstm = [n for n in onnx.load(str(tmp_path / 'bi.onnx')).graph.node if n.op_type == 'LSTM'][0]
    assert [a.s for a in lstm.attribute if a.name == 'direction'] == [b'bidirectional']


@pytest.mark.parametrize('kind', ['lstm', 'gru', 'rnn_relu'])
def test_a_forward_and_backward_pair_is_one_bidirectional_node_and_round_trips(tmp_path, kind):
    x = C.sequence.input_variable(3, name='x')
    z = C.splice(C.layers.Recurrence(_cell(kind, 4))(x), C.layers.Recurrence(_cell(kind, 4), go_backwards=True)(x))
    op = {'lstm': 'LSTM', 'gru': 'GRU'}.get(kind, 'RNN')
    path = str(tmp_path / 'pair.onnx')
    _check_in_onnxruntime(z, x, path, [op])
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    for T in (1, 5):
        d = np.random.default_rng(T).normal(0, 1, (1, T, 3)).astype(np.float32)
        want = np.asarray(z.eval({x: d})).reshape(T, 8)
        got = np.asarray(z2.eval({z2.arguments[0]: d.transpose(1, 0, 2)})).reshape(T, 8)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('kind', ['lstm', 'gru'])
def test_a_recurrence_with_a_constant_initial_state_exports(tmp_path, kind):
    x = C.sequence.input_variable(3, name='x')
    z = C.layers.Recurrence(_cell(kind, 5), initial_state=0.23)(x)
    _check_in_onnxruntime(z, x, str(tmp_path / 'init.onnx'), [kind.upper()])


@pytest.mark.parametrize('kind', ['lstm', 'gru', 'rnn'])
@pytest.mark.parametrize('backwards', [False, True])
def test_a_recurrence_round_trips_through_onnx(tmp_path, kind, backwards):
    """Written as one node, read back as a loop over the free Sequence dimension (the file's
    input is [Sequence, batch, ...] with batch read as 1), for any length; and written again
    as the same node."""
    x = C.sequence.input_variable(3, name='x')
    z = C.layers.Recurrence(_cell(kind, 5), go_backwards=backwards)(x)
    path = str(tmp_path / 'rt.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    for T in (1, 4, 7):
        d = np.random.default_rng(T).normal(0, 1, (1, T, 3)).astype(np.float32)
        want = np.asarray(z.eval({x: d})).reshape(T, 5)
        got = np.asarray(z2.eval({z2.arguments[0]: d.transpose(1, 0, 2)})).reshape(T, 5)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_read_recurrence_is_written_again_as_the_same_node(tmp_path):
    """The Squeeze after the node (over the free Sequence dimension) must be writable too."""
    x = C.sequence.input_variable(3, name='x')
    z = C.layers.Recurrence(_cell('lstm', 5))(x)
    path = str(tmp_path / 'rt.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    op = 'LSTM'
    nodes = [n for n in onnx.load(path).graph.node if n.op_type == op]
    again = str(tmp_path / 'again.onnx')
    z2.save(again, format=C.ModelFormat.ONNX)
    assert [n.attribute for n in onnx.load(again).graph.node if n.op_type == op] == [n.attribute for n in nodes]


@pytest.mark.parametrize('op', ['lstm', 'gru', 'rnnTanh', 'rnnReLU'])
@pytest.mark.parametrize('bidirectional', [False, True])
def test_optimized_rnnstack_exports_as_stacked_onnx_nodes(tmp_path, op, bidirectional):
    x = C.sequence.input_variable(4, name='x')
    W = C.parameter((C.InferredDimension, 5), init=C.glorot_uniform(seed=1))
    z = C.optimized_rnnstack(x, W, 5, num_layers=2, bidirectional=bidirectional, recurrent_op=op)
    onnx_op = {'lstm': 'LSTM', 'gru': 'GRU'}.get(op, 'RNN')
    _check_in_onnxruntime(z, x, str(tmp_path / 'stack.onnx'), [onnx_op, onnx_op], lengths=(1, 3, 6))


@pytest.mark.parametrize('bidirectional', [False, True])
def test_an_rnnrelu_stack_round_trips_through_onnx(tmp_path, bidirectional):
    """rnnReLU writes RNN nodes with activations ['Relu'] per direction; read back, the
    model computes as the stack for sequences of different lengths."""
    x = C.sequence.input_variable(4, name='x')
    W = C.parameter((C.InferredDimension, 5), init=C.glorot_uniform(seed=2))
    z = C.optimized_rnnstack(x, W, 5, num_layers=2, bidirectional=bidirectional, recurrent_op='rnnReLU')
    path = str(tmp_path / 'relu.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    nodes = [n for n in onnx.load(path).graph.node if n.op_type == 'RNN']
    d = 2 if bidirectional else 1
    assert [[s.decode() for a in n.attribute if a.name == 'activations' for s in a.strings] for n in nodes] == \
        [['Relu'] * d] * 2
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    for T in (1, 3, 6):
        data = np.random.default_rng(T).normal(0, 1, (1, T, 4)).astype(np.float32)
        want = np.asarray(z.eval({x: data})).reshape(T, -1)
        got = np.asarray(z2.eval({z2.arguments[0]: data.transpose(1, 0, 2)})).reshape(T, -1)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


SEQ_OPS = {
    'first': lambda x: C.sequence.first(x),
    'last': lambda x: C.sequence.last(x),
    'slice': lambda x: C.sequence.slice(x, 1, -1),
    'slice_tail': lambda x: C.sequence.slice(x, -2, 0),
    'is_first': lambda x: C.sequence.is_first(x),
    'is_last': lambda x: C.sequence.is_last(x),
    'reduce_sum': lambda x: C.sequence.reduce_sum(x),
    'reduce_max': lambda x: C.sequence.reduce_max(x),
    'broadcast_as': lambda x: C.sequence.broadcast_as(C.sequence.reduce_sum(x), x) * x,
    'softmax': lambda x: C.sequence.softmax(x),
}


@pytest.mark.parametrize('name', list(SEQ_OPS))
def test_a_sequence_op_exports_runs_in_onnxruntime_and_round_trips(tmp_path, name):
    """Sequence ops as CNTK 2.7 wrote them: each sequence fed alone (ONNX has no lengths),
    for several lengths; ONNX Runtime and the model read back compute as the engine."""
    x = C.sequence.input_variable((2, 3), name='x')
    z = SEQ_OPS[name](x)
    path = str(tmp_path / 'seq.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    s = ort.InferenceSession(path)
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    has_seq = z.output.has_sequence_axis()
    for T in ((3, 5, 8) if name.startswith('slice') else (1, 2, 5, 8)):
        d = np.random.default_rng(T).normal(0, 1, (1, T, 2, 3)).astype(np.float32)
        want = np.asarray(z.eval({x: d}), np.float32)
        got = s.run(None, {s.get_inputs()[0].name: d.transpose(1, 0, 2, 3)})[0]
        if has_seq:  # [Sequence, batch, ...] -> [batch, Sequence, ...]
            got = np.swapaxes(got, 0, 1)
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-5, err_msg=f'T={T}')
        back = np.asarray(z2.eval({z2.arguments[0]: d.transpose(1, 0, 2, 3)}), np.float32)
        if has_seq:
            back = np.swapaxes(back.reshape(got.shape[1], got.shape[0], *got.shape[2:]), 0, 1)
        np.testing.assert_allclose(back.reshape(want.shape), want, rtol=1e-5, atol=1e-5, err_msg=f'read back T={T}')


DELAYS = {
    'past': lambda x: C.sequence.past_value(x),
    'past2_init': lambda x: C.sequence.past_value(x, C.constant(np.arange(3, dtype=np.float32) - 1), time_step=2),
    'future': lambda x: C.sequence.future_value(x, initial_state=0.5),
    'past_times': lambda x: x * C.sequence.past_value(x) + C.sequence.future_value(x, time_step=3),
}


@pytest.mark.parametrize('name', list(DELAYS))
def test_a_delay_outside_a_loop_exports_and_round_trips(tmp_path, name):
    """PastValue/FutureValue of a value that does not depend on them: a shift along the
    Sequence dimension, the initial state on the steps shifted in (also past the length)."""
    x = C.sequence.input_variable(3, name='x')
    z = DELAYS[name](x)
    path = str(tmp_path / 'delay.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    s = ort.InferenceSession(path)
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    for T in (1, 2, 5):
        d = np.random.default_rng(T).normal(0, 1, (1, T, 3)).astype(np.float32)
        want = np.asarray(z.eval({x: d}), np.float32).reshape(T, 3)
        got = s.run(None, {s.get_inputs()[0].name: d.transpose(1, 0, 2)})[0]
        np.testing.assert_allclose(got.reshape(T, 3), want, rtol=1e-5, atol=1e-6, err_msg=f'T={T}')
        back = np.asarray(z2.eval({z2.arguments[0]: d.transpose(1, 0, 2)}), np.float32)
        np.testing.assert_allclose(back.reshape(T, 3), want, rtol=1e-5, atol=1e-6, err_msg=f'read back T={T}')


def _two_state_loop(x):
    """A loop of two states (c starting from 0.5) built from placeholders and past_value."""
    rng = np.random.default_rng(11)
    W = C.constant(rng.normal(0, .5, (3, 4)).astype(np.float32))
    U = C.constant(rng.normal(0, .5, (4, 4)).astype(np.float32))
    h, c = C.placeholder(shape=(4,)), C.placeholder(shape=(4,))
    hp, cp = C.sequence.past_value(h), C.sequence.past_value(c, initial_state=0.5)
    cn = C.sigmoid(C.times(x, W)) * cp + C.tanh(C.times(hp, U))
    hn = C.tanh(cn) * 0.9
    C.combine([hn, cn]).replace_placeholders({h: hn, c: cn})
    return hn + 0


def _custom_step(backwards):
    def make(x):
        rng = np.random.default_rng(5)
        W = C.parameter(init=rng.normal(0, .5, (3, 4)).astype(np.float32))
        U = C.parameter(init=rng.normal(0, .5, (4, 4)).astype(np.float32))
        return C.layers.Recurrence(lambda h, x: C.tanh(C.times(x, W) + C.times(h, U)), go_backwards=backwards,
                                   initial_state=0.3 if backwards else 0)(x)
    return make


LOOPS = {
    'custom_step': _custom_step(False),
    'custom_step_backwards': _custom_step(True),
    'two_states': _two_state_loop,
}


@pytest.mark.parametrize('name', list(LOOPS))
def test_a_loop_that_is_not_a_matched_cell_exports_as_scan_and_round_trips(tmp_path, name):
    """A Recurrence over any step function (or a loop of placeholders and delays) is a Scan over
    the Sequence dimension; ONNX Runtime computes it as OpenCNTK does, and it reads back as a loop."""
    x = C.sequence.input_variable(3, name='x')
    z = LOOPS[name](x)
    path = str(tmp_path / 'loop.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    assert [n.op_type for n in m.graph.node].count('Scan') == 1
    s = ort.InferenceSession(path)
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    for T in (1, 4, 9):
        d = np.random.default_rng(T).normal(0, 1, (1, T, 3)).astype(np.float32)
        want = np.asarray(z.eval({x: d}), np.float32).reshape(T, 4)
        got = s.run(None, {s.get_inputs()[0].name: d.transpose(1, 0, 2)})[0]
        np.testing.assert_allclose(got.reshape(T, 4), want, rtol=1e-5, atol=1e-5, err_msg=f'T={T}')
        back = np.asarray(z2.eval({z2.arguments[0]: d.transpose(1, 0, 2)}), np.float32)
        np.testing.assert_allclose(back.reshape(T, 4), want, rtol=1e-5, atol=1e-5, err_msg=f'read back T={T}')
    # The read loop is written again as a Scan.
    z2.save(str(tmp_path / 'again.onnx'), format=C.ModelFormat.ONNX)
    assert [n.op_type for n in onnx.load(str(tmp_path / 'again.onnx')).graph.node].count('Scan') == 1


def test_a_loop_of_delays_over_two_steps_has_a_clear_error(tmp_path):
    x = C.sequence.input_variable(3, name='x')
    h = C.placeholder(shape=(3,))
    y = C.tanh(C.sequence.past_value(h, time_step=2) * 0.5 + x)
    y.replace_placeholders({h: y})
    with pytest.raises(ValueError, match='a delay of 2 steps'):
        y.save(str(tmp_path / 'loop.onnx'), format=C.ModelFormat.ONNX)


@pytest.mark.parametrize('mask', [False, True])
def test_sequence_unpack_and_to_sequence_export(tmp_path, mask):
    """unpack: the [batch, steps, ...] tensor (and an all-ones mask: ONNX has no lengths);
    to_sequence of it is a sequence again."""
    x = C.sequence.input_variable(3, name='x')
    u = C.sequence.unpack(x, padding_value=0, no_mask_output=not mask)
    outs = list(u.outputs) + [C.to_sequence(u.outputs[0]) * 2]
    z = C.combine(outs)
    path = str(tmp_path / 'unpack.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    s = ort.InferenceSession(path)
    for T in (1, 4):
        d = np.random.default_rng(T).normal(0, 1, (1, T, 3)).astype(np.float32)
        want = z.eval({x: d})
        got = s.run(None, {s.get_inputs()[0].name: d.transpose(1, 0, 2)})
        np.testing.assert_allclose(got[0].reshape(T, 3), np.asarray(want[z.outputs[0]]).reshape(T, 3), rtol=1e-6)
        if mask:
            np.testing.assert_array_equal(got[1].reshape(T), np.ones(T, np.float32))
        np.testing.assert_allclose(got[-1].reshape(T, 3), 2 * d.reshape(T, 3), rtol=1e-6)
