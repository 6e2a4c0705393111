"""Reductions over static axes, all static axes, or the batch axis."""
from ..axis import Axis
from ..internal import sanitize_multi_axis
from ._prim import prim

__all__ = ['reduce_sum', 'reduce_log_sum_exp', 'reduce_mean', 'reduce_max', 'reduce_min', 'reduce_prod',
           'reduce_l1', 'reduce_l2', 'reduce_sum_square', 'argmax', 'argmin']


def _reduce(op, x, axis, keepdims, name):
    axes = sanitize_multi_axis(axis)
    # A reduction over all static axes (axis=None included) or all axes gives a scalar,
    # whatever keepdims says: CNTK 2.7's ReduceElements builds its primitive with
    # keepdims off in that case (Keras' CNTK backend relies on it).
    if any(a in (Axis.all_static_axes(), Axis.all_axes()) for a in axes):
        keepdims = False
    attrs = {'reductionOpName': op, 'reductionKeepDimensions': bool(keepdims)}
    if len(axes) == 1:
        attrs['axis'] = axes[0]
    else:
        attrs['axisVec'] = axes
    return prim('ReduceElements', [x], attrs, name)


def reduce_sum(x, axis=None, keepdims=True, name=''):
    """Sum over `axis` (None: all static axes; an Axis, int, or tuple of them)."""
    return _reduce('Sum', x, axis, keepdims, name)


def reduce_log_sum_exp(x, axis=None, keepdims=True, name=''):
    """log(sum(exp(x))) over `axis`, computed stably."""
    return _reduce('LogSum', x, axis, keepdims, name)


def reduce_mean(x, axis=None, keepdims=True, name=''):
    return _reduce('Mean', x, axis, keepdims, name)


def reduce_max(x, axis=None, keepdims=True, name=''):
    return _reduce('Max', x, axis, keepdims, name)


def reduce_min(x, axis=None, keepdims=True, name=''):
    return _reduce('Min', x, axis, keepdims, name)


def reduce_prod(x, axis=None, keepdims=True, name=''):
    return _reduce('Prod', x, axis, keepdims, name)


def reduce_l1(x, axis=None, keepdims=True, name=''):
    """Sum of absolute values over `axis`."""
    from ._elementwise import abs
    return reduce_sum(abs(x), axis, keepdims, name)


def reduce_l2(x, axis=None, keepdims=True, name=''):
    """Euclidean norm over `axis`."""
    from ._elementwise import sqrt
    return sqrt(reduce_sum_square(x, axis, keepdims), name=name)


def reduce_sum_square(x, axis=None, keepdims=True, name=''):
    """Sum of squares over `axis`."""
    from ._elementwise import square
    return reduce_sum(square(x), axis, keepdims, name)


def argmax(x, axis=None, name=''):
    """Index of the largest element along `axis` (None: over all elements of a flattened x), as a float."""
    return _reduce('Argmax', x, axis, True, name)


def argmin(x, axis=None, name=''):
    """Index of the smallest element along `axis`, as a float."""
    return _reduce('Argmin', x, axis, True, name)
