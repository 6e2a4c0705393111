"""Convolution and pooling: convolution, convolution_transpose, pooling, unpooling, roipooling.

Shapes are channel-first, as in CNTK's Python API: an operand (C, M1, ..., Mn), a kernel
(O, C/groups, m1, ..., mn). Per-axis arguments (strides, auto_padding, dilation, ...) may
be one value or a tuple aligned to the operand's trailing axes; CNTK's rule fills the rest.
"""
import numbers

from ..internal import sanitize_shape
from .. import _cntk
from ._prim import prim

__all__ = ['convolution', 'convolution_transpose', 'pooling', 'unpooling', 'roipooling',
           'MAX_POOLING', 'AVG_POOLING', 'MAX_UNPOOLING', 'PoolingType_Max', 'PoolingType_Average']

MAX_POOLING = 0
'''int: constant for max pooling (CNTK's PoolingType_Max)'''
AVG_POOLING = 1
'''int: constant for average pooling (CNTK's PoolingType_Average)'''
MAX_UNPOOLING = MAX_POOLING
'''int: constant for max unpooling'''
# CNTK's native names of the same constants (cntk.ops and cntk.cntk_py had both).
PoolingType_Max = MAX_POOLING
PoolingType_Average = AVG_POOLING


def _flags(value, what):
    """A bool or a sequence of bools -> a list of bools."""
    if isinstance(value, (bool, numbers.Integral)):
        return [bool(value)]
    if isinstance(value, (str, bytes)) or not hasattr(value, '__iter__'):
        raise TypeError("%s must be a bool or a sequence of bools, not %r" % (what, value))
    out = list(value)
    for v in out:
        if not isinstance(v, (bool, numbers.Integral)):
            raise TypeError("%s must be a bool or a sequence of bools, not %r" % (what, value))
    if not out:
        raise ValueError("%s must not be empty" % what)
    return [bool(v) for v in out]


def _ints(value, what, allow_empty=False):
    try:
        out = sanitize_shape(value)
    except TypeError:
        raise TypeError("%s must be an int or a tuple of ints, not %r" % (what, value))
    if not out and not allow_empty:
        raise ValueError("%s must not be empty" % what)
    return list(out)


def _count(value, what, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an integer, not %r" % (what, value))
    if value < minimum:
        raise ValueError("%s must be at least %d, got %d" % (what, minimum, value))
    return int(value)


def _pads(attrs, lower_pad, upper_pad):
    if lower_pad is not None:
        attrs['lowerPad'] = _ints(lower_pad, 'lower_pad')
    if upper_pad is not None:
        attrs['upperPad'] = _ints(upper_pad, 'upper_pad')


def convolution(convolution_map, operand, strides=(1,), sharing=[True], auto_padding=[True], sequential=False,
                dilation=(1,), reduction_rank=1, groups=1, max_temp_mem_size_in_samples=0, name='',
                lower_pad=None, upper_pad=None):
    """Convolution (cross-correlation, as CNTK computes it) of `operand` with `convolution_map`.

    `operand` is (C, M1, ..., Mn) ((M1, ..., Mn) with ``reduction_rank=0``); `convolution_map`
    is (O, C/groups, m1, ..., mn) ((O, m1, ..., mn) with ``reduction_rank=0``; (C, m1, ..., mn)
    gives one output map). The result is (O, M1', ..., Mn').

    Per-axis arguments align to the operand's trailing axes; a shorter tuple repeats its
    first value for the axes before it. `auto_padding` pads each axis so that the output
    has ceil(M / stride) positions, centring the kernel (an even kernel pads one more at
    the end); without it the kernel stays inside the input, or inside the explicit
    `lower_pad`/`upper_pad` (an OpenCNTK keyword, as in CNTK's C++ API). The channel axis
    is always reduced whole: its auto_padding and stride entries are ignored.
    `groups` splits the channels (groups=C with O=C*k is a depthwise convolution).
    ``sharing=False`` along an axis with more than one output position is not supported
    (NotImplementedError; CNTK 2.7 has no weight layout for it either).
    `max_temp_mem_size_in_samples` is accepted and has no effect (oneDNN manages its memory).

    With ``sequential=True`` the operand's sequence axis is convolved too, as its slowest
    spatial axis (the kernel's first spatial axis runs along it; per-axis arguments align
    to (C, sequence, M1, ..., Mn)). As in CNTK 2.7, each sequence is zero-padded to the
    longest of the minibatch, convolved, and cut back to its own output length: ceil(L /
    stride) steps with auto padding, floor((L + lower + upper - dilated kernel) / stride) + 1
    without. The result is a sequence on a new sequence axis; sequences never see each
    other's steps.
    """
    _count(max_temp_mem_size_in_samples, 'max_temp_mem_size_in_samples', 0)
    attrs = {'strides': _ints(strides, 'strides'), 'sharing': _flags(sharing, 'sharing'),
             'autoPadding': _flags(auto_padding, 'auto_padding'), 'dilation': _ints(dilation, 'dilation'),
             'reductionRank': _count(reduction_rank, 'reduction_rank', 0), 'groups': _count(groups, 'groups', 1),
             'maxTempMemSizeInSamples': int(max_temp_mem_size_in_samples), 'transpose': False, 'sequential': False}
    _pads(attrs, lower_pad, upper_pad)
    if not isinstance(sequential, (bool, numbers.Integral)):
        raise TypeError("convolution: sequential must be a bool, not %r" % (sequential,))
    if sequential:
        return _sequential_convolution(convolution_map, operand, attrs, name)
    return prim('Convolution', [convolution_map, operand], attrs, name)


def _sequential_convolution(convolution_map, operand, attrs, name):
    """CNTK 2.7's construction, built in C++ (cntk::ops::sequential_convolution): the
    sequences unpacked (zero-padded) with the sequence axis as the first spatial one,
    convolved, and packed back into sequences of the lengths the convolution gives."""
    from ..internal import sanitize_inputs
    w, x = sanitize_inputs(convolution_map, operand)
    return _cntk.sequential_convolution(w, x, attrs, name or '')


def convolution_transpose(convolution_map, operand, strides=(1,), sharing=[True], auto_padding=[True],
                          output_shape=None, dilation=(1,), reduction_rank=1, max_temp_mem_size_in_samples=0,
                          name='', lower_pad=None, upper_pad=None):
    """Transposed convolution ("deconvolution"): the gradient of `convolution` with respect to
    its operand, used as an op. `operand` is (C, M1, ..., Mn); `convolution_map` is
    (C, O, m1, ..., mn); the result is (O, N1, ..., Nn).

    Without `output_shape`, N = (M - 1) * stride + 1 with auto padding and
    (M - 1) * stride + dilated kernel - lower_pad - upper_pad without it. `output_shape`
    (the spatial dimensions, or the channels and them) picks another size that convolves
    back to M, e.g. an even size after a stride of 2.
    """
    _count(max_temp_mem_size_in_samples, 'max_temp_mem_size_in_samples', 0)
    attrs = {'strides': _ints(strides, 'strides'), 'sharing': _flags(sharing, 'sharing'),
             'autoPadding': _flags(auto_padding, 'auto_padding'), 'dilation': _ints(dilation, 'dilation'),
             'reductionRank': _count(reduction_rank, 'reduction_rank', 0), 'groups': 1,
             'maxTempMemSizeInSamples': int(max_temp_mem_size_in_samples), 'transpose': True,
             'outputShape': _ints(output_shape, 'output_shape', allow_empty=True) or [0]}
    _pads(attrs, lower_pad, upper_pad)
    return prim('Convolution', [convolution_map, operand], attrs, name)


def _pool_type(pooling_type, what):
    if pooling_type not in (MAX_POOLING, AVG_POOLING) or isinstance(pooling_type, bool):
        raise ValueError("%s must be MAX_POOLING or AVG_POOLING, not %r" % (what, pooling_type))
    return int(pooling_type)


def pooling(operand, pooling_type, pooling_window_shape, strides=(1,), auto_padding=[False], ceil_out_dim=False,
            include_pad=False, name=''):
    """Max or average pooling of `operand` over windows of `pooling_window_shape`, which
    aligns to the operand's trailing axes (a (2, 2) window pools the H and W of (C, H, W)).

    `strides` and `auto_padding` align the same way. `ceil_out_dim` rounds the number of
    output positions up (the last window may hang over the end). Average pooling divides
    by the number of input values in each window, or with `include_pad` by the number of
    window positions inside the padded input. Padding never wins a max.
    """
    attrs = {'poolingType': _pool_type(pooling_type, 'pooling_type'),
             'poolingWindowShape': _ints(pooling_window_shape, 'pooling_window_shape'),
             'strides': _ints(strides, 'strides'), 'autoPadding': _flags(auto_padding, 'auto_padding'),
             'ceilOutDim': bool(ceil_out_dim), 'includePad': bool(include_pad)}
    return prim('Pooling', [operand], attrs, name)


def unpooling(operand, pooling_input, unpooling_type, unpooling_window_shape, strides=(1,), auto_padding=[False],
              name=''):
    """Max unpooling: mirrors ``pooling(pooling_input, MAX_POOLING, unpooling_window_shape,
    strides, auto_padding)``. The result has pooling_input's shape; each value of `operand`
    goes to the position of the first maximum of its window in `pooling_input`, the rest is 0.
    """
    if unpooling_type != MAX_UNPOOLING or isinstance(unpooling_type, bool):
        raise ValueError("unpooling: only MAX_UNPOOLING is supported, not %r" % (unpooling_type,))
    attrs = {'poolingType': MAX_UNPOOLING,
             'unpoolingWindowShape': _ints(unpooling_window_shape, 'unpooling_window_shape'),
             'strides': _ints(strides, 'strides'), 'autoPadding': _flags(auto_padding, 'auto_padding')}
    return prim('Unpooling', [operand, pooling_input], attrs, name)


def roipooling(operand, rois, pooling_type, roi_output_shape, spatial_scale, name=''):
    """Region-of-interest max pooling (Fast R-CNN). `operand` is a feature map (C, H, W);
    `rois` is (R, 4), each ROI (x1, y1, x2, y2) in the original image's coordinates, which
    `spatial_scale` maps onto the feature map. The result is (R, C, *roi_output_shape),
    roi_output_shape being (height, width). Only MAX_POOLING is supported, as in CNTK.
    """
    if pooling_type != MAX_POOLING or isinstance(pooling_type, bool):
        raise ValueError('roipooling: only MAX_POOLING is supported, not %r' % (pooling_type,))
    shape = _ints(roi_output_shape, 'roi_output_shape')
    if len(shape) != 2:
        raise ValueError("roipooling: roi_output_shape must be (height, width), got %r" % (roi_output_shape,))
    if isinstance(spatial_scale, bool) or not isinstance(spatial_scale, numbers.Real):
        raise TypeError("roipooling: spatial_scale must be a number, not %r" % (spatial_scale,))
    attrs = {'poolingType': MAX_POOLING, 'roiOutputShape': shape, 'spatialScale': float(spatial_scale)}
    return prim('ROIPooling', [operand, rois], attrs, name)
