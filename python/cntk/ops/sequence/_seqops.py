"""The ops of cntk.ops.sequence that read or create sequence axes (the delays are
with the recurrent loops). Each checks its arguments, then builds primitives of
the native catalogue (src/ops/sequence.cpp) or a short composite of them."""
import numbers

from ...internal import sanitize_inputs
from .._prim import prim
from ...axis import Axis

__all__ = ['is_first', 'is_last', 'slice', 'first', 'last', 'where', 'gather', 'scatter', 'broadcast_as',
           'reduce_sum', 'reduce_max', 'softmax', 'unpack']


def _variable(x, op):
    (v,) = sanitize_inputs(x)
    return v


def _sequence_axis(x, op, what='seq'):
    """The sequence axis of `x` (a Variable or Function); ValueError when it has none."""
    v = _variable(x, op)
    for a in v.dynamic_axes:
        if a.is_sequence_axis:
            return a
    raise ValueError("sequence.%s: %s must be a sequence (have a sequence axis), but %r has dynamic axes %s"
                     % (op, what, v, [a.name for a in v.dynamic_axes]))


def _check_int(value, what, op):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError("sequence.%s: %s must be an integer, not %r" % (op, what, value))
    return int(value)


def _typeinfo_attrs(typeinfo, op):
    """The Where attributes for new_sequence_axis_typeinfo: a (scaling, additive) pair of
    integers declaring the new axis' length as scaling * (the condition's length) + additive."""
    if typeinfo is None:
        return {}
    if not isinstance(typeinfo, (tuple, list)) or len(typeinfo) != 2:
        raise TypeError("sequence.%s: new_sequence_axis_typeinfo must be a (scaling, additive) pair of integers, "
                        "not %r" % (op, typeinfo))
    scale = _check_int(typeinfo[0], 'the scaling factor of new_sequence_axis_typeinfo', op)
    add = _check_int(typeinfo[1], 'the additive factor of new_sequence_axis_typeinfo', op)
    if scale < 0 or (scale == 0 and add <= 0):
        raise ValueError("sequence.%s: new_sequence_axis_typeinfo %r declares a length %d * n + %d that is not "
                         "positive" % (op, tuple(typeinfo), scale, add))
    return {'newSequenceAxisLengthScalingFactor': scale, 'newSequenceAxisLengthAdditiveFactor': add}


def is_first(seq, name=''):
    """A scalar per step of `seq`: 1 on the first step of each sequence, 0 elsewhere."""
    _sequence_axis(seq, 'is_first')
    return prim('IsWithin', [seq], {'offset': 1}, name)


def is_last(seq, name=''):
    """A scalar per step of `seq`: 1 on the last step of each sequence, 0 elsewhere."""
    _sequence_axis(seq, 'is_last')
    return prim('IsWithin', [seq], {'offset': -1}, name)


def slice(seq, begin_index, end_index, name=''):
    """Steps [begin_index, end_index) of each sequence, as a new sequence. Negative indices
    count from each sequence's end; end_index 0 means its end.

    As in CNTK, a slice of one step (end_index - begin_index == 1, e.g. (1, 2) or (-1, 0))
    has no sequence axis: one item per sequence."""
    _sequence_axis(seq, 'slice')
    b = _check_int(begin_index, 'begin_index', 'slice')
    e = _check_int(end_index, 'end_index', 'slice')
    if e - b == 1:
        return reduce_sum(prim('SequenceSlice', [seq], {'beginIndex': b, 'endIndex': e}, ''), name=name)
    return prim('SequenceSlice', [seq], {'beginIndex': b, 'endIndex': e}, name)


def first(seq, name=''):
    """The first step of each sequence (no sequence axis in the result)."""
    _sequence_axis(seq, 'first')
    return slice(seq, 0, 1, name=name)


def last(seq, name=''):
    """The last step of each sequence (no sequence axis in the result)."""
    _sequence_axis(seq, 'last')
    return slice(seq, -1, 0, name=name)


def where(condition, name=''):
    """A new sequence of the step indices at which `condition` (one value per step) is
    true. A value n > 1 repeats the index n times, as in CNTK."""
    _sequence_axis(condition, 'where', 'condition')
    return prim('Where', [condition], {}, name)


def _where_declared(condition, typeinfo, op):
    return prim('Where', [condition], _typeinfo_attrs(typeinfo, op), '')


def gather(seq, condition, new_sequence_axis_typeinfo=None, name=''):
    """The steps of `seq` at which `condition` is true, in order, as a new sequence.

    Without ``new_sequence_axis_typeinfo`` the result's sequence axis belongs to the
    condition: gathers with one condition share it. A pair (scaling, additive) declares
    the result's length as scaling * n + additive for sequences of n steps; the axis is
    then named after the condition's sequence axis and the pair, so results declared
    alike over one source axis share an axis and combine elementwise. (1, 0) keeps the
    source axis and (0, 1) (one step per sequence) leaves no sequence axis. The declared
    lengths are checked when the graph runs (ValueError when a sequence selects another
    number of steps).
    """
    axis = _sequence_axis(seq, 'gather')
    if _sequence_axis(condition, 'gather', 'condition') != axis:
        raise ValueError("sequence.gather: seq and condition must share a sequence axis, but they are over "
                         "'%s' and '%s'" % (axis.name, _sequence_axis(condition, 'gather', 'condition').name))
    return prim('GatherPacked', [seq, _where_declared(condition, new_sequence_axis_typeinfo, 'gather')], {}, name)


def scatter(seq, condition, new_sequence_axis_typeinfo=None, name=''):
    """The inverse of gather: a sequence as long as `condition`, holding the steps of `seq`
    in order at the steps where `condition` is true and zeros elsewhere.

    ``new_sequence_axis_typeinfo`` declares the axis of the selected steps as in
    :func:`gather`: `seq` must be over that axis (with (0, 1): no sequence axis, one
    item per sequence)."""
    _sequence_axis(condition, 'scatter', 'condition')
    if new_sequence_axis_typeinfo is None and not any(a.is_sequence_axis for a in _variable(seq, 'scatter').dynamic_axes):
        # as CNTK: a seq without a sequence axis holds one item per sequence
        new_sequence_axis_typeinfo = (0, 1)
    attrs = _typeinfo_attrs(new_sequence_axis_typeinfo, 'scatter')
    if (attrs.get('newSequenceAxisLengthScalingFactor'), attrs.get('newSequenceAxisLengthAdditiveFactor')) != (0, 1):
        _sequence_axis(seq, 'scatter')
    indices = prim('Where', [condition], attrs, '')
    return prim('ScatterPacked', [seq, indices, condition], {}, name)


def broadcast_as(operand, broadcast_as_operand, name=''):
    """`operand` (without a sequence axis) repeated at every step of `broadcast_as_operand`."""
    # CNTK does not require a sequence axis here: the result takes broadcast_as_operand's
    # dynamic axes, whatever they are (its own tests build this over a batch-only input).
    _variable(broadcast_as_operand, 'broadcast_as')
    return prim('ReconcileDynamicAxis', [operand, broadcast_as_operand], {}, name)


def _reduce(op, seq, opname, name):
    _sequence_axis(seq, opname)
    # CNTK's operand-sequence axis: resolved to seq's sequence axis at each shape inference, so a
    # reduction built on a placeholder (inside a layer or a Function) still works once it is bound.
    axis = Axis.dynamic('__operandSequenceAxis')
    return prim('ReduceElements', [seq], {'reductionOpName': op, 'axis': axis, 'reductionKeepDimensions': True},
                name)


def reduce_sum(seq, name=''):
    """The sum of each sequence's steps (no sequence axis in the result)."""
    return _reduce('Sum', seq, 'reduce_sum', name)


def reduce_max(seq, name=''):
    """The elementwise maximum over each sequence's steps (no sequence axis in the result)."""
    return _reduce('Max', seq, 'reduce_max', name)


def softmax(seq, name=''):
    """Softmax over the steps of each sequence, elementwise for each static position."""
    from ...ops import exp, minus, element_divide
    _sequence_axis(seq, 'softmax')
    shifted = minus(seq, broadcast_as(reduce_max(seq), seq))
    e = exp(shifted)
    return element_divide(e, broadcast_as(reduce_sum(e), seq), name=name)


def unpack(x, padding_value, no_mask_output=False, name=''):
    """The sequences of `x` as a tensor with a leading axis of the longest length, padded
    with `padding_value`; a second output is the mask (1 on valid steps) unless no_mask_output."""
    _sequence_axis(x, 'unpack', 'x')
    if not isinstance(padding_value, numbers.Real):
        raise TypeError("sequence.unpack: padding_value must be a number, not %r" % (padding_value,))
    return prim('UnpackSequence', [x], {'paddingValue': float(padding_value),
                                        'suppressMaskOutput': bool(no_mask_output)}, name)
