"""Type annotations for Function signatures: Tensor[3], SparseTensor[300], Sequence[Tensor[3]], ..."""
import numpy as np

from .. import _cntk
from ..axis import Axis
from ..internal import sanitize_shape


class _VariableType(object):
    def __init__(self, shape, is_sparse=False, dynamic_axes=None, dtype=None, needs_gradient=False):
        self.shape = sanitize_shape(shape)
        self.is_sparse = is_sparse
        self.dynamic_axes = dynamic_axes if dynamic_axes is not None else [Axis.default_batch_axis()]
        self.dtype = dtype
        self.needs_gradient = needs_gradient

    def __repr__(self):
        return "%s[%s]" % ("SparseTensor" if self.is_sparse else "Tensor", ", ".join(str(d) for d in self.shape))


class _TensorFactory(object):
    def __init__(self, is_sparse):
        self._is_sparse = is_sparse

    def __getitem__(self, shape):
        if not isinstance(shape, tuple):
            shape = (shape,)
        return _VariableType(shape, is_sparse=self._is_sparse)


Tensor = _TensorFactory(False)
SparseTensor = _TensorFactory(True)
ParameterTensor = _TensorFactory(False)


class _SequenceFactory(object):
    def __init__(self, axis=None):
        self._axis = axis

    def __getitem__(self, t):
        if not isinstance(t, _VariableType):
            t = _VariableType(t if isinstance(t, tuple) else (t,))
        axis = self._axis if self._axis is not None else Axis.default_dynamic_axis()
        return _VariableType(t.shape, t.is_sparse, [Axis.default_batch_axis(), axis], t.dtype)


Sequence = _SequenceFactory()


class SequenceOverFactory(object):
    def __getitem__(self, axis):
        return _SequenceFactory(axis)


SequenceOver = SequenceOverFactory()


class Signature(object):
    """Function signature from types: `@Signature(Tensor[3])`."""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs

    def __call__(self, f):
        f.__signature_types__ = (self.args, self.kwargs)
        return f


def _to_input(t, name=''):
    """A type annotation (or a shape) -> an input variable."""
    if isinstance(t, _cntk.Variable):
        return t
    if not isinstance(t, _VariableType):
        t = _VariableType(t)
    from ..variables import _make_input
    return _make_input(t.shape, t.dtype or np.float32, t.needs_gradient, t.is_sparse, t.dynamic_axes, name)


__all__ = ['Tensor', 'SparseTensor', 'ParameterTensor', 'Sequence', 'SequenceOver', 'Signature']
