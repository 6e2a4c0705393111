"""ONNX model files: the writer, the reader, and both against ONNX's checker and ONNX Runtime."""
import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _dense_model():
    x = C.input_variable(4, name='x')
    W = C.parameter((4, 3), init=C.glorot_uniform(seed=1), name='W')
    b = C.parameter(3, init=0.5, name='b')
    return x, C.tanh(C.times(x, W) + b)


def test_a_dense_layer_exports_checks_and_runs_in_onnxruntime_at_any_batch_size(tmp_path):
    x, z = _dense_model()
    path = str(tmp_path / 'm.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    assert m.opset_import[0].version == 17
    batch_dim = m.graph.input[0].type.tensor_type.shape.dim[0]
    assert batch_dim.dim_param == 'batch' and batch_dim.denotation == 'DATA_BATCH'
    session = ort.InferenceSession(path)
    for n in (1, 5):
        d = np.random.rand(n, 4).astype(np.float32)
        got = session.run(None, {'x': d})[0]
        np.testing.assert_allclose(got, z.eval({x: d}), rtol=1e-5, atol=1e-6)


def test_a_model_read_back_evaluates_as_written_and_its_parameters_are_parameters(tmp_path):
    x, z = _dense_model()
    path = str(tmp_path / 'm.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    assert sorted(p.name for p in z2.parameters) == ['W', 'b']
    d = np.random.rand(1, 4).astype(np.float32)  # the batch reads back as 1 (docs/onnx.md)
    np.testing.assert_allclose(z2.eval({z2.arguments[0]: d}), z.eval({x: d}), rtol=1e-6)
    z3 = C.load_model(open(path, 'rb').read(), format=C.ModelFormat.ONNX)
    np.testing.assert_allclose(z3.eval({z3.arguments[0]: d}), z.eval({x: d}), rtol=1e-6)


def test_the_opset_is_chosen_by_an_argument_and_checked(tmp_path):
    _, z = _dense_model()
    path = str(tmp_path / 'm.onnx')
    z.save(path, format=C.ModelFormat.ONNX, opset=11)
    assert onnx.load(path).opset_import[0].version == 11
    with pytest.raises(ValueError, match='opset 5'):
        z.save(path, format=C.ModelFormat.ONNX, opset=5)


def test_an_op_without_onnx_form_is_named(tmp_path):
    x = C.input_variable(3)
    with pytest.raises(ValueError, match='has no ONNX form'):
        C.random_sample(C.softmax(x), 2, False).save(str(tmp_path / 'm.onnx'), format=C.ModelFormat.ONNX)


def test_external_data_puts_parameters_beside_the_model(tmp_path):
    x, z = _dense_model()
    path = str(tmp_path / 'm.onnx')
    z.save(path, format=C.ModelFormat.ONNX, use_external_files_to_store_parameters=True)
    m = onnx.load(path, load_external_data=False)
    assert all(t.data_location == onnx.TensorProto.EXTERNAL for t in m.graph.initializer)
    d = np.random.rand(1, 4).astype(np.float32)
    np.testing.assert_allclose(ort.InferenceSession(path).run(None, {'x': d})[0], z.eval({x: d}), rtol=1e-5)
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    np.testing.assert_allclose(z2.eval({z2.arguments[0]: d}), z.eval({x: d}), rtol=1e-6)


def test_a_batch_axis_reads_back_as_cntk_2_7_wrote_it_and_a_foreign_batch_stays_free(tmp_path):
    x, z = _dense_model()
    path = str(tmp_path / 'm.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    m = onnx.load(path)
    assert [(p.key, p.value) for p in m.metadata_props] == [('cntk.static_batch:x', '1')]
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    assert z2.arguments[0].shape == (1, 4) and z2.arguments[0].dynamic_axes == ()
    assert z2.output.shape == (1, 3)
    # Without the record (any other producer) the symbolic batch is a free dimension.
    del m.metadata_props[:]
    z3 = C.load_model(m.SerializeToString(), format=C.ModelFormat.ONNX)
    assert z3.arguments[0].shape == (C.FreeDimension, 4)
    d = np.random.rand(5, 4).astype(np.float32)
    np.testing.assert_allclose(z3.eval({z3.arguments[0]: d}), z.eval({x: d}), rtol=1e-6)


def test_a_sequence_model_is_written_sequence_major_and_reads_back_taking_such_arrays(tmp_path):
    x = C.sequence.input_variable(3, name='s')
    z = C.tanh(x) * 2
    path = str(tmp_path / 'm.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    for vi in (m.graph.input[0], m.graph.output[0]):
        dims = vi.type.tensor_type.shape.dim
        assert [(d.dim_param, d.denotation) for d in dims[:2]] == [('Sequence', 'DATA_TIME'), ('batch', 'DATA_BATCH')]
    d = np.random.rand(2, 5, 3).astype(np.float32)  # two sequences of 5 steps
    want = np.asarray(z.eval({x: d}))
    got = ort.InferenceSession(path).run(None, {'s': d.transpose(1, 0, 2)})[0]
    np.testing.assert_allclose(got.transpose(1, 0, 2), want, rtol=1e-5)
    if 'Transpose' not in C._cntk.onnx_import_op_types():
        pytest.skip('the reader has no Transpose rule yet')
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    assert z2.arguments[0].shape == (C.FreeDimension, 1, 3)
    got = z2.eval({z2.arguments[0]: d[:1].transpose(1, 0, 2)})
    np.testing.assert_allclose(np.asarray(got).transpose(1, 0, 2), want[:1], rtol=1e-6)


@pytest.mark.parametrize('data, message', [
    (b'', 'not an ONNX model'),
    (b'\x08\x07\x12\x03abc\xff\xff', 'not an ONNX model'),
])
def test_bad_bytes_raise_a_clear_error(data, message):
    with pytest.raises(IOError, match=message):
        C.load_model(data, format=C.ModelFormat.ONNX)


def test_an_unknown_op_type_is_named_with_its_node():
    from onnx import helper, TensorProto
    node = helper.make_node('NoSuchOp', ['x'], ['y'], name='mystery')
    g = helper.make_graph([node], 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, [2])])
    with pytest.raises(ValueError, match="node 'mystery' \\(NoSuchOp\\)"):
        C.load_model(helper.make_model(g).SerializeToString(), format=C.ModelFormat.ONNX)


_V2 = '/work/shared/data/cntk-files/v2/'


@pytest.mark.parametrize('name', ['batch.norm.no.sample.count.v2.bin', 'initial_policy_network.model'])
def test_a_real_cntk_file_converts_from_the_command_line_and_runs_in_onnxruntime(tmp_path, name):
    import os
    import subprocess
    import sys
    src = os.path.join(os.path.dirname(__file__), '../../../shared/data/cntk-files/v2', name)
    if not os.path.exists(src):
        src = _V2 + name
    if not os.path.exists(src):
        pytest.skip('CNTK model files not present')
    out = str(tmp_path / 'm.onnx')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, '-m', 'cntk', 'convert', src, out, '--opset', '13'],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    m = onnx.load(out)
    assert m.opset_import[0].version == 13
    onnx.checker.check_model(m, full_check=True)
    z = C.load_model(src)
    x = z.arguments[0]
    seq = x.has_sequence_axis()
    d = np.random.RandomState(0).rand(2, *((3,) if seq else ()), *x.shape).astype(np.float32)
    want = np.asarray(z.eval({x: d}))
    got = ort.InferenceSession(out).run(None, {m.graph.input[0].name: d.swapaxes(0, 1) if seq else d})[0]
    np.testing.assert_allclose(got.swapaxes(0, 1) if seq else got, want, rtol=1e-4, atol=1e-5)
    # cntk.misc.convert does the same from Python; given a Function it is CNTK's graph conversion.
    import cntk.misc
    z2 = cntk.misc.convert(src, str(tmp_path / 'm2.onnx'))
    assert len(z2.outputs) == len(z.outputs) and os.path.getsize(str(tmp_path / 'm2.onnx')) > 0


def test_convert_names_a_file_that_is_no_model(tmp_path):
    import subprocess
    import sys
    import os
    bad = tmp_path / 'bad.bin'
    bad.write_bytes(b'\x00\x01junk')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, '-m', 'cntk', 'convert', str(bad), str(tmp_path / 'o.onnx')],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1 and 'bad.bin' in r.stderr and 'CALL STACK' not in r.stderr


def _graph_bytes(nodes, inputs, outputs):
    from onnx import helper
    return helper.make_model(helper.make_graph(nodes, 'g', inputs, outputs)).SerializeToString()


def test_a_truncated_file_is_named_not_an_onnx_model(tmp_path):
    x, z = _dense_model()
    path = str(tmp_path / 'm.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    data = open(path, 'rb').read()
    with pytest.raises(IOError, match='truncated or corrupt'):
        C.load_model(data[:len(data) // 2], format=C.ModelFormat.ONNX)


def test_a_wrong_element_type_and_inconsistent_shapes_name_the_input_and_the_node():
    from onnx import helper, TensorProto
    vi = helper.make_tensor_value_info
    bad_type = _graph_bytes([helper.make_node('Abs', ['x'], ['y'], name='n1')],
                            [vi('x', TensorProto.STRING, [2])], [vi('y', TensorProto.FLOAT, [2])])
    with pytest.raises(ValueError, match="graph input 'x'.*STRING"):
        C.load_model(bad_type, format=C.ModelFormat.ONNX)
    bad_shapes = _graph_bytes([helper.make_node('Add', ['x', 'w'], ['y'], name='adder')],
                              [vi('x', TensorProto.FLOAT, [2]), vi('w', TensorProto.FLOAT, [3])],
                              [vi('y', TensorProto.FLOAT, [2])])
    with pytest.raises(ValueError, match=r"node 'adder' \(Add\).*\(2,\), \(3,\)"):
        C.load_model(bad_shapes, format=C.ModelFormat.ONNX)


def test_functions_are_named_after_the_nodes_even_where_a_node_passes_its_input_on():
    from onnx import helper, TensorProto
    vi = helper.make_tensor_value_info
    data = _graph_bytes([helper.make_node('Identity', ['x'], ['i'], name='keep_me'),
                         helper.make_node('Abs', ['i'], ['y'], name='absolute')],
                        [vi('x', TensorProto.FLOAT, [2])], [vi('y', TensorProto.FLOAT, [2])])
    z = C.load_model(data, format=C.ModelFormat.ONNX)
    names = [f.name for f in C.logging.graph.depth_first_search(z, lambda n: isinstance(n, C.Function))]
    assert 'keep_me' in names and 'absolute' in names
    np.testing.assert_allclose(z.eval({z.arguments[0]: np.array([-1, 2], np.float32)}), [1, 2])


def test_a_tensor_whose_shape_claims_more_values_than_it_holds_is_refused_before_allocating():
    from onnx import helper, TensorProto
    vi = helper.make_tensor_value_info
    big = TensorProto(name='c', data_type=TensorProto.FLOAT, dims=[100000, 100000, 10])  # 400 GB claimed, none held
    g = helper.make_graph([helper.make_node('Add', ['x', 'c'], ['y'], name='adder')], 'g',
                          [vi('x', TensorProto.FLOAT, [1])], [vi('y', TensorProto.FLOAT, None)], [big])
    with pytest.raises(ValueError, match="initializer 'c'.*holds 0 values"):
        C.load_model(helper.make_model(g).SerializeToString(), format=C.ModelFormat.ONNX)


def test_the_arguments_keep_the_order_of_the_graph_inputs(tmp_path):
    # Callers (CNTK 2.7's ONNX adapter among them) feed inputs by position in the graph's input list.
    from onnx import helper, TensorProto
    vi = helper.make_tensor_value_info
    data = _graph_bytes([helper.make_node('Sub', ['a', 'b'], ['y'])],
                        [vi('b', TensorProto.FLOAT, [2]), vi('a', TensorProto.FLOAT, [2])],
                        [vi('y', TensorProto.FLOAT, [2])])
    z = C.load_model(data, format=C.ModelFormat.ONNX)
    assert [a.name for a in z.arguments] == ['b', 'a']
    b, a = np.array([10, 20], np.float32), np.array([1, 5], np.float32)
    np.testing.assert_allclose(z.eval({z.arguments[0]: b, z.arguments[1]: a}), a - b)
    for f in (z.clone(C.CloneMethod.share), z.clone(C.CloneMethod.clone)):
        assert [x.name for x in f.arguments] == ['b', 'a']
    z.save(str(tmp_path / 'again.onnx'), format=C.ModelFormat.ONNX)
    import onnx
    assert [i.name for i in onnx.load(str(tmp_path / 'again.onnx')).graph.input] == ['b', 'a']
    # A plain composite still lists its arguments depth first.
    x, w = C.input_variable(2, name='x'), C.input_variable(2, name='w')
    assert [v.name for v in (x - w).arguments] == ['x', 'w']


def test_graph_inputs_that_fold_away_stay_arguments(tmp_path):
    # Shape's output is known from the input's static shape and CastLike reads only its target's
    # type, yet the model still takes every graph input, in order, as ONNX Runtime does.
    from onnx import helper, TensorProto
    vi = helper.make_tensor_value_info
    data = _graph_bytes([helper.make_node('Shape', ['x'], ['s']), helper.make_node('CastLike', ['s', 'like'], ['y'])],
                        [vi('x', TensorProto.FLOAT, [2, 3]), vi('like', TensorProto.FLOAT, [1])],
                        [vi('y', TensorProto.FLOAT, [2])])
    z = C.load_model(data, format=C.ModelFormat.ONNX)
    assert [a.name for a in z.arguments] == ['x', 'like']
    feed = {z.arguments[0]: np.zeros((2, 3), np.float32), z.arguments[1]: np.zeros(1, np.float32)}
    np.testing.assert_array_equal(z.eval(feed), [2, 3])
    z.save(str(tmp_path / 'm.model'))
    back = C.load_model(str(tmp_path / 'm.model'))
    assert [a.name for a in back.arguments] == ['x', 'like']
    np.testing.assert_array_equal(back.eval({back.arguments[0]: feed[z.arguments[0]],
                                             back.arguments[1]: feed[z.arguments[1]]}), [2, 3])
    z.save(str(tmp_path / 'm.onnx'), format=C.ModelFormat.ONNX)
    import onnx
    import onnxruntime as ort
    m = onnx.load(str(tmp_path / 'm.onnx'))
    onnx.checker.check_model(m, full_check=True)
    assert [i.name for i in m.graph.input] == ['x', 'like']
    sess = ort.InferenceSession(str(tmp_path / 'm.onnx'), providers=['CPUExecutionProvider'])
    np.testing.assert_array_equal(sess.run(None, {'x': feed[z.arguments[0]], 'like': feed[z.arguments[1]]})[0], [2, 3])
