"""cntk.onnx_backend (ONNX's Backend interface) and a fast subset of ONNX's backend node tests.

The whole run (every CPU case, over cntk.onnx_backend and CNTK 2.7's adapter, with the per-op
table of docs/onnx.md) is `make onnx-backend-tests`.
"""
import importlib.util
import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import cntk.onnx_backend as backend  # noqa: E402

# The runner by path under a name of its own: other suites have a run.py too (tests/keras_suite), and a
# plain `import run` would get whichever was imported first.
_RUNNER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'onnx_backend', 'run.py')
_spec = importlib.util.spec_from_file_location('onnx_backend_runner', _RUNNER)
backend_tests = importlib.util.module_from_spec(_spec)
sys.modules['onnx_backend_runner'] = backend_tests
_spec.loader.exec_module(backend_tests)


def _two_output_model():
    # y = a + b (float), k = indices of TopK over a (int64), inputs in the order b, a.
    nodes = [helper.make_node('Add', ['a', 'b'], ['y']),
             helper.make_node('TopK', ['a', 'k'], ['v', 'i'], axis=-1)]
    graph = helper.make_graph(
        nodes, 'g',
        [helper.make_tensor_value_info('b', TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info('a', TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info('i', TensorProto.INT64, [2, 2])],
        [helper.make_tensor('k', TensorProto.INT64, [1], [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])


def test_run_feeds_inputs_in_graph_order_and_returns_every_output_with_its_declared_type():
    a = np.array([[1, 5, 3], [9, 2, 4]], np.float32)
    b = np.arange(6, dtype=np.float32).reshape(2, 3)
    rep = backend.prepare(_two_output_model())
    y, i = rep.run([b, a])
    np.testing.assert_allclose(y, a + b)
    assert i.dtype == np.int64
    np.testing.assert_array_equal(i, np.argsort(-a, axis=-1)[:, :2])


def test_run_node_and_supports_device():
    node = helper.make_node('Mod', ['x', 'y'], ['z'], fmod=1)
    x = np.array([-7.5, 7.5, 4.0], np.float32)
    y = np.array([2.0, -2.0, 3.0], np.float32)
    (z,) = backend.run_node(node, [x, y])
    np.testing.assert_allclose(z, np.fmod(x, y))
    assert backend.supports_device('CPU')
    assert not backend.supports_device('CUDA')


def test_a_shape_input_fed_at_run_time_is_bound_when_the_model_runs():
    # ConstantOfShape's shape arrives as a graph input: the model is read once its value is known.
    node = helper.make_node('ConstantOfShape', ['s'], ['y'], value=helper.make_tensor('v', TensorProto.FLOAT, [1], [2.5]))
    graph = helper.make_graph([node], 'g', [helper.make_tensor_value_info('s', TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)])
    rep = backend.prepare(helper.make_model(graph))
    for shape in ([2, 3], [4, 1]):
        (y,) = rep.run([np.array(shape, np.int64)])
        np.testing.assert_array_equal(y, np.full(shape, 2.5, np.float32))


def test_an_unsupported_op_raises_a_clear_error_naming_the_node():
    node = helper.make_node('StringNormalizer', ['x'], ['y'], name='norm')
    graph = helper.make_graph([node], 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, [2])])
    with pytest.raises(ValueError, match="norm.*StringNormalizer"):
        backend.prepare(helper.make_model(graph)).run([np.zeros(2, np.float32)])


def test_every_node_case_passes_or_is_a_tracked_expected_failure():
    """Every CPU node case of ONNX's backend tests runs (the goal is all of them); those that
    still fail are listed, each with its reason, in tests/onnx_backend/expected_failures.txt.
    A failure outside the list fails this test, and so does a listed case that passes (the
    list only shrinks) or one ONNX's tests no longer have."""
    results = backend_tests.run('opencntk', pattern='NodeModel')
    assert len(results) > 1000
    unlisted, passing, unknown = backend_tests.check_expected(results, backend_tests.read_expected())
    problems = (['failing, not in expected_failures.txt: ' + c for c in unlisted] +
                ['passing now, remove it from expected_failures.txt: ' + c for c in passing] +
                ['not an ONNX node case: ' + c for c in unknown])
    assert not problems, '\n'.join(problems)


def test_cntk27s_adapter_runs_over_opencntk_unchanged():
    # CNTK 2.7's adapter feeds every input as an argument (no shape inputs bound at run time).
    results = backend_tests.run('cntk27', pattern=r'test_(abs|relu|add|sub|mul|neg|sqrt|where_example)_cpu')
    assert len(results) >= 8
    failed = [t for t, (_, _, status, _) in results.items() if status != 'pass']
    assert not failed, failed


@pytest.mark.parametrize('equation, shapes', [
    ('ij,jk', [(2, 3), (3, 4)]),                 # implicit output: the letters used once, sorted
    ('ba,ca', [(2, 3), (4, 3)]),
    ('...ij,...jk->...ik', [(2, 1, 3, 4), (5, 4, 2)]),  # broadcast dims of different ranks
    ('ii', [(4, 4)]),                            # trace
    ('iij->ji', [(3, 3, 2)]),
    ('i,j,k->ijk', [(2,), (3,), (4,)]),
    ('bhqd,bhkd->bhqk', [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ('ij->', [(3, 4)]),
])
def test_einsum_matches_numpy(equation, shapes):
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    names = ['x%d' % i for i in range(len(xs))]
    node = helper.make_node('Einsum', names, ['y'], equation=equation)
    graph = helper.make_graph([node], 'g', [helper.make_tensor_value_info(n, TensorProto.FLOAT, x.shape)
                                            for n, x in zip(names, xs)],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)])
    (y,) = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 12)])).run(xs)
    np.testing.assert_allclose(y, np.einsum(equation, *xs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('shape', [(1, 1), (3, 3), (2, 4, 4)])
def test_det_matches_numpy(shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    (y,) = backend.run_node(helper.make_node('Det', ['x'], ['y']), [x])
    np.testing.assert_allclose(y, np.linalg.det(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('axis', [None, 0, 1])
def test_unique_of_a_known_tensor_matches_numpy(axis):
    x = np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4], [0, 1, 0]], np.float32)
    attrs = {} if axis is None else {'axis': axis}
    node = helper.make_node('Unique', ['x'], ['y', 'i', 'inv', 'n'], sorted=1, **attrs)
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT if o == 'y' else TensorProto.INT64, None)
            for o in ('y', 'i', 'inv', 'n')]
    graph = helper.make_graph([node], 'g', [], outs, [helper.make_tensor('x', TensorProto.FLOAT, x.shape, x.flatten())])
    y, i, inv, n = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 11)])).run([])
    ey, ei, einv, en = np.unique(x, axis=axis, return_index=True, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(y, ey)
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_array_equal(inv, einv.reshape(-1))
    np.testing.assert_array_equal(n, en)


def _f32_values(rng):
    """float32 values over every binade of the narrow formats, their ties, float32 subnormals,
    overflow, signed zeros, infinities and NaN."""
    ml_dtypes = pytest.importorskip('ml_dtypes')
    grid = np.concatenate([np.frombuffer(np.arange(256, dtype=np.uint8).tobytes(), dtype=t).astype(np.float32)
                           for t in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2)])
    grid = np.unique(grid[np.isfinite(grid)])
    ties = (grid[:-1] + grid[1:]) / 2
    logs = np.exp2(rng.uniform(-20, 20, 2000)).astype(np.float32) * rng.choice([-1, 1], 2000)
    special = np.array([0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3e-45, 3.4028235e38, 1e30, -7e4], np.float32)
    return np.concatenate([grid, -grid, ties, -ties, logs, special]).astype(np.float32)


@pytest.mark.parametrize('to, saturate', [(TensorProto.BFLOAT16, 1), (TensorProto.FLOAT8E4M3FN, 1),
                                          (TensorProto.FLOAT8E4M3FN, 0), (TensorProto.FLOAT8E4M3FNUZ, 1),
                                          (TensorProto.FLOAT8E4M3FNUZ, 0), (TensorProto.FLOAT8E5M2, 1),
                                          (TensorProto.FLOAT8E5M2, 0), (TensorProto.FLOAT8E5M2FNUZ, 0),
                                          (TensorProto.FLOAT4E2M1, 1)])
def test_a_cast_to_a_narrow_float_rounds_in_the_engine_as_onnxs_reference(to, saturate):
    # Cast to the narrow type and back to float: the engine's float32 value of the rounding is
    # compared (the backend's conversion at the output would round by itself).
    from onnx.reference.ops.op_cast import cast_to as reference_cast
    x = _f32_values(np.random.default_rng(2))
    nodes = [helper.make_node('Cast', ['x'], ['n'], to=to, saturate=saturate),
             helper.make_node('Cast', ['n'], ['y'], to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, x.shape)])
    (y,) = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 21)])).run([x])
    expected = reference_cast(x, to, bool(saturate)).astype(np.float32)
    if to == TensorProto.FLOAT4E2M1:  # ml_dtypes turns NaN into 0 there; the engine keeps NaN
        expected = np.where(np.isnan(x), np.nan, expected)
    np.testing.assert_array_equal(y, expected)


def test_round_is_half_to_even_over_the_float32_range():
    x = np.concatenate([np.arange(-6, 6, 0.25), [0.49999997, -0.49999997, 2 ** 23 + 1, 2 ** 24 + 2, 1e38,
                                                 np.inf, -np.inf, np.nan, 1e-40],
                        np.random.default_rng(3).standard_normal(500) * 1e3]).astype(np.float32)
    (y,) = backend.run_node(helper.make_node('Round', ['x'], ['y']), [x])
    np.testing.assert_array_equal(y, np.round(x))


@pytest.mark.parametrize('value', [2.5, -np.inf, np.nan])
def test_pad_with_a_constant_value_fed_at_run_time(value):
    # The value is a float graph input (not bound while reading): padded cells are selected.
    x = np.array([[1, np.inf, -2], [np.nan, 4, 5]], np.float32)
    node = helper.make_node('Pad', ['x', 'pads', 'v'], ['y'], mode='constant')
    graph = helper.make_graph([node], 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, x.shape),
                                            helper.make_tensor_value_info('v', TensorProto.FLOAT, [])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)],
                              [helper.make_tensor('pads', TensorProto.INT64, [4], [1, 0, 0, 2])])
    rep = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 18)]))
    assert rep.function is not None  # read once, the value an argument
    (y,) = rep.run([x, np.array(value, np.float32)])
    np.testing.assert_array_equal(y, np.pad(x, [(1, 0), (0, 2)], constant_values=value))


def test_erf_writes_as_onnx_erf_and_reads_back(tmp_path):
    import math
    import cntk as C
    ort = pytest.importorskip('onnxruntime')
    x = C.input_variable((5,), needs_gradient=False)
    path = str(tmp_path / 'erf.onnx')
    C.erf(x).save(path, format=C.ModelFormat.ONNX)
    assert [n.op_type for n in onnx.load(path).graph.node] == ['Erf']
    data = np.array([[-3, -0.5, 0, 0.7, 2.2]], np.float32)
    expected = np.vectorize(math.erf)(data.astype(np.float64))
    sess = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    np.testing.assert_allclose(sess.run(None, {sess.get_inputs()[0].name: data})[0], expected, rtol=1e-6, atol=1e-7)
    back = C.Function.load(path, format=C.ModelFormat.ONNX)
    np.testing.assert_allclose(back.eval({back.arguments[0]: data}).reshape(expected.shape), expected, rtol=1e-6,
                               atol=1e-7)


@pytest.mark.parametrize('to', ['FLOAT8E4M3FN', 'FLOAT8E4M3FNUZ', 'FLOAT8E5M2', 'FLOAT8E5M2FNUZ', 'FLOAT4E2M1',
                                'INT4', 'UINT4', 'INT2', 'UINT2'])
@pytest.mark.parametrize('raw', [True, False])
def test_initializers_of_narrow_types_read_every_code(to, raw):
    # Every bit pattern of the type, stored packed (raw bytes or int32_data), read as float32.
    t = getattr(TensorProto, to)
    bits = {'FLOAT4E2M1': 4, 'INT4': 4, 'UINT4': 4, 'INT2': 2, 'UINT2': 2}.get(to, 8)
    dt = helper.tensor_dtype_to_np_dtype(t)
    if to.startswith('FLOAT'):  # ml_dtypes' value of each code
        ref = np.array([np.frombuffer(bytes([c]), dtype=dt)[0] for c in range(2 ** bits)]).astype(np.float32)
    else:
        ref = np.array([c - 2 ** bits if to.startswith('INT') and c >= 2 ** (bits - 1) else c
                        for c in range(2 ** bits)], np.float32)
    vals = ref.astype(dt)
    init = onnx.numpy_helper.from_array(vals, 'c')
    if not raw:  # the same packed bytes, one per int32_data entry
        init.int32_data.extend(np.frombuffer(init.raw_data, np.uint8).tolist())
        init.ClearField('raw_data')
    node = helper.make_node('Cast', ['c'], ['y'], to=TensorProto.FLOAT)
    graph = helper.make_graph([node], 'g', [], [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)], [init])
    (y,) = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 21)])).run([])
    if to == 'FLOAT4E2M1':
        assert not np.isnan(ref).any()
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize('op, ref', [('BitwiseAnd', np.bitwise_and), ('BitwiseOr', np.bitwise_or),
                                     ('BitwiseXor', np.bitwise_xor)])
@pytest.mark.parametrize('dtype', [np.int8, np.uint8, np.int16, np.uint16, np.int32])
def test_bitwise_ops_match_numpy_over_the_exact_range(op, ref, dtype):
    # Extremes, signs and random values; 32-bit ones within what float32 holds exactly.
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -2 ** 24), min(info.max, 2 ** 24 - 1)  # 25-bit two's complement
    rng = np.random.default_rng(4)
    a = np.concatenate([[info.min if info.min >= lo else lo, hi, 0, -1 if info.min < 0 else 1],
                        rng.integers(lo, hi, 60, endpoint=True)]).astype(dtype)
    b = np.concatenate([[hi, lo, -1 if info.min < 0 else 7, 5], rng.integers(lo, hi, 60, endpoint=True)]).astype(dtype)
    (y,) = backend.run_node(helper.make_node(op, ['a', 'b'], ['y']), [a, b])
    np.testing.assert_array_equal(y, ref(a, b))
    (n,) = backend.run_node(helper.make_node('BitwiseNot', ['a'], ['n']), [a])
    np.testing.assert_array_equal(n, np.bitwise_not(a))


@pytest.mark.parametrize('inverse, onesided', [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize('axis, length', [(1, None), (2, None), (1, 7), (2, 12)])
@pytest.mark.parametrize('complex_input', [False, True])
def test_dft_matches_numpys_fft(inverse, onesided, axis, length, complex_input):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 5, 2 if complex_input or inverse else 1))
    if inverse and not complex_input:
        x = x[..., :1]
    ins = ['x', 'n' if length else '', 'axis']
    node = helper.make_node('DFT', ins, ['y'], inverse=inverse, onesided=onesided)
    inits = [helper.make_tensor('axis', TensorProto.INT64, [], [axis])]
    if length:
        inits.append(helper.make_tensor('n', TensorProto.INT64, [], [length]))
    graph = helper.make_graph([node], 'g', [helper.make_tensor_value_info('x', TensorProto.DOUBLE, x.shape)],
                              [helper.make_tensor_value_info('y', TensorProto.DOUBLE, None)], inits)
    (y,) = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 20)])).run([x])
    z = x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    if inverse and onesided:
        n = length or 2 * (x.shape[axis] - 1)
        expected = np.fft.irfft(z, n=n, axis=axis)[..., None]
    else:
        e = (np.fft.ifft if inverse else np.fft.fft)(z, n=length, axis=axis)
        if onesided and not inverse:
            e = np.take(e, range(e.shape[axis] // 2 + 1), axis=axis)
        expected = np.stack([e.real, e.imag], -1)
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-10)


def test_col2im_matches_a_numpy_loop():
    # Two channels, a batch of two, uneven strides, pads and dilations: every block's column
    # added into the padded image, then the padding cut.
    image, block, dil, strides, pads = (7, 6), (2, 3), (2, 1), (1, 2), (1, 0, 2, 1)
    n_blocks = [(image[d] + pads[d] + pads[d + 2] - (dil[d] * (block[d] - 1) + 1)) // strides[d] + 1 for d in (0, 1)]
    x = np.random.default_rng(6).standard_normal((2, 2 * 6, n_blocks[0] * n_blocks[1])).astype(np.float32)
    padded = np.zeros((2, 2, image[0] + pads[0] + pads[2], image[1] + pads[1] + pads[3]))
    cols = x.reshape(2, 2, block[0], block[1], n_blocks[0], n_blocks[1])
    for i in range(block[0]):
        for j in range(block[1]):
            for p in range(n_blocks[0]):
                for q in range(n_blocks[1]):
                    padded[:, :, p * strides[0] + i * dil[0], q * strides[1] + j * dil[1]] += cols[:, :, i, j, p, q]
    expected = padded[:, :, pads[0]:pads[0] + image[0], pads[1]:pads[1] + image[1]]
    node = helper.make_node('Col2Im', ['x', 'image', 'block'], ['y'], dilations=dil, strides=strides, pads=pads)
    graph = helper.make_graph([node], 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)],
                              [helper.make_tensor('image', TensorProto.INT64, [2], image),
                               helper.make_tensor('block', TensorProto.INT64, [2], block)])
    (y,) = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 18)])).run([x])
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_round_of_float16_stays_float16():
    # The rounded value feeds a float16 Add: the rule returns the input's type.
    x = np.array([0.5, 1.5, 2.5, -2.5, 1000.4, 30000], np.float16)
    nodes = [helper.make_node('Round', ['x'], ['r']), helper.make_node('Add', ['r', 'x'], ['y'])]
    graph = helper.make_graph(nodes, 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT16, x.shape)],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT16, x.shape)])
    (y,) = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])).run([x])
    np.testing.assert_array_equal(y, np.round(x) + x)


@pytest.mark.parametrize('batch_axis, time_axis', [(0, 1), (1, 0)])
def test_reverse_sequence_matches_a_numpy_loop(batch_axis, time_axis):
    lens = np.array([0, 5, 1, 3], np.int64)
    shape = [0, 0, 2]
    shape[batch_axis], shape[time_axis] = 4, 5
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    expected = x.copy()
    for b, n in enumerate(lens):
        idx = [slice(None)] * 3
        idx[batch_axis], idx[time_axis] = b, slice(0, n)
        expected[tuple(idx)] = x[tuple(idx)][::-1]
    node = helper.make_node('ReverseSequence', ['x', 'lens'], ['y'], batch_axis=batch_axis, time_axis=time_axis)
    graph = helper.make_graph([node], 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)],
                              [helper.make_tensor('lens', TensorProto.INT64, [4], lens)])
    (y,) = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 10)])).run([x])
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize('onesided', [0, 1])
def test_stft_matches_numpy(onesided):
    x = np.random.default_rng(8).standard_normal((2, 40, 1))
    window = np.hanning(12)
    node = helper.make_node('STFT', ['x', 'step', 'w'], ['y'], onesided=onesided)
    graph = helper.make_graph([node], 'g', [helper.make_tensor_value_info('x', TensorProto.DOUBLE, x.shape)],
                              [helper.make_tensor_value_info('y', TensorProto.DOUBLE, None)],
                              [helper.make_tensor('step', TensorProto.INT64, [], [5]),
                               helper.make_tensor('w', TensorProto.DOUBLE, [12], window)])
    (y,) = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])).run([x])
    frames = np.stack([x[:, f * 5:f * 5 + 12, 0] * window for f in range((40 - 12) // 5 + 1)], 1)
    e = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    np.testing.assert_allclose(y, np.stack([e.real, e.imag], -1), rtol=1e-10, atol=1e-10)
