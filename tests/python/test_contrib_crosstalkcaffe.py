"""cntk.contrib.crosstalkcaffe: the layer builders against NumPy, and a whole
conversion of a small Caffe network (prototxt + binary caffemodel written with
the package's own description of caffe.proto) checked against a NumPy forward
pass."""
import json

import numpy as np
import pytest

import cntk as C
from cntk.contrib.crosstalkcaffe import CaffeConverter
from cntk.contrib.crosstalkcaffe.adapter.bvlccaffe import caffe_proto
from cntk.contrib.crosstalkcaffe.unimodel import cntkmodel
from cntk.contrib.crosstalkcaffe.unimodel.cntkinstance import ApiSetup
from cntk.contrib.crosstalkcaffe.utils import format as fmt


def _layer(op_type, parameters, weights, op_name):
    layer = cntkmodel.CntkLayersDefinition()
    layer.parameters = parameters
    layer.op_type = op_type
    layer.op_name = op_name
    for w in weights or []:
        tensor = cntkmodel.CntkTensorDefinition()
        tensor.tensor = np.shape(w)
        tensor.data = np.asarray(w, dtype=np.float32).reshape(-1)
        layer.parameter_tensor.append(tensor)
    return layer


def test_camel_to_snake():
    assert fmt.camel_to_snake('BatchNorm') == 'batch_norm'
    assert fmt.camel_to_snake('CNTKModelPath') == 'cntk_model_path'
    assert fmt.camel_to_snake('PSROIPooling') == 'psroi_pooling'
    assert fmt.camel_to_snake('PHASE') == 'phase'
    assert fmt.camel_to_snake('conv1') == 'conv_1'


def test_convolution_setup():
    params = cntkmodel.CntkConvolutionParameters()
    params.output, params.stride, params.kernel = 2, [2, 2], [3, 3]
    params.auto_pad, params.need_bias, params.group = False, True, 1
    weights = [np.arange(1, 19, dtype=np.float32).reshape(2, 1, 3, 3), [1., 2.]]
    x = C.input_variable((1, 3, 3))
    f = ApiSetup.convolution(_layer(cntkmodel.CntkLayerType.convolution, params, weights, 'c'), [x])
    data = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    np.testing.assert_allclose(np.squeeze(f.eval({x: data})), [286., 692.])


def test_grouped_dilated_convolution():
    params = cntkmodel.CntkConvolutionParameters()
    params.output, params.stride, params.kernel = 4, [1, 1], [2, 2]
    params.auto_pad, params.need_bias, params.group, params.dilation = False, False, 2, [2, 2]
    rng = np.random.RandomState(0)
    w = rng.randn(4, 1, 2, 2).astype(np.float32)
    x = C.input_variable((2, 5, 5))
    f = ApiSetup.convolution(_layer(cntkmodel.CntkLayerType.convolution, params, [w], 'g'), [x])
    data = rng.randn(1, 2, 5, 5).astype(np.float32)
    expected = np.zeros((4, 3, 3), np.float32)
    for o in range(4):
        channel = data[0, o // 2]
        for i in range(3):
            for j in range(3):
                expected[o, i, j] = (channel[i:i + 3:2, j:j + 3:2] * w[o, 0]).sum()
    np.testing.assert_allclose(f.eval({x: data})[0], expected, rtol=1e-5, atol=1e-5)


def test_batch_norm_setup():
    params = cntkmodel.CntkBatchNormParameters()
    params.epsilon = 1e-5
    weights = [[1., 1.], [2., 2.], [1], [0.5, 0.5], [1., 1.]]
    x = C.input_variable((2, 2, 2))
    f = ApiSetup.batch_norm(_layer(cntkmodel.CntkLayerType.batch_norm, params, weights, 'bn'), [x])
    data = np.arange(1, 9, dtype=np.float32).reshape(1, 2, 2, 2)
    expected = (data - 1) / np.sqrt(2 + 1e-5) * 0.5 + 1
    np.testing.assert_allclose(f.eval({x: data}), expected, rtol=1e-5)


def test_dense_setup():
    params = cntkmodel.CntkDenseParameters()
    params.num_output = 2
    x = C.input_variable((1, 1, 1))
    f = ApiSetup.dense(_layer(cntkmodel.CntkLayerType.dense, params, [[[1.], [2.]], [[1.]]], 'd'), [x])
    np.testing.assert_allclose(np.squeeze(f.eval({x: np.ones((1, 1, 1, 1), np.float32)})), [2., 3.])


_PROTOTXT = '''
name: "tiny"
layer { name: "data" type: "Input" top: "data"
        input_param { shape { dim: 1 dim: 2 dim: 6 dim: 6 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        param { lr_mult: 1 } param { lr_mult: 2 }
        convolution_param { num_output: 3 kernel_size: 3 stride: 1
                            weight_filler { type: "gaussian" std: 0.01 } } }
layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1"
        scale_param { bias_term: true } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "fc" type: "InnerProduct" bottom: "pool1" top: "fc"
        inner_product_param { num_output: 4 } }
layer { name: "prob" type: "Softmax" bottom: "fc" top: "prob" }
'''


def _blob(array):
    blob = caffe_proto.BlobProto()
    blob.shape.dim.extend(np.shape(array))
    blob.data.extend(np.asarray(array, np.float32).reshape(-1).tolist())
    return blob


def test_convert_tiny_network(tmp_path):
    rng = np.random.RandomState(1)
    w1, b1 = rng.randn(3, 2, 3, 3).astype(np.float32), rng.randn(3).astype(np.float32)
    mean, var, factor = rng.randn(3) * 2, rng.rand(3) * 2 + 0.5, 2.0
    gamma, beta = rng.randn(3), rng.randn(3)
    wf, bf = rng.randn(4, 12).astype(np.float32), rng.randn(4).astype(np.float32)

    weights = caffe_proto.NetParameter()
    for name, blobs in [('conv1', [w1, b1]), ('bn1', [mean * factor, var * factor, [factor]]),
                        ('scale1', [gamma, beta]), ('fc', [wf, bf])]:
        layer = weights.layer.add(name=name)
        layer.blobs.extend([_blob(b) for b in blobs])
    (tmp_path / 'tiny.prototxt').write_text(_PROTOTXT)
    (tmp_path / 'tiny.caffemodel').write_bytes(weights.SerializeToString())
    conf = {'SourceSolver': {'Source': 'Caffe', 'ModelPath': str(tmp_path / 'tiny.prototxt'),
                             'WeightsPath': str(tmp_path / 'tiny.caffemodel'), 'PHASE': 1},
            'ModelSolver': {'CNTKModelPath': str(tmp_path / 'tiny.cntkmodel')}}
    (tmp_path / 'global.json').write_text(json.dumps(conf))

    CaffeConverter.from_model(str(tmp_path / 'global.json'))
    model = C.load_model(str(tmp_path / 'tiny.cntkmodel'))

    x = rng.randn(1, 2, 6, 6).astype(np.float32)
    conv = np.zeros((3, 4, 4), np.float32)
    for o in range(3):
        for i in range(4):
            for j in range(4):
                conv[o, i, j] = (x[0, :, i:i + 3, j:j + 3] * w1[o]).sum() + b1[o]
    bn = (conv - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
    act = np.maximum(bn * gamma[:, None, None] + beta[:, None, None], 0)
    pooled = act.reshape(3, 2, 2, 2, 2).max(axis=(2, 4))
    logits = wf @ pooled.reshape(-1) + bf
    expected = np.exp(logits - logits.max())
    expected /= expected.sum()
    np.testing.assert_allclose(np.squeeze(model.eval({model.arguments[0]: x})), expected,
                               rtol=1e-4, atol=1e-5)


def test_unsupported_layer_is_reported(tmp_path):
    (tmp_path / 'n.prototxt').write_text(
        'layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 } } }\n'
        'layer { name: "t" type: "TanH" bottom: "data" top: "t" }\n')
    conf = {'SourceSolver': {'Source': 'Caffe', 'ModelPath': str(tmp_path / 'n.prototxt'),
                             'WeightsPath': str(tmp_path / 'missing'), 'PHASE': 1}}
    (tmp_path / 'g.json').write_text(json.dumps(conf))
    with pytest.raises(NotImplementedError, match='TanH'):
        CaffeConverter.from_model(str(tmp_path / 'g.json'))
