"""Types for Function signatures: `Tensor[3]`, `SparseTensor[300]`, `Sequence[Tensor[3]]`,
`SequenceOver[axis][Tensor[3]]`, `ParameterTensor[3, 4]`.

A type is a record of the variable properties shape, dtype, is_sparse and
dynamic_axes (`cntk.variables.Variable._Type`). Annotate the parameters of an
`@Function` with them (or use `@Signature`) to get input variables instead of
placeholders, or pass them to `Function.update_signature`.
"""
import inspect

import numpy as np

from ..axis import Axis
from ..variables import _Type

_DTYPES = (np.float32, np.float64, np.float16)


# The type classes below live for the whole process (classes sit in reference cycles, so
# only the garbage collector frees them). They keep axis *names* and make the Axis objects
# when a type is built: a native Axis held by a class would outlive the extension's own
# teardown and be reported as a leak at interpreter exit.
def _axes(names):
    made = {_BATCH: Axis.default_batch_axis, _SEQUENCE: Axis.default_dynamic_axis}
    return [made[n]() if n in made else Axis(n) for n in names]


_BATCH = Axis.default_batch_axis().name
_SEQUENCE = Axis.default_dynamic_axis().name


def _make_tensor_meta(cls_name, axis_names, **fields):
    class TensorMeta(type):
        def __getitem__(cls, shape):
            if not isinstance(shape, tuple):
                shape = (shape,)
            kwargs = dict(fields, dynamic_axes=_axes(axis_names))
            # The first entry may be the element type: Tensor[np.float64, 3].
            if shape and any(shape[0] is t for t in _DTYPES):
                kwargs['dtype'] = shape[0]
                shape = shape[1:]
            for d in shape:
                if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
                    raise TypeError("%s[...] takes integer dimensions, not %r" % (cls_name, d))
            return _Type(shape=tuple(int(d) for d in shape), **kwargs)

        def __repr__(cls):
            return cls_name

    return TensorMeta(cls_name, (), {})


Tensor = _make_tensor_meta('Tensor', (_BATCH,), is_sparse=False)
"""A dense data tensor with a batch axis: `Tensor[13, 42]`."""
SparseTensor = _make_tensor_meta('SparseTensor', (_BATCH,), is_sparse=True)
"""A sparse data tensor with a batch axis: `SparseTensor[9000]`."""
ParameterTensor = _make_tensor_meta('ParameterTensor', (), is_sparse=False)
"""A tensor without dynamic axes: `ParameterTensor[512, 256]`."""

tensor = Tensor[-2]
"""A data tensor of unknown shape."""


def _item_type(item):
    item = _Type._sanitize(item)
    if isinstance(item, (int, np.integer, tuple)):
        item = Tensor[item]
    if not isinstance(item, _Type):
        raise TypeError("Sequence[...] takes a tensor type such as Tensor[3], not %r" % (item,))
    return item


def _make_seq_meta(cls_name, axis_names):
    class SeqMeta(type):
        def __getitem__(cls, item):
            item = _item_type(item)
            item_axes = list(item.get('dynamic_axes', ()))
            if item_axes and item_axes != [Axis.default_batch_axis()]:
                raise TypeError("sequences over sequences are currently not supported")
            return item.updated_with(dynamic_axes=tuple(_axes(axis_names)))

        def __repr__(cls):
            return cls_name

    return SeqMeta(cls_name, (), {})


Sequence = _make_seq_meta('Sequence', (_BATCH, _SEQUENCE))
"""A sequence of tensors over the default sequence axis: `Sequence[Tensor[13]]`."""


class SequenceOverMeta(type):
    """`SequenceOver[axis]` is a Sequence over a named dynamic axis: `SequenceOver[Axis('in')][Tensor[3]]`."""

    def __getitem__(cls, axis):
        if isinstance(axis, str):
            axis = Axis(axis)
        if not isinstance(axis, Axis) or not axis.is_dynamic_axis:
            raise TypeError("SequenceOver[...] takes a dynamic Axis, not %r" % (axis,))
        return _make_seq_meta('SequenceOver[%s]' % axis.name, (_BATCH, axis.name))


SequenceOver = SequenceOverMeta('SequenceOver', (), {})


def _positional_names(f):
    params = inspect.signature(f).parameters.values()
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def Signature(*args, **kwargs):
    """Decorator that sets a function's parameter annotations, for `@Function`:
    `@Signature(Tensor[42])` or `@Signature(x=Tensor[42])`."""
    def add_annotations(f):
        names = _positional_names(f)
        if getattr(f, '__annotations__', None):
            raise ValueError("@Signature cannot be applied to a function that already has annotations")
        if len(args) + len(kwargs) != len(names):
            raise TypeError("%d annotations given for a function with %d parameters" %
                            (len(args) + len(kwargs), len(names)))
        annotations = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError("@Signature: the function has no parameter '%s'" % k)
            if k in annotations:
                raise TypeError("@Signature: parameter '%s' given twice" % k)
            annotations[k] = v
        f.__annotations__ = annotations
        return f
    return add_annotations


def _to_input(t, name=''):
    """A type (or a shape) -> an input variable of that type named `name`."""
    from .. import _cntk
    from ..variables import _make_input
    if isinstance(t, _cntk.Variable):
        return t
    t = _Type._sanitize(t)
    if isinstance(t, (int, np.integer, tuple)):
        t = Tensor[t]
    if not isinstance(t, _Type):
        raise TypeError("expected a type such as Tensor[3], an int or a tuple of ints, not %r" % (t,))
    return _make_input(t.get('shape', ()), t.get('dtype', None) or np.float32, t.get('needs_gradient', False),
                       t.get('is_sparse', False), t.get('dynamic_axes', [Axis.default_batch_axis()]), name)


__all__ = ['Tensor', 'SparseTensor', 'ParameterTensor', 'Sequence', 'SequenceOver', 'SequenceOverMeta',
           'Signature', 'tensor']
