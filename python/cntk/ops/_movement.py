"""Ops: movement family (reshape, slice, splice, transpose, pad, squeeze, gather, one_hot).

Shapes and static axes are in NumPy order: axis 0 is the first axis of the shape
CNTK's Python API shows, negative axes count from the end.
"""
import numbers

from .. import _cntk
from ..axis import Axis
from ..internal import as_variable, sanitize_dtype_default, sanitize_inputs, sanitize_shape
from ._prim import prim

__all__ = ['reshape', 'slice', 'splice', 'transpose', 'swapaxes', 'pad', 'squeeze', 'expand_dims', 'flatten',
           'gather', 'one_hot', 'CONSTANT_PAD', 'REFLECT_PAD', 'SYMMETRIC_PAD']

# Padding modes (CNTK's PaddingMode numbering).
CONSTANT_PAD = 0
REFLECT_PAD = 1
SYMMETRIC_PAD = 2


def _static_axis(op, axis, what='axis'):
    """An int or a static Axis as an Axis; TypeError/ValueError naming `op` otherwise."""
    if isinstance(axis, _cntk.Axis):
        if not axis.is_static_axis:
            raise ValueError("%s: %s must be a static axis, not %r" % (op, what, axis))
        return axis
    if isinstance(axis, numbers.Integral) and not isinstance(axis, bool):
        return Axis(int(axis))
    raise TypeError("%s: %s must be an int or an Axis, not %s" % (op, what, type(axis).__name__))


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _int(op, v, what):
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return int(v)
    raise TypeError("%s: %s must be an int, not %s" % (op, what, type(v).__name__))


def _operand(x):
    """x as a Variable (data becomes a Constant, as the op functions do)."""
    return sanitize_inputs(x)[0]


def _known_rank(var):
    """The static rank of a Variable, or None while its shape is unknown (placeholder)."""
    shape = var.shape
    if len(shape) == 1 and shape[0] == _cntk.UnknownDimension:
        return None
    return len(shape)


def reshape(x, shape, begin_axis=None, end_axis=None, name=''):
    """Gives the axes [begin_axis, end_axis) of x the new `shape` (same number of elements).

    One dimension of `shape` may be -1 (or 0) and is inferred. `begin_axis` None is 0;
    `end_axis` None is the end of the shape, as is Axis.new_leading_axis() for either.
    """
    attrs = {'newShape': list(sanitize_shape(shape))}
    if begin_axis is not None:
        attrs['beginAxis'] = _static_axis('Reshape', begin_axis, 'begin_axis')
    if end_axis is not None:
        attrs['endAxis'] = _static_axis('Reshape', end_axis, 'end_axis')
    return prim('Reshape', [x], attrs, name)


def slice(x, axis, begin_index, end_index, strides=None, name=''):
    """Elements begin_index <= i < end_index (step `strides`) along `axis`.

    `axis`, `begin_index`, `end_index` and `strides` may be lists (one entry per axis).
    Negative indices count from the end; an end_index of 0 means the end of the axis.
    A negative stride walks the range backwards.
    """
    axes = [_static_axis('Slice', a) for a in _as_list(axis)]
    begin = [_int('Slice', b, 'begin_index') for b in _as_list(begin_index)]
    end = [_int('Slice', e, 'end_index') for e in _as_list(end_index)]
    steps = [1] * len(axes) if strides is None else [_int('Slice', s, 'strides') for s in _as_list(strides)]
    if not (len(axes) == len(begin) == len(end) == len(steps)) or not axes:
        raise ValueError("Slice: axis, begin_index, end_index and strides must have the same length, got %d, %d, %d, %d"
                         % (len(axes), len(begin), len(end), len(steps)))
    if len(axes) == 1:
        attrs = {'axis': axes[0], 'beginIndex': begin[0], 'endIndex': end[0], 'sliceStrides': steps[0]}
    else:
        attrs = {'axisVec': axes, 'beginIndexVec': begin, 'endIndexVec': end, 'sliceStridesVec': steps}
    return prim('Slice', [x], attrs, name)


def splice(*inputs, **kwargs):
    """Concatenates the inputs along `axis` (keyword; default -1, the last axis).

    Inputs of lower rank are padded with leading 1s; outside `axis` a dimension of 1
    broadcasts. Axis.new_leading_axis() (or a negative axis beyond the inputs' rank)
    stacks the inputs along a new leading axis.
    """
    axis = kwargs.pop('axis', -1)
    name = kwargs.pop('name', '')
    if kwargs:
        raise TypeError("splice() got unexpected keyword arguments %s" % sorted(kwargs))
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)) and inputs[0] and \
            all(isinstance(i, (_cntk.Variable, _cntk.Function)) for i in inputs[0]):
        inputs = tuple(inputs[0])
    if not inputs:
        raise ValueError("Splice: needs at least one input")
    if isinstance(axis, _cntk.Axis) and not axis.is_static_axis:
        raise ValueError("Splice: splicing along the dynamic axis %r is not supported" % (axis,))
    axis = _static_axis('Splice', axis)
    if len(inputs) == 1:
        # Nothing to splice: a Function whose output is the input itself, as CNTK does.
        from . import combine
        return combine([as_variable(inputs[0])])
    return prim('Splice', list(inputs), {'axis': axis}, name)


def transpose(x, perm=None, name=''):
    """Permutes the axes of x: output axis i is input axis perm[i] (NumPy's transpose).

    `perm` None reverses the axes. A permutation shorter than the rank reorders the last axes.
    """
    if isinstance(perm, (numbers.Integral, _cntk.Axis)):
        raise TypeError("transpose expects a permutation; to swap two axes use swapaxes")
    if perm is None:
        x = _operand(x)
        rank = _known_rank(x)
        if rank is None:
            raise ValueError("TransposeAxes: perm is needed while the operand's shape is unknown")
        perm = list(reversed(range(rank)))
    perm = [_int('TransposeAxes', p, 'perm element') for p in perm]
    n = len(perm)
    if not all(-n <= p < n for p in perm):
        raise ValueError("TransposeAxes: invalid permutation %s: elements must be in [-%d, %d)" % (perm, n, n))
    if len(set(p % n for p in perm)) != n:
        raise ValueError("TransposeAxes: the permutation %s repeats an axis" % (perm,))
    return prim('TransposeAxes', [x], {'axisVec': [Axis(p) for p in perm]}, name)


def swapaxes(x, axis1=0, axis2=1, name=''):
    """Exchanges two axes of x."""
    return prim('TransposeAxes', [x], {'axis1': _static_axis('TransposeAxes', axis1, 'axis1'),
                                       'axis2': _static_axis('TransposeAxes', axis2, 'axis2')}, name)


def pad(x, pattern, mode=CONSTANT_PAD, constant_value=0, name=''):
    """Pads x with pattern[i] = (before, after) cells on axis i.

    Modes: CONSTANT_PAD (fill with constant_value), REFLECT_PAD (mirror, edge not
    repeated), SYMMETRIC_PAD (mirror, edge repeated), as NumPy's pad modes.
    """
    try:
        pattern = [tuple(p) for p in pattern]
    except TypeError:
        raise ValueError("Pad: the pattern must be a list of (before, after) pairs, not %r" % (pattern,))
    if any(len(p) != 2 for p in pattern):
        raise ValueError("Pad: the pattern must be a list of (before, after) pairs, not %r" % (pattern,))
    head = [_int('Pad', p[0], 'padding') for p in pattern]
    foot = [_int('Pad', p[1], 'padding') for p in pattern]
    if mode not in (CONSTANT_PAD, REFLECT_PAD, SYMMETRIC_PAD):
        raise ValueError("Pad: unknown mode %r (use CONSTANT_PAD, REFLECT_PAD or SYMMETRIC_PAD)" % (mode,))
    return prim('Pad', [x], {'paddingHead': head, 'paddingFoot': foot, 'paddingMode': int(mode),
                             'paddingConstantValue': float(constant_value)}, name)


def squeeze(x, axes=None, name=''):
    """Removes the axes of size 1 (or only `axes`, an int, Axis or list; each must have size 1)."""
    attrs = {}
    if axes is not None:
        attrs['axisVec'] = [_static_axis('Squeeze', a) for a in _as_list(axes)]
    return prim('Squeeze', [x], attrs, name)


def expand_dims(x, axis, name=''):
    """Inserts an axis of size 1, as CNTK 2.7 does (see its documented example).

    CNTK counts `axis` between the axes of x: a non-negative axis a inserts after
    axis a (so expand_dims(x, 0) of a (2, 3) x gives (2, 1, 3)), a negative one counts
    from the end, -1 being a new last axis and -(rank + 1) a new first axis.
    """
    var = _operand(x)
    a = _static_axis('expand_dims', axis).static_index
    rank = _known_rank(var)
    if rank is not None and not -rank - 1 <= a <= rank - 1:
        raise ValueError("expand_dims: axis %d is out of range for an operand of shape %s (use %d..%d)"
                         % (a, var.shape, -rank - 1, rank - 1))
    # As CNTK: a reshape of the empty range at the insertion point into (1,).
    pos = Axis.new_leading_axis() if a == -1 else Axis(a + 1)  # new_leading_axis: the end of the shape
    return reshape(var, (1,), pos, pos, name=name)


def flatten(x, axis=None, name=''):
    """Reshapes x of shape (d_0, ..., d_n) into the matrix
    (d_0 * ... * d_(axis-1), d_axis * ... * d_n).

    `axis` None is 0, giving (1, size). As in CNTK 2.7 a negative axis counts positions
    between the axes from the end: -1 is the end, giving (size, 1); -2 keeps the last axis.
    """
    var = _operand(x)
    rank = _known_rank(var)
    if axis is None:
        axis = 0
    elif isinstance(axis, _cntk.Axis) and axis.is_batch_axis:
        axis = -1  # CNTK flattens the whole sample into the first dimension
    a = _static_axis('flatten', axis).static_index
    if rank is not None:
        if not -rank - 1 <= a <= rank:
            raise ValueError("flatten: axis %d is out of range for an operand of shape %s" % (a, var.shape))
        split = a + rank + 1 if a < 0 else a
        shape = var.shape
        if all(d >= 0 for d in shape):
            outer = 1
            for d in shape[:split]:
                outer *= d
            inner = 1
            for d in shape[split:]:
                inner *= d
            return reshape(var, (outer, inner), name=name)
    # Free or unknown dimensions: merge the trailing part, then the leading part, at run time.
    begin = Axis.new_leading_axis() if a == -1 else Axis(a + 1) if a < 0 else Axis(a)
    tail = reshape(var, (-1,), begin, None)
    return reshape(tail, (-1,), Axis(0), Axis(-1), name=name)


def gather(reference, indices, axis=None, name=''):
    """Elements of `reference` at `indices` along `axis` (None: the first axis).

    Without an axis the result has shape indices.shape + reference.shape[1:]. The
    reference must not have dynamic axes; no gradient flows to the indices.
    """
    dtype = sanitize_dtype_default(reference)
    ref = as_variable(reference, dtype)
    idx = as_variable(indices, dtype)
    attrs = {} if axis is None else {'axis': _static_axis('Gather', axis)}
    return prim('Gather', [idx, ref], attrs, name)


def one_hot(x, num_classes, sparse_output=False, axis=-1, name=''):
    """One-hot encodes the integer values of x along a new axis of `num_classes` cells.

    `axis` is the new axis' position in the result (default -1: last). Values outside
    [0, num_classes) encode as all zeros. The result is dense; sparse_output is recorded.
    """
    n = _int('OneHot', num_classes, 'num_classes')
    if n <= 0:
        raise ValueError("OneHot: num_classes must be positive, not %d" % n)
    return prim('OneHot', [x], {'numClass': n, 'oneHotOutputSparse': bool(sparse_output),
                                'onehotAxis': _static_axis('OneHot', axis)}, name)
