"""crop_automatic and crop_automatic_with_ancestors through convolutions, transposed
convolutions, pooling and unpooling: the offsets come from each op's spatial transform
(CNTK's ComputeFilterTransform: a window position o is centred on input pixel
stride * o + (kernel - 1) // 2 - lower_pad)."""
import numpy as np
import pytest

import cntk as C
from op_harness import check_forward, gradcheck, f64_input


def offset(f):
    return f.root_function.attributes['offset']


def delta_kernel(cout, cin, kh, kw, at=None):
    """A kernel whose output map c copies input map c at tap `at` (default: the window's
    centre tap (k - 1) // 2, the pixel CNTK's transform maps a window position to)."""
    at = at or ((kh - 1) // 2, (kw - 1) // 2)
    w = np.zeros((cout, cin, kh, kw))
    for c in range(min(cout, cin)):
        w[c, c, at[0], at[1]] = 1.0
    return C.constant(w)


def test_fcn_crop_after_conv_pool_deconv():
    # image (3, 20, 22) -> conv (5, 3), no padding: (16, 20), pixel (y, x) centred on (y + 2, x + 1)
    # -> max pool 2x2 stride 2: (8, 10), position p covers 2p, 2p + 1 (centre tap 0)
    # -> transposed conv (8, 4) stride 2, no padding: (22, 22); output pixel 2p + (k - 1) // 2
    #    is the centre of input p: dy = 2p + 3, dx = 2p + 1
    # so image row y sits at row y + 1 of d, column x at column x: offsets (x 0, y 1)
    image = f64_input((3, 20, 22))
    rng = np.random.RandomState(5)
    w = C.parameter(init=rng.standard_normal((4, 3, 5, 3)) * 0.2, dtype=np.float64)
    wt = C.parameter(init=rng.standard_normal((4, 2, 8, 4)) * 0.2, dtype=np.float64)
    c = C.convolution(w, image, auto_padding=[False])
    p = C.pooling(C.relu(c), C.MAX_POOLING, (2, 2), strides=(2, 2))
    d = C.convolution_transpose(wt, p, strides=(2, 2), auto_padding=[False])
    assert c.shape == (4, 16, 20) and p.shape == (4, 8, 10) and d.shape == (2, 22, 22)
    f = C.crop_automatic(d, image)
    assert offset(f) == [0, 1]
    assert f.shape == (2, 20, 22)
    x = rng.standard_normal((2, 3, 20, 22))
    check_forward(f, {image: x}, d.eval({image: x})[..., 1:21, 0:22], rtol=0, atol=0)
    gradcheck(f, {image: x}, wrt=[image, wt])
    # the other way round: the label image cropped to the network's output
    label = f64_input((1, 20, 22))
    g = C.crop_automatic_with_ancestors(label, C.crop_manual(d, f64_input((1, 18, 20)), 1, 2), label, image)
    # crop_manual at (1, 2) of d: d column x + 1 = image column x + 1, d row y + 2 = image row y + 1
    assert offset(g) == [1, 1]


@pytest.mark.parametrize('kernel,strides,kwargs,want', [
    ((3, 3), (1, 1), dict(auto_padding=[False]), [1, 1]),                       # valid: starts at the centre
    ((5, 3), (1, 1), dict(auto_padding=[False]), [1, 2]),
    ((3, 3), (1, 1), dict(auto_padding=[False, True, True]), [0, 0]),           # same size
    ((4, 2), (1, 1), dict(auto_padding=[False, True, True]), [0, 0]),           # even kernels pad one more at the end
    ((3, 5), (1, 1), dict(auto_padding=[False, False, True]), [0, 1]),          # padded along x only
    ((3, 3), (1, 1), dict(auto_padding=[False], lower_pad=(0, 1, 0), upper_pad=(0, 1, 0)), [1, 0]),
])
def test_convolution_transform_matches_the_window_centres(kernel, strides, kwargs, want):
    # a kernel copying its centre tap makes the output the input seen through the transform:
    # the input cropped at the found offsets must equal it
    x = f64_input((2, 9, 10))
    y = C.convolution(delta_kernel(2, 2, *kernel), x, strides=strides, **kwargs)
    f = C.crop_automatic(x, y)
    assert offset(f) == want
    v = np.random.RandomState(6).standard_normal((2, 2, 9, 10))
    np.testing.assert_array_equal(f.eval({x: v}), y.eval({x: v}))
    gradcheck(f, {x: v}, wrt=[x])


def test_strided_convolution_and_its_transpose_compose_to_the_identity():
    # stride 2 with auto padding on 16: 8 positions centred on 2o (lower pad 1 for kernel 3);
    # the transpose with the same geometry puts input o back at 2o: crop offsets 0, and the
    # round trip of copying kernels returns the even pixels in place
    x = f64_input((1, 16, 16))
    down = C.convolution(delta_kernel(1, 1, 3, 3), x, strides=(2, 2), auto_padding=[False, True, True])
    up = C.convolution_transpose(delta_kernel(1, 1, 3, 3), down, strides=(2, 2), auto_padding=[False, True, True],
                                 output_shape=(16, 16))
    assert down.shape == (1, 8, 8) and up.shape == (1, 16, 16)
    f = C.crop_automatic(up, x)
    assert offset(f) == [0, 0]
    v = np.random.RandomState(7).standard_normal((1, 1, 16, 16))
    want = np.zeros_like(v)
    want[..., ::2, ::2] = v[..., ::2, ::2]
    np.testing.assert_array_equal(f.eval({x: v}), want)
    # the strided output alone is at scale 1/2: no crop can match it to the input
    with pytest.raises(ValueError, match='scale'):
        C.crop_automatic(x, down)


def test_pooling_and_unpooling_transforms():
    x = f64_input((2, 9, 9))
    p3 = C.pooling(x, C.AVG_POOLING, (3, 3))              # no padding: centred on o + 1
    assert offset(C.crop_automatic(x, p3)) == [1, 1]
    pa = C.pooling(x, C.MAX_POOLING, (3, 1), auto_padding=[True])  # the y window only; padded: in place
    assert offset(C.crop_automatic(x, pa)) == [0, 0]
    p2 = C.pooling(x, C.MAX_POOLING, (3, 3), strides=(1, 1))
    u = C.unpooling(p2, x, C.MAX_UNPOOLING, (3, 3), strides=(1, 1))  # back onto x's grid
    r1 = f64_input((2, 6, 5))
    t = C.crop_manual(u, r1, 2, 1)
    f = C.crop_automatic(x, t)
    assert offset(f) == [2, 1]
    v = np.random.RandomState(8).standard_normal((2, 2, 9, 9))
    args = {x: v, r1: np.zeros((2, 2, 6, 5))}
    check_forward(f, args, v[..., 1:7, 2:7], rtol=0, atol=0)
    gradcheck(f, args, wrt=[x])
    # stride 2: pooled position p covers 2p, 2p + 1 and unpools back onto them
    x8 = f64_input((1, 8, 8))
    u2 = C.unpooling(C.pooling(x8, C.MAX_POOLING, (2, 2), strides=(2, 2)), x8, C.MAX_UNPOOLING, (2, 2), strides=(2, 2))
    assert offset(C.crop_automatic(u2, x8)) == [0, 0]
    assert offset(C.crop_automatic(x8, C.crop_manual(u2, f64_input((1, 4, 5)), 3, 1))) == [3, 1]
    # average pooling of a windowed image, cropped against it (NumPy reference)
    r2 = f64_input((2, 5, 4))
    g = C.crop_automatic(p3, C.crop_manual(x, r2, 3, 2))
    # x column 3 is p3 column 2, x row 2 is p3 row 1
    assert offset(g) == [2, 1]
    ref = np.zeros((2, 2, 7, 7))
    for i in range(3):
        for j in range(3):
            ref += v[:, :, i:i + 7, j:j + 7] / 9.0
    args = {x: v, r2: np.zeros((2, 2, 5, 4))}
    check_forward(g, args, ref[..., 1:6, 2:6])
    gradcheck(g, args, wrt=[x])


def test_crop_transform_errors():
    x = C.input_variable((2, 8))   # one spatial axis for the convolution
    y = C.convolution(C.constant(np.ones((2, 2, 3))), x, auto_padding=[False])
    with pytest.raises(ValueError, match='spatial'):
        C.crop_automatic(x, y)
    # an even window is centred on its tap (k - 1) // 2, as in CNTK
    x2 = C.input_variable((1, 8, 8))
    y2 = C.convolution(C.constant(np.ones((1, 1, 2, 2))), x2, auto_padding=[False])
    assert offset(C.crop_automatic(x2, y2)) == [0, 0]
