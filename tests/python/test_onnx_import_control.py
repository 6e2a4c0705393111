"""ONNX control flow read at read time: Scans of other writers unrolled over their static
lengths, Loops whose trip count and condition are known while reading, Ifs of a known
condition (ONNX Runtime is the reference), and imported recurrent nodes that train."""
import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F32 = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, 'g', inputs, [helper.make_tensor_value_info(o, F32, None) for o in outputs],
                          list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)])
    m.ir_version = 8
    return m.SerializeToString()


def _vi(name, shape, t=F32):
    return helper.make_tensor_value_info(name, t, shape)


def _check_against_onnxruntime(data, feeds, outputs, rtol=1e-5):
    want = ort.InferenceSession(data).run(outputs, feeds)
    z = C.load_model(data, format=C.ModelFormat.ONNX)
    args = {a: feeds[a.name] for a in z.arguments}
    got = z.eval(args)
    got = [got] if not isinstance(got, dict) else [got[o] for o in z.outputs]
    assert len(got) == len(want)
    for g, w, name in zip(got, want, outputs):
        np.testing.assert_allclose(np.asarray(g).reshape(w.shape), w, rtol=rtol, atol=1e-5, err_msg=name)
    return z


def _scan_body():
    """(state [2], x [2]) -> (tanh(state * w + x), state + x): a state and a scan output."""
    nodes = [helper.make_node('Mul', ['s_in', 'w'], ['sw']),
             helper.make_node('Add', ['sw', 'x_t'], ['pre']),
             helper.make_node('Tanh', ['pre'], ['s_out']),
             helper.make_node('Add', ['s_in', 'x_t'], ['y_t'])]
    return helper.make_graph(nodes, 'body', [_vi('s_in', [2]), _vi('x_t', [2])], [_vi('s_out', [2]), _vi('y_t', [2])])


@pytest.mark.parametrize('in_axis,in_dir,out_axis,out_dir', [(0, 0, 0, 0), (1, 1, 0, 0), (1, 0, 1, 1), (-1, 1, -1, 0)])
def test_a_foreign_scan_is_unrolled_as_onnxruntime_computes_it(in_axis, in_dir, out_axis, out_dir):
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, (4, 2) if in_axis == 0 else (2, 4)).astype(np.float32)
    w = numpy_helper.from_array(rng.normal(0, 1, (2,)).astype(np.float32), 'w')
    node = helper.make_node('Scan', ['s0', 'x'], ['s', 'y'], num_scan_inputs=1, body=_scan_body(),
                            scan_input_axes=[in_axis], scan_input_directions=[in_dir],
                            scan_output_axes=[out_axis], scan_output_directions=[out_dir])
    data = _model([node], [_vi('s0', [2]), _vi('x', list(x.shape))], ['s', 'y'], [w])
    _check_against_onnxruntime(data, {'s0': rng.normal(0, 1, (2,)).astype(np.float32), 'x': x}, ['s', 'y'])


def test_an_opset_8_scan_is_read_sample_by_sample():
    rng = np.random.default_rng(4)
    w = numpy_helper.from_array(rng.normal(0, 1, (2,)).astype(np.float32), 'w')
    node = helper.make_node('Scan', ['', 's0', 'x'], ['s', 'y'], num_scan_inputs=1, body=_scan_body(),
                            directions=[1])
    data = _model([node], [_vi('s0', [3, 2]), _vi('x', [3, 5, 2])], ['s', 'y'], [w], opset=8)
    feeds = {'s0': rng.normal(0, 1, (3, 2)).astype(np.float32), 'x': rng.normal(0, 1, (3, 5, 2)).astype(np.float32)}
    _check_against_onnxruntime(data, feeds, ['s', 'y'])


def test_an_unrolled_scan_trains_its_body_parameter():
    """The body's outer weight stays a parameter: its gradient through every step matches a
    central difference of the read function."""
    rng = np.random.default_rng(5)
    w0 = rng.normal(0, .5, (2,)).astype(np.float32)
    node = helper.make_node('Scan', ['s0', 'x'], ['s', 'y'], num_scan_inputs=1, body=_scan_body())
    data = _model([node], [_vi('s0', [2]), _vi('x', [3, 2])], ['s'], [numpy_helper.from_array(w0, 'w')])
    z = C.load_model(data, format=C.ModelFormat.ONNX)
    (w,) = z.parameters
    feeds = {a: (rng.normal(0, 1, (2,)) if a.name == 's0' else rng.normal(0, 1, (3, 2))).astype(np.float32)
             for a in z.arguments}
    loss = C.reduce_sum(z)
    g = loss.grad(feeds, wrt=[w])
    g = np.asarray(g[w] if isinstance(g, dict) else g).reshape(2)

    def f(wv):
        s0, x = [feeds[a].astype(np.float64) for a in sorted(z.arguments, key=lambda a: a.name != 's0')]
        s = s0
        for t in range(3):
            s = np.tanh(s * wv + x[t])
        return s.sum()
    eps = 1e-4
    num = [(f(w0 + eps * e) - f(w0 - eps * e)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(g, num, rtol=1e-3, atol=1e-4)


def _loop_model(trip_count_input=False, cond_input=False, stop_after=None, trips=5):
    """y = y0 + x[0] + ... + x[n-1] with the running sums as scan output; the body's condition
    turns false after `stop_after` iterations where given."""
    x = np.arange(1, 7, dtype=np.float32)
    body_nodes = [
        helper.make_node('Constant', [], ['one'], value=helper.make_tensor('c1', TensorProto.INT64, [], [1])),
        helper.make_node('Add', ['i', 'one'], ['end']),
        helper.make_node('Unsqueeze', ['i', 'zero_axis'], ['start1']),
        helper.make_node('Unsqueeze', ['end', 'zero_axis'], ['end1']),
        helper.make_node('Slice', ['x', 'start1', 'end1'], ['xi']),
        helper.make_node('Add', ['y_in', 'xi'], ['y_out']),
        helper.make_node('Identity', ['y_out'], ['scan_out']),
    ]
    if stop_after is None:
        body_nodes.append(helper.make_node('Identity', ['cond_in'], ['cond_out']))
    else:
        body_nodes += [helper.make_node('Constant', [], ['lim'],
                                        value=helper.make_tensor('cl', TensorProto.INT64, [], [stop_after - 1])),
                       helper.make_node('Less', ['i', 'lim'], ['cond_out'])]
    body = helper.make_graph(
        body_nodes, 'loop_body',
        [_vi('i', [], TensorProto.INT64), _vi('cond_in', [], TensorProto.BOOL), _vi('y_in', [1])],
        [_vi('cond_out', [], TensorProto.BOOL), _vi('y_out', [1]), _vi('scan_out', [1])])
    inits = [numpy_helper.from_array(x, 'x'), numpy_helper.from_array(np.array([0], np.int64), 'zero_axis')]
    inputs = [_vi('y0', [1])]
    if trip_count_input:
        inputs.append(_vi('M', [], TensorProto.INT64))
    else:
        inits.append(numpy_helper.from_array(np.array(trips, np.int64), 'M'))
    if cond_input:
        inputs.append(_vi('cond', [], TensorProto.BOOL))
    else:
        inits.append(numpy_helper.from_array(np.array(True), 'cond'))
    node = helper.make_node('Loop', ['M', 'cond', 'y0'], ['y', 'ys'], body=body)
    return _model([node], inputs, ['y', 'ys'], inits, opset=13)


@pytest.mark.parametrize('stop_after', [None, 3])
def test_a_loop_of_a_known_trip_count_and_condition_is_unrolled(stop_after):
    z = _check_against_onnxruntime(_loop_model(stop_after=stop_after), {'y0': np.array([-2], np.float32)},
                                   ['y', 'ys'])
    assert z.outputs[1].shape == ((5 if stop_after is None else 3), 1)


def test_a_loop_of_no_iterations_gives_its_initial_values_and_empty_scan_outputs():
    z = _check_against_onnxruntime(_loop_model(trips=0), {'y0': np.array([-2], np.float32)}, ['y', 'ys'])
    assert z.outputs[1].shape == (0, 1)


def test_a_loop_whose_trip_count_is_not_known_while_reading_is_refused_naming_the_node():
    with pytest.raises(ValueError, match=r"node 'y' \(Loop\): its trip count is not known while reading"):
        C.load_model(_loop_model(trip_count_input=True), format=C.ModelFormat.ONNX)
    with pytest.raises(ValueError, match=r"\(Loop\): its condition is not known while reading"):
        C.load_model(_loop_model(cond_input=True), format=C.ModelFormat.ONNX)


def _if_model(cond_value=None):
    then_g = helper.make_graph([helper.make_node('Mul', ['x', 'x'], ['t'])], 'then', [], [_vi('t', [3])])
    else_g = helper.make_graph([helper.make_node('Neg', ['x'], ['e'])], 'else', [], [_vi('e', [3])])
    node = helper.make_node('If', ['c'], ['y'], then_branch=then_g, else_branch=else_g)
    inputs = [_vi('x', [3])]
    inits = []
    if cond_value is None:
        inputs.append(_vi('c', [], TensorProto.BOOL))
    else:
        inits.append(numpy_helper.from_array(np.array(cond_value), 'c'))
    return _model([node], inputs, ['y'], inits)


@pytest.mark.parametrize('cond', [True, False])
def test_an_if_of_a_known_condition_reads_the_branch_it_takes(cond):
    x = np.array([1, -2, 3], np.float32)
    _check_against_onnxruntime(_if_model(cond), {'x': x}, ['y'])


def test_an_if_whose_condition_is_a_graph_input_is_refused_naming_the_node():
    with pytest.raises(ValueError, match=r"node 'y' \(If\): its condition is not known while reading"):
        C.load_model(_if_model(None), format=C.ModelFormat.ONNX)


@pytest.mark.parametrize('op', ['LSTM', 'GRU', 'RNN'])
def test_an_imported_recurrent_node_of_one_step_from_no_state_trains(op):
    """One step from no initial state does not read R: the node still reads (R stays an input of
    its block, written back), its Y_h alone is the graph's output, and training lowers the loss."""
    rng = np.random.default_rng(6)
    g, H, F, B = {'LSTM': 4, 'GRU': 3, 'RNN': 1}[op], 3, 2, 4
    inits = [numpy_helper.from_array(rng.normal(0, .5, (1, g * H, F)).astype(np.float32), 'W'),
             numpy_helper.from_array(rng.normal(0, .5, (1, g * H, H)).astype(np.float32), 'R'),
             numpy_helper.from_array(rng.normal(0, .5, (1, 2 * g * H)).astype(np.float32), 'B')]
    node = helper.make_node(op, ['X', 'W', 'R', 'B'], ['', 'Y_h'], hidden_size=H)
    data = _model([node], [_vi('X', [1, B, F])], ['Y_h'], inits)
    x = rng.normal(0, 1, (1, B, F)).astype(np.float32)
    z = _check_against_onnxruntime(data, {'X': x}, ['Y_h'])
    assert len(z.outputs) == 1
    target = rng.uniform(-.5, .5, (1, B, H)).astype(np.float32)
    loss = C.reduce_sum(C.square(z - C.constant(target)))
    feeds = {z.arguments[0]: x}
    params = z.parameters
    assert {p.name for p in params} == {'W', 'R', 'B'}
    first = float(np.asarray(loss.eval(feeds)))
    # Plain gradient descent (the graph has no batch axis for a Trainer), with a step small
    # enough that the loss falls steadily: a larger one oscillates, and where it ends then
    # depends on rounding (a debug build lands elsewhere than a release one).
    for _ in range(250):
        grads = loss.grad(feeds, wrt=params)
        for p in params:
            p.value = p.value - 0.05 * np.asarray(grads[p])
    assert float(np.asarray(loss.eval(feeds))) < 0.6 * first


@pytest.mark.parametrize('kind', ['lstm', 'gru', 'rnn', 'rnn_relu'])
def test_a_recurrence_read_over_a_free_seq_dimension_runs_fused_as_the_layers_do(tmp_path, kind):
    """A layers' recurrence written as an ONNX node reads back in the layers' form, so the
    engine runs the same fused kernel on the same weights: the outputs agree exactly (a
    step-by-step loop differs in the last bits). Trained, the read model is written back as
    the node with the trained weights."""
    H, Fd, T = 5, 4, 7
    cell = {'lstm': lambda: C.layers.LSTM(H), 'gru': lambda: C.layers.GRU(H), 'rnn': lambda: C.layers.RNNStep(H),
            'rnn_relu': lambda: C.layers.RNNStep(H, activation=C.relu)}[kind]()
    x = C.sequence.input_variable(Fd, name='x')
    z = C.layers.Recurrence(cell)(x)
    path = str(tmp_path / 'rec.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    rng = np.random.default_rng(8)
    data = rng.normal(0, 1, (T, 1, Fd)).astype(np.float32)
    want = np.asarray(z.eval({x: [data[:, 0]]})[0])
    got = np.asarray(z2.eval({z2.arguments[0]: data}))
    np.testing.assert_array_equal(got.reshape(want.shape), want)

    target = C.constant(rng.uniform(-.5, .5, got.shape).astype(np.float32))
    loss = C.reduce_sum(C.square(z2 - target))
    feeds = {z2.arguments[0]: data}
    before = float(np.asarray(loss.eval(feeds)))
    for _ in range(20):
        grads = loss.grad(feeds, wrt=z2.parameters)
        for p in z2.parameters:
            p.value = p.value - 0.05 * np.asarray(grads[p])
    assert float(np.asarray(loss.eval(feeds))) < before
    again = str(tmp_path / 'trained.onnx')
    z2.save(again, format=C.ModelFormat.ONNX)
    assert [n.op_type for n in onnx.load(again).graph.node].count({'lstm': 'LSTM', 'gru': 'GRU'}.get(kind, 'RNN')) == 1
    (name,) = [i.name for i in onnx.load(again).graph.input]
    w = ort.InferenceSession(again).run(None, {name: data})[0]
    np.testing.assert_allclose(np.asarray(z2.eval(feeds)).reshape(w.shape), w, rtol=1e-5, atol=1e-5)


def test_an_if_inside_a_loop_takes_the_branch_its_iteration_number_selects():
    """The iteration number is known in each unrolled copy, so an If on it inside the body
    reads as that iteration's branch (the branches read the body's own values)."""
    two = helper.make_tensor('two', TensorProto.INT64, [], [2])
    then_g = helper.make_graph([helper.make_node('Add', ['y_in', 'one_f'], ['t'])], 'then', [], [_vi('t', [2])])
    else_g = helper.make_graph([helper.make_node('Mul', ['y_in', 'w'], ['e'])], 'else', [], [_vi('e', [2])])
    body = helper.make_graph(
        [helper.make_node('Constant', [], ['two'], value=two),
         helper.make_node('Less', ['i', 'two'], ['early']),
         helper.make_node('If', ['early'], ['y_out'], then_branch=then_g, else_branch=else_g),
         helper.make_node('Identity', ['cond_in'], ['cond_out'])],
        'body', [_vi('i', [], TensorProto.INT64), _vi('cond_in', [], TensorProto.BOOL), _vi('y_in', [2])],
        [_vi('cond_out', [], TensorProto.BOOL), _vi('y_out', [2])])
    inits = [numpy_helper.from_array(np.array(4, np.int64), 'M'), numpy_helper.from_array(np.array(True), 'cond'),
             numpy_helper.from_array(np.array([1.5, -0.5], np.float32), 'w'),
             numpy_helper.from_array(np.array(1, np.float32), 'one_f')]
    data = _model([helper.make_node('Loop', ['M', 'cond', 'y0'], ['y'], body=body)], [_vi('y0', [2])], ['y'], inits,
                  opset=13)
    _check_against_onnxruntime(data, {'y0': np.array([0.25, 2.0], np.float32)}, ['y'])
