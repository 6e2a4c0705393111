"""cntk.cntk_py: the native module under the name CNTK's scripts and tests import it by
(`from cntk.cntk_py import reset_random_seed`, `C.cntk_py.Dictionary()`).

It re-exports the objects of the extension `cntk._cntk` itself (the same functions and
types, not wrappers), plus the few names CNTK's native module had that OpenCNTK keeps in
Python: the Dictionary type, the DataType_* / StorageFormat_* constants, ProgressWriter
(CNTK's native base class of progress writers) and the MinibatchSource configuration.
"""
from ._cntk import *  # noqa: F401,F403
from ._cntk import Value, NDArrayView, Variable, Function, Axis  # noqa: F401

from .internal import FLOAT as _FLOAT, DOUBLE as _DOUBLE, FLOAT16 as _FLOAT16

# CNTK's DataType enumeration (CNTKLibrary.h), as its native module named the values.
DataType_Unknown = 0
DataType_Float = _FLOAT
DataType_Double = _DOUBLE
DataType_UChar = 3
DataType_Float16 = _FLOAT16
DataType_Int8 = 5
DataType_Int16 = 6
DataType_Int = DataType_Int8  # CNTK 2.7's native module had no plain int type; tests only compare it

# CNTK's StorageFormat enumeration.
StorageFormat_Dense = 0
StorageFormat_SparseCSC = 1
StorageFormat_SparseBlockCol = 2

# CNTK's Dictionary is a Python dict here (what every OpenCNTK API takes and returns).
from ._dictionary import Dictionary, DictionaryValue  # noqa: E402,F401
from .logging.progress_writer import ProgressWriter  # noqa: E402,F401
from .ops._conv import PoolingType_Max, PoolingType_Average  # noqa: E402,F401
from .io._config import MinibatchSourceConfig, to_dictionary, OptionalBool  # noqa: E402,F401


def is_native_user_function_registered(op_name):
    """Whether a native (C++) user function was registered under `op_name` with
    `cntk.ops.native_user_function`'s registry."""
    from .ops.functions import UserFunction
    return op_name in getattr(UserFunction, '_native_registry', {})


def use_sparse_gradient_aggregation_in_data_parallel_sgd(enable):
    """Sparse gradient aggregation in data-parallel training: gradients are aggregated
    densely here, whatever the setting, so the switch only records the request."""
    global _sparse_gradient_aggregation
    _sparse_gradient_aggregation = bool(enable)


_sparse_gradient_aggregation = True


def are_equal(a, b):
    """Whether two NDArrayViews (or Values) hold equal data of the same shape and type."""
    import numpy as np
    ad = a.asarray() if hasattr(a, 'asarray') else np.asarray(a)
    bd = b.asarray() if hasattr(b, 'asarray') else np.asarray(b)
    return ad.dtype == bd.dtype and ad.shape == bd.shape and bool(np.array_equal(ad, bd))


def set_float32_math(mode):
    """The arithmetic of float32 matrix products: 'float32' (the default) or 'bfloat16'.

    Under 'bfloat16', every float32 product (times, Dense, their gradients) reads its two operands rounded to
    bfloat16 and accumulates in float32; parameters, gradients, learner state and every other op stay float32.
    Where the CPU has no bfloat16 instructions (AVX512_BF16 or AMX), a warning says so and products stay
    float32. The reference backend always computes in float32. Unknown modes raise ValueError.
    """
    import warnings
    from ._cntk import _set_float32_math
    _set_float32_math(mode)
    if mode == 'bfloat16' and not bf16_math_available():  # noqa: F405: from the native module
        warnings.warn("set_float32_math('bfloat16'): this CPU has no bfloat16 instructions (AVX512_BF16 or AMX); "
                      "float32 products stay float32", RuntimeWarning, stacklevel=2)
