"""The ONNX reader over free dimensions (models exported with dynamic axes) and element types."""
import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")  # onnx's own dependency
from onnx import TensorProto, helper  # noqa: E402


def _load(m):
    return C.load_model(m.SerializeToString(), format=C.ModelFormat.ONNX)


def _eval(f, x):
    return np.asarray(f.eval({f.arguments[0]: x}))


@pytest.mark.parametrize("elem", [TensorProto.BFLOAT16, TensorProto.FLOAT16])
def test_a_narrow_float_div_divides_without_truncating(elem):
    # bfloat16 and float16 are float types: their Div is a true division (integers truncate).
    nodes = [helper.make_node('Cast', ['x'], ['xn'], to=elem), helper.make_node('Cast', ['y'], ['yn'], to=elem),
             helper.make_node('Div', ['xn', 'yn'], ['q']), helper.make_node('Cast', ['q'], ['z'], to=TensorProto.FLOAT)]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ('x', 'y')]
    g = helper.make_graph(nodes, 'g', vi, [helper.make_tensor_value_info('z', TensorProto.FLOAT, [4])])
    f = _load(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]))
    x = np.array([7, -7, 1, 3], np.float32)
    y = np.array([2, 2, 3, 4], np.float32)
    got = np.asarray(f.eval({f.arguments[0]: x, f.arguments[1]: y}))
    t = ml_dtypes.bfloat16 if elem == TensorProto.BFLOAT16 else np.float16
    want = (x.astype(t) / y.astype(t)).astype(t).astype(np.float32)
    # float16 is an engine type; bfloat16 values are computed in float32, within its rounding.
    np.testing.assert_allclose(got, want, rtol=0 if t == np.float16 else 2.0**-8)


def test_an_int32_div_still_truncates():
    nodes = [helper.make_node('Div', ['x', 'y'], ['z'])]
    vi = [helper.make_tensor_value_info(n, TensorProto.INT32, [3]) for n in ('x', 'y')]
    g = helper.make_graph(nodes, 'g', vi, [helper.make_tensor_value_info('z', TensorProto.INT32, [3])])
    f = _load(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]))
    x, y = np.array([7, -7, 5], np.float32), np.array([2, 2, -3], np.float32)
    got = np.asarray(f.eval({f.arguments[0]: x, f.arguments[1]: y}))
    np.testing.assert_array_equal(got, np.trunc(x / y))


def _shape_chain_model():
    # reshape(x, [shape(x)[0] * shape(x)[1], -1]), reshape(x, [shape(x)[0], -1]), and
    # zeros of shape [2, shape(x)[0]] added to a broadcast of its first column: the chains of
    # Shape/Gather/Mul/Concat/Reshape/ConstantOfShape/Expand that dynamic axes give.
    i64 = lambda name, v: helper.make_node('Constant', [], [name], value=helper.make_tensor(  # noqa: E731
        name, TensorProto.INT64, [len(v)], v))
    nodes = [
        helper.make_node('Shape', ['x'], ['s']),
        i64('i0', [0]), i64('i1', [1]), i64('m1', [-1]), i64('two', [2]),
        helper.make_node('Gather', ['s', 'i0'], ['d0'], axis=0),
        helper.make_node('Gather', ['s', 'i1'], ['d1'], axis=0),
        helper.make_node('Mul', ['d0', 'd1'], ['d01']),
        helper.make_node('Concat', ['d01', 'm1'], ['flat_shape'], axis=0),
        helper.make_node('Reshape', ['x', 'flat_shape'], ['flat']),
        helper.make_node('Concat', ['d0', 'm1'], ['merged_shape'], axis=0),
        helper.make_node('Reshape', ['x', 'merged_shape'], ['merged']),
        helper.make_node('Concat', ['two', 'd0'], ['zs'], axis=0),
        helper.make_node('ConstantOfShape', ['zs'], ['zeros'],
                         value=helper.make_tensor('v', TensorProto.FLOAT, [1], [1.5])),
        helper.make_node('Slice', ['x', 'i0', 'i1', 'i1'], ['col']),       # x[:, 0:1, :]
        helper.make_node('Concat', ['d0', 's'], ['es'], axis=0),
        helper.make_node('Slice', ['es', 'i0', 'i1'], ['e0']),
    ]
    nodes += [helper.make_node('Concat', ['two', 'd0', 'two'], ['exp_shape'], axis=0),
              helper.make_node('ReduceSum', ['col', 'two'], ['colsum'], keepdims=0),  # [d0, 1]
              helper.make_node('Unsqueeze', ['colsum', 'i0'], ['col3']),  # [1, d0, 1]
              helper.make_node('Expand', ['col3', 'exp_shape'], ['expanded'])]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None, None]) for n in ('flat', 'merged', 'zeros', 'expanded')]
    x = helper.make_tensor_value_info('x', TensorProto.FLOAT, ['batch', 'seq', 3])
    return helper.make_model(helper.make_graph(nodes, 'g', [x], outs), opset_imports=[helper.make_opsetid('', 17)])


@pytest.mark.parametrize("batch, length", [(2, 5), (4, 3)])
def test_shape_chains_over_free_dimensions_read_once_and_run_at_any_size(batch, length):
    m = _shape_chain_model()
    onnx.checker.check_model(m)
    f = _load(m)
    assert f.arguments[0].shape == (C.FreeDimension, C.FreeDimension, 3)
    x = np.random.RandomState(batch).rand(batch, length, 3).astype(np.float32)
    got = f.eval({f.arguments[0]: x})
    got = {o.name: np.asarray(got[o]) for o in f.outputs}
    np.testing.assert_array_equal(got['flat'], x.reshape(batch * length, 3))
    np.testing.assert_array_equal(got['merged'], x.reshape(batch, length * 3))
    np.testing.assert_array_equal(got['zeros'], np.full((2, batch), 1.5, np.float32))
    col = x[:, 0:1, :].sum(axis=2)[None]
    np.testing.assert_allclose(got['expanded'], np.broadcast_to(col, (2, batch, 2)), rtol=1e-6)


def test_a_shape_value_used_as_data_is_refused_naming_the_node():
    # The sizes of free dimensions are not known while reading: a value computed from one may
    # shape the graph but not enter its arithmetic.
    nodes = [helper.make_node('Shape', ['x'], ['s']),
             helper.make_node('Cast', ['s'], ['sf'], to=TensorProto.FLOAT),
             helper.make_node('Add', ['x', 'sf'], ['y'])]
    g = helper.make_graph(nodes, 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['n'])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['n'])])
    with pytest.raises(ValueError, match="'y'.*free dimension"):
        _load(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]))


def _split_model(between):
    # x [b, s, 3] -> [b * s, 3] -> (ops between) -> back to Shape(x): a free dim split in two.
    nodes = [helper.make_node('Shape', ['x'], ['s']), helper.make_node('Reshape', ['x', 'flat_shape'], ['flat'])]
    nodes += between + [helper.make_node('Reshape', [between[-1].output[0] if between else 'flat', 's'], ['back'])]
    g = helper.make_graph(nodes, 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['b', 's', 3])],
                          [helper.make_tensor_value_info('back', TensorProto.FLOAT, ['b', 's', 3])],
                          [helper.make_tensor('flat_shape', TensorProto.INT64, [2], [-1, 3]),
                           helper.make_tensor('w', TensorProto.FLOAT, [3, 3], np.arange(9.0) / 9),
                           helper.make_tensor('bias', TensorProto.FLOAT, [3], [1, 2, 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)])


def test_a_free_dimension_merged_then_split_back_reads_over_row_wise_ops():
    # The engine's Reshape infers one dimension: the split is read by redoing the merge with the
    # two dims kept apart, the ops between (a product by a matrix, a bias, Relu) applied again.
    between = [helper.make_node('MatMul', ['flat', 'w'], ['p']), helper.make_node('Add', ['p', 'bias'], ['q']),
               helper.make_node('Relu', ['q'], ['r'])]
    f = _load(_split_model(between))
    w = (np.arange(9.0) / 9).reshape(3, 3).astype(np.float32)
    for shape in [(2, 5, 3), (4, 1, 3)]:
        x = np.random.RandomState(0).rand(*shape).astype(np.float32) - 0.5
        want = np.maximum(x.reshape(-1, 3) @ w + [1, 2, 3], 0).reshape(shape)
        np.testing.assert_allclose(_eval(f, x), want, rtol=1e-6)


def test_a_free_dimension_split_after_other_ops_is_refused_naming_the_node():
    # A transpose between could move the merged axis: no such split is read.
    between = [helper.make_node('Transpose', ['flat'], ['t'], perm=[1, 0]),
               helper.make_node('Transpose', ['t'], ['u'], perm=[1, 0])]
    with pytest.raises(ValueError, match="'back'.*several entries depending on free dimensions"):
        _load(_split_model(between))
