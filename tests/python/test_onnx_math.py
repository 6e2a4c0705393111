"""ONNX forms and reader rules of the math ops: elementwise, comparisons and logic, reductions,
Times/MatMul/Gemm and the shape and data-movement ops. Each exported op is checked against a
NumPy reference in ONNX Runtime and read back; each reader rule runs a node built with
onnx.helper against ONNX's reference evaluator."""
import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

R = np.random.RandomState(11)
X = (R.rand(2, 3, 4).astype(np.float32) - 0.5) * 1.6  # in (-0.8, 0.8): every inverse function's domain


def _export_and_compare(tmp_path, z, data, want, opset=None):
    """z exported runs in ONNX Runtime as NumPy says; read back it evaluates the same per sample."""
    path = str(tmp_path / 'm.onnx')
    z.save(path, format=C.ModelFormat.ONNX, **({'opset': opset} if opset else {}))
    onnx.checker.check_model(onnx.load(path), full_check=True)
    args = z.arguments
    np.testing.assert_allclose(z.eval({a: data[a.name] for a in args}), want, rtol=1e-5, atol=1e-5)
    session = ort.InferenceSession(path)
    got = session.run(None, {i.name: data[i.name] for i in session.get_inputs()})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    for n in range(len(want)):  # the batch reads back as a static 1 (docs/onnx.md)
        back = z2.eval({a: data[a.name][n:n + 1] for a in z2.arguments})
        np.testing.assert_allclose(np.asarray(back).reshape(want[n].shape), want[n], rtol=1e-5, atol=1e-5)


def _x(shape=(3, 4)):
    return C.input_variable(shape, name='x')


UNARY = [(C.abs, np.abs), (C.negate, np.negative), (C.relu, lambda v: np.maximum(v, 0)), (C.tanh, np.tanh),
         (C.sigmoid, lambda v: 1 / (1 + np.exp(-v))), (C.exp, np.exp), (C.floor, np.floor), (C.sin, np.sin),
         (C.cos, np.cos), (C.tan, np.tan), (C.asin, np.arcsin), (C.acos, np.arccos), (C.atan, np.arctan),
         (C.sinh, np.sinh), (C.cosh, np.cosh), (C.asinh, np.arcsinh), (C.atanh, np.arctanh),
         (lambda v: C.log(C.abs(v) + 1), lambda v: np.log(np.abs(v) + 1)),
         (lambda v: C.sqrt(C.abs(v)), lambda v: np.sqrt(np.abs(v))),
         (lambda v: C.reciprocal(v + 2), lambda v: 1 / (v + 2)),
         (C.element_not, lambda v: (v == 0).astype(np.float32))]


@pytest.mark.parametrize('op,ref', UNARY, ids=lambda v: getattr(v, '__name__', ''))
def test_unary_ops_export(tmp_path, op, ref):
    x = _x()
    d = X.copy()
    d[0, 0, 0] = 0
    _export_and_compare(tmp_path, op(x), {'x': d}, ref(d))


Y = R.rand(4).astype(np.float32) - 0.5
BINARY = [(C.plus, np.add), (C.minus, np.subtract), (C.element_times, np.multiply),
          (C.element_divide, lambda a, b: a / b), (C.log_add_exp, np.logaddexp),
          (C.equal, np.equal), (C.not_equal, np.not_equal), (C.less, np.less), (C.less_equal, np.less_equal),
          (C.greater, np.greater), (C.greater_equal, np.greater_equal), (C.element_and, np.logical_and),
          (C.element_or, np.logical_or), (C.element_xor, np.logical_xor)]


@pytest.mark.parametrize('op,ref', BINARY, ids=lambda v: getattr(v, '__name__', ''))
@pytest.mark.parametrize('opset', [9, 17])
def test_binary_ops_export_with_broadcasting(tmp_path, op, ref, opset):
    x = _x()
    y = Y.copy()
    y[1] = 0
    d = X.copy()
    d[:, :, 2] = y[2]  # some equal pairs
    _export_and_compare(tmp_path, op(x, C.constant(y)), {'x': d}, ref(d, y).astype(np.float32), opset=opset)


def test_pow_select_and_clip_export(tmp_path):
    x = _x()
    d = np.abs(X) + 0.1
    _export_and_compare(tmp_path, C.pow(x, C.constant(Y + 1)), {'x': d}, np.power(d, Y + 1))
    _export_and_compare(tmp_path, C.element_select(C.greater(x, 0.5), x, -x), {'x': d}, np.where(d > 0.5, d, -d))
    lo = np.full(4, 0.2, np.float32)
    _export_and_compare(tmp_path, C.clip(x, C.constant(lo), 0.6), {'x': d}, np.clip(d, lo, 0.6))


REDUCTIONS = [(C.reduce_sum, np.sum), (C.reduce_mean, np.mean), (C.reduce_max, np.max), (C.reduce_min, np.min),
              (C.reduce_prod, np.prod), (C.reduce_log_sum_exp, lambda v, axis, keepdims: np.log(
                  np.sum(np.exp(v), axis=axis, keepdims=keepdims)))]


@pytest.mark.parametrize('op,ref', REDUCTIONS, ids=lambda v: getattr(v, '__name__', ''))
@pytest.mark.parametrize('axis,keepdims', [(1, True), ((0, 1), False), (C.Axis.all_static_axes(), True)])
@pytest.mark.parametrize('opset', [11, 18])
def test_reductions_export(tmp_path, op, ref, axis, keepdims, opset):
    x = _x()
    if isinstance(axis, C.Axis):
        z, nax = op(x, axis=axis), (1, 2)
    else:
        z, nax = op(x, axis=axis, keepdims=keepdims), tuple(a + 1 for a in np.atleast_1d(axis))
    want = ref(X, axis=nax, keepdims=keepdims).astype(np.float32).reshape((2,) + z.output.shape)
    _export_and_compare(tmp_path, z, {'x': X}, want, opset=opset)


@pytest.mark.parametrize('op,ref', [(C.argmax, np.argmax), (C.argmin, np.argmin)])
def test_argmax_argmin_export(tmp_path, op, ref):
    x = _x()
    _export_and_compare(tmp_path, op(x, axis=1), {'x': X}, ref(X, axis=2)[:, :, None].astype(np.float32))
    flat = ref(X.reshape(2, -1), axis=1).astype(np.float32)  # all static axes: they are dropped
    _export_and_compare(tmp_path, op(x), {'x': X}, flat)


def test_times_export(tmp_path):
    x = _x()
    W = R.rand(4, 5).astype(np.float32)
    _export_and_compare(tmp_path, C.times(x, W), {'x': X}, X @ W)
    v = R.rand(4).astype(np.float32)
    _export_and_compare(tmp_path, C.times(x, v, output_rank=0), {'x': X}, X @ v)
    _export_and_compare(tmp_path, C.times(x, v), {'x': X}, X[..., None] * v)  # by a vector: outer product
    W4 = R.rand(3, 4, 2, 5).astype(np.float32)  # two contracted axes, output rank 2
    want = np.einsum('bij,ijkl->bkl', X, W4)
    _export_and_compare(tmp_path, C.times(x, W4, output_rank=2), {'x': X}, want)
    W3 = R.rand(4, 6).astype(np.float32)  # map rank 1: each row of x times W
    _export_and_compare(tmp_path, C.times(x, W3, infer_input_rank_to_map=1), {'x': X}, X @ W3)


def test_movement_ops_export(tmp_path):
    x = _x()
    _export_and_compare(tmp_path, C.reshape(x, (2, 6)), {'x': X}, X.reshape(2, 2, 6))
    _export_and_compare(tmp_path, C.reshape(x, (2, 2), begin_axis=1), {'x': X}, X.reshape(2, 3, 2, 2))
    _export_and_compare(tmp_path, C.transpose(x, (1, 0)), {'x': X}, X.transpose(0, 2, 1))
    _export_and_compare(tmp_path, C.swapaxes(x, 0, 1), {'x': X}, X.transpose(0, 2, 1))
    _export_and_compare(tmp_path, x[1:3, ::2], {'x': X}, X[:, 1:3, ::2])
    _export_and_compare(tmp_path, C.slice(x, [0, 1], [0, 0], [3, 4], [1, -1]), {'x': X}, X[:, :, ::-1])
    _export_and_compare(tmp_path, C.slice(x, 1, -2, 0), {'x': X}, X[:, :, -2:])
    _export_and_compare(tmp_path, C.splice(x, x * 2, axis=0), {'x': X}, np.concatenate([X, X * 2], axis=1))
    _export_and_compare(tmp_path, C.splice(x, x * 2, axis=C.Axis.new_leading_axis()), {'x': X},
                        np.stack([X, X * 2], axis=1))
    _export_and_compare(tmp_path, C.pad(x, [(1, 0), (2, 1)], constant_value=1.5), {'x': X},
                        np.pad(X, [(0, 0), (1, 0), (2, 1)], constant_values=1.5))
    _export_and_compare(tmp_path, C.pad(x, [(1, 1), (2, 1)], mode=C.ops.REFLECT_PAD), {'x': X},
                        np.pad(X, [(0, 0), (1, 1), (2, 1)], mode='reflect'))
    _export_and_compare(tmp_path, C.pad(x, [(3, 1), (2, 4)], mode=C.ops.SYMMETRIC_PAD), {'x': X},
                        np.pad(X, [(0, 0), (3, 1), (2, 4)], mode='symmetric'))
    _export_and_compare(tmp_path, C.squeeze(C.reshape(x, (1, 3, 1, 4))), {'x': X}, X)
    _export_and_compare(tmp_path, C.stop_gradient(x) + C.pass_function(x) if hasattr(C, 'pass_function')
                        else C.stop_gradient(x) + x, {'x': X}, 2 * X)


def test_gather_and_one_hot_export(tmp_path):
    table = R.rand(5, 3).astype(np.float32)
    i = C.input_variable(2, name='i')
    idx = np.array([[0, 4], [3, 1]], np.float32)
    _export_and_compare(tmp_path, C.gather(C.constant(table), i), {'i': idx}, table[idx.astype(int)])
    _export_and_compare(tmp_path, C.gather(C.constant(table.T.copy()), C.constant(np.array([2., 0.], np.float32)),
                                           axis=1) + C.reduce_sum(i) * 0, {'i': idx},
                        np.broadcast_to(table.T[:, [2, 0]], (2, 3, 2)))
    _export_and_compare(tmp_path, C.one_hot(i, 5), {'i': idx}, np.eye(5, dtype=np.float32)[idx.astype(int)])


# ----------------------------------------------------------------------------- reader


def _read(nodes, inputs, out_names, opset=17, initializers=None, want=None):
    """Nodes read here against ONNX's reference evaluator (shape and values)."""
    if not isinstance(nodes, list):
        nodes = [nodes]
    graph = helper.make_graph(
        nodes, 'g', [helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape) for n, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in out_names],
        [numpy_helper.from_array(v, n) for n, v in (initializers or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    if want is None:
        want = ReferenceEvaluator(model).run(None, inputs)
    z = C.load_model(model.SerializeToString(), format=C.ModelFormat.ONNX)
    got = z.eval({a: inputs[a.name] for a in z.arguments}, as_numpy=True)
    if not isinstance(got, dict):
        got = {z.outputs[0]: got}
    outs = {o.name: v for o, v in got.items()}
    for name, w in zip(out_names, want):
        g = np.asarray(outs.get(name, list(got.values())[out_names.index(name)]))
        assert g.shape == np.asarray(w).shape, (name, g.shape, np.asarray(w).shape)
        np.testing.assert_allclose(g, np.asarray(w).astype(np.float32), rtol=1e-5, atol=1e-5)


A = (R.rand(3, 4).astype(np.float32) - 0.5) * 1.6
B = R.rand(4).astype(np.float32) - 0.5


@pytest.mark.parametrize('op', ['Add', 'Sub', 'Mul', 'Div', 'Pow', 'Equal', 'Less', 'Greater', 'LessOrEqual',
                                'GreaterOrEqual', 'Max', 'Min', 'Sum', 'Mean', 'And', 'Or', 'Xor'])
def test_reader_binary(op):
    a, b = (np.abs(A) + 0.1, B + 1) if op == 'Pow' else (A, B)
    b = b.copy()
    b[0] = a[1, 0]
    if op in ('And', 'Or', 'Xor'):
        nodes = [helper.make_node('Cast', ['a'], ['ab'], to=TensorProto.BOOL),
                 helper.make_node('Cast', ['b'], ['bb'], to=TensorProto.BOOL),
                 helper.make_node(op, ['ab', 'bb'], ['y'])]
        want = [getattr(np, 'logical_' + op.lower())(a != 0, b != 0)]
        _read(nodes, {'a': a, 'b': b}, ['y'], want=want)
    else:
        _read(helper.make_node(op, ['a', 'b'], ['y']), {'a': a, 'b': b}, ['y'])


@pytest.mark.parametrize('op', ['Tan', 'Asin', 'Acos', 'Atan', 'Sinh', 'Cosh', 'Asinh', 'Atanh', 'Abs', 'Neg'])
def test_reader_unary(op):
    _read(helper.make_node(op, ['a'], ['y']), {'a': A}, ['y'])


def test_reader_variadic_not_and_clip():
    _read(helper.make_node('Max', ['a', 'b', 'c'], ['y']), {'a': A, 'b': B, 'c': A[:1] * 0.5}, ['y'])
    _read(helper.make_node('Mean', ['a', 'b', 'c'], ['y']), {'a': A, 'b': B, 'c': A[:1] * 0.5}, ['y'])
    nodes = [helper.make_node('Cast', ['a'], ['ab'], to=TensorProto.BOOL), helper.make_node('Not', ['ab'], ['y'])]
    _read(nodes, {'a': A}, ['y'], want=[A == 0])
    _read(helper.make_node('Clip', ['a'], ['y'], min=-0.2, max=0.3), {'a': A}, ['y'], opset=9)
    _read(helper.make_node('Clip', ['a', 'lo', 'hi'], ['y']), {'a': A}, ['y'], opset=13,
          initializers={'lo': np.array(-0.2, np.float32), 'hi': np.array(0.3, np.float32)})
    _read(helper.make_node('Clip', ['a', '', 'hi'], ['y']), {'a': A}, ['y'], opset=13,
          initializers={'hi': np.array(0.3, np.float32)})


X4 = R.rand(2, 3, 4, 5).astype(np.float32)


@pytest.mark.parametrize('op', ['ReduceSum', 'ReduceMean', 'ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceLogSumExp',
                                'ReduceL1', 'ReduceL2', 'ReduceSumSquare', 'ReduceLogSum'])
@pytest.mark.parametrize('opset', [11, 13, 18])
@pytest.mark.parametrize('axes,keepdims', [([1, -1], 1), ([2], 0), (None, 1)])
def test_reader_reductions(op, opset, axes, keepdims):
    as_input = opset >= (13 if op == 'ReduceSum' else 18)
    inits = {}
    if axes is None:
        node = helper.make_node(op, ['x'], ['y'], keepdims=keepdims)
    elif as_input:
        inits['ax'] = np.array(axes, np.int64)
        node = helper.make_node(op, ['x', 'ax'], ['y'], keepdims=keepdims)
    else:
        node = helper.make_node(op, ['x'], ['y'], axes=axes, keepdims=keepdims)
    _read(node, {'x': X4}, ['y'], opset=opset, initializers=inits)


def test_reader_argmax_argmin():
    for op in ('ArgMax', 'ArgMin'):
        _read(helper.make_node(op, ['x'], ['y'], axis=2), {'x': X4}, ['y'])
        _read(helper.make_node(op, ['x'], ['y'], axis=-1, keepdims=0), {'x': X4}, ['y'])


@pytest.mark.parametrize('sa,sb', [((3, 4), (4, 5)), ((2, 3, 4), (4,)), ((4,), (4, 5)), ((2, 3, 4), (2, 4, 5)),
                                   ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((1, 3, 4), (2, 1, 4, 2))])
def test_reader_matmul_of_two_variables(sa, sb):
    a, b = R.rand(*sa).astype(np.float32), R.rand(*sb).astype(np.float32)
    _read(helper.make_node('MatMul', ['a', 'b'], ['y']), {'a': a, 'b': b}, ['y'], want=[np.matmul(a, b)])


def test_reader_matmul_by_weights_and_gemm():
    W = R.rand(4, 5).astype(np.float32)
    _read(helper.make_node('MatMul', ['a', 'W'], ['y']), {'a': A}, ['y'], initializers={'W': W})
    c = R.rand(5).astype(np.float32)
    for ta, tb in [(0, 0), (1, 0), (0, 1), (1, 1)]:
        a = A.T.copy() if ta else A
        w = W.T.copy() if tb else W
        _read(helper.make_node('Gemm', ['a', 'W', 'c'], ['y'], alpha=0.5, beta=2.0, transA=ta, transB=tb), {'a': a},
              ['y'], initializers={'W': w, 'c': c})
    _read(helper.make_node('Gemm', ['a', 'W'], ['y']), {'a': A}, ['y'], initializers={'W': W})


def test_reader_reshape_flatten_transpose():
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    _read(helper.make_node('Reshape', ['x', 's'], ['y']), {'x': X4}, ['y'], initializers={'s': i64([0, -1, 5])})
    _read(helper.make_node('Reshape', ['x', 's'], ['y']), {'x': X4}, ['y'], initializers={'s': i64([6, 20])})
    _read(helper.make_node('Reshape', ['x', 's'], ['y'], allowzero=1), {'x': X4}, ['y'],
          initializers={'s': i64([2, 3, 20])}, opset=14)
    for axis in (0, 1, 2, -1):
        _read(helper.make_node('Flatten', ['x'], ['y'], axis=axis), {'x': X4}, ['y'])
    _read(helper.make_node('Transpose', ['x'], ['y'], perm=[2, 0, 3, 1]), {'x': X4}, ['y'])
    _read(helper.make_node('Transpose', ['x'], ['y']), {'x': X4}, ['y'])


def test_reader_squeeze_unsqueeze_both_forms():
    x = R.rand(2, 1, 3, 1).astype(np.float32)
    _read(helper.make_node('Squeeze', ['x'], ['y'], axes=[1]), {'x': x}, ['y'], opset=11)
    _read(helper.make_node('Squeeze', ['x'], ['y']), {'x': x}, ['y'], opset=11)
    _read(helper.make_node('Squeeze', ['x', 'a'], ['y']), {'x': x}, ['y'], initializers={'a': np.array([-1])})
    _read(helper.make_node('Unsqueeze', ['x'], ['y'], axes=[0, 5]), {'x': x}, ['y'], opset=11)
    _read(helper.make_node('Unsqueeze', ['x', 'a'], ['y']), {'x': x}, ['y'], initializers={'a': np.array([2, -1])})


def test_reader_concat_split():
    _read(helper.make_node('Concat', ['a', 'b'], ['y'], axis=1), {'a': X4, 'b': X4[:, :2] * 2}, ['y'])
    _read(helper.make_node('Split', ['x'], ['p', 'q'], axis=2, split=[1, 3]), {'x': X4}, ['p', 'q'], opset=11)
    _read(helper.make_node('Split', ['x', 's'], ['p', 'q'], axis=-1), {'x': X4}, ['p', 'q'],
          initializers={'s': np.array([2, 3])}, opset=13)
    _read(helper.make_node('Split', ['x'], ['p', 'q', 'r'], axis=3, num_outputs=3), {'x': X4}, ['p', 'q', 'r'],
          opset=18)
    _read(helper.make_node('Split', ['x'], ['p', 'q'], axis=2), {'x': X4}, ['p', 'q'], opset=11)


@pytest.mark.parametrize('starts,ends,axes,steps', [([1], [3], [1], [1]), ([0, -3], [2, 10**9], [0, 3], [1, 2]),
                                                    ([-1], [-10**9], [2], [-1]), ([3, 0], [0, 3], [3, 1], [-2, 1]),
                                                    ([1, 1, 1], [2, 3, 4], None, None)])
def test_reader_slice(starts, ends, axes, steps):
    inits = {'s': np.array(starts), 'e': np.array(ends)}
    ins = ['x', 's', 'e']
    if axes is not None:
        inits['a'] = np.array(axes)
        ins.append('a')
    if steps is not None:
        inits['t'] = np.array(steps)
        ins.append('t')
    _read(helper.make_node('Slice', ins, ['y']), {'x': X4}, ['y'], initializers=inits)
    if steps is None or all(s == 1 for s in steps):
        attrs = dict(starts=starts, ends=ends, **({'axes': axes} if axes is not None else {}))
        _read(helper.make_node('Slice', ['x'], ['y'], **attrs), {'x': X4}, ['y'], opset=9)


def test_reader_gather_pad_tile_expand():
    for axis in (0, 1, 3):
        idx = np.array([[0, 1], [-1, 0]] if axis == 0 else [[0, 2], [-1, 1]], np.int64)
        _read(helper.make_node('Gather', ['x', 'i'], ['y'], axis=axis), {'x': X4}, ['y'], initializers={'i': idx})
    pads = np.array([0, 1, 2, 0, 0, 0, 1, 3], np.int64)
    _read(helper.make_node('Pad', ['x', 'p', 'v'], ['y']), {'x': X4}, ['y'],
          initializers={'p': pads, 'v': np.array(0.5, np.float32)})
    _read(helper.make_node('Pad', ['x', 'p'], ['y'], mode='reflect'), {'x': X4}, ['y'], initializers={'p': pads})
    _read(helper.make_node('Pad', ['x'], ['y'], pads=list(pads), value=1.0), {'x': X4}, ['y'], opset=9)
    _read(helper.make_node('Tile', ['x', 'r'], ['y']), {'x': X4}, ['y'], initializers={'r': np.array([1, 2, 1, 3])})
    _read(helper.make_node('Expand', ['b', 's'], ['y']), {'b': B}, ['y'], initializers={'s': np.array([2, 1, 1])})


def test_reader_constant_forms():
    for attrs, value in ((dict(value_float=2.5), 2.5), (dict(value_floats=[1.0, 2.0, 3.0, 4.0]), [1, 2, 3, 4]),
                         (dict(value_int=3), 3), (dict(value_ints=[1, 2, 3, 4]), [1, 2, 3, 4]),
                         (dict(value=numpy_helper.from_array(A, 'v')), A)):
        nodes = [helper.make_node('Constant', [], ['c'], **attrs),
                 helper.make_node('Cast', ['c'], ['cf'], to=TensorProto.FLOAT),
                 helper.make_node('Add', ['a', 'cf'], ['y'])]
        _read(nodes, {'a': A}, ['y'], want=[A + np.asarray(value, np.float32)])


@pytest.mark.parametrize('opset', [9, 10, 11, 12, 13, 18, 21])
def test_a_model_of_many_math_ops_exports_at_every_opset(tmp_path, opset):
    x = _x()
    y = C.reduce_max(C.pad(x, [(1, 0), (0, 1)]), axis=1) + C.reduce_sum(x, axis=0)  # (4, 1) + (1, 4)
    y = C.splice(C.transpose(y, (1, 0)), C.squeeze(C.reshape(x[0:1, :], (1, 4, 1)), axes=2), axis=0)
    y = C.element_select(C.greater_equal(y, 0.1), C.log_add_exp(y, C.clip(y, -0.2, 0.2)), C.less_equal(y, -0.1))
    table = np.random.RandomState(3).rand(5, 5).astype(np.float32)
    z = C.times(C.gather(C.constant(table), C.constant(np.array([1., 3.], np.float32))), y)  # (2, 5) x (5, 4)
    p = np.pad(X, [(0, 0), (1, 0), (0, 1)]).max(axis=2, keepdims=True) + X.sum(axis=1, keepdims=True)
    p = np.concatenate([p.transpose(0, 2, 1), X[:, None, 0, :]], axis=1)
    p = np.where(p >= 0.1, np.logaddexp(p, np.clip(p, -0.2, 0.2)), (p <= -0.1).astype(np.float32))
    want = np.einsum('ij,bjk->bik', table[[1, 3]], p).astype(np.float32)
    _export_and_compare(tmp_path, z, {'x': X}, want, opset=opset)


def test_reader_composed_rules():
    """ONNX ops the engine has no single primitive for: Ceil, Sign, Acosh, integer Div, ArgMax's
    select_last_index, edge padding, and Gather by negative indices known only at run time."""
    for op in ('Ceil', 'Sign'):
        _read(helper.make_node(op, ['a'], ['y']), {'a': np.round(A * 4) / 2}, ['y'])
    _read(helper.make_node('Acosh', ['a'], ['y']), {'a': np.abs(A) + 1}, ['y'])
    a, b = np.array([7, -7, 9, -9], np.int32), np.array([2, 2, -4, -4], np.int32)
    nodes = [helper.make_node('Div', ['a', 'b'], ['q']), helper.make_node('Cast', ['q'], ['y'], to=TensorProto.FLOAT)]
    _read(nodes, {}, ['y'], initializers={'a': a, 'b': b}, want=[np.trunc(a / b)])
    ties = np.array([[1, 3, 3, 0], [2, 2, 1, 2], [0, 0, 0, 0]], np.float32)
    for op in ('ArgMax', 'ArgMin'):
        _read(helper.make_node(op, ['x'], ['y'], axis=1, select_last_index=1), {'x': ties}, ['y'])
    pads = np.array([0, 1, 2, 0, 0, 0, 1, 3], np.int64)
    _read(helper.make_node('Pad', ['x', 'p'], ['y'], mode='edge'), {'x': X4}, ['y'], initializers={'p': pads})
    graph = helper.make_graph([helper.make_node('Gather', ['x', 'i'], ['y'], axis=1)], 'g',
                              [helper.make_tensor_value_info('x', TensorProto.FLOAT, X4.shape),
                               helper.make_tensor_value_info('i', TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)])
    z = C.load_model(helper.make_model(graph).SerializeToString(), format=C.ModelFormat.ONNX)
    i = np.array([-1, 0, -3], np.float32)
    got = z.eval({a: (X4 if a.name == 'x' else i) for a in z.arguments})
    np.testing.assert_allclose(got, np.take(X4, i.astype(int), axis=1), rtol=1e-6)


def test_reader_matmul_integer():
    a = R.randint(0, 255, (3, 4)).astype(np.uint8)
    b = R.randint(0, 255, (4, 2)).astype(np.uint8)
    za, zb = np.array([3, 7, 1], np.uint8), np.array(5, np.uint8)
    nodes = [helper.make_node('MatMulInteger', ['a', 'b', 'za', 'zb'], ['q']),
             helper.make_node('Cast', ['q'], ['y'], to=TensorProto.FLOAT)]
    want = (a.astype(np.int32) - za[:, None]) @ (b.astype(np.int32) - zb)
    _read(nodes, {}, ['y'], initializers={'a': a, 'b': b, 'za': za, 'zb': zb}, want=[want])


def _read_old(nodes, inputs, out_names, opset, want):
    """A graph of an opset below 7 (no reference evaluator runs those) read here against NumPy."""
    _read(nodes, inputs, out_names, opset=opset, want=want)


@pytest.mark.parametrize('op,ref', [('Add', np.add), ('Sub', np.subtract), ('Mul', np.multiply),
                                    ('Div', np.divide), ('Pow', np.power)])
def test_reader_pre_opset_7_broadcasting(op, ref):
    """Before opset 7, broadcast=1 aligned the right operand from `axis` of the left one (or
    from the right without it); without broadcast=1 the shapes are equal."""
    a = np.abs(X4) + 0.5
    b = R.rand(3, 4).astype(np.float32) + 0.5
    _read_old(helper.make_node(op, ['a', 'b'], ['y'], broadcast=1, axis=1), {'a': a, 'b': b}, ['y'], 6,
              [ref(a, b[None, :, :, None])])
    c = R.rand(5).astype(np.float32) + 0.5
    _read_old(helper.make_node(op, ['a', 'c'], ['y'], broadcast=1), {'a': a, 'c': c}, ['y'], 6, [ref(a, c)])
    d = b[0]
    _read_old(helper.make_node(op, ['a', 'd'], ['y'], broadcast=1, axis=-2), {'a': a, 'd': d}, ['y'], 1,
              [ref(a, d[:, None])])
    _read_old(helper.make_node(op, ['a', 'e'], ['y']), {'a': a, 'e': a[::-1]}, ['y'], 6, [ref(a, a[::-1])])


def test_reader_pre_opset_7_concat_default_axis_and_opset_1():
    """Concat's axis was optional (1) before opset 4; every opset from 1 reads."""
    a, b = X4, X4[:, :2] * 2
    _read_old(helper.make_node('Concat', ['a', 'b'], ['y']), {'a': a, 'b': b}, ['y'], 1,
              [np.concatenate([a, b], axis=1)])
    _read_old(helper.make_node('Concat', ['a', 'b'], ['y'], axis=0), {'a': a, 'b': a}, ['y'], 1,
              [np.concatenate([a, a], axis=0)])
    _read_old([helper.make_node('Relu', ['a'], ['r']), helper.make_node('Sum', ['r', 'a'], ['y'])], {'a': a}, ['y'],
              1, [np.maximum(a, 0) + a])


def test_reader_sqrt_log_reciprocal_are_ieee():
    """ONNX's Sqrt, Log and Reciprocal at the points where CNTK's guarded forms differ: NaN below 0,
    -inf at log 0, exact logs of tiny values, 1/0 infinite."""
    with np.errstate(all='ignore'):
        for dt in (np.float32, np.float64):
            v = np.array([[-2.0, -1e-3, 0.0, 1e-40, 3e-38, 1e-32, 0.25, 4.0]], dt)
            for op, ref in (('Sqrt', np.sqrt), ('Log', np.log), ('Reciprocal', np.reciprocal), ('Acosh', np.arccosh)):
                t = TensorProto.FLOAT if dt == np.float32 else TensorProto.DOUBLE
                graph = helper.make_graph([helper.make_node(op, ['x'], ['y'])], 'g',
                                          [helper.make_tensor_value_info('x', t, v.shape)],
                                          [helper.make_tensor_value_info('y', t, v.shape)])
                z = C.load_model(helper.make_model(graph).SerializeToString(), format=C.ModelFormat.ONNX)
                got = np.asarray(z.eval({z.arguments[0]: v}))
                np.testing.assert_allclose(got.reshape(v.shape), ref(v), rtol=1e-6, err_msg=op)


def _onnx_model_tests(kind):
    import os
    root = os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data', kind)
    return sorted(os.path.join(root, d) for d in os.listdir(root)) if os.path.isdir(root) else []


@pytest.mark.parametrize('model_dir', _onnx_model_tests('pytorch-converted') + _onnx_model_tests('pytorch-operator'),
                         ids=lambda d: d.rsplit('/', 1)[-1])
def test_onnx_pytorch_model_tests(model_dir):
    """ONNX's PyTorch-exported model tests (opsets 6 to 9) read by cntk.onnx_backend, compared
    with the outputs stored beside each model as onnx.backend.test compares them."""
    import glob
    import os
    import cntk.onnx_backend as backend
    model = onnx.load(os.path.join(model_dir, 'model.onnx'))
    rep = backend.prepare(model)
    for ds in sorted(glob.glob(os.path.join(model_dir, 'test_data_set_*'))):
        def load(prefix):
            out = []
            for f in sorted(glob.glob(os.path.join(ds, prefix + '_*.pb')), key=lambda p: int(p.rsplit('_', 1)[1][:-3])):
                t = TensorProto()
                with open(f, 'rb') as fh:
                    t.ParseFromString(fh.read())
                out.append(numpy_helper.to_array(t))
            return out
        got = rep.run(load('input'))
        want = load('output')
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-3, atol=1e-7)


def test_float16_batched_matmul_rounds_once_and_writes_again(tmp_path):
    """A MatMul of two float16 variables sums its products in float32, rounding once (as the
    engine's float16 Times); the read model, Casts included, is written and read again."""
    r = np.random.RandomState(1)
    a = r.rand(6, 3, 4).astype(np.float16)
    b = r.rand(6, 4, 5).astype(np.float16)
    graph = helper.make_graph([helper.make_node('MatMul', ['a', 'b'], ['y'])], 'g',
                              [helper.make_tensor_value_info('a', TensorProto.FLOAT16, a.shape),
                               helper.make_tensor_value_info('b', TensorProto.FLOAT16, b.shape)],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT16, None)])
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    z = C.load_model(helper.make_model(graph).SerializeToString(), format=C.ModelFormat.ONNX)
    got = np.asarray(z.eval({v: (a if v.name == 'a' else b) for v in z.arguments}))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)
    path = str(tmp_path / 'again.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    session = ort.InferenceSession(path)
    assert session.run(None, {'a': a, 'b': b})[0].dtype == np.float16
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    np.testing.assert_array_equal(np.asarray(z2.eval({v: (a if v.name == 'a' else b) for v in z2.arguments})), want)


def test_a_read_model_takes_data_with_leading_axes_of_one(tmp_path):
    """CNTK's round trips feed a read model (static inputs, no dynamic axes) the original's
    batch-of-one data with an extra leading 1; up to two such axes are taken, as CNTK took them."""
    x = C.input_variable((3, 2), name='x')
    path = str(tmp_path / 'r.onnx')
    C.reshape(x, (2, 3)).save(path, format=C.ModelFormat.ONNX)
    z = C.Function.load(path, format=C.ModelFormat.ONNX)
    assert z.arguments[0].shape == (1, 3, 2) and not z.arguments[0].dynamic_axes
    d = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    for fed in (d, d[None], d[None, None]):
        np.testing.assert_array_equal(np.asarray(z.eval({z.arguments[0]: fed})).reshape(1, 2, 3), d.reshape(1, 2, 3))
    with pytest.raises(ValueError):
        z.eval({z.arguments[0]: d[None, None, None]})  # three extra axes
    with pytest.raises(ValueError):
        z.eval({z.arguments[0]: np.concatenate([d[None]] * 2)})  # an extra axis of 2


def test_reader_zero_size_tensors():
    """Results without elements keep their shapes: empty slices and split parts, a reshape to a
    dimension of 0, Concat with an empty piece, reductions over an empty set."""
    _read(helper.make_node('Slice', ['x', 's', 'e', 'a'], ['y']), {'x': X4}, ['y'],
          initializers={'s': np.array([5]), 'e': np.array([9]), 'a': np.array([1])})
    _read(helper.make_node('Slice', ['x', 's', 'e', 'a', 'st'], ['y']), {'x': X4}, ['y'],
          initializers={'s': np.array([0]), 'e': np.array([2]), 'a': np.array([2]), 'st': np.array([-1])})
    _read(helper.make_node('Split', ['x', 's'], ['p', 'q', 'r'], axis=2), {'x': X4}, ['p', 'q', 'r'],
          initializers={'s': np.array([0, 4, 0])}, opset=13)
    empty = np.zeros((2, 0, 4), np.float32)
    _read(helper.make_node('Reshape', ['x', 's'], ['y'], allowzero=1), {'x': empty}, ['y'],
          initializers={'s': np.array([4, 0, 2])}, opset=14)
    _read(helper.make_node('Concat', ['x', 'z'], ['y'], axis=1), {'x': X4[:, :, 0], 'z': np.zeros((2, 0, 5), np.float32)},
          ['y'])
    nodes = [helper.make_node('ReduceLogSum', ['x'], ['y'], axes=[1]),
             helper.make_node('Cast', ['x'], ['b'], to=TensorProto.BOOL),
             helper.make_node('ReduceMax', ['b'], ['mx'], axes=[1], keepdims=0),
             helper.make_node('ReduceMin', ['b'], ['mn'], axes=[1], keepdims=0),
             helper.make_node('Cast', ['mx'], ['fmax'], to=TensorProto.FLOAT),
             helper.make_node('Cast', ['mn'], ['fmin'], to=TensorProto.FLOAT)]
    with np.errstate(divide='ignore'):
        _read(nodes, {'x': empty}, ['y', 'fmax', 'fmin'], opset=13,
              want=[np.full((2, 1, 4), -np.inf), np.zeros((2, 4)), np.ones((2, 4))])


@pytest.mark.parametrize('mode', ['constant', 'reflect', 'edge', 'wrap'])
def test_reader_pad_modes_with_cropping(mode):
    """Pad's modes, wrap (circular) included, with negative pads cropping the padded result."""
    x = R.rand(3, 4, 5).astype(np.float32)
    for pads in ([0, 2, 1, 0, 1, 3], [1, -1, 0, 0, 2, -2], [0, 7, 0, 0, 6, 0]):
        if mode == 'reflect' and max(pads) >= 4:
            continue  # reflection needs pads below the axis' size
        head, foot = pads[:3], pads[3:]
        want = np.pad(x, [(max(h, 0), max(f, 0)) for h, f in zip(head, foot)], mode=mode)
        want = want[tuple(slice(max(-h, 0), want.shape[k] - max(-f, 0)) for k, (h, f) in enumerate(zip(head, foot)))]
        _read(helper.make_node('Pad', ['x', 'p'], ['y'], mode=mode), {'x': x}, ['y'],
              initializers={'p': np.array(pads, np.int64)}, opset=19, want=[want])
