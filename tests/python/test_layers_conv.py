"""cntk.layers, convolutional part: Convolution (1D/2D/3D), ConvolutionTranspose (1D/2D/3D),
MaxPooling, AveragePooling, GlobalMaxPooling, GlobalAveragePooling, MaxUnpooling."""
import numpy as np
import pytest

import cntk as C
from cntk.layers import (Convolution, Convolution1D, Convolution2D, Convolution3D, ConvolutionTranspose,
                         ConvolutionTranspose1D, ConvolutionTranspose2D, ConvolutionTranspose3D, MaxPooling,
                         AveragePooling, GlobalMaxPooling, GlobalAveragePooling, MaxUnpooling, default_options)


def params(f):
    return {p.name: p for p in f.parameters}


def test_convolution_layer_shapes_and_defaults():
    x = C.input_variable((3, 10, 8))
    f = Convolution((3, 3), 16)(x)
    assert f.shape == (16, 8, 6)           # pad=False by default
    p = params(f)
    assert p['W'].shape == (16, 3, 3, 3)   # input depth inferred from x
    assert p['b'].shape == (16, 1, 1)
    np.testing.assert_array_equal(p['b'].value, 0)
    # glorot_uniform over fan_in = 3*3*3 and fan_out = 16*3*3
    limit = np.sqrt(6.0 / (27 + 144))
    w = p['W'].value
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.5 * limit
    assert Convolution((3, 3), 16, pad=True)(x).shape == (16, 10, 8)
    assert Convolution((3, 3), 16, pad=True, strides=2)(x).shape == (16, 5, 4)
    assert Convolution((3, 2), 4, pad=(True, False), strides=(1, 2))(x).shape == (4, 10, 4)


def test_convolution_layer_computes_activation_of_conv_plus_bias():
    x = C.input_variable((2, 5, 5))
    w = np.random.randn(4, 2, 3, 3).astype(np.float32)
    f = Convolution((3, 3), 4, activation=C.relu, init=w, init_bias=0.25, pad=True)(x)
    d = np.random.randn(2, 2, 5, 5).astype(np.float32)
    ref = np.maximum(C.convolution(C.constant(w), x, auto_padding=[False, True, True]).eval({x: d}) + 0.25, 0)
    np.testing.assert_allclose(f.eval({x: d}), ref, rtol=1e-5, atol=1e-5)


def test_convolution_layer_without_num_filters_reduction_rank_0_and_no_bias():
    x = C.input_variable((6, 7))
    f = Convolution((3, 3), reduction_rank=0, bias=False)(x)
    assert f.shape == (4, 5)
    assert list(params(f)) == ['W'] and params(f)['W'].shape == (1, 1, 3, 3)
    g = Convolution((3, 3), 5, reduction_rank=0, pad=True)(x)
    assert g.shape == (5, 6, 7)
    assert params(g)['W'].shape == (5, 1, 3, 3)


def test_convolution_layer_reduction_rank_0_takes_an_array_of_num_filters_and_filter_shape():
    # As CNTK: the array is (num_filters, *filter_shape); the kernel gets the emulated depth axes.
    f = Convolution1D(3, init=np.array([4, 2, 1]), pad=True, reduction_rank=0, bias=False)
    f.update_signature(5)
    assert params(f)['W'].shape == (1, 1, 3)
    np.testing.assert_array_equal(f(np.array([[2, 6, 4, 8, 6]], np.float32)), [[10, 24, 40, 38, 44]])
    g = Convolution(3, 2, init=np.array([[1, 0, 0], [0, 0, 1]]), reduction_rank=0, bias=False)
    g.update_signature(4)
    np.testing.assert_array_equal(g(np.array([[1, 2, 3, 4]], np.float32)), [[[1, 2], [3, 4]]])
    with pytest.raises(ValueError):
        Convolution(3, init=np.array([[4, 2, 1]]), reduction_rank=0)


def test_convolution_layer_groups_and_dilation():
    x = C.input_variable((4, 9, 9))
    f = Convolution2D((3, 3), 8, groups=4, dilation=2)(x)
    assert f.shape == (8, 5, 5)
    assert params(f)['W'].shape == (8, 1, 3, 3)
    with pytest.raises(ValueError):
        Convolution2D((3, 3), 6, groups=4)


def test_convolution_nd_layers_check_filter_rank():
    assert Convolution1D(3, 4)(C.input_variable((2, 10))).shape == (4, 8)
    assert Convolution1D(3, 4, pad=True)(C.input_variable((2, 10))).shape == (4, 10)
    assert Convolution3D((2, 3, 3), 4)(C.input_variable((2, 5, 6, 7))).shape == (4, 4, 4, 5)
    for layer, shape in [(Convolution1D, (3, 3)), (Convolution2D, 3), (Convolution3D, (3, 3))]:
        with pytest.raises(ValueError):
            layer(shape, 4)
    with pytest.raises(NotImplementedError):
        Convolution((3, 3), 4, sharing=False)
    # sequential=True and SequentialConvolution: see test_conv_sequential.py
    with pytest.raises(NotImplementedError, match='stride'):
        Convolution((3, 3), 4, sequential=True, strides=2)


def test_convolution_layer_trains():
    # A 1x1 convolution learns a fixed channel mixing.
    x = C.input_variable((2, 4, 4))
    y = C.input_variable((1, 4, 4))
    model = Convolution((1, 1), 1)(x)
    loss = C.reduce_sum(C.square(model - y))
    learner = C.sgd(model.parameters, C.learning_parameter_schedule(0.02))
    trainer = C.Trainer(model, (loss, None), [learner])
    rng = np.random.RandomState(0)
    for _ in range(200):
        d = rng.randn(8, 2, 4, 4).astype(np.float32)
        t = (2 * d[:, :1] - d[:, 1:] + 0.5).astype(np.float32)
        trainer.train_minibatch({x: d, y: t})
    p = params(model)
    np.testing.assert_allclose(p['W'].value.ravel(), [2, -1], atol=0.05)
    np.testing.assert_allclose(p['b'].value.ravel(), [0.5], atol=0.05)


def test_convolution_transpose_layers():
    x = C.input_variable((3, 4, 4))
    f = ConvolutionTranspose((3, 3), 5)(x)
    assert f.shape == (5, 6, 6)
    assert params(f)['W'].shape == (3, 5, 3, 3)
    assert params(f)['b'].shape == (5, 1, 1)
    assert ConvolutionTranspose2D((3, 3), 5, pad=True, strides=2)(x).shape == (5, 7, 7)
    assert ConvolutionTranspose2D((3, 3), 5, pad=True, strides=2, output_shape=(8, 8))(x).shape == (5, 8, 8)
    assert ConvolutionTranspose1D(3, 2)(C.input_variable((3, 5))).shape == (2, 7)
    assert ConvolutionTranspose3D((2, 2, 2), 2)(C.input_variable((1, 2, 3, 4))).shape == (2, 3, 4, 5)
    assert ConvolutionTranspose((3, 3))(x).shape == (6, 6)
    with pytest.raises(ValueError):
        ConvolutionTranspose2D(3, 2)


def test_pooling_layers():
    x = C.input_variable((2, 6, 5))
    d = np.random.randn(3, 2, 6, 5).astype(np.float32)
    m = MaxPooling((2, 2), strides=2)(x)
    assert m.shape == (2, 3, 2)
    np.testing.assert_allclose(m.eval({x: d}), C.pooling(x, C.MAX_POOLING, (2, 2), (2, 2)).eval({x: d}))
    a = AveragePooling((3, 3), strides=1, pad=True)(x)
    assert a.shape == (2, 6, 5)
    np.testing.assert_allclose(a.eval({x: d}),
                               C.pooling(x, C.AVG_POOLING, (3, 3), (1, 1), auto_padding=[True]).eval({x: d}))
    assert MaxPooling((3, 3), strides=2, pad=True)(x).shape == (2, 3, 3)
    with default_options(pad=True):
        assert MaxPooling((3, 3))(x).shape == (2, 6, 5)


def test_global_pooling_layers():
    x = C.input_variable((3, 4, 5))
    d = np.random.randn(2, 3, 4, 5).astype(np.float32)
    gm = GlobalMaxPooling()(x)
    ga = GlobalAveragePooling()(x)
    assert gm.shape == (3, 1, 1) and ga.shape == (3, 1, 1)
    np.testing.assert_allclose(gm.eval({x: d}), d.max(axis=(2, 3), keepdims=True))
    np.testing.assert_allclose(ga.eval({x: d}), d.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
    g = GlobalAveragePooling()(C.input_variable((2, 7)))
    assert g.shape == (2, 1)


def test_max_unpooling_layer():
    x = C.input_variable((1, 4, 4))
    img = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    pooled = MaxPooling((2, 2), strides=2)(x)
    u = MaxUnpooling((2, 2), strides=2)(pooled, x)
    assert u.shape == (1, 4, 4)
    np.testing.assert_allclose(u.eval({x: img}),
                               [[[[0, 0, 0, 0], [0, 5, 0, 7], [0, 0, 0, 0], [0, 13, 0, 15]]]])


def test_cntk27_convolution_and_pooling_names_exist():
    import os
    tsv = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'reference', 'cntk27_python_api.tsv')
    if not os.path.exists(tsv):
        pytest.skip("the reference list is absent")
    import importlib
    wanted = ('convolution', 'pooling', 'unpooling', 'roipooling', 'Convolution', 'Pooling', 'Unpooling')
    missing, found = [], 0
    with open(tsv) as f:
        next(f)
        for line in f:
            module, kind, name = line.rstrip('\n').split('\t')[:3]
            name = name.split('(')[0]
            if module not in ('cntk.ops', 'cntk.layers.layers') or not any(w in name for w in wanted):
                continue
            found += 1
            if not hasattr(importlib.import_module(module), name):
                missing.append(module + '.' + name)
    assert found >= 18 and not missing, missing
    for name in ('MAX_POOLING', 'AVG_POOLING', 'MAX_UNPOOLING'):
        assert hasattr(C, name) and hasattr(C.ops, name)
