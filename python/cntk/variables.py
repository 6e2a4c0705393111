"""Variables: inputs, outputs, parameters, constants and placeholders."""
import collections
import numbers

import numpy as np

from . import _cntk
from .internal import dtype_code, np_dtype, sanitize_shape
from .tensor import TensorOpsMixin

_INPUT, _OUTPUT, _PARAMETER, _CONSTANT, _PLACEHOLDER = range(5)


class Record(dict):
    """A dict whose entries are also attributes (CNTK's Record)."""

    def __init__(self, **args_dict):
        super(Record, self).__init__(args_dict)
        self.__dict__.update(args_dict)

    def __getattr__(self, key):
        if key not in self:
            raise AttributeError("record has no attribute '%s'" % key)
        return self[key]

    def __setattr__(self, key, value):
        raise AttributeError("record is immutable")

    def updated_with(self, **kwargs):
        """A new Record with entries added or replaced."""
        d = dict(self)
        d.update(kwargs)
        return Record(**d)


class VariableMixin(object):
    """The properties every Variable has."""

    @property
    def dynamic_axes(self):
        """The dynamic axes (batch first, then the sequence axis)."""
        return tuple(self._dynamic_axes)

    @property
    def dtype(self):
        return np_dtype(self._dtype)

    @property
    def is_constant(self):
        return self._kind == _CONSTANT

    @property
    def is_input(self):
        return self._kind == _INPUT

    @property
    def is_output(self):
        return self._kind == _OUTPUT

    @property
    def is_parameter(self):
        return self._kind == _PARAMETER

    @property
    def is_placeholder(self):
        return self._kind == _PLACEHOLDER

    @property
    def owner(self):
        """The Function that computes this output variable, or None."""
        o = self._owner
        if o is None:
            return None
        return _cntk.composite(o) if o._kind == 0 else o

    @property
    def output(self):
        return self

    @property
    def outputs(self):
        return (self,)


def _variable_eq(self, other):
    return isinstance(other, _cntk.Variable) and self.same(other)


def _value_get(self):
    """The current value (parameters and constants) as a NumPy array."""
    return self._value().to_numpy()


def _value_set(self, val):
    if isinstance(val, _cntk.NDArrayView):
        view = val
    else:
        view = _cntk.NDArrayView.from_numpy(np.require(val, dtype=self.dtype, requirements="C"))
    self._set_value(view)


def _data(self):
    """The value as an NDArrayView."""
    return self._value()


def _as_parameter(self):
    if not self.is_parameter:
        raise TypeError("cannot convert %s to a Parameter" % self)
    return self


def _as_constant(self):
    if not self.is_constant:
        raise TypeError("cannot convert %s to a Constant" % self)
    return self


def _getattr(self, name):
    raise AttributeError("'Variable' object has no attribute '%s'" % name)


Variable = _cntk.Variable
for _cls in (VariableMixin, TensorOpsMixin):
    for _k, _v in vars(_cls).items():
        if not _k.startswith('__') or _k in ('__add__', '__radd__', '__sub__', '__rsub__', '__mul__', '__rmul__',
                                              '__truediv__', '__rtruediv__', '__matmul__', '__rmatmul__', '__neg__',
                                              '__pos__', '__abs__', '__lt__', '__le__', '__gt__', '__ge__',
                                              '__getitem__', '__pow__', '__rpow__', '__div__', '__rdiv__'):
            setattr(Variable, _k, _v)
Variable.__eq__ = _variable_eq
Variable.__ne__ = lambda self, other: not _variable_eq(self, other)
Variable.value = property(_value_get, _value_set)
Variable.data = property(_data)
Variable.as_parameter = _as_parameter
Variable.as_constant = _as_constant
Variable.asarray = lambda self: self._value().to_numpy()
Variable.__array_priority__ = 100  # numpy defers to our operators: np_array + var builds a graph


def _make_input(shape=None, dtype=None, needs_gradient=False, is_sparse=False, dynamic_axes=None, name=''):
    from .axis import Axis
    if dynamic_axes is None:
        dynamic_axes = [Axis.default_batch_axis()]
    return _cntk.input_variable(sanitize_shape(shape), dtype_code(dtype), bool(is_sparse), bool(needs_gradient),
                                list(dynamic_axes), name)


class _KindMeta(type):
    """Parameter and Constant are kinds of Variable: constructing one returns a
    Variable of that kind, and isinstance checks the kind."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _cntk.Variable) and obj._kind == cls._kind

    def __call__(cls, *args, **kwargs):
        return cls._create(*args, **kwargs)


def _initial_value(value, shape, dtype):
    arr = np.asarray(value, dtype=dtype)
    if shape:
        shape = sanitize_shape(shape)
        if arr.ndim == 0 and all(d >= 0 for d in shape):
            arr = np.full(shape, arr, dtype=dtype)
        elif len(arr.shape) == len(shape) and all(d < 0 or d == a for d, a in zip(shape, arr.shape)):
            pass  # inferred dimensions take the value's
        elif arr.shape != shape:
            raise ValueError("value of shape %s does not match shape %s" % (arr.shape, shape))
    return _cntk.NDArrayView.from_numpy(np.require(arr, requirements="C"))


class Parameter(VariableMixin, metaclass=_KindMeta):
    """A learnable parameter: `Parameter(shape, init, dtype, device, name)`.

    `init` is a scalar, a NumPy array, or an initializer (e.g. `glorot_uniform()`).
    Dimensions given as `InferredDimension` are filled in when the parameter is first used.
    """
    _kind = _PARAMETER

    @staticmethod
    def _create(shape=None, init=None, dtype=None, device=None, name=''):
        from .initializer import _is_initializer
        if dtype is None:
            dtype = np.float32
        code = dtype_code(dtype)
        shape = sanitize_shape(shape)
        if init is None:
            from .initializer import glorot_uniform
            init = glorot_uniform()
        if _is_initializer(init):
            return _cntk.parameter(shape, code, None, dict(init), name)
        if isinstance(init, _cntk.NDArrayView):
            init = init.to_numpy()
        arr = np.asarray(init, dtype=np_dtype(code))
        if not shape:
            shape = arr.shape
        view = _initial_value(arr, shape, np_dtype(code))
        if any(d < 0 for d in shape) and view.shape != shape:
            if arr.ndim == 0:  # a scalar for a shape still to be inferred: fill once known
                return _cntk.parameter(shape, code, None, {'type': 'constant', 'value': float(arr)}, name)
            shape = view.shape
        return _cntk.parameter(shape, code, view, None, name)


class Constant(VariableMixin, metaclass=_KindMeta):
    """A constant: `Constant(value, shape, dtype, device, name)`."""
    _kind = _CONSTANT

    @staticmethod
    def _create(value=None, shape=None, dtype=None, device=None, name=''):
        if isinstance(value, _cntk.NDArrayView):
            value = value.to_numpy()
        if dtype is None:
            if isinstance(value, np.ndarray) and value.dtype in (np.float64, np.float16):
                dtype = value.dtype
            else:
                dtype = np.float32
        if value is None:
            value = 0
        dt = np_dtype(dtype_code(dtype))
        arr = np.asarray(value, dtype=dt)
        if shape is not None:
            shape = sanitize_shape(shape)
            arr = np.broadcast_to(arr, shape) if arr.shape != shape else arr
        return _cntk.constant(_cntk.NDArrayView.from_numpy(np.require(arr, requirements="C")), name)


def _variable_factory(shape=None, dtype=np.float32, needs_gradient=False, is_sparse=False,
                      dynamic_axes=None, name=''):
    """`Variable(shape, dtype, needs_gradient, is_sparse, dynamic_axes, name)` makes an input variable."""
    if isinstance(shape, _cntk.Variable):
        return shape
    from .axis import Axis
    if dynamic_axes is None:
        dynamic_axes = [Axis.default_batch_axis()]
    return _make_input(shape, dtype, needs_gradient, is_sparse, dynamic_axes, name)
