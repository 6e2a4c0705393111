"""Softmax and friends, top_k, cast, constant-like tensors, stop_gradient and assign."""
import numbers

from .. import _cntk
from ..axis import Axis
from ..internal import sanitize_axis, sanitize_inputs, dtype_code
from ._prim import prim

__all__ = ['softmax', 'log_softmax', 'hardmax', 'top_k', 'cast', 'ones_like', 'zeros_like', 'eye_like',
           'stop_gradient', 'assign']


def softmax(x, axis=None, name=''):
    """exp(x) / sum(exp(x)), computed stably.

    With ``axis=None`` the normalization runs over all static axes of each sample
    (the whole sample sums to 1), as in CNTK; with an axis (int or Axis) along that axis.
    """
    attrs = {} if axis is None else {'axis': sanitize_axis(axis)}
    return prim('Softmax', [x], attrs, name)


def log_softmax(x, axis=None, name=''):
    """x - log(sum(exp(x))) along `axis` (default: the last static axis), computed stably."""
    return prim('LogSoftmax', [x], {'axis': Axis(-1) if axis is None else sanitize_axis(axis)}, name)


def hardmax(x, name=''):
    """1 where the maximum of each sample is (the first one if it repeats), 0 elsewhere."""
    return prim('Hardmax', [x], {}, name)


def top_k(x, k, axis=-1, name=''):
    """The `k` largest values along `axis` in descending order, and their indices.

    The result has two outputs: ``outputs[0]`` the values, ``outputs[1]`` the indices (as floats).
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError("top_k: k must be an integer, not %s" % type(k).__name__)
    return prim('TopK', [x], {'numItems': int(k), 'axis': sanitize_axis(axis)}, name)


def cast(node_input, dtype, name=''):
    """`node_input` converted to `dtype` (np.float32, np.float64 or np.float16)."""
    return prim('Cast', [node_input], {'newDataType': dtype_code(dtype)}, name)


def ones_like(x, name=''):
    """A tensor of ones with the shape, type and dynamic axes of `x`."""
    return prim('ConstantOp', [x], {'fillValue': 1.0}, name)


def zeros_like(x, name=''):
    """A tensor of zeros with the shape, type and dynamic axes of `x`."""
    return prim('ConstantOp', [x], {'fillValue': 0.0}, name)


def eye_like(x, sparse_output=True, name=''):
    """An identity matrix shaped like `x`, which must have exactly two axes, dynamic
    ones included (a batch of vectors, or a matrix), and no sequence axis."""
    x, = sanitize_inputs(x)
    if len(x.dynamic_axes) + len(x.shape) != 2:
        raise ValueError("eye_like: the operand must have exactly two axes (counting dynamic and static "
                         "axes), but %s has %d dynamic and %d static" % (x, len(x.dynamic_axes), len(x.shape)))
    if any(a.is_sequence_axis for a in x.dynamic_axes):
        raise ValueError("eye_like: the operand must not have a sequence axis, but %s has one" % x)
    return prim('EyeLikeOp', [x], {'OutputSparse': bool(sparse_output)}, name)


def stop_gradient(input, name=''):
    """Passes `input` through unchanged and blocks the gradient to it."""
    return prim('StopGradient', [input], {}, name)


def assign(ref, input, name=''):
    """Outputs `input` and writes it into `ref` (a Parameter or Constant of the same shape).

    The write happens when the pass is over: after forward when only evaluating,
    after forward and backward when computing gradients. Every use of `ref` within
    the pass sees its old value; the output of assign is the new one.
    """
    if isinstance(ref, _cntk.Function):
        ref = ref.output
    if not isinstance(ref, _cntk.Variable) or not (ref.is_parameter or ref.is_constant):
        raise ValueError("assign: ref must be a Parameter or a Constant, not %r" % (ref,))
    return prim('Assign', [ref, input], {}, name)
