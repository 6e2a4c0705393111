"""Variables: inputs, outputs, parameters, constants and placeholders."""
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


class _Type(Record):
    """The type of a variable: shape, dtype, needs_gradient, is_sparse and
    dynamic_axes, each optional. `Tensor[...]`, `Sequence[...]` (cntk.layers.typing)
    build these; `input_variable(**t)` makes an input of type `t`."""

    def __init__(self, shape=None, dtype=None, needs_gradient=None, is_sparse=None, dynamic_axes=None):
        fields = {}
        if shape is not None:
            fields['shape'] = sanitize_shape(shape)
        if dtype is not None:
            fields['dtype'] = dtype
        if needs_gradient is not None:
            fields['needs_gradient'] = needs_gradient
        if is_sparse is not None:
            fields['is_sparse'] = is_sparse
        if dynamic_axes is not None:
            fields['dynamic_axes'] = tuple(dynamic_axes)
        super(_Type, self).__init__(**fields)

    def __call__(self, *args, **kwargs):
        raise TypeError("abstract type %s cannot be instantiated; use 'input(**%s)' instead" % (self, self))

    @property
    def shape_is_known(self):
        shape = self.get('shape', None)
        return shape is not None and shape != (_cntk.UnknownDimension,) and \
            all(d >= 0 or d == _cntk.FreeDimension for d in shape)

    def updated_with(self, **kwargs):
        d = dict(self)
        d.update(kwargs)
        return _Type(**d)

    def __str__(self):
        shape = self.get('shape', (_cntk.UnknownDimension,))
        is_sparse = self.get('is_sparse', False)
        axes = self.get('dynamic_axes', ())
        if is_sparse and not axes:
            raise TypeError("Type: cannot be sparse and not have an axis")
        if shape == (_cntk.UnknownDimension,):
            s = 'tensor'
        elif shape == ():
            s = 'float'
        else:
            s = 'Tensor[' + ','.join(str(d) for d in shape) + ']'
            if is_sparse:
                s = 'Sparse' + s
            elif not axes:
                s = 'Parameter' + s
        for axis in reversed(axes):
            if axis.name == 'defaultBatchAxis':
                continue
            if axis.name in ('defaultDynamicAxis', 'UnknownAxes'):
                s = 'Sequence[' + s + ']'
            else:
                s = 'SequenceOver[' + axis.name + '][' + s + ']'
        return s

    __repr__ = __str__

    @staticmethod
    def _sanitize(t):
        """Scalars types (float, np.float32, np.float64) become scalar tensor types; others pass through."""
        if t is float:
            return _Type(shape=(), dtype=np.float32)
        if t in (np.float32, np.float64, np.float16):
            return _Type(shape=(), dtype=t)
        return t


def _native_property(name, doc):
    native = getattr(_cntk.Variable, name)
    return property(lambda self: native.__get__(self), doc=doc)


class VariableMixin(object):
    """The properties every Variable has."""

    shape = _native_property('shape', "The static shape, a tuple in NumPy order.")
    name = _native_property('name', "The name given at creation ('' if none).")
    uid = _native_property('uid', "The unique id the engine generated.")
    is_sparse = _native_property('is_sparse', "Whether the data is sparse.")
    needs_gradient = _native_property('needs_gradient', "Whether gradients flow to this variable.")

    Type = _Type
    _Type = _Type

    @property
    def _type(self):
        """The complete type of this variable (a Record with shape, dtype, needs_gradient, is_sparse, dynamic_axes)."""
        return _Type(shape=self.shape, dtype=self.dtype, needs_gradient=self.needs_gradient,
                     is_sparse=self.is_sparse, dynamic_axes=self.dynamic_axes)

    @property
    def type(self):
        """Same as `_type`."""
        return self._type

    @property
    def dynamic_axes(self):
        """The dynamic axes (batch first, then the sequence axis)."""
        return tuple(self._dynamic_axes)

    def has_batch_axis(self):
        """Whether the batch axis is among the dynamic axes."""
        return any(a.is_batch_axis for a in self._dynamic_axes)

    def has_sequence_axis(self):
        """Whether a dynamic axis other than the batch axis is present."""
        return any(not a.is_batch_axis for a in self._dynamic_axes)

    @property
    def dtype(self):
        return np_dtype(self._dtype)

    def get_data_type(self):
        """CNTK's DataType code of the variable (cntk.cntk_py.DataType_*; 0 while unknown)."""
        return self._dtype

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
        """The Function this output variable is an output of (RuntimeError for other variables, as in CNTK)."""
        if self._kind != _OUTPUT:
            raise RuntimeError("called owner on %r, which is not an output variable" % (self,))
        o = self._owner
        if o is None:
            raise RuntimeError("the function that computes %r no longer exists" % (self,))
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
        from .core import _c_order
        view = _cntk.NDArrayView.from_numpy(_c_order(np.asarray(val, dtype=self.dtype)))
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
_NATIVE_NAMES = set(dir(Variable))
for _cls in (VariableMixin, TensorOpsMixin):
    for _k, _v in vars(_cls).items():
        if _k in _NATIVE_NAMES and not _k.startswith('__'):
            continue  # the native property serves these directly
        if not _k.startswith('__') or _k in ('__add__', '__radd__', '__sub__', '__rsub__', '__mul__', '__rmul__',
                                              '__truediv__', '__rtruediv__', '__matmul__', '__rmatmul__', '__neg__',
                                              '__pos__', '__abs__', '__lt__', '__le__', '__gt__', '__ge__',
                                              '__getitem__', '__pow__', '__rpow__', '__div__', '__rdiv__'):
            setattr(Variable, _k, _v)
Variable.__eq__ = _variable_eq
Variable.__ne__ = lambda self, other: not _variable_eq(self, other)
Variable.value = property(_value_get, _value_set, doc="The value of a parameter or constant as a NumPy array.")
Variable.set_value = _value_set
Variable.data = property(_data)
Variable.as_parameter = _as_parameter
Variable.as_constant = _as_constant
Variable.asarray = lambda self: self._value().to_numpy()
Variable.__array_priority__ = 100  # numpy defers to our operators: np_array + var builds a graph


def _make_input(shape=None, dtype=None, needs_gradient=False, is_sparse=False, dynamic_axes=None, name=''):
    from .axis import Axis
    if dynamic_axes is None:
        dynamic_axes = [Axis.default_batch_axis()]
    if isinstance(dynamic_axes, _cntk.Axis):
        dynamic_axes = [dynamic_axes]
    dynamic_axes = list(dynamic_axes)
    for a in dynamic_axes:
        if not isinstance(a, _cntk.Axis) or not a.is_dynamic_axis:
            raise TypeError("dynamic_axes must be dynamic Axis objects, got %r" % (a,))
    if len(dynamic_axes) > 2:
        raise ValueError("a variable has at most two dynamic axes (batch and sequence), got %d" % len(dynamic_axes))
    if not isinstance(name, str):
        raise TypeError("name must be a string, not %s" % type(name).__name__)
    return _cntk.input_variable(sanitize_shape(shape), dtype_code(dtype), bool(is_sparse), bool(needs_gradient),
                                dynamic_axes, name)


class _KindMeta(type):
    """Parameter and Constant are kinds of Variable: constructing one returns a
    Variable of that kind, and isinstance checks the kind."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _cntk.Variable) and obj._kind == cls._kind

    def __call__(cls, *args, **kwargs):
        return cls._create(*args, **kwargs)


_CLASS_DEFAULT = object()  # dtype not given to the Parameter/Constant class: float32, as in CNTK


_UNKNOWN_DATA_TYPE = 0  # CNTK's DataType::Unknown


def _resolve_dtype(dtype, data):
    """The dtype to store: the given one; for the class default float32; for None
    (what C.parameter/C.constant pass) the dtype of a NumPy array, else float32."""
    if dtype is _CLASS_DEFAULT:
        return np.float32
    if dtype is not None:
        return np_dtype(dtype_code(dtype))
    if isinstance(data, np.ndarray) and data.dtype in (np.float32, np.float64, np.float16):
        return data.dtype.type
    return np.float32


def _dense_value(value, shape, dtype):
    """An NDArrayView holding `value` (scalar, list, array or NDArrayView) as `dtype`, broadcast to `shape` if given."""
    if isinstance(value, _cntk.NDArrayView):
        value = value.to_numpy()
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise TypeError("cannot use %r as the value of a %s variable: %s" % (value, np.dtype(dtype).name, e))
    if shape is not None and arr.shape != shape:
        try:
            arr = np.broadcast_to(arr, shape)
        except ValueError:
            raise ValueError("a value of shape %s does not fit the shape %s" % (arr.shape, shape))
    from .core import _c_order
    return _cntk.NDArrayView.from_numpy(_c_order(arr))


def _has_inferred(shape):
    return any(d == _cntk.InferredDimension for d in shape)


class Parameter(VariableMixin, metaclass=_KindMeta):
    """A learnable parameter: `Parameter(shape=None, init=None, dtype=np.float32, device=None, name='')`.

    `init` is a scalar (every element, default 0), a list or NumPy array (its shape
    wins over `shape`), an NDArrayView, or an initializer such as `glorot_uniform()`.
    Dimensions given as `InferredDimension` are filled in when the parameter is first used.
    """
    _kind = _PARAMETER

    @staticmethod
    def _create(shape=None, init=None, dtype=_CLASS_DEFAULT, device=None, name=''):
        from .initializer import _is_initializer
        from .default_options import get_default_override, default_override_or
        if get_default_override(None, pure=default_override_or(False)):
            raise TypeError('parameters cannot be created inside a @Function def')
        if init is None:
            init = 0
        if dtype is _CLASS_DEFAULT:
            # as in CNTK, default_options(dtype=...) sets the type of parameters made
            # without one (the layers' weights)
            from .default_options import get_default_override, default_override_or
            dtype = get_default_override(Parameter, dtype=default_override_or(_CLASS_DEFAULT))
        if isinstance(dtype, int) and not isinstance(dtype, bool) and dtype == _UNKNOWN_DATA_TYPE:
            # CNTK's DataType_Unknown: the first op the parameter joins gives it its type.
            if not _is_initializer(init):
                raise ValueError("a parameter without a data type needs an initializer, not a value")
            return _cntk.parameter(sanitize_shape(shape), _UNKNOWN_DATA_TYPE, None, dict(init), name)
        dt = _resolve_dtype(dtype, init)
        code = dtype_code(dt)
        if not _is_initializer(init) and not np.isscalar(init):
            # a given array decides the shape; as in CNTK, `shape` is not even read then
            view = _dense_value(init, None, dt)
            return _cntk.parameter(view._shape, code, view, None, name)
        shape = sanitize_shape(shape)
        if _is_initializer(init):
            return _cntk.parameter(shape, code, None, dict(init), name)
        if np.isscalar(init) and _has_inferred(shape):
            return _cntk.parameter(shape, code, None, {'type': 'constant', 'value': float(init)}, name)
        view = _dense_value(init, shape, dt)
        return _cntk.parameter(view._shape, code, view, None, name)


class Constant(VariableMixin, metaclass=_KindMeta):
    """A constant: `Constant(value=None, shape=None, dtype=np.float32, device=None, name='')`.

    A scalar `value` (default 0) fills `shape`; with inferred dimensions in `shape`
    the value is created once they are known.
    """
    _kind = _CONSTANT

    @staticmethod
    def _create(value=None, shape=None, dtype=_CLASS_DEFAULT, device=None, name=''):
        if value is None:
            value = 0
        dt = _resolve_dtype(dtype, value)
        shape = sanitize_shape(shape) if shape is not None else None
        if np.isscalar(value) and shape is not None and _has_inferred(shape):
            return _cntk.constant_filled(shape, dtype_code(dt), float(value), name)
        return _cntk.constant(_dense_value(value, shape, dt), name)


def _variable_factory(shape=None, dtype=None, needs_gradient=False, is_sparse=False,
                      dynamic_axes=None, name=''):
    """`Variable(shape, dtype, needs_gradient, is_sparse, dynamic_axes, name)` makes an input
    variable; as in CNTK the default dynamic axes are the batch and the default sequence axis."""
    if isinstance(shape, _cntk.Variable):
        return shape
    from .axis import Axis
    if dynamic_axes is None:
        dynamic_axes = [Axis.default_batch_axis(), Axis.default_dynamic_axis()]
    return _make_input(shape, dtype, needs_gradient, is_sparse, dynamic_axes, name)


# The kinds show the value properties their instances (Variables) have.
for _kind in (Parameter, Constant):
    _kind.value = Variable.value
    _kind.data = Variable.data
