"""cntk.contrib.netopt: SVD factorization of Dense layers and binarized
convolutions (structure of the converted models, their values, and the
straight-through gradients of the binarizing operators)."""
import numpy as np
import pytest

import cntk as C
from cntk.contrib import netopt
import cntk.contrib.netopt.factorization as nc
import cntk.contrib.netopt.quantization as qc
from cntk.contrib.netopt.custom_convolution_ops import (CustomMultibit, CustomMultibitKernel,
                                                        CustomSign)


def _blocks(model, op_name=None):
    return C.logging.graph.depth_first_search(
        model, lambda f: isinstance(f, C.Function) and f.root_function.is_block
        and (op_name is None or f.op_name == op_name), depth=0)


def _dense_model(x):
    with C.layers.default_options(activation=C.sigmoid):
        h = C.layers.Dense(50)(x)
        h = C.layers.Dense(50)(h)
        return C.layers.Dense(2, activation=None)(h)


def test_svd_subprojection():
    W = np.array([[1, 0, 0, 0, 2], [0, 0, 3, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 2, 0]], float)
    W1, W2 = nc.svd_subprojection(W, 4)
    assert W1.shape == (4, 4) and W2.shape == (4, 5)
    np.testing.assert_allclose(W1 @ W2, W, atol=1e-12)
    # Columns of W1 are orthonormal; rank 2 keeps the two largest singular values.
    np.testing.assert_allclose(W1.T @ W1, np.eye(4), atol=1e-12)
    V1, V2 = nc.svd_subprojection(W, 2)
    np.testing.assert_allclose(np.linalg.svd(V1 @ V2, compute_uv=False)[:2], [3, np.sqrt(5)])


def test_factor_dense_structure_and_values():
    x = C.input_variable(2)
    z = _dense_model(x)
    square = (lambda block: block.W.value.shape[0] == block.W.value.shape[1])

    reduced = nc.factor_dense(z, projection_function=lambda W: int(len(W) * 0.8),
                              filter_function=square)
    blocks = _blocks(reduced)
    assert [b.op_name for b in blocks] == ['Dense', 'DenseFactored', 'Dense']
    assert C.as_composite(blocks[1].block_root).W1.value.shape == (50, 40)

    # At full rank the factored model computes the same function.
    full = nc.factor_dense(z, projection_function=lambda W: min(W.shape))
    assert [b.op_name for b in _blocks(full)] == ['DenseFactored'] * 3
    data = np.random.RandomState(0).randn(5, 2).astype(np.float32)
    np.testing.assert_allclose(full.eval({full.arguments[0]: data}), z.eval({x: data}),
                               rtol=1e-4, atol=1e-5)


def test_factor_dense_needs_a_rank():
    x = C.input_variable(2)
    with pytest.raises(ValueError):
        nc.factor_dense(_dense_model(x))


def _multibit_reference(x, bits, axes):
    residual, approx = x.astype(np.float64), np.zeros(x.shape)
    for _ in range(bits):
        scale = np.abs(residual).mean(axis=axes, keepdims=True)
        step = np.where(residual > 0, 1.0, -1.0) * scale
        approx += step
        residual -= step
    return approx


def test_multibit_forward_and_straight_through_gradient():
    rng = np.random.RandomState(1)
    x = C.input_variable((2, 3), needs_gradient=True)
    data = (rng.randn(4, 2, 3) * 2).astype(np.float32)

    for bits in (1, 2, 3):
        y = CustomMultibit(x, bits)
        np.testing.assert_allclose(y.eval({x: data}),
                                   _multibit_reference(data, bits, (1, 2)), rtol=1e-5)
        gradient = y.grad({x: data}, wrt=[x])
        np.testing.assert_array_equal(gradient, (np.abs(data) <= bits).astype(np.float32))

    sign = CustomSign(x)
    np.testing.assert_array_equal(sign.eval({x: data}), np.where(data > 0, 1, -1))


def test_multibit_kernel_scales_per_filter():
    W = C.parameter((3, 2, 2, 2), init=np.random.RandomState(2).randn(3, 2, 2, 2))
    y = CustomMultibitKernel(W, 2)
    np.testing.assert_allclose(y.eval(), _multibit_reference(W.value, 2, (1, 2, 3)), rtol=1e-5)


def _convolution_model(x):
    with C.layers.default_options(init=C.glorot_uniform(), activation=C.relu):
        a = C.layers.Convolution2D((5, 5), 8, strides=(2, 2), pad=True, bias=False,
                                   name='first_convo')(x)
        b = C.layers.Convolution2D((5, 5), 8, strides=(2, 2), pad=True, bias=False,
                                   name='second_convo')(x)
        h = C.layers.Convolution2D((3, 3), 8, pad=True, name='third_convo')(a + b)
        h = C.layers.Convolution2D((3, 3), 8, pad=True, name='fourth_convo')(h)
        return C.layers.Dense(10, activation=None, name='classify')(h)


def test_convert_to_binary_convolution():
    x = C.input_variable((1, 16, 16))
    z = _convolution_model(x)
    binary = qc.convert_to_binary_convolution(z)
    assert len(_blocks(binary, 'BinaryConvolution')) == 4

    some = qc.convert_to_binary_convolution(z, lambda block: block.name != 'first_convo')
    assert len(_blocks(some, 'BinaryConvolution')) == 3

    data = np.random.RandomState(3).randn(2, 1, 16, 16).astype(np.float32)
    assert some.eval({some.arguments[0]: data}).shape == (2, 10)

    # The binarized model trains (straight-through gradients reach the filters).
    label = C.input_variable(10)
    loss = C.cross_entropy_with_softmax(some, label)
    trainer = C.Trainer(some, (loss, None), C.sgd(some.parameters, C.learning_parameter_schedule(0.1)))
    filters = [p for p in some.parameters if p.name == 'filter']
    before = [f.value.copy() for f in filters]
    trainer.train_minibatch({some.arguments[0]: data, label: np.eye(10, dtype=np.float32)[:2]})
    assert any(not np.array_equal(b, f.value) for b, f in zip(before, filters))


def test_binary_convolution_matches_sign_convolution():
    x = C.input_variable((2, 6, 6))
    init = np.random.RandomState(4).randn(3, 2, 3, 3).astype(np.float32)
    y = qc.binary_convolution((3, 3), num_filters=3, channels=2, init=init)(x)
    data = np.random.RandomState(5).randn(1, 2, 6, 6).astype(np.float32)
    w_bin = np.where(init > 0, 1, -1) * np.abs(init).mean()
    x_bin = np.where(data[0] > 0, 1, -1) * np.abs(data[0]).mean()
    expected = np.zeros((3, 4, 4))
    for o in range(3):
        for i in range(4):
            for j in range(4):
                expected[o, i, j] = (x_bin[:, i:i + 3, j:j + 3] * w_bin[o]).sum()
    np.testing.assert_allclose(y.eval({x: data})[0], expected, rtol=1e-4, atol=1e-4)


def test_native_binary_convolution_unavailable():
    assert netopt.native_convolve_function_registered is False
    x = C.input_variable((1, 16, 16))
    trained = []
    with pytest.raises(RuntimeError, match='native binary convolution'):
        qc.binarize_convolution(_convolution_model(x), trained.append)
    assert len(trained) == 1  # the binarized model was handed over for training
    with pytest.raises(ValueError):
        qc.binarize_convolution(_convolution_model(x), None)
