"""The ONNX reader's ImageDecoder beyond ONNX's own cases: every decoded container against Pillow (grey and
alpha images, top-down BMP, the Grayscale conversion of colour PNGs), known bytes given as a Constant node,
and the refusals (bytes fed at run time, formats without a decoder, corrupt data) naming the node."""
import io

import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip('onnx')
PIL = pytest.importorskip('PIL.Image')
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _image(mode, size=(13, 7), seed=0):
    """A random image of the given Pillow mode, width 13 (odd: BMP rows are padded) by height 7."""
    rng = np.random.RandomState(seed)
    channels = {'L': 1, 'RGB': 3, 'RGBA': 4}[mode]
    a = rng.randint(0, 256, (size[1], size[0], channels)).astype(np.uint8)
    return PIL.fromarray(a[:, :, 0] if channels == 1 else a, mode)


def _encode(img, fmt, **kw):
    with io.BytesIO() as f:
        img.save(f, format=fmt, **kw)
        return np.frombuffer(f.getvalue(), np.uint8)


def _model(data, pixel_format='RGB', as_constant_node=False):
    node = helper.make_node('ImageDecoder', ['data'], ['image'], name='decode', pixel_format=pixel_format)
    out = helper.make_tensor_value_info('image', TensorProto.UINT8, None)
    tensor = numpy_helper.from_array(data, 'data')
    if as_constant_node:
        nodes, inits = [helper.make_node('Constant', [], ['data'], value=tensor), node], []
    else:
        nodes, inits = [node], [tensor]
    graph = helper.make_graph(nodes, 'g', [], [out], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid('', 20)])


def _decode(data, pixel_format='RGB', **kw):
    z = C.load_model(_model(data, pixel_format, **kw).SerializeToString(), format=C.ModelFormat.ONNX)
    return np.asarray(z.eval())


def _pillow(data, pixel_format):
    img = PIL.open(io.BytesIO(data.tobytes()))
    if pixel_format == 'Grayscale':
        return np.array(img.convert('L'))[:, :, None]
    rgb = np.array(img.convert('RGB'))
    return rgb[:, :, ::-1] if pixel_format == 'BGR' else rgb


@pytest.mark.parametrize('fmt,mode,kw', [
    ('PNG', 'RGB', {}), ('PNG', 'L', {}), ('PNG', 'RGBA', {}),
    ('JPEG', 'RGB', {'quality': 90}), ('JPEG', 'L', {}),
    ('BMP', 'RGB', {}), ('BMP', 'RGBA', {}),
    ('PPM', 'RGB', {}), ('PPM', 'L', {}),
    ('TIFF', 'RGB', {}), ('TIFF', 'L', {}), ('TIFF', 'RGBA', {}),
])
@pytest.mark.parametrize('pixel_format', ['RGB', 'BGR', 'Grayscale'])
def test_decodes_as_pillow(fmt, mode, kw, pixel_format):
    data = _encode(_image(mode), fmt, **kw)
    got = _decode(data, pixel_format)
    want = _pillow(data, pixel_format)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_top_down_bmp():
    # A negative height stores the rows top first; Pillow writes bottom-up, so flip a file by hand.
    data = bytearray(_encode(_image('RGB'), 'BMP').tobytes())
    offset = int.from_bytes(data[10:14], 'little')
    height = int.from_bytes(data[22:26], 'little', signed=True)
    stride = (len(data) - offset) // height
    rows = [data[offset + i * stride: offset + (i + 1) * stride] for i in range(height)]
    data[22:26] = (-height).to_bytes(4, 'little', signed=True)
    data[offset:] = b''.join(reversed(rows))
    np.testing.assert_array_equal(_decode(np.frombuffer(bytes(data), np.uint8)), np.array(_image('RGB')))


def test_constant_node():
    data = _encode(_image('RGB'), 'PNG')
    np.testing.assert_array_equal(_decode(data, as_constant_node=True), np.array(_image('RGB')))


def test_bytes_fed_at_run_time_are_refused():
    node = helper.make_node('ImageDecoder', ['data'], ['image'], name='decode')
    graph = helper.make_graph([node], 'g', [helper.make_tensor_value_info('data', TensorProto.UINT8, [None])],
                              [helper.make_tensor_value_info('image', TensorProto.UINT8, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 20)])
    with pytest.raises(ValueError, match="node 'decode' \\(ImageDecoder\\).*known while reading"):
        C.load_model(model.SerializeToString(), format=C.ModelFormat.ONNX)


def test_webp_is_not_implemented():
    pytest.importorskip('PIL.WebPImagePlugin')
    data = _encode(_image('RGB'), 'WEBP')
    with pytest.raises(NotImplementedError, match="node 'decode' \\(ImageDecoder\\): WebP"):
        _decode(data)


@pytest.mark.parametrize('fmt', ['PNG', 'JPEG', 'BMP', 'PPM', 'TIFF'])
def test_truncated_data_names_the_node(fmt):
    data = _encode(_image('RGB'), fmt)
    with pytest.raises(ValueError, match="node 'decode' \\(ImageDecoder\\)"):
        _decode(data[:len(data) // 3])


def test_unsupported_layouts_name_the_node():
    # 16-bit samples (PNM maximum 65535) and compressed TIFF have no decoder here.
    with pytest.raises(ValueError, match="node 'decode'.*maximum value"):
        _decode(np.frombuffer(b'P6\n1 1\n65535\n' + b'\0' * 6, np.uint8))
    data = _encode(_image('RGB'), 'TIFF', compression='tiff_lzw')
    with pytest.raises(ValueError, match="node 'decode'.*uncompressed"):
        _decode(data)
