"""Reader rules of ONNX's image ops where ONNX's backend node cases do not reach: GridSample
over every mode, padding mode and corner alignment at random grids reaching past the borders
(2-D and 3-D), AffineGrid feeding GridSample, ConvTranspose with groups, MaxPool's Indices
with overlapping and padded windows, MaxUnpool and antialiased Resize, against ONNX's
reference evaluator; and that the imported ops train: gradients reach their initializers
(read as parameters) and equal central differences of the imported model itself."""
import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_import_checks import check_gradients  # noqa: E402

R = np.random.RandomState(11)


def _model(nodes, inputs, outputs, inits=None, opset=22, out_type=TensorProto.UNDEFINED):
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
    graph = helper.make_graph(
        nodes, 'g', [helper.make_tensor_value_info(n, types[v.dtype], v.shape) for n, v in inputs.items()],
        [helper.make_tensor_value_info(o, out_type, None) for o in outputs],
        [numpy_helper.from_array(v, n) for n, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])


def _load(model):
    return C.load_model(model.SerializeToString(), format=C.ModelFormat.ONNX)


def _check_against_reference(model, inputs, rtol=1e-4, atol=1e-5, runtime=False):
    """The imported model's outputs against ONNX's reference evaluator (or ONNX Runtime, where
    the evaluator's implementation is wrong: its grouped ConvTranspose takes C / group output
    channels per group)."""
    if runtime:
        ort = pytest.importorskip('onnxruntime')
        want = ort.InferenceSession(model.SerializeToString(), providers=['CPUExecutionProvider']).run(None, inputs)
    else:
        want = ReferenceEvaluator(model).run(None, inputs)
    z = _load(model)
    got = z.eval({a: inputs[a.name] for a in z.arguments}, as_numpy=True)
    got = [np.asarray(got[o]) for o in z.outputs] if isinstance(got, dict) else [np.asarray(got)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == np.asarray(w).shape, (g.shape, np.asarray(w).shape)
        np.testing.assert_allclose(g, np.asarray(w, dtype=np.float64), rtol=rtol, atol=atol)


def _check_gradients(model, inputs, eps=1e-2, samples=6, rtol=3e-2, atol=3e-3):
    check_gradients(model, inputs, eps=eps, samples=samples, rtol=rtol, atol=atol)


# ------------------------------------------------------------------ GridSample, AffineGrid

@pytest.mark.parametrize('align', [0, 1])
@pytest.mark.parametrize('padding', ['zeros', 'border', 'reflection'])
@pytest.mark.parametrize('mode', ['nearest', 'linear', 'cubic'])
def test_grid_sample_matches_the_reference_past_the_borders(mode, padding, align):
    x = R.randn(2, 3, 4, 5).astype(np.float32)
    grid = R.uniform(-2.5, 2.5, size=(2, 3, 6, 2)).astype(np.float32)
    node = helper.make_node('GridSample', ['x', 'grid'], ['y'], mode=mode, padding_mode=padding,
                            align_corners=align)
    _check_against_reference(_model([node], {'x': x, 'grid': grid}, ['y']), {'x': x, 'grid': grid})


@pytest.mark.parametrize('padding', ['zeros', 'reflection'])
@pytest.mark.parametrize('mode', ['nearest', 'linear'])
def test_volumetric_grid_sample_matches_the_reference(mode, padding):
    x = R.randn(1, 2, 3, 4, 5).astype(np.float32)
    grid = R.uniform(-1.5, 1.5, size=(1, 2, 3, 2, 3)).astype(np.float32)
    node = helper.make_node('GridSample', ['x', 'grid'], ['y'], mode=mode, padding_mode=padding)
    _check_against_reference(_model([node], {'x': x, 'grid': grid}, ['y']), {'x': x, 'grid': grid})


def test_an_opset_16_grid_sample_reads_bilinear_and_bicubic_as_linear_and_cubic():
    x = R.randn(1, 2, 4, 4).astype(np.float32)
    grid = R.uniform(-1, 1, size=(1, 3, 3, 2)).astype(np.float32)
    feeds = {'x': x, 'grid': grid}
    for old, new in [('bilinear', 'linear'), ('bicubic', 'cubic')]:
        want = ReferenceEvaluator(_model([helper.make_node('GridSample', ['x', 'grid'], ['y'], mode=new)], feeds,
                                         ['y'])).run(None, feeds)[0]
        z = _load(_model([helper.make_node('GridSample', ['x', 'grid'], ['y'], mode=old)], feeds, ['y'], opset=16))
        got = np.asarray(z.eval({a: feeds[a.name] for a in z.arguments}, as_numpy=True))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('mode', ['linear', 'cubic'])
def test_an_affine_grid_sampling_an_image_trains_theta_and_the_image(mode):
    """Both the image and the affine transform are initializers: the gradient reaches the
    image through the interpolation weights and theta through the grid's coordinates (whose
    interpolation has kinks at the pixels: small steps for the differences)."""
    r = np.random.RandomState(11)
    theta = (np.array([[[0.9, 0.2, 0.1], [-0.15, 1.1, -0.05]]]) + r.randn(2, 2, 3) * 0.05).astype(np.float32)
    image = r.randn(2, 2, 5, 6).astype(np.float32)
    size = np.array([2, 2, 4, 3], np.int64)
    nodes = [helper.make_node('Constant', [], ['size'], value=numpy_helper.from_array(size)),
             helper.make_node('AffineGrid', ['theta', 'size'], ['grid'], align_corners=0),
             helper.make_node('GridSample', ['image', 'grid'], ['y'], mode=mode, padding_mode='border')]
    model = _model(nodes, {}, ['y'], {'theta': theta, 'image': image})
    _check_against_reference(model, {})
    _check_gradients(model, {}, eps=1e-3, rtol=3e-2, atol=1e-2)


@pytest.mark.parametrize('align', [0, 1])
def test_a_volumetric_affine_grid_matches_the_reference(align):
    theta = R.randn(2, 3, 4).astype(np.float32)
    size = np.array([2, 1, 3, 2, 4], np.int64)
    nodes = [helper.make_node('Constant', [], ['size'], value=numpy_helper.from_array(size)),
             helper.make_node('AffineGrid', ['theta', 'size'], ['grid'], align_corners=align)]
    _check_against_reference(_model(nodes, {'theta': theta}, ['grid']), {'theta': theta})


# ------------------------------------------------------------------ ConvTranspose with groups

@pytest.mark.parametrize('auto_pad', ['NOTSET', 'SAME_UPPER', 'SAME_LOWER'])
def test_a_grouped_conv_transpose_matches_the_reference_and_trains(auto_pad):
    x = R.randn(2, 4, 3, 4).astype(np.float32)
    w = (R.randn(4, 3, 3, 2) * 0.3).astype(np.float32)  # [C, M / group, kH, kW]: M = 6
    b = R.randn(6).astype(np.float32)
    attrs = dict(group=2, strides=[2, 1], auto_pad=auto_pad)
    if auto_pad == 'NOTSET':
        attrs.update(pads=[1, 0, 0, 1], output_padding=[1, 0])
    node = helper.make_node('ConvTranspose', ['x', 'w', 'b'], ['y'], **attrs)
    model = _model([node], {'x': x}, ['y'], {'w': w, 'b': b}, out_type=TensorProto.FLOAT)
    _check_against_reference(model, {'x': x}, runtime=True)
    _check_gradients(model, {'x': x})


def test_a_conv_transpose_whose_channels_do_not_split_into_its_groups_is_refused():
    x = R.randn(1, 3, 3, 3).astype(np.float32)
    w = R.randn(3, 1, 2, 2).astype(np.float32)
    node = helper.make_node('ConvTranspose', ['x', 'w'], ['y'], group=2)
    with pytest.raises(ValueError, match='groups'):
        _load(_model([node], {'x': x}, ['y'], {'w': w}))


# ------------------------------------------------------------------ MaxPool's Indices, MaxUnpool

@pytest.mark.parametrize('storage_order', [0, 1])
def test_max_pool_indices_of_overlapping_padded_windows_match_the_reference(storage_order):
    x = R.randn(2, 3, 5, 6).astype(np.float32)
    node = helper.make_node('MaxPool', ['x'], ['y', 'i'], kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1],
                            storage_order=storage_order)
    _check_against_reference(_model([node], {'x': x}, ['y', 'i']), {'x': x})


def test_max_unpool_of_max_pool_indices_matches_the_reference_and_trains():
    x = R.randn(2, 2, 4, 6).astype(np.float32)
    nodes = [helper.make_node('MaxPool', ['x'], ['p', 'i'], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node('MaxUnpool', ['p', 'i'], ['y'], kernel_shape=[2, 2], strides=[2, 2])]
    _check_against_reference(_model(nodes, {'x': x}, ['y']), {'x': x})
    _check_gradients(_model(nodes, {}, ['y'], {'x': x}), {})


# ------------------------------------------------------------------ Resize with antialias

@pytest.mark.parametrize('mode', ['linear', 'cubic'])
def test_antialiased_downsampling_matches_the_reference_and_trains(mode):
    x = R.randn(1, 2, 9, 7).astype(np.float32)
    scales = np.array([1, 1, 0.4, 0.6], np.float32)
    nodes = [helper.make_node('Constant', [], ['scales'], value=numpy_helper.from_array(scales)),
             helper.make_node('Resize', ['x', '', 'scales'], ['y'], mode=mode, antialias=1)]
    _check_against_reference(_model(nodes, {'x': x}, ['y']), {'x': x})
    _check_gradients(_model(nodes, {}, ['y'], {'x': x}), {})


# ------------------------------------------------------------------ RoiAlign

def _rois(r, n=3):
    """Regions partly outside a 6 x 7 image (corners drawn in [-2, 8]), in random images of 2."""
    a, b = r.uniform(-2, 8, size=(n, 2)), r.uniform(-2, 8, size=(n, 2))
    rois = np.concatenate([np.minimum(a, b), np.maximum(a, b)], axis=1).astype(np.float32)
    return rois, r.randint(0, 2, size=n).astype(np.int64)


@pytest.mark.parametrize('transform', ['half_pixel', 'output_half_pixel'])
@pytest.mark.parametrize('mode', ['avg', 'max'])
def test_roi_align_of_regions_reaching_outside_matches_the_reference(mode, transform):
    r = np.random.RandomState(3)
    x = r.randn(2, 3, 6, 7).astype(np.float32)
    rois, idx = _rois(r)
    node = helper.make_node('RoiAlign', ['x', 'rois', 'idx'], ['y'], mode=mode, output_height=3, output_width=2,
                            sampling_ratio=2, spatial_scale=0.9, coordinate_transformation_mode=transform)
    feeds = {'x': x, 'rois': rois, 'idx': idx}
    _check_against_reference(_model([node], feeds, ['y']), feeds)


def test_roi_align_trains_the_image_and_the_regions():
    r = np.random.RandomState(4)
    x = r.randn(2, 2, 6, 7).astype(np.float32)
    rois, idx = _rois(r, 2)
    node = helper.make_node('RoiAlign', ['x', 'rois', 'idx'], ['y'], output_height=2, output_width=3,
                            sampling_ratio=2)
    _check_gradients(_model([node], {'idx': idx}, ['y'], {'x': x, 'rois': rois}), {'idx': idx}, eps=1e-3,
                     atol=1e-2)


def test_roi_align_with_an_adaptive_sample_count_is_refused():
    node = helper.make_node('RoiAlign', ['x', 'rois', 'idx'], ['y'], sampling_ratio=0)
    feeds = {'x': np.zeros((1, 1, 4, 4), np.float32), 'rois': np.zeros((1, 4), np.float32),
             'idx': np.zeros(1, np.int64)}
    with pytest.raises(ValueError, match='sampling_ratio'):
        _load(_model([node], feeds, ['y']))


# ------------------------------------------------------------------ DeformConv

def _deform_conv(r, group=1, offset_group=1, mask=True, bias=True):
    x = r.randn(2, 4, 5, 6).astype(np.float32)
    w = (r.randn(6, 4 // group, 2, 3) * 0.3).astype(np.float32)
    attrs = dict(group=group, offset_group=offset_group, strides=[2, 1], pads=[1, 1, 0, 1], dilations=[1, 2])
    oh, ow = (5 + 1 - 2) // 2 + 1, (6 + 2 - 5) + 1
    inits = {'w': w, 'offset': (r.randn(2, offset_group * 2 * 6, oh, ow) * 1.5).astype(np.float32)}
    names = ['x', 'w', 'offset', '', '']
    if bias:
        inits['b'], names[3] = r.randn(6).astype(np.float32), 'b'
    if mask:
        inits['mask'], names[4] = r.rand(2, offset_group * 6, oh, ow).astype(np.float32), 'mask'
    while names[-1] == '':
        names.pop()
    return helper.make_node('DeformConv', names, ['y'], **attrs), x, inits


@pytest.mark.parametrize('group,offset_group', [(1, 1), (2, 1), (1, 2), (2, 4)])
def test_deform_conv_with_groups_offsets_past_the_borders_and_a_mask_matches_the_reference(group, offset_group):
    node, x, inits = _deform_conv(np.random.RandomState(7), group, offset_group)
    feeds = {'x': x, **inits}
    _check_against_reference(_model([node], feeds, ['y']), feeds)


def test_deform_conv_trains_its_kernel_offsets_mask_and_bias():
    """The offsets move the samples between pixels (kinks there: small steps)."""
    node, x, inits = _deform_conv(np.random.RandomState(8), group=2, offset_group=2)
    _check_gradients(_model([node], {'x': x}, ['y'], inits), {'x': x}, eps=1e-3, atol=1e-2)
