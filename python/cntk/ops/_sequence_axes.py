"""Ops that move data between the dynamic axes and static ones: to_sequence,
to_sequence_like, unpack_batch, to_batch, reconcile_dynamic_axes."""
from ..internal import sanitize_inputs
from ._prim import prim

__all__ = ['to_sequence', 'to_sequence_like', 'unpack_batch', 'to_batch', 'reconcile_dynamic_axes']


def _axes(x):
    (v,) = sanitize_inputs(x)
    return v, list(v.dynamic_axes)


def _check_batch_only(x, op):
    v, axes = _axes(x)
    if len(axes) != 1 or not axes[0].is_batch_axis:
        raise ValueError("%s: x must have a batch axis and no sequence axis, but %r has dynamic axes %s"
                         % (op, v, [a.name for a in axes]))
    if len(v.shape) < 1:
        raise ValueError("%s: x needs a leading static axis, but %r is a scalar per sample" % (op, v))


def to_sequence(x, sequence_lengths=None, sequence_axis_name_prefix='toSequence_', name=''):
    """The leading static axis of `x` becomes a sequence axis. `sequence_lengths` (one
    number per sample) gives each sequence's length; without it all are full length."""
    _check_batch_only(x, 'to_sequence')
    if not isinstance(sequence_axis_name_prefix, str):
        raise TypeError("to_sequence: sequence_axis_name_prefix must be a string")
    inputs = [x] if sequence_lengths is None else [x, sequence_lengths]
    return prim('ToSequence', inputs, {'sequenceAxisNamePrefix': sequence_axis_name_prefix}, name)


def to_sequence_like(x, dynamic_axes_like, name=''):
    """Like to_sequence, with the sequence axis and lengths of `dynamic_axes_like`."""
    _check_batch_only(x, 'to_sequence_like')
    v, axes = _axes(dynamic_axes_like)
    if not any(a.is_sequence_axis for a in axes):
        raise ValueError("to_sequence_like: dynamic_axes_like must be a sequence, but %r has dynamic axes %s"
                         % (v, [a.name for a in axes]))
    return prim('ToSequenceLike', [x, dynamic_axes_like], {}, name)


def unpack_batch(x, name=''):
    """The batch axis of `x` becomes a leading static axis (the result has no dynamic axes)."""
    v, axes = _axes(x)
    if len(axes) != 1 or not axes[0].is_batch_axis:
        raise ValueError("unpack_batch: x must have a batch axis and no sequence axis, but %r has dynamic axes %s"
                         % (v, [a.name for a in axes]))
    return prim('UnpackBatchAxis', [x], {}, name)


def to_batch(x, name=''):
    """The leading static axis of `x` (which has no dynamic axes) becomes the batch axis."""
    v, axes = _axes(x)
    if axes:
        raise ValueError("to_batch: x must have no dynamic axes, but %r has %s" % (v, [a.name for a in axes]))
    if len(v.shape) < 1:
        raise ValueError("to_batch: x needs a leading static axis, but %r is a scalar" % (v,))
    return prim('ToBatchAxis', [x], {}, name)


def reconcile_dynamic_axes(x, dynamic_axes_as, name=''):
    """`x` with the dynamic axes of `dynamic_axes_as`; an `x` with fewer dynamic axes
    (no sequence axis, or none at all) is repeated along the missing ones."""
    return prim('ReconcileDynamicAxis', [x, dynamic_axes_as], {}, name)
