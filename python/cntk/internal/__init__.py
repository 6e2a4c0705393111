"""Helpers shared by the package: dtype codes, argument sanitizing, data conversion."""
import numbers

import numpy as np

from .. import _cntk

# Data type codes of the native engine (CNTK's DataType numbering).
# INT8 and INT16 are storage types: parameters and constants hold them, ops compute in floats.
FLOAT, DOUBLE, FLOAT16, INT8, INT16 = 1, 2, 4, 5, 6
_NP_OF_CODE = {FLOAT: np.float32, DOUBLE: np.float64, FLOAT16: np.float16, INT8: np.int8, INT16: np.int16}


def dtype_code(dtype):
    """NumPy dtype (or None for float32) -> engine code."""
    if dtype is None:
        return FLOAT
    if isinstance(dtype, int) and dtype in _NP_OF_CODE:
        return dtype
    dt = np.dtype(dtype)
    if dt == np.float32:
        return FLOAT
    if dt == np.float64:
        return DOUBLE
    if dt == np.float16:
        return FLOAT16
    if dt == np.int8:
        return INT8
    if dt == np.int16:
        return INT16
    raise TypeError("data type %s is not supported (use float32, float64, float16, int8 or int16)" % dt)


def np_dtype(code):
    return _NP_OF_CODE[code]


def sanitize_shape(shape):
    """An int or a sequence of ints -> a tuple of ints (None -> ()); TypeError otherwise."""
    if shape is None:
        return ()
    if isinstance(shape, numbers.Number) and not isinstance(shape, bool):
        return sanitize_shape((shape,))
    if isinstance(shape, (str, bytes)) or not hasattr(shape, '__iter__'):
        raise TypeError("a shape must be an int or a tuple of ints, not %r" % (shape,))
    dims = tuple(shape)
    for d in dims:
        # CNTK took whole floats as dimensions too (e.g. 2**31 / 8 + 10)
        whole_float = isinstance(d, numbers.Real) and not isinstance(d, numbers.Integral) and float(d).is_integer()
        if (not isinstance(d, numbers.Integral) and not whole_float) or isinstance(d, bool):
            raise TypeError("a shape must be an int or a tuple of ints, not %r" % (shape,))
    return tuple(int(d) for d in dims)


def sanitize_dtype_default(*values):
    """The dtype of the first value that has one, else float32."""
    for v in values:
        if isinstance(v, _cntk.Variable):
            return np_dtype(v._dtype)
        if isinstance(v, _cntk.Function):
            outs = v._outputs()
            return np_dtype(outs[0]._dtype) if len(outs) == 1 else np.float32
    for v in values:
        if isinstance(v, np.ndarray) and v.dtype in (np.float64, np.float16):
            return v.dtype.type
    return np.float32


def as_variable(x, dtype=None, name=''):
    """Variables pass through; Functions give their single output; data becomes a Constant."""
    if isinstance(x, _cntk.Variable):
        return x
    if isinstance(x, _cntk.Function):
        return x.output
    if x is None:
        raise TypeError("an operand is None")
    from ..variables import _Type
    if isinstance(x, _Type):
        raise ValueError("Input is a type object (%s). Did you mean to pass 'input(%s)'?" % (x, x))
    from ..variables import Constant
    return Constant(value=x, dtype=dtype, name=name)


def sanitize_inputs(*xs):
    """Converts operands to Variables, giving constants the dtype of the variable operands."""
    dtype = sanitize_dtype_default(*xs)
    return [as_variable(x, dtype) for x in xs]


def sanitize_axis(axis):
    from ..axis import Axis
    if axis is None:
        return Axis.all_static_axes()
    if isinstance(axis, _cntk.Axis):
        return axis
    if isinstance(axis, numbers.Integral):
        return Axis(int(axis))
    raise TypeError("axis must be an int or an Axis, not %s" % type(axis).__name__)


def sanitize_multi_axis(axis):
    """A list of Axis for reductions: None -> all static axes; tuples allowed."""
    if isinstance(axis, (tuple, list)):
        return [sanitize_axis(a) for a in axis]
    return [sanitize_axis(axis)]


# CNTK's own helper names (cntk.internal.sanitize_*, cntk.internal.utils), which CNTK code imports.
from .sanitize import *  # noqa: E402,F401,F403
from .sanitize import _as_tuple  # noqa: E402,F401


def _value_as_sequence_or_array(val, var):
    """A Value as CNTK returns it for `var`: a list of per-sequence arrays when `var` has a
    sequence axis, else one array."""
    if len(var.dynamic_axes) > 1:
        return val.as_sequences(var)
    return val.asarray()
from .swig_helper import typemap, map_if_possible  # noqa: E402,F401
