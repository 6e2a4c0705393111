"""ONNX forms and reader rules of the NN ops: convolution, pooling, normalization, the softmax
family, activations with attributes, dropout, the criteria; and a PyTorch ResNet-18 read and
trained."""
import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper, TensorProto  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
import onnx.numpy_helper  # noqa: E402


def _export_and_compare(tmp_path, x, z, data, opset=None, atol=1e-5):
    """z exported runs in ONNX Runtime as it evaluates here; read back it evaluates the same."""
    path = str(tmp_path / 'm.onnx')
    z.save(path, format=C.ModelFormat.ONNX, **({'opset': opset} if opset else {}))
    onnx.checker.check_model(onnx.load(path), full_check=True)
    want = z.eval({x: data})
    got = ort.InferenceSession(path).run(None, {x.name: data})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol)
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    for i in range(len(data)):  # the batch reads back as a static 1 (docs/onnx.md)
        back = z2.eval({z2.arguments[0]: data[i:i + 1]})
        np.testing.assert_allclose(np.asarray(back).reshape(want[i].shape), want[i], rtol=1e-5, atol=atol)


@pytest.mark.parametrize('strides,pad,groups,dilation', [(1, True, 1, 1), (2, True, 1, 1), (2, False, 1, 1),
                                                         (1, True, 2, 1), (1, False, 1, 2)])
def test_convolution_exports_and_reads_back(tmp_path, strides, pad, groups, dilation):
    x = C.input_variable((4, 9, 8), name='x')
    W = C.parameter((6, 4 // groups, 3, 2), init=C.glorot_uniform(seed=3))
    z = C.convolution(W, x, strides=strides, auto_padding=[False, pad, pad], groups=groups, dilation=dilation)
    d = np.random.RandomState(0).rand(2, 4, 9, 8).astype(np.float32)
    _export_and_compare(tmp_path, x, z, d)


def test_transposed_convolution_exports_as_conv_transpose(tmp_path):
    x = C.input_variable((3, 5, 5), name='x')
    W = C.parameter((3, 2, 3, 3), init=C.glorot_uniform(seed=4))
    z = C.convolution_transpose(W, x, strides=2, auto_padding=[False, True, True], output_shape=(2, 10, 10))
    d = np.random.RandomState(1).rand(2, 3, 5, 5).astype(np.float32)
    _export_and_compare(tmp_path, x, z, d)


@pytest.mark.parametrize('kind,pad,include_pad', [(C.MAX_POOLING, False, False), (C.MAX_POOLING, True, False),
                                                  (C.AVG_POOLING, True, False), (C.AVG_POOLING, True, True)])
def test_pooling_exports_and_reads_back(tmp_path, kind, pad, include_pad):
    x = C.input_variable((3, 7, 6), name='x')
    z = C.pooling(x, kind, (3, 3), strides=(2, 2), auto_padding=[pad], include_pad=include_pad)
    d = np.random.RandomState(2).rand(2, 3, 7, 6).astype(np.float32)
    _export_and_compare(tmp_path, x, z, d)


def test_global_pooling_and_batch_normalization_and_lrn(tmp_path):
    x = C.input_variable((3, 4, 4), name='x')
    r = np.random.RandomState(3)
    bn = C.layers.BatchNormalization(map_rank=1, init_scale=2.0, name='bn')
    y = bn(x)
    for p, v in ((bn.parameters[0], r.rand(3) + 0.5), (bn.parameters[1], r.rand(3))):
        p.value = v.astype(np.float32)
    y = C.local_response_normalization(y, 1, 1.0, 1e-3, 0.75)
    z = C.layers.GlobalAveragePooling()(C.relu(y)) + C.layers.GlobalMaxPooling()(y)
    d = r.rand(2, 3, 4, 4).astype(np.float32)
    _export_and_compare(tmp_path, x, z, d)


@pytest.mark.parametrize('opset', [11, 17])
@pytest.mark.parametrize('op', ['softmax', 'log_softmax'])
def test_softmax_family_over_each_axis_in_both_opset_conventions(tmp_path, opset, op):
    x = C.input_variable((3, 4), name='x')
    f = getattr(C, op)
    z = f(x, axis=0) + f(x, axis=1) * 2
    d = np.random.RandomState(4).rand(2, 3, 4).astype(np.float32)
    _export_and_compare(tmp_path, x, z, d, opset=opset)


def test_activations_with_attributes_and_dropout(tmp_path):
    x = C.input_variable(5, name='x')
    z = C.elu(x) + C.leaky_relu(x, 0.2) + C.selu(x) + C.hard_sigmoid(x) + C.softplus(x) + C.dropout(x, 0.5)
    d = np.random.RandomState(5).randn(3, 5).astype(np.float32)
    _export_and_compare(tmp_path, x, z, d)


# -------------------------------------------------------------------------- reader

def _read_vs_reference(node, inputs, opset=17, atol=1e-5, initializers=None, runtime=False):
    """The node read here against ONNX's reference evaluator (or ONNX Runtime where the reference
    evaluator departs from the specification: the coerced softmax before opset 13, LRN)."""
    graph = helper.make_graph([node], 'g',
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape) for n, v in inputs.items()],
                              [helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, None)],
                              [onnx.numpy_helper.from_array(v, n) for n, v in (initializers or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    if runtime:
        want = ort.InferenceSession(model.SerializeToString()).run(None, inputs)[0]
    else:
        want = ReferenceEvaluator(model).run(None, inputs)[0]
    z = C.load_model(model.SerializeToString(), format=C.ModelFormat.ONNX)
    feed = {a: inputs[a.name] for a in z.arguments}
    got = z.eval(feed)
    np.testing.assert_allclose(np.asarray(got).reshape(want.shape), want, rtol=1e-5, atol=atol)


R = np.random.RandomState(7)
X4 = R.rand(2, 4, 7, 6).astype(np.float32)


@pytest.mark.parametrize('attrs', [dict(), dict(strides=[2, 2], pads=[1, 0, 2, 1]), dict(auto_pad='SAME_UPPER', strides=[2, 2]),
                                   dict(auto_pad='SAME_LOWER'), dict(group=2), dict(dilations=[2, 1])])
def test_reader_conv(attrs):
    W = R.rand(6, 4 // attrs.get('group', 1), 3, 2).astype(np.float32)
    B = R.rand(6).astype(np.float32)
    _read_vs_reference(helper.make_node('Conv', ['x', 'W', 'B'], ['y'], **attrs), {'x': X4, 'W': W, 'B': B})


def test_reader_conv_transpose():
    W = R.rand(4, 3, 3, 3).astype(np.float32)
    _read_vs_reference(helper.make_node('ConvTranspose', ['x', 'W'], ['y'], strides=[2, 2], pads=[1, 1, 1, 1],
                                        output_padding=[1, 0]), {'x': X4, 'W': W})


@pytest.mark.parametrize('node', [
    helper.make_node('MaxPool', ['x'], ['y'], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    helper.make_node('AveragePool', ['x'], ['y'], kernel_shape=[3, 2], pads=[1, 1, 1, 0]),
    helper.make_node('AveragePool', ['x'], ['y'], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
    helper.make_node('GlobalAveragePool', ['x'], ['y']),
    helper.make_node('GlobalMaxPool', ['x'], ['y']),
    helper.make_node('LRN', ['x'], ['y'], size=3, alpha=1e-2),
    helper.make_node('LpPool', ['x'], ['y'], kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1]),
    helper.make_node('LpPool', ['x'], ['y'], kernel_shape=[2, 2], p=3),
    helper.make_node('GlobalLpPool', ['x'], ['y']),
], ids=lambda n: n.op_type)
def test_reader_pooling_and_lrn(node):
    _read_vs_reference(node, {'x': X4}, runtime=node.op_type in ('LRN', 'LpPool', 'GlobalLpPool'))


def test_reader_batch_normalization():
    s, b, m = (R.rand(4).astype(np.float32) for _ in range(3))
    v = R.rand(4).astype(np.float32) + 0.5
    _read_vs_reference(helper.make_node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], ['y'], epsilon=1e-3),
                       {'x': X4}, initializers={'s': s, 'b': b, 'm': m, 'v': v})


@pytest.mark.parametrize('opset', [11, 13])
@pytest.mark.parametrize('op', ['Softmax', 'LogSoftmax'])
@pytest.mark.parametrize('axis', [1, 2, -1])
def test_reader_softmax_family_by_opset(op, axis, opset):
    _read_vs_reference(helper.make_node(op, ['x'], ['y'], axis=axis), {'x': X4}, opset=opset, runtime=True)


@pytest.mark.parametrize('node', [
    helper.make_node('LeakyRelu', ['x'], ['y'], alpha=0.3),
    helper.make_node('Elu', ['x'], ['y'], alpha=0.7),
    helper.make_node('Selu', ['x'], ['y']),
    helper.make_node('HardSigmoid', ['x'], ['y'], alpha=0.3, beta=0.4),
    helper.make_node('HardSwish', ['x'], ['y']),
    helper.make_node('Softplus', ['x'], ['y']),
    helper.make_node('Softsign', ['x'], ['y']),
    helper.make_node('Mish', ['x'], ['y']),
    helper.make_node('ThresholdedRelu', ['x'], ['y'], alpha=0.4),
    helper.make_node('Dropout', ['x'], ['y']),
], ids=lambda n: n.op_type)
def test_reader_activations(node):
    _read_vs_reference(node, {'x': (X4 - 0.5) * 4}, opset=18)


def test_reader_prelu():
    _read_vs_reference(helper.make_node('PRelu', ['x', 's'], ['y']),
                       {'x': X4 - 0.5, 's': R.rand(4, 1, 1).astype(np.float32)})


# -------------------------------------------------------------- PyTorch ResNet-18

def _resnet18(torch):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    # The classifier as a 1x1 convolution over the pooled features (a Linear after Flatten computes the same).
    layers += [nn.AdaptiveAvgPool2d(1), nn.Conv2d(512, 10, 1)]
    return nn.Sequential(*layers)


def test_pytorch_resnet18_imports_matches_and_trains(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = _resnet18(torch)
    with torch.no_grad():  # statistics other than the defaults, so that normalization matters
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    net.eval()
    x = torch.rand(2, 3, 64, 64)
    path = str(tmp_path / 'resnet18.onnx')
    torch.onnx.export(net, (x,), path, input_names=['x'], output_names=['y'], dynamic_axes={'x': {0: 'N'}},
                      opset_version=17, dynamo=False)
    z = C.Function.load(path, format=C.ModelFormat.ONNX)
    with torch.no_grad():
        want = net(x).numpy()
    got = np.asarray(z.eval({z.arguments[0]: x.numpy()})).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)

    # Five steps of training after import: the imported weights are parameters and the loss falls.
    label = C.input_variable(10)
    logits = C.reshape(C.to_batch(z), (10,))  # the file's static N as the batch axis
    data = np.random.RandomState(0).rand(4, 3, 64, 64).astype(np.float32)
    lab = np.eye(10, dtype=np.float32)[[1, 3, 5, 7]]
    ce = C.cross_entropy_with_softmax(logits, label)
    learner = C.sgd(z.parameters, C.learning_parameter_schedule(0.01))
    trainer = C.Trainer(logits, (ce, None), [learner])
    losses = []
    for _ in range(5):
        trainer.train_minibatch({z.arguments[0]: data, label: lab})
        losses.append(trainer.previous_minibatch_loss_average)
    assert losses[-1] < losses[0], losses


# ------------------------------------------------------- criteria, one-map kernels, BN

def _export_to_runtime(tmp_path, z, feeds, opset=None):
    """z exported runs in ONNX Runtime as it evaluates here (the file passes the full check)."""
    path = str(tmp_path / 'c.onnx')
    z.save(path, format=C.ModelFormat.ONNX, **({'opset': opset} if opset else {}))
    onnx.checker.check_model(onnx.load(path), full_check=True)
    sess = ort.InferenceSession(path)
    got = sess.run(None, {i.name: feeds[a] for i, a in zip(sess.get_inputs(), z.arguments)})[0]
    want = np.asarray(z.eval(feeds))
    np.testing.assert_allclose(got, want.reshape(got.shape), rtol=1e-5, atol=1e-5)
    return got


@pytest.mark.parametrize('opset', [11, 17, 18])
def test_criteria_export_as_subgraphs(tmp_path, opset):
    r = np.random.RandomState(11)
    z, t = C.input_variable(6, name='z'), C.input_variable(6, name='t')
    zd = r.randn(5, 6).astype(np.float32)
    zd[4, 1] = zd[4, 3] = zd[4].max() + 1  # a tie: the first maximum counts
    td = np.eye(6, dtype=np.float32)[[0, 3, 2, 5, 3]]
    feeds = {z: zd, t: td}
    ce = _export_to_runtime(tmp_path, C.cross_entropy_with_softmax(z, t), feeds, opset)
    lse = np.log(np.exp(zd).sum(axis=1))
    np.testing.assert_allclose(ce.reshape(-1), lse - (zd * td).sum(axis=1), rtol=1e-5)
    err = _export_to_runtime(tmp_path, C.classification_error(z, t), feeds, opset)
    np.testing.assert_array_equal(err.reshape(-1), (zd.argmax(axis=1) != td.argmax(axis=1)).astype(np.float32))
    assert err[4] == 1  # the label's score ties the first maximum but comes later
    _export_to_runtime(tmp_path, C.classification_error(z, t, topN=3), feeds, opset)
    # A soft target over axis 0 of a (3, 4) sample.
    z2, t2 = C.input_variable((3, 4), name='z2'), C.input_variable((3, 4), name='t2')
    _export_to_runtime(tmp_path, C.cross_entropy_with_softmax(z2, t2, axis=0),
                       {z2: r.randn(2, 3, 4).astype(np.float32), t2: r.rand(2, 3, 4).astype(np.float32)}, opset)


@pytest.mark.parametrize('opset', [9, 17])
def test_binary_cross_entropy_exports_finite_at_saturation(tmp_path, opset):
    p, y = C.input_variable(4, name='p'), C.input_variable(4, name='y')
    pd = np.array([[0.2, 0.9, 0.0, 1.0], [0.5, 0.1, 0.7, 0.3]], np.float32)
    yd = np.array([[0, 1, 0, 1], [1, 0, 1, 0]], np.float32)
    got = _export_to_runtime(tmp_path, C.binary_cross_entropy(p, y), {p: pd, y: yd}, opset)
    assert np.all(np.isfinite(got))
    w = C.constant(np.array([1, 2, 3, 4], np.float32))
    _export_to_runtime(tmp_path, C.weighted_binary_cross_entropy(p, y, w), {p: pd, y: yd}, opset)


def test_minibatch_criteria_refuse_with_the_reason(tmp_path):
    o, g, q = (C.input_variable(1, name=n) for n in 'ogq')
    with pytest.raises(ValueError, match='groups of samples'):
        C.ndcg_at_1(o, g, q).save(str(tmp_path / 'n.onnx'), format=C.ModelFormat.ONNX)


def test_one_map_kernel_and_non_spatial_batch_normalization(tmp_path):
    x = C.input_variable((3, 8, 9), name='x')
    k = C.parameter((3, 3, 3), init=C.glorot_uniform(seed=5))  # (C, kH, kW): one output map
    d = np.random.RandomState(4).rand(2, 3, 8, 9).astype(np.float32)
    _export_and_compare(tmp_path, x, C.convolution(k, x, auto_padding=[False, True, True], strides=(1, 2)), d)
    r = np.random.RandomState(5)
    shape = (2, 3)
    scale, bias, mean = (C.parameter(shape, init=r.rand(*shape).astype(np.float32)) for _ in range(3))
    var = C.constant(r.rand(*shape).astype(np.float32) + 0.5)
    x2 = C.input_variable(shape, name='x2')
    z = C.batch_normalization(x2, scale, bias, mean, var, running_count=C.constant(0), spatial=False, epsilon=1e-3)
    _export_and_compare(tmp_path, x2, z, r.rand(3, 2, 3).astype(np.float32))


def test_hardmax_over_one_axis_reads_as_onnx_defines_it():
    x = np.array([[1, 3, 3, 0], [5, 1, 2, 5], [0, 0, 0, 0]], np.float32)  # ties: the first maximum
    _read_vs_reference(helper.make_node('Hardmax', ['x'], ['y'], axis=1), {'x': x}, opset=13)
    _read_vs_reference(helper.make_node('Hardmax', ['x'], ['y'], axis=0), {'x': x}, opset=13)
    _read_vs_reference(helper.make_node('Hardmax', ['x'], ['y'], axis=2), {'x': X4}, opset=13)


@pytest.mark.parametrize('node,inits', [
    (helper.make_node('InstanceNormalization', ['x', 's', 'b'], ['y'], epsilon=1e-3),
     {'s': R.randn(4).astype(np.float32), 'b': R.randn(4).astype(np.float32)}),
    (helper.make_node('LayerNormalization', ['x', 's', 'b'], ['y'], axis=-2),
     {'s': R.randn(7, 6).astype(np.float32), 'b': R.randn(6).astype(np.float32)}),
    (helper.make_node('LayerNormalization', ['x', 's'], ['y'], epsilon=1e-2), {'s': R.randn(6).astype(np.float32)}),
    (helper.make_node('MeanVarianceNormalization', ['x'], ['y']), {}),
    (helper.make_node('MeanVarianceNormalization', ['x'], ['y'], axes=[1, 2, 3]), {}),
], ids=lambda v: getattr(v, 'op_type', ''))
def test_reader_normalizations(node, inits):
    _read_vs_reference(node, {'x': (X4 - 0.5) * 3}, opset=18, initializers=inits, runtime=True)


def test_reader_gelu_tanh_and_exact():
    x = (X4 - 0.5) * 6
    _read_vs_reference(helper.make_node('Gelu', ['x'], ['y'], approximate='tanh'), {'x': x}, opset=20, runtime=True)
    _read_vs_reference(helper.make_node('Gelu', ['x'], ['y']), {'x': x}, opset=20, runtime=True)


def test_imported_batch_normalization_in_training_uses_the_minibatch_and_updates_the_file_statistics():
    """docs/onnx.md: trained, an imported BatchNormalization normalizes with the minibatch's
    statistics and moves the file's running statistics towards them as ONNX's momentum says
    (the file fixes N here)."""
    r = np.random.RandomState(9)
    s, b, m = (r.rand(4).astype(np.float32) for _ in range(3))
    v = r.rand(4).astype(np.float32) + 0.5
    graph = helper.make_graph(
        [helper.make_node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], ['y'], epsilon=1e-3, momentum=0.5)], 'g',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, X4.shape)],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(a, n) for n, a in zip('sbmv', (s, b, m, v))])
    z = C.load_model(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]).SerializeToString(),
                     format=C.ModelFormat.ONNX)
    assert sorted(p.name for p in z.parameters) == ['b', 's']
    _, out = z.forward({z.arguments[0]: X4}, keep_for_backward=set(z.outputs))
    mu, var = X4.mean(axis=(0, 2, 3)), X4.var(axis=(0, 2, 3))
    c = lambda a: a.reshape(1, 4, 1, 1)  # noqa: E731
    want = (X4 - c(mu)) / np.sqrt(c(var) + 1e-3) * c(s) + c(b)
    np.testing.assert_allclose(np.asarray(out[z.outputs[0]]).reshape(X4.shape), want, rtol=1e-4, atol=1e-5)
    f = 1 - 0.5  # momentum 0.5: half the minibatch's statistics
    stat = {k.name: k.value for k in z.constants if k.name in 'mv'}
    np.testing.assert_allclose(stat['m'], f * mu + (1 - f) * m, rtol=1e-5)
    np.testing.assert_allclose(stat['v'], f * X4.var(axis=(0, 2, 3), ddof=1) + (1 - f) * v, rtol=1e-5)


@pytest.mark.parametrize('across', [False, True])
def test_layer_and_mean_variance_normalization_export_as_their_reductions(tmp_path, across):
    """The catalogue has no single op for them: the blocks are written as the reductions and
    elementwise ops they are made of, exact (epsilon added to the standard deviation, as CNTK)."""
    x = C.input_variable((3, 5, 7), name='x')
    d = np.random.RandomState(6).randn(2, 3, 5, 7).astype(np.float32)
    _export_and_compare(tmp_path, x, C.mean_variance_normalization(x, use_stats_across_channels=across), d)
    z = C.layers.LayerNormalization(initial_scale=2, initial_bias=1, epsilon=0.1 if across else 1e-5)(x)
    _export_and_compare(tmp_path, x, z, d)


@pytest.mark.parametrize('opset', [9, 17])
def test_crop_exports_as_slice(tmp_path, opset):
    x = C.input_variable((2, 6, 5), name='x')
    z = C.crop_manual(x, C.constant(np.ones((1, 3, 2), np.float32)), 2, 1)  # offsets: x (last axis), y
    d = np.arange(2 * 2 * 6 * 5, dtype=np.float32).reshape(2, 2, 6, 5)
    got = _export_to_runtime(tmp_path, z, {x: d}, opset)
    np.testing.assert_array_equal(got, d[:, :, 1:4, 2:4])


def test_batch_normalization_time_constant_survives_the_round_trip(tmp_path):
    """The writer's momentum exp(-1/T) for the file's batch of 1 reads back as T."""
    x = C.input_variable((3, 4, 4), name='x')
    z = C.layers.BatchNormalization(map_rank=1, normalization_time_constant=100)(x)
    path = str(tmp_path / 'bn.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    momentum = [a.f for n in onnx.load(path).graph.node for a in n.attribute if a.name == 'momentum']
    np.testing.assert_allclose(momentum, [np.exp(-1 / 100)], rtol=1e-6)
    nodes = []
    C.logging.graph.depth_first_search(C.Function.load(path, format=C.ModelFormat.ONNX),
                                       lambda n: nodes.append(n) or True)
    T = [n.attributes['normalizationTimeConstant'] for n in nodes if getattr(n, 'op_name', '') == 'BatchNormalization']
    np.testing.assert_allclose(T, [100], rtol=1e-5)


# ------------------------------------------- depth/space blocks, like-tensors, top_k

def _node_types(path):
    return [n.op_type for n in onnx.load(path).graph.node]


@pytest.mark.parametrize('opset', [9, 17])
@pytest.mark.parametrize('to_space', [True, False])
def test_depth_to_space_and_space_to_depth_export_as_their_onnx_ops(tmp_path, to_space, opset):
    r = np.random.RandomState(21)
    if to_space:
        x = C.input_variable((18, 3, 4), name='x')
        z = C.depth_to_space(x, 3)
        # the engine's DCR order, against NumPy
        d = r.rand(2, 18, 3, 4).astype(np.float32)
        t = d.reshape(2, 3, 3, 2, 3, 4).transpose(0, 3, 4, 1, 5, 2).reshape(2, 2, 9, 12)
    else:
        x = C.input_variable((2, 6, 9), name='x')
        z = C.space_to_depth(x, 3)
        d = r.rand(2, 2, 6, 9).astype(np.float32)
        t = d.reshape(2, 2, 2, 3, 3, 3).transpose(0, 3, 5, 1, 2, 4).reshape(2, 18, 2, 3)
    np.testing.assert_allclose(z.eval({x: d}), t, rtol=1e-6)
    _export_and_compare(tmp_path, x, z, d, opset=opset)
    path = str(tmp_path / 'm.onnx')
    assert ('DepthToSpace' if to_space else 'SpaceToDepth') in _node_types(path)


def test_depth_to_space_without_batch_axis(tmp_path):
    x = C.input_variable((8, 2, 3), dynamic_axes=[], name='x')
    z = C.depth_to_space(x, 2)
    d = np.random.RandomState(22).rand(8, 2, 3).astype(np.float32)
    path = str(tmp_path / 'd.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    got = ort.InferenceSession(path).run(None, {'x': d})[0]
    np.testing.assert_allclose(got, z.eval({x: d}), rtol=1e-6)


@pytest.mark.parametrize('mode', ['DCR', 'CRD'])
def test_reader_depth_to_space_modes_and_space_to_depth(mode):
    d = R.rand(2, 8, 3, 2).astype(np.float32)
    _read_vs_reference(helper.make_node('DepthToSpace', ['x'], ['y'], blocksize=2, mode=mode), {'x': d})
    _read_vs_reference(helper.make_node('SpaceToDepth', ['x'], ['y'], blocksize=2), {'x': X4[:, :, :6, :]})


@pytest.mark.parametrize('dtype', [np.float32, np.float64, np.float16])
def test_zeros_ones_and_eye_like_export(tmp_path, dtype):
    x = C.input_variable((3, 4), dynamic_axes=[], dtype=dtype, name='x')
    d = np.arange(12, dtype=dtype).reshape(3, 4)
    for z, want in [(C.zeros_like(x), np.zeros((3, 4))), (C.ones_like(x), np.ones((3, 4))),
                    (C.eye_like(x, sparse_output=False), np.eye(3, 4))]:
        path = str(tmp_path / 'like.onnx')
        z.save(path, format=C.ModelFormat.ONNX)
        onnx.checker.check_model(onnx.load(path), full_check=True)
        if dtype != np.float16 or z.owner.op_name == 'ConstantOp':
            got = ort.InferenceSession(path).run(None, {'x': d})[0]
            assert got.dtype == dtype
            np.testing.assert_array_equal(got, want)
        z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
        np.testing.assert_array_equal(np.asarray(z2.eval({z2.arguments[0]: d})).reshape(3, 4), want)


def test_ones_like_over_the_batch_axis(tmp_path):
    x = C.input_variable(5, name='x')
    z = C.ones_like(x) * 2.5
    d = np.random.RandomState(23).rand(3, 5).astype(np.float32)
    _export_to_runtime(tmp_path, z, {x: d})


def test_eye_like_sparse_output_is_refused(tmp_path):
    x = C.input_variable((3, 3), dynamic_axes=[], name='x')
    with pytest.raises(ValueError, match='sparse'):
        C.eye_like(x).save(str(tmp_path / 'e.onnx'), format=C.ModelFormat.ONNX)


@pytest.mark.parametrize('opset', [9, 17])
@pytest.mark.parametrize('axis', [-1, 0])
def test_top_k_exports_values_and_indices(tmp_path, axis, opset):
    x = C.input_variable((4, 6), name='x')
    z = C.top_k(x, 3, axis=axis)
    d = np.random.RandomState(24).rand(2, 4, 6).astype(np.float32)
    path = str(tmp_path / 't.onnx')
    z.save(path, format=C.ModelFormat.ONNX, opset=opset)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    values, indices = ort.InferenceSession(path).run(None, {'x': d})
    a = 1 + (axis % 2)
    want_idx = np.flip(np.argsort(d, axis=a, kind='stable'), axis=a).take(range(3), axis=a)
    np.testing.assert_allclose(values, np.take_along_axis(d, want_idx, axis=a), rtol=1e-6)
    assert indices.dtype == np.float32
    np.testing.assert_array_equal(indices, want_idx)
    if opset < 10:
        return  # the reader takes TopK from opset 10 (K as an input)
    z2 = C.Function.load(path, format=C.ModelFormat.ONNX)
    got = z2.eval({z2.arguments[0]: d[:1]})
    got = [np.asarray(got[o]) for o in z2.outputs]
    np.testing.assert_allclose(got[0].reshape(values[:1].shape), values[:1], rtol=1e-6)
    np.testing.assert_array_equal(got[1].reshape(indices[:1].shape), indices[:1])


# ------------------------------------------------------ dilated pooling, PRelu slopes

@pytest.mark.parametrize('node', [
    helper.make_node('MaxPool', ['x'], ['y'], kernel_shape=[2, 2], dilations=[2, 3]),
    helper.make_node('MaxPool', ['x'], ['y'], kernel_shape=[3, 2], strides=[2, 1], dilations=[2, 2], pads=[2, 1, 1, 1]),
    helper.make_node('MaxPool', ['x'], ['y'], kernel_shape=[2, 2], strides=[2, 2], dilations=[2, 1], ceil_mode=1),
    helper.make_node('AveragePool', ['x'], ['y'], kernel_shape=[2, 2], strides=[1, 2], dilations=[3, 2], pads=[1, 1, 1, 0]),
    helper.make_node('AveragePool', ['x'], ['y'], kernel_shape=[2, 3], dilations=[2, 2], pads=[1, 2, 1, 2],
                     count_include_pad=1),
    helper.make_node('AveragePool', ['x'], ['y'], kernel_shape=[2, 2], strides=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1],
                     ceil_mode=1),
    # ceil_mode without dilations where ONNX drops the last window (it would start in the padding)
    helper.make_node('MaxPool', ['x'], ['y'], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
    helper.make_node('LpPool', ['x'], ['y'], kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 0, 1, 1]),
], ids=lambda n: n.op_type + '_' + '_'.join(f'{a.name}' for a in n.attribute))
def test_reader_pooling_with_dilations_is_composed_exactly(node):
    _read_vs_reference(node, {'x': X4}, opset=19, runtime=True)


def _prelu_model(x_shape, slope, opset):
    graph = helper.make_graph([helper.make_node('PRelu', ['x', 's'], ['y'])], 'g',
                              [helper.make_tensor_value_info('x', TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)],
                              [onnx.numpy_helper.from_array(slope, 's')])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)]).SerializeToString()


@pytest.mark.parametrize('rank', [3, 4, 5])
def test_reader_prelu_per_channel_slope_before_opset_7(rank):
    """Before opset 7 a 1-D slope of size C weighs axis 1 (PyTorch's exports of nn.PReLU(C))."""
    x = (R.rand(*(2, 3, 4, 5, 2)[:rank]).astype(np.float32) - 0.5)
    slope = np.array([0.1, -0.5, 2.0], np.float32)
    z = C.load_model(_prelu_model(x.shape, slope, 6), format=C.ModelFormat.ONNX)
    s = slope.reshape((3,) + (1,) * (rank - 2))
    np.testing.assert_allclose(np.asarray(z.eval({z.arguments[0]: x})).reshape(x.shape), np.where(x < 0, s * x, x),
                               rtol=1e-6)


@pytest.mark.parametrize('slope_shape', [(1, 4, 1, 1), (7, 1), (6,), (1,)])
def test_reader_prelu_slope_broadcasts_to_x(slope_shape):
    slope = R.rand(*slope_shape).astype(np.float32) - 0.5
    z = C.load_model(_prelu_model(X4.shape, slope, 17), format=C.ModelFormat.ONNX)
    x = X4 - 0.5
    np.testing.assert_allclose(np.asarray(z.eval({z.arguments[0]: x})).reshape(x.shape), np.where(x < 0, slope * x, x),
                               rtol=1e-6)


def test_reader_prelu_slope_that_does_not_broadcast_is_refused():
    with pytest.raises(ValueError, match='does not broadcast'):
        C.load_model(_prelu_model(X4.shape, np.ones((5, 1), np.float32), 17), format=C.ModelFormat.ONNX)


@pytest.mark.parametrize('opset', [7, 9])
@pytest.mark.parametrize('axis', [-1, 1])
def test_reader_top_k_with_k_as_attribute_before_opset_10(opset, axis):
    x = R.permutation(2 * 5 * 4).reshape(2, 5, 4).astype(np.float32)  # distinct values: one order
    node = helper.make_node('TopK', ['x'], ['v', 'i'], k=3, axis=axis)
    graph = helper.make_graph([node], 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info('v', TensorProto.FLOAT, None),
                               helper.make_tensor_value_info('i', TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)]).SerializeToString()
    want_v, want_i = ort.InferenceSession(model).run(None, {'x': x})
    z = C.load_model(model, format=C.ModelFormat.ONNX)
    got = z.eval({z.arguments[0]: x})
    got = [np.asarray(got[o]) for o in z.outputs]
    np.testing.assert_array_equal(got[0].reshape(want_v.shape), want_v)
    np.testing.assert_array_equal(got[1].reshape(want_i.shape), want_i)


@pytest.mark.parametrize('pad', [False, True])
def test_sequential_convolution_over_samples_of_shape_one_exports(tmp_path, pad):
    """A 1-D sequential filter over items of shape (1,) windows the sequence after the item's axis,
    as CNTK's layer did (its result items keep the shape (1,)); ONNX Runtime runs the model written."""
    from cntk.layers import Convolution
    w = np.array([4., 2., 1.], np.float32)
    z = Convolution(3, init=w, sequential=True, pad=pad, reduction_rank=0, bias=False)(C.sequence.input_variable((1,)))
    seq = np.array([2., 6., 4., 8., 6.], np.float32)
    got = np.asarray(z.eval({z.arguments[0]: [seq.reshape(5, 1)]})[0])
    # correlation with the step at the window's centre; zeros beyond the ends where padded
    want = np.correlate(np.pad(seq, 1) if pad else seq, w, 'valid')
    assert got.shape == (len(want), 1)
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-6)
    path = str(tmp_path / 'c.onnx')
    z.save(path, format=C.ModelFormat.ONNX)
    sess = ort.InferenceSession(path)
    ran = sess.run(None, {sess.get_inputs()[0].name: seq.reshape(5, 1, 1)})[0]  # [Sequence, batch, 1]
    np.testing.assert_allclose(np.asarray(ran).reshape(-1), want, rtol=1e-6)
