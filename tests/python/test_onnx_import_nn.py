"""Reader rules of ONNX's normalizations, Gelu, Dropout and the quantized products where
ONNX's backend node cases do not reach: LayerNormalization's Mean/InvStdDev with stash_type
over float64, GroupNormalization's per-group scale (opset 18), BatchNormalization's
training_mode with a single output, Dropout's mask in every mode, QLinearMatMul with per-row
and per-column parameters, ConvInteger and QLinearConv with per-channel zero points, scales,
strides and groups, against NumPy or ONNX's reference evaluator; and that the imported ops
train: gradients reach their initializers (read as parameters) and equal central
differences of the imported model itself; and that they write back as ONNX that ONNX Runtime
runs to the same outputs."""
import math

import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_import_checks import check_gradients  # noqa: E402

R = np.random.RandomState(5)

_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
          np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
          np.dtype(np.int32): TensorProto.INT32, np.dtype(np.bool_): TensorProto.BOOL}


def _model(nodes, inputs, outputs, inits=None, opset=21):
    graph = helper.make_graph(
        nodes, 'g', [helper.make_tensor_value_info(n, _TYPES[v.dtype], v.shape) for n, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],
        [numpy_helper.from_array(v, n) for n, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])


def _load(model):
    return C.load_model(model.SerializeToString(), format=C.ModelFormat.ONNX)


def _run(model, inputs):
    """The imported model's outputs in the file's order."""
    z = _load(model)
    got = z.eval({a: inputs[a.name] for a in z.arguments}, as_numpy=True) if z.arguments else z.eval()
    return [np.asarray(got[o]) for o in z.outputs] if isinstance(got, dict) else [np.asarray(got)]


def _check(got, want, rtol=1e-4, atol=1e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w.astype(np.float64), rtol=rtol, atol=atol)


def _reference(model, inputs):
    return ReferenceEvaluator(model).run(None, inputs)


def _check_gradients(model, inputs, eps=1e-2, samples=6, rtol=3e-2, atol=3e-3):
    check_gradients(model, inputs, eps=eps, samples=samples, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- LayerNormalization

def _layer_norm(x, w, b, axis, eps):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    inv = 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    return (x - mean) * inv * w + b, mean, inv


@pytest.mark.parametrize('axis', [1, -1, 2])
def test_layer_normalization_outputs_and_training(axis):
    x = R.randn(2, 3, 4).astype(np.float32)
    w = R.randn(*x.shape[axis % 3:]).astype(np.float32)
    b = R.randn(*x.shape[axis % 3:]).astype(np.float32)
    node = helper.make_node('LayerNormalization', ['x', 'w', 'b'], ['y', 'mean', 'inv'], axis=axis, epsilon=1e-3)
    model = _model([node], {'x': x}, ['y', 'mean', 'inv'], {'w': w, 'b': b})
    _check(_run(model, {'x': x}), _layer_norm(x, w, b, axis, 1e-3))
    _check_gradients(model, {'x': x})


def test_layer_normalization_stash_type_over_float64():
    """stash_type 1 computes the statistics in float32: Mean and InvStdDev come out float32,
    Y in the input's float64; stash_type 0 keeps float64 throughout."""
    x = (R.randn(3, 5) * 3 + 1).astype(np.float64)
    w, b = R.randn(5), R.randn(5)
    want = _layer_norm(x, w, b, -1, 1e-5)
    for stash, stat_type in ((1, np.float32), (0, np.float64)):
        node = helper.make_node('LayerNormalization', ['x', 'w', 'b'], ['y', 'mean', 'inv'], stash_type=stash)
        got = _run(_model([node], {'x': x}, ['y', 'mean', 'inv'], {'w': w, 'b': b}), {'x': x})
        assert got[0].dtype == np.float64 and got[1].dtype == stat_type and got[2].dtype == stat_type
        _check(got, want, rtol=1e-5 if stash else 1e-10, atol=1e-5 if stash else 1e-10)


def test_layer_normalization_only_mean_asked():
    x = R.randn(4, 6).astype(np.float32)
    w = np.ones(6, np.float32)
    node = helper.make_node('LayerNormalization', ['x', 'w'], ['y', 'mean'])
    y, mean, _ = _layer_norm(x, w, 0, -1, 1e-5)
    _check(_run(_model([node], {'x': x}, ['y', 'mean'], {'w': w}), {'x': x}), [y, mean])


# ---------------------------------------------------------------- Gelu

def test_gelu_exact_values_and_gradient():
    """Gelu's default (exact) form against math.erf, after a MatMul whose weight trains; the
    input's gradient is Gelu's derivative Phi(x) + x phi(x)."""
    x = np.linspace(-5, 5, 41, dtype=np.float32).reshape(1, 41)
    erf = np.vectorize(math.erf)
    want = 0.5 * x * (1 + erf(x / math.sqrt(2)))
    node = helper.make_node('Gelu', ['x'], ['y'])
    _check(_run(_model([node], {'x': x}, ['y'], opset=20), {'x': x}), [want], rtol=1e-5, atol=1e-6)

    z = _load(_model([node], {'x': x}, ['y'], opset=20))
    g = np.asarray(C.reduce_sum(z.outputs[0]).grad({z.arguments[0]: x}, wrt=[z.arguments[0]]))
    phi = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(g.reshape(x.shape), 0.5 * (1 + erf(x / math.sqrt(2))) + x * phi, rtol=1e-4,
                               atol=1e-5)

    a = R.randn(3, 4).astype(np.float32)
    w = R.randn(4, 5).astype(np.float32)
    nodes = [helper.make_node('MatMul', ['a', 'w'], ['h']), helper.make_node('Gelu', ['h'], ['y'])]
    _check_gradients(_model(nodes, {'a': a}, ['y'], {'w': w}, opset=20), {'a': a})


def test_gelu_rejects_unknown_approximation():
    node = helper.make_node('Gelu', ['x'], ['y'], approximate='erf')
    with pytest.raises(ValueError, match="approximate='erf'"):
        _load(_model([node], {'x': np.zeros((2,), np.float32)}, ['y'], opset=20))


# ---------------------------------------------------------------- BatchNormalization

def test_batch_normalization_training_mode_outputs_and_gradient():
    """training_mode=1: normalized with the batch's statistics (biased variance) and the
    running statistics moved by momentum, as ONNX's reference; alone (Y only) too, and the
    gradient through the batch statistics reaches scale and B."""
    x = R.randn(4, 3, 2, 5).astype(np.float32)
    s, b = R.randn(3).astype(np.float32), R.randn(3).astype(np.float32)
    mean, var = R.randn(3).astype(np.float32), R.rand(3).astype(np.float32) + 0.5
    inits = {'s': s, 'b': b, 'mean': mean, 'var': var}
    node = helper.make_node('BatchNormalization', ['x', 's', 'b', 'mean', 'var'], ['y', 'rm', 'rv'],
                            training_mode=1, momentum=0.8, epsilon=1e-3)
    bm, bv = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    c = (1, 3, 1, 1)
    y = (x - bm.reshape(c)) / np.sqrt(bv.reshape(c) + 1e-3) * s.reshape(c) + b.reshape(c)
    model = _model([node], {'x': x}, ['y', 'rm', 'rv'], inits, opset=15)
    _check(_run(model, {'x': x}), [y, mean * 0.8 + bm * 0.2, var * 0.8 + bv * 0.2])
    alone = helper.make_node('BatchNormalization', ['x', 's', 'b', 'mean', 'var'], ['y'], training_mode=1,
                             epsilon=1e-3)
    only_y = _model([alone], {'x': x}, ['y'], {'s': s, 'b': b, 'mean': mean, 'var': var}, opset=15)
    _check(_run(only_y, {'x': x}), [y])
    _check_gradients(only_y, {'x': x})


def test_batch_normalization_running_outputs_need_training_mode():
    node = helper.make_node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], ['y', 'rm', 'rv'])
    ones = np.ones(2, np.float32)
    model = _model([node], {'x': np.zeros((1, 2, 3), np.float32)}, ['y', 'rm', 'rv'],
                   {'s': ones, 'b': ones, 'm': ones, 'v': ones}, opset=15)
    with pytest.raises(ValueError, match='training_mode=1'):
        _load(model)


# ---------------------------------------------------------------- Dropout

def test_dropout_mask_where_nothing_drops():
    """The mask is all true at inference (no training_mode, opset 12 on; opset 10's ratio
    attribute) and in training with ratio 0; Y is X."""
    x = R.randn(3, 4).astype(np.float32)
    cases = [
        (_model([helper.make_node('Dropout', ['x'], ['y', 'm'])], {'x': x}, ['y', 'm'], opset=13), {'x': x}),
        (_model([helper.make_node('Dropout', ['x'], ['y', 'm'], ratio=0.3)], {'x': x}, ['y', 'm'], opset=10),
         {'x': x}),
        (_model([helper.make_node('Dropout', ['x', 'r', 't'], ['y', 'm'])], {'x': x}, ['y', 'm'],
                {'r': np.array(0, np.float32), 't': np.array(True)}, opset=13), {'x': x}),
    ]
    for model, feeds in cases:
        y, m = _run(model, feeds)
        np.testing.assert_array_equal(y, x)
        np.testing.assert_array_equal(m, np.ones_like(x))


def test_dropout_training_mode_drops_and_scales():
    """training_mode true with a ratio: each element is kept (scaled by 1 / (1 - ratio)) or
    zeroed, the mask says which, about the ratio is dropped, and the gradient to the input is
    the mask times the scale."""
    x = (R.rand(50, 40) + 0.5).astype(np.float32)
    node = helper.make_node('Dropout', ['x', 'r', 't'], ['y', 'm'], seed=3)
    model = _model([node], {'x': x}, ['y', 'm'], {'r': np.array(0.25, np.float32), 't': np.array(True)}, opset=13)
    y, m = _run(model, {'x': x})
    assert set(np.unique(m)) <= {0.0, 1.0}
    np.testing.assert_allclose(y, x * m / 0.75, rtol=1e-6)
    assert 0.2 < 1 - m.mean() < 0.3
    z = _load(model)
    g = np.asarray(C.combine([z.outputs[0]]).grad({z.arguments[0]: x}, wrt=[z.arguments[0]]))
    assert set(np.unique(g.reshape(-1))) <= {0.0, np.float32(1 / 0.75)}


# ---------------------------------------------------------------- GroupNormalization

def _group_norm(x, groups, eps):
    g = x.reshape(x.shape[0], groups, -1)
    return ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)


def test_group_normalization_per_group_scale_opset18_and_training():
    x = R.randn(2, 6, 3, 2).astype(np.float32)
    node = helper.make_node('GroupNormalization', ['x', 's', 'b'], ['y'], num_groups=3, epsilon=1e-3)
    s, b = R.randn(3).astype(np.float32), R.randn(3).astype(np.float32)
    want = _group_norm(x, 3, 1e-3) * np.repeat(s, 2).reshape(6, 1, 1) + np.repeat(b, 2).reshape(6, 1, 1)
    _check(_run(_model([node], {'x': x}, ['y'], {'s': s, 'b': b}, opset=18), {'x': x}), [want])
    s, b = R.randn(6).astype(np.float32), R.randn(6).astype(np.float32)
    model = _model([node], {'x': x}, ['y'], {'s': s, 'b': b}, opset=21)
    _check(_run(model, {'x': x}), [_group_norm(x, 3, 1e-3) * s.reshape(6, 1, 1) + b.reshape(6, 1, 1)])
    _check_gradients(model, {'x': x})


# ---------------------------------------------------------------- quantized products

def test_qlinear_matmul_per_row_and_per_column_parameters():
    a = R.randint(0, 256, (3, 5)).astype(np.uint8)
    b = R.randint(-128, 128, (5, 4)).astype(np.int8)
    feeds = {'a': a, 'b': b}
    inits = {'a_scale': np.array([0.01, 0.02, 0.015], np.float32), 'a_zp': np.array([120, 128, 3], np.uint8),
             'b_scale': np.array([0.02, 0.01, 0.03, 0.005], np.float32), 'b_zp': np.array([0, -3, 5, 1], np.int8),
             'y_scale': np.array(0.05, np.float32), 'y_zp': np.array(100, np.uint8)}
    node = helper.make_node('QLinearMatMul', ['a', 'a_scale', 'a_zp', 'b', 'b_scale', 'b_zp', 'y_scale', 'y_zp'],
                            ['y'])
    model = _model([node], feeds, ['y'], inits)
    # ONNX's reference evaluator takes scalar parameters only: the operator's definition in NumPy.
    i = {k: v.astype(np.float64) for k, v in inits.items()}
    acc = (a - i['a_zp'][:, None]) @ (b - i['b_zp'])
    want = np.clip(np.rint(acc * i['a_scale'][:, None] * i['b_scale'] / i['y_scale'] + i['y_zp']), 0, 255)
    _check(_run(model, feeds), [want], rtol=0, atol=0)


def test_qlinear_matmul_batched_int8():
    a = R.randint(-128, 128, (2, 3, 6)).astype(np.int8)
    b = R.randint(-128, 128, (2, 6, 2)).astype(np.int8)
    feeds = {'a': a, 'b': b}
    inits = {'a_scale': np.array(0.02, np.float32), 'a_zp': np.array(-4, np.int8),
             'b_scale': np.array(0.01, np.float32), 'b_zp': np.array(2, np.int8),
             'y_scale': np.array(0.3, np.float32), 'y_zp': np.array(-10, np.int8)}
    node = helper.make_node('QLinearMatMul', ['a', 'a_scale', 'a_zp', 'b', 'b_scale', 'b_zp', 'y_scale', 'y_zp'],
                            ['y'])
    model = _model([node], feeds, ['y'], inits)
    _check(_run(model, feeds), _reference(model, feeds), rtol=0, atol=0)


def test_conv_integer_per_channel_zero_points_strides_and_groups():
    x = R.randint(0, 256, (2, 4, 7, 6)).astype(np.uint8)
    w = R.randint(0, 256, (6, 2, 3, 2)).astype(np.uint8)
    feeds = {'x': x, 'w': w}
    inits = {'x_zp': np.array(128, np.uint8), 'w_zp': R.randint(0, 256, 6).astype(np.uint8)}
    node = helper.make_node('ConvInteger', ['x', 'w', 'x_zp', 'w_zp'], ['y'], group=2, strides=[2, 1],
                            pads=[1, 0, 1, 1])
    model = _model([node], feeds, ['y'], inits)
    _check(_run(model, feeds), _reference(model, feeds), rtol=0, atol=0)


def test_qlinear_conv_per_channel_scale_and_bias():
    x = R.randint(0, 256, (1, 3, 6, 6)).astype(np.uint8)
    w = R.randint(-128, 128, (4, 3, 3, 3)).astype(np.int8)
    feeds = {'x': x, 'w': w}
    inits = {'x_scale': np.array(0.02, np.float32), 'x_zp': np.array(120, np.uint8),
             'w_scale': np.array([0.01, 0.002, 0.005, 0.02], np.float32), 'w_zp': np.array([0, 0, 0, 0], np.int8),
             'y_scale': np.array(0.4, np.float32), 'y_zp': np.array(128, np.uint8),
             'bias': R.randint(-2000, 2000, 4).astype(np.int32)}
    node = helper.make_node('QLinearConv', ['x', 'x_scale', 'x_zp', 'w', 'w_scale', 'w_zp', 'y_scale', 'y_zp', 'bias'],
                            ['y'], pads=[1, 1, 1, 1])
    model = _model([node], feeds, ['y'], inits, opset=10)
    _check(_run(model, feeds), _reference(model, feeds), rtol=0, atol=0)


def test_imported_normalizations_write_back_and_run_in_onnx_runtime(tmp_path):
    """A model read with LayerNormalization (all three outputs), exact Gelu, GroupNormalization
    and a training-mode BatchNormalization, written again as ONNX, gives OpenCNTK's outputs in
    ONNX Runtime."""
    ort = pytest.importorskip('onnxruntime')
    x = R.randn(2, 4, 3, 3).astype(np.float32)
    inits = {'w': R.randn(3).astype(np.float32), 'b': R.randn(3).astype(np.float32),
             'gs': R.randn(4).astype(np.float32), 'gb': R.randn(4).astype(np.float32),
             'm': R.randn(4).astype(np.float32), 'v': R.rand(4).astype(np.float32) + 0.5}
    nodes = [helper.make_node('LayerNormalization', ['x', 'w', 'b'], ['ln', 'mean', 'inv']),
             helper.make_node('Gelu', ['ln'], ['ge']),
             helper.make_node('GroupNormalization', ['ge', 'gs', 'gb'], ['gn'], num_groups=2),
             helper.make_node('BatchNormalization', ['gn', 'gs', 'gb', 'm', 'v'], ['y', 'rm', 'rv'],
                              training_mode=1)]
    z = _load(_model(nodes, {'x': x}, ['y', 'mean', 'inv', 'rm', 'rv'], inits))
    got = z.eval({z.arguments[0]: x}, as_numpy=True)
    path = str(tmp_path / 'back.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    sess = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    want = sess.run(None, {sess.get_inputs()[0].name: x})
    assert len(want) == len(z.outputs)
    for o, w in zip(z.outputs, want):
        assert np.asarray(got[o]).shape == np.shape(w)
        np.testing.assert_allclose(got[o], w, rtol=1e-5, atol=1e-5)
