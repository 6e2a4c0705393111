"""Normalization and image ops: batch_normalization, local_response_normalization,
mean/variance normalizations, depth_to_space / space_to_depth, crops and image_scaler.

batch_normalization, local_response_normalization and the crops are catalogue
primitives (src/ops/norm.cpp); the rest are blocks over reshape, transpose and
elementwise ops, as CNTK builds them.
"""
import math
import numbers
import warnings

import numpy as np

from .. import _cntk
from ..internal import sanitize_inputs, as_variable
from ._prim import prim

__all__ = ['batch_normalization', 'local_response_normalization', 'mean_variance_normalization',
           'per_dim_mean_variance_normalize', 'depth_to_space', 'space_to_depth', 'crop_manual',
           'crop_automatic', 'crop_automatic_with_ancestors', 'image_scaler']


def _int_arg(op, value, what, minimum):
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, float)) or \
            not float(value).is_integer():
        raise ValueError("%s: %s must be an integer, not %r" % (op, what, value))
    value = int(value)
    if value < minimum:
        raise ValueError("%s: %s must be at least %d, got %d" % (op, what, minimum, value))
    return value


def _number(op, value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s: %s must be a number, not %r" % (op, what, value))
    return float(value)


def _block(op_name, body, operands, name):
    """Wraps body(*placeholders) as a block op `op_name` applied to `operands`."""
    from . import placeholder, as_block
    variables = sanitize_inputs(*operands)
    phs = [placeholder(shape=v.shape, dynamic_axes=v.dynamic_axes) for v in variables]
    return as_block(body(*phs), list(zip(phs, variables)), op_name, name)


def batch_normalization(operand, scale, bias, running_mean, running_inv_std, spatial,
                        normalization_time_constant=5000, blend_time_constant=0,
                        epsilon=0.00001, use_cudnn_engine=False, disable_regularization=False, name='',
                        running_count=None):
    """Normalizes each feature (each channel when `spatial`) over the minibatch, then
    applies `scale` and `bias`: ``y = scale * (x - mean) / sqrt(var + epsilon) + bias``.

    In training (a forward pass that keeps state for backward) the minibatch's own
    mean and variance are used and the running statistics are updated: with
    ``f = 1 - exp(-n / normalization_time_constant)`` for n samples (1 for the first
    minibatch, 0 for an infinite constant), ``running_mean = f * mean + (1 - f) *
    running_mean`` and likewise ``running_inv_std`` (which, as in CNTK, holds the
    running *variance*) with the unbiased minibatch variance; ``running_count`` adds n.
    With ``blend_time_constant`` B > 0 the statistics normalized with are a blend,
    weight ``B / (B + n)`` on the running ones. In inference the running statistics
    are used and nothing changes.

    `running_mean`, `running_inv_std` and `running_count` must be Constants (or
    Parameters); `running_count` is a scalar, e.g. ``constant(0)``.
    `use_cudnn_engine` is accepted and has no effect on the CPU. `disable_regularization`
    is kept as the op's attribute; as in CNTK 2.7, only BrainScript's SGD reads it
    (CNTK's v2 learners do not).
    """
    from . import constant
    if running_count is None:
        running_count = constant(0)
        warnings.warn("batch_normalization requires an additional 'running_count' parameter, which can be "
                      "instantiated as 'constant(0)'", Warning)
    T = _number('batch_normalization', normalization_time_constant, 'normalization_time_constant')
    B = _number('batch_normalization', blend_time_constant, 'blend_time_constant')
    eps = _number('batch_normalization', epsilon, 'epsilon')
    if math.isnan(T) or math.isnan(B):
        raise ValueError("batch_normalization: the time constants must be numbers, not NaN")
    if B < 0:
        raise ValueError("batch_normalization: blend_time_constant must not be negative, got %r" % B)
    if not eps > 0 or math.isinf(eps):
        raise ValueError("batch_normalization: epsilon must be positive and finite, got %r" % eps)
    operand = as_variable(operand)
    stats = []
    for what, v in (('scale', scale), ('bias', bias), ('running_mean', running_mean),
                    ('running_inv_std', running_inv_std), ('running_count', running_count)):
        if isinstance(v, _cntk.Function):
            v = v.output
        if not isinstance(v, _cntk.Variable):
            v = as_variable(v, operand.dtype if operand.dtype is not None else np.float32)
        stats.append(v)
    attrs = {'spatial': bool(spatial), 'normalizationTimeConstant': T, 'blendTimeConstant': B,
             'epsilon': eps, 'useCuDNNEngine': bool(use_cudnn_engine),
             'disableRegularization': bool(disable_regularization)}
    return prim('BatchNormalization', [operand] + stats, attrs, name)


def local_response_normalization(operand, depth_radius, bias, alpha, beta, name=''):
    """Local response normalization across channels (the first axis):
    ``y_c = x_c / (bias + alpha / (2 * depth_radius + 1) * sum_{|j - c| <= depth_radius} x_j ** 2) ** beta``
    with the sum clipped to the existing channels (alpha divided by the full window size,
    as in CNTK and ONNX)."""
    r = _int_arg('local_response_normalization', depth_radius, 'depth_radius', 0)
    attrs = {'depthRadius': r,
             'bias': _number('local_response_normalization', bias, 'bias'),
             'alpha': _number('local_response_normalization', alpha, 'alpha'),
             'beta': _number('local_response_normalization', beta, 'beta')}
    return prim('LocalResponseNormalization', [operand], attrs, name)


def mean_variance_normalization(operand, epsilon=0.00001, use_stats_across_channels=False,
                                do_variance_scaling=True, name=''):
    """Subtracts the mean and divides by (standard deviation + epsilon), per channel (the
    first axis) over the other axes, or over the whole sample with
    `use_stats_across_channels` (a vector is always normalized as a whole).
    Without `do_variance_scaling` only the mean is subtracted."""
    from . import reduce_mean, minus, element_divide, plus, sqrt, square
    eps = _number('mean_variance_normalization', epsilon, 'epsilon')
    if eps < 0:
        raise ValueError("mean_variance_normalization: epsilon must be non-negative, got %r" % eps)
    x, = sanitize_inputs(operand)
    rank = len(x.shape)
    if rank < 1:
        raise ValueError("mean_variance_normalization: the operand must have rank 1 or more, %s has rank 0" % x)
    axes = tuple(range(rank)) if (rank < 2 or use_stats_across_channels) else tuple(range(1, rank))

    def body(p):
        centered = minus(p, reduce_mean(p, axis=axes))
        if not do_variance_scaling:
            return centered
        return element_divide(centered, plus(sqrt(reduce_mean(square(centered), axis=axes)), eps))
    return _block('MeanVarianceNormalization', body, [x], name)


def per_dim_mean_variance_normalize(operand, mean, inv_stddev, name=''):
    """``(operand - mean) * inv_stddev`` elementwise (mean and inv_stddev broadcast)."""
    from . import minus, element_times
    x = as_variable(operand)
    dt = x.dtype
    m = as_variable(mean, dt)
    s = as_variable(inv_stddev, dt)
    return _block('PerDimMeanVarianceNormalize', lambda a, b, c: element_times(minus(a, b), c), [x, m, s], name)


def _image_operand(op, operand):
    x, = sanitize_inputs(operand)
    if len(x.shape) != 3:
        raise ValueError("%s: the operand must have rank 3 (channels, height, width), %s has shape %s"
                         % (op, x, x.shape))
    if any(d < 0 for d in x.shape):
        raise ValueError("%s: the operand's shape %s must be known" % (op, x.shape))
    return x


def depth_to_space(operand, block_size, name=''):
    """Moves depth into spatial blocks: (C*b*b, H, W) -> (C, H*b, W*b), with ONNX's
    DCR order (as CNTK 2.6+): output channel c at block offset (i, j) comes from input
    channel (i * b + j) * C + c."""
    from . import reshape, transpose
    b = _int_arg('depth_to_space', block_size, 'block_size', 1)
    x = _image_operand('depth_to_space', operand)
    c, h, w = x.shape
    if c % (b * b):
        raise ValueError("depth_to_space: the number of channels (%d) must be divisible by block_size squared (%d)"
                         % (c, b * b))
    c2 = c // (b * b)

    def body(p):
        t = transpose(reshape(p, (b, b, c2, h, w)), (2, 3, 0, 4, 1))
        return reshape(t, (c2, h * b, w * b))
    return _block('DepthToSpace', body, [x], name)


def space_to_depth(operand, block_size, name=''):
    """Moves spatial blocks into depth: (C, H, W) -> (C*b*b, H/b, W/b), the inverse of
    depth_to_space: output channel (i * b + j) * C + c holds the input's channel c at
    block offset (i, j)."""
    from . import reshape, transpose
    b = _int_arg('space_to_depth', block_size, 'block_size', 1)
    x = _image_operand('space_to_depth', operand)
    c, h, w = x.shape
    if h % b or w % b:
        raise ValueError("space_to_depth: the spatial dimensions (%d x %d) must be divisible by block_size (%d)"
                         % (h, w, b))

    def body(p):
        t = transpose(reshape(p, (c, h // b, b, w // b, b)), (2, 4, 0, 1, 3))
        return reshape(t, (c * b * b, h // b, w // b))
    return _block('SpaceToDepth', body, [x], name)


def image_scaler(x, scalar, biases, name=''):
    """``x * scalar + biases[c]`` for an image x of shape (channels, height, width)."""
    from . import element_times, plus
    v = _image_operand('image_scaler', x)
    s = _number('image_scaler', scalar, 'scalar')
    biases = np.asarray(biases, dtype=np.float64).reshape(-1)
    if biases.size != v.shape[0]:
        raise ValueError("image_scaler: %d biases given for an image with %d channels" % (biases.size, v.shape[0]))
    dt = v.dtype
    bias = biases.astype(dt).reshape(-1, 1, 1)
    return _block('ImageScaler', lambda p: plus(element_times(p, np.asarray(s, dt)), bias), [v], name)


def _crop_operands(op, *xs):
    vs = sanitize_inputs(*xs)
    for v in vs:
        if len(v.shape) < 2:
            raise ValueError("%s: %s needs two spatial axes (rank 2 or more), it has shape %s" % (op, v, v.shape))
    return vs


def crop_manual(node_input, node_referent, offset_x, offset_y, name=''):
    """The window of `node_input`'s two spatial axes (the last two) with the size of
    `node_referent`'s, starting at column `offset_x` and row `offset_y`. The referent
    gives only the size and takes no gradient."""
    ox = _int_arg('crop_manual', offset_x, 'offset_x', 0)
    oy = _int_arg('crop_manual', offset_y, 'offset_y', 0)
    x, r = _crop_operands('crop_manual', node_input, node_referent)
    return prim('Crop', [x, r], {'offset': [ox, oy]}, name)


def crop_automatic(node_input, node_referent, name=''):
    """Crops like crop_manual, with the offsets found from the graph: the spatial
    transforms from each input back to their common ancestor, composed (CNTK's
    ComputeCropOffsets). Elementwise ops, batch normalization, crops, convolutions
    (also transposed), pooling and unpooling are modeled (scale and shift from their
    kernel, stride and padding); any other op on the path raises ValueError."""
    x, r = _crop_operands('crop_automatic', node_input, node_referent)
    ox, oy = _cntk.automatic_crop_offsets(x, r, None, 'crop_automatic')
    return prim('Crop', [x, r], {'offset': [ox, oy]}, name)


def crop_automatic_with_ancestors(node_input, node_referent, ancestor_input, ancestor_referent, name=''):
    """crop_automatic for inputs without a common ancestor: `ancestor_input` (an ancestor
    of node_input) and `ancestor_referent` (one of node_referent) count as the same node
    (e.g. an input image and its pixelwise label image)."""
    op = 'crop_automatic_with_ancestors'
    x, r = _crop_operands(op, node_input, node_referent)
    a_in, a_ref = sanitize_inputs(ancestor_input, ancestor_referent)
    ox, oy = _cntk.automatic_crop_offsets(x, r, (a_in, a_ref), op)
    return prim('Crop', [x, r, a_in, a_ref], {'offset': [ox, oy]}, name)
