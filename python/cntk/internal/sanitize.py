"""CNTK's argument-sanitizing helpers (cntk.internal.sanitize_*), which CNTK code and
CNTK's tests call directly. They convert user input to what the engine takes: NumPy or
engine data types, Variables, Values, axis tuples."""
import numbers

import numpy as np

from .. import _cntk

# CNTK's DataType codes (CNTKLibrary.h): the engine uses the same numbers.
DT_UNKNOWN, DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_INT8, DT_INT16 = 0, 1, 2, 4, 5, 6
_CODE_OF_NP = {np.float32: DT_FLOAT, np.float64: DT_DOUBLE, np.float16: DT_FLOAT16, np.int8: DT_INT8,
               np.int16: DT_INT16}


def is_string(s):
    return isinstance(s, str)


def _as_tuple(x):
    """A scalar becomes a 1-tuple; anything iterable a tuple."""
    if np.isscalar(x):
        return (x,)
    return tuple(x)


def sanitize_precision(precision):
    """A precision given as an engine code, a string ('float', 'float32', 'double',
    'float64', 'float16', 'int8', 'int16') or a NumPy type -> the NumPy type (None for
    DataType_Unknown); ValueError otherwise."""
    table = [((DT_FLOAT, 'float', 'float32', np.float32), np.float32),
             ((DT_DOUBLE, 'double', 'float64', np.float64), np.float64),
             ((DT_FLOAT16, 'float16', np.float16), np.float16),
             ((DT_INT8, 'int8_t', 'int8', np.int8), np.int8),
             ((DT_INT16, 'int16_t', 'int16', np.int16), np.int16)]
    for names, result in table:
        if any(precision is n or (type(precision) is type(n) and precision == n) for n in names):
            return result
    if isinstance(precision, np.dtype):
        return sanitize_precision(precision.type)
    if precision is DT_UNKNOWN or (isinstance(precision, int) and precision == DT_UNKNOWN):
        return None
    raise ValueError('precision value: "%s" is not supported' % (precision,))


def sanitize_dtype_numpy(dtype):
    """A dtype given as a Python/NumPy type or a string -> the NumPy float type the engine
    computes in. Integer types map to float32 and Python's float to float64, as in CNTK."""
    is_type = isinstance(dtype, (type, np.dtype))
    if is_type and dtype in (int, np.float32) or getattr(dtype, 'kind', None) in ('i', 'u') \
            or isinstance(dtype, str) and dtype in ('float', 'float32'):
        return np.float32
    if is_type and dtype in (float, np.float64) or isinstance(dtype, str) and dtype in ('double', 'float64'):
        return np.float64
    if is_type and dtype == np.float16 or isinstance(dtype, str) and dtype == 'float16':
        return np.float16
    if is_type and dtype == np.int8 or isinstance(dtype, str) and dtype == 'int8':
        return np.int8
    if is_type and dtype == np.int16 or isinstance(dtype, str) and dtype == 'int16':
        return np.int16
    raise ValueError('data type "%s" is not supported' % (dtype,))


def sanitize_dtype_cntk(dtype):
    """A dtype (NumPy type, string, engine code or None) -> the engine's DataType code
    (None -> DataType_Unknown)."""
    if isinstance(dtype, numbers.Integral) and not isinstance(dtype, bool) and \
            int(dtype) in (DT_UNKNOWN, DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_INT8, DT_INT16):
        return int(dtype)
    if dtype is None or dtype is object:
        return DT_UNKNOWN
    return _CODE_OF_NP[sanitize_dtype_numpy(dtype)]


def data_type_to_dtype(data_type):
    """Engine DataType code -> NumPy type (object for DataType_Unknown)."""
    table = {DT_FLOAT: np.float32, DT_DOUBLE: np.float64, DT_FLOAT16: np.float16, DT_INT8: np.int8,
             DT_INT16: np.int16, DT_UNKNOWN: object}
    if data_type not in table:
        raise ValueError('data_type %s is not supported' % (data_type,))
    return table[data_type]


def sanitize_input(arg, fallback_dtype=np.float32, reshape=None):
    """Variables and Functions pass through; numbers, lists and arrays become a Constant
    of `fallback_dtype` (reshaped to `reshape` if given)."""
    from ..variables import Constant, _Type
    if isinstance(arg, (_cntk.Variable, _cntk.Function)):
        return arg
    if isinstance(arg, _Type):
        raise ValueError("Input is a type object (%s). Did you mean to pass 'input_variable(**%s)'?" % (arg, arg))
    if isinstance(arg, list) and not arg:
        raise ValueError('input is empty')
    if not isinstance(arg, np.ndarray) or arg.dtype != fallback_dtype:
        arg = np.asarray(arg, dtype=fallback_dtype)
    if reshape:
        arg = np.reshape(arg, reshape)
    return Constant(value=arg, dtype=None)  # None: the array's (fallback) type


def sanitize_batch(var, batch, seq_starts=None, device=None):
    """User data for `var` -> a Value (a Value passes through)."""
    from ..core import Value
    if isinstance(batch, _cntk.Value):
        if seq_starts is not None:
            raise ValueError('for directly passed Value objects sequence starts cannot be used yet.')
        return batch
    if seq_starts and len(var.dynamic_axes) <= 1:
        raise ValueError('you specified sequence begin markers, but your input does not contain a sequence axis.')
    return Value.create(var, batch, seq_starts, device)


def sanitize_value(shape, value, dtype, device):
    """`value` (or, for None, an uninitialized array of `shape`) -> an NDArrayView of `dtype`."""
    from ..core import NDArrayView
    if value is None:
        if shape is None:
            raise ValueError('you need to specify at least shape or value')
        return NDArrayView(shape, sanitize_dtype_cntk(dtype), device)
    np_dtype = sanitize_dtype_numpy(dtype)
    if isinstance(value, np.ndarray):
        value = value.astype(np_dtype, copy=False)
    elif np.isscalar(value) and shape:
        value = np.full(shape, value, dtype=np_dtype)
    else:
        value = np.asarray(value, dtype=np_dtype)
    return NDArrayView.from_dense(value, device)


def sanitize_function(arg):
    """A Function, or the owner of an output Variable; TypeError otherwise."""
    if isinstance(arg, _cntk.Variable):
        arg = arg.owner
    if not isinstance(arg, _cntk.Function):
        raise TypeError("Object of type '%s' cannot be cast to Variable" % type(arg).__name__)
    return arg


def sanitize_variable_or_function(arg):
    if isinstance(arg, (_cntk.Variable, _cntk.Function)):
        return arg
    raise TypeError("Object of type '%s' cannot be cast to Variable or Function" % type(arg).__name__)


def sanitize_variables_or_functions(arg):
    if arg is None:
        return []
    if isinstance(arg, (_cntk.Variable, _cntk.Function)):
        return [arg]
    return [sanitize_variable_or_function(a) for a in arg]


def sanitize_axis_list(axes):
    from . import sanitize_axis
    if not isinstance(axes, (list, tuple)):
        axes = [axes]
    return [sanitize_axis(a) for a in axes]


def sanitize_multi_axis_reduction_list(axes):
    from . import sanitize_axis
    if not isinstance(axes, (list, tuple)):
        axes = [axes]
    out = []
    for a in axes:
        if isinstance(a, _cntk.Axis) and a.is_sequence_axis:
            raise ValueError('Reduction operation over multiple axes can not contain sequence axis: %s' % a)
        out.append(sanitize_axis(a))
    return out


def sanitize_dynamic_axes(axes):
    """One Axis or a list of them -> a tuple of Axis in reverse (the engine's) order."""
    if type(axes) not in (list, tuple):
        axes = [axes]
    for a in axes:
        if not isinstance(a, _cntk.Axis):
            raise TypeError('type Axis expected, got %s instead' % type(a))
    return tuple(reversed(axes))


def sanitize_variable_value_dict(var_value_dict):
    """A dict of one entry -> its value; larger dicts pass through."""
    if len(var_value_dict) > 1:
        return var_value_dict
    return list(var_value_dict.values())[0]


def sanitize_permutation(perm):
    """CNTK's conversion of a permutation of the axes in NumPy order into the one that
    permutes the reversed axes alike (CNTK's engine stored axes in reverse order).
    OpenCNTK's engine keeps NumPy order, so its transpose does not use this.
    Negative entries count from the end; ValueError unless `perm` is a permutation."""
    n = len(perm)
    if not all(-n <= i < n for i in perm):
        raise ValueError('invalid permutation element: elements must be from {-len(perm), ..., len(perm)-1}')
    positive = [p if p >= 0 else n + p for p in perm]
    if len(set(positive)) != n:
        raise ValueError('duplicate item in permutation')
    return [n - 1 - positive[n - 1 - i] for i in range(n)]


def sanitize_random_args(shape, dtype):
    from . import sanitize_shape
    return sanitize_shape(shape), sanitize_dtype_cntk(dtype)
