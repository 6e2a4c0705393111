"""NDArrayView and Value: data as the engine holds it, and conversions from and
to NumPy, lists of sequences and SciPy sparse matrices."""
import numbers

import numpy as np

from . import _cntk
from .device import use_default_device
from .internal import dtype_code, np_dtype, sanitize_shape
from .tensor import ArrayMixin

try:
    import scipy.sparse as _sparse
except ImportError:  # pragma: no cover - scipy is a dependency
    _sparse = None

NDArrayView = _cntk.NDArrayView
NDMask = _cntk.NDMask


def _is_sparse(x):
    return _sparse is not None and _sparse.issparse(x)


# ---------------------------------------------------------------- NDArrayView

def _view_from_dense(np_array, device=None, read_only=False, borrow=False):
    arr = np.asarray(np_array)
    if arr.dtype not in (np.float32, np.float64, np.float16):
        arr = arr.astype(np.float32)
    borrow = borrow and arr.flags.c_contiguous
    v = NDArrayView.from_numpy(np.require(arr, requirements="C"), borrow)
    v._is_read_only = bool(read_only or borrow)
    return v


def _view_from_csr(csr_array, device=None, read_only=False, borrow=False, shape=None):
    """A sparse NDArrayView from a SciPy CSR matrix: rows are samples, columns the sparse axis."""
    csr = _sparse.csr_matrix(csr_array)
    if csr.dtype not in (np.float32, np.float64):
        csr = csr.astype(np.float32)
    csr.sort_indices()
    shape = sanitize_shape(shape) if shape is not None else csr.shape
    v = NDArrayView.sparse(dtype_code(csr.dtype), shape, [int(i) for i in csr.indptr], [int(i) for i in csr.indices],
                           np.require(csr.data, requirements="C"))
    v._is_read_only = bool(read_only)
    return v


def _view_from_data(data, device=None, read_only=False, borrow=False):
    if isinstance(data, NDArrayView):
        return data
    if _is_sparse(data):
        return _view_from_csr(data, device, read_only, borrow)
    return _view_from_dense(data, device, read_only, borrow)


def _view_slice(self, start_offset, extent, read_only=True):
    """A view of the block starting at `start_offset` with sizes `extent` (per axis)."""
    start_offset = sanitize_shape(start_offset)
    extent = sanitize_shape(extent)
    v = self
    for axis, (b, n) in enumerate(zip(start_offset, extent)):
        v = v.slice(axis, b, b + n)
    # Trailing axes not named in extent keep their whole range; a shorter extent drops leading axes of size 1.
    v._is_read_only = bool(read_only)
    return v


def _as_numpy(self):
    return self.to_numpy()


def _view_asarray(self):
    if self._is_sparse:
        starts, indices, values = self.sparse_parts()
        shape = self._shape
        rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        return _sparse.csr_matrix((values, indices, starts), shape=(rows, shape[-1]))
    return self.to_numpy()


NDArrayView.from_dense = staticmethod(_view_from_dense)
NDArrayView.from_csr = staticmethod(_view_from_csr)
NDArrayView.from_data = staticmethod(_view_from_data)
NDArrayView.shape = property(lambda self: self._shape)
NDArrayView.dtype = property(lambda self: np_dtype(self._dtype))
NDArrayView.is_sparse = property(lambda self: self._is_sparse)
NDArrayView.is_read_only = property(lambda self: self._is_read_only)
NDArrayView.device = property(lambda self: use_default_device())
NDArrayView.slice_view = _view_slice
NDArrayView.asarray = _view_asarray
NDArrayView._as_numpy = _as_numpy
NDArrayView.__array__ = lambda self, dtype=None, copy=None: np.asarray(self.to_numpy(), dtype=dtype)
NDMask.__array__ = lambda self, dtype=None, copy=None: np.asarray(self.to_list(), dtype=dtype or np.int8).reshape(self.shape)
NDMask.asarray = lambda self: np.asarray(self.to_list(), dtype=np.int8).reshape(self.shape)


# ---------------------------------------------------------------------- Value

_NativeValue = _cntk.Value


class Value(_NativeValue):
    """Data for one variable: `Value(shape=None, dtype=None, batch=None, seq_starts=None, device=None)`.

    `batch` is a NumPy array `[batch, *shape]` or a list of sequences.
    """

    def __init__(self, shape=None, dtype=None, batch=None, seq_starts=None, device=None):
        if batch is None:
            if shape is None:
                raise ValueError("Value needs a batch or a shape")
            view = NDArrayView.zeros(dtype_code(dtype), sanitize_shape(shape))
            super(Value, self).__init__(view, None)
            return
        if isinstance(batch, (list, tuple)):
            seqs = [_view_from_data(np.asarray(s, dtype=dtype or np.float32) if not _is_sparse(s) else s) for s in batch]
            v = _NativeValue.from_sequences(seqs, True)
            super(Value, self).__init__(v._data, v._mask)
        else:
            arr = np.asarray(batch, dtype=dtype or (batch.dtype if isinstance(batch, np.ndarray) else np.float32))
            super(Value, self).__init__(_view_from_dense(arr), None)

    @staticmethod
    def create(var, data, seq_starts=None, device=None, read_only=False):
        """A Value for variable `var` from NumPy data, lists of sequences or SciPy sparse matrices."""
        return _to_value(var, data)

    @staticmethod
    def one_hot(batch, num_classes, dtype=None, device=None):
        """One-hot sequences from lists of class indices (a batch of sequences)."""
        if isinstance(batch, np.ndarray):
            batch = batch.tolist()
        seqs = []
        for s in batch:
            if isinstance(s, numbers.Integral):
                s = [s]
            seqs.append([int(i) for i in s])
        return _NativeValue.one_hot(seqs, int(num_classes), dtype_code(dtype), True)


def _value_as_sequences(self, variable=None):
    """The sequences with padding removed: a list of arrays (dense) or CSR matrices (sparse)."""
    if self._is_sparse:
        if variable is None:
            raise ValueError("as_sequences: sparse data needs the variable to unpack it")
        dense = self._data.to_dense()
        seqs = _NativeValue(dense, self._mask).unpack(1)
        return [_sparse.csr_matrix(s.to_numpy().reshape(s.to_numpy().shape[0], -1)) for s in seqs]
    seq_axes = 1
    if variable is not None and len(variable.dynamic_axes) < 2:
        seq_axes = 0
    return [s.to_numpy() for s in self.unpack(seq_axes)]


def _value_asarray(self):
    d = self._data
    if d._is_sparse:
        return d.to_dense().to_numpy()
    return d.to_numpy()


_NativeValue.shape = property(lambda self: self._shape)
_NativeValue.dtype = property(lambda self: np_dtype(self._dtype))
_NativeValue.data = property(lambda self: self._data)
_NativeValue.mask = property(lambda self: None if self._mask is None else self._mask.asarray())
_NativeValue.device = property(lambda self: use_default_device())
_NativeValue.is_sparse = property(lambda self: self._is_sparse)
_NativeValue.is_read_only = property(lambda self: self._data._is_read_only)
_NativeValue.is_valid = property(lambda self: self._is_valid)
_NativeValue.as_sequences = _value_as_sequences
_NativeValue.asarray = _value_asarray
_NativeValue.__array__ = lambda self, dtype=None, copy=None: np.asarray(_value_asarray(self), dtype=dtype)


# ------------------------------------------------------- user data <-> Values

def _csr_rows_view(csr, dtype, item_shape):
    csr = _sparse.csr_matrix(csr, dtype=dtype)
    rows = csr.shape[0]
    return _view_from_csr(csr, shape=(rows,) + tuple(item_shape))


def _to_value(var, data):
    """Converts user data for variable `var` into a native Value."""
    if isinstance(data, _NativeValue):
        return data
    if hasattr(data, 'data') and isinstance(getattr(data, 'data'), _NativeValue):  # MinibatchData
        return data.data
    dt = var.dtype
    n_dyn = len(var.dynamic_axes)
    shape = var.shape
    if isinstance(data, NDArrayView):
        return _NativeValue(data, None)
    if n_dyn == 2:
        if _is_sparse(data):
            data = [data]
        if isinstance(data, (list, tuple)):
            if len(data) == 0:
                raise ValueError("no sequences given for %s" % var)
            seqs = []
            for s in data:
                if _is_sparse(s):
                    seqs.append(_csr_rows_view(s, dt, shape))
                elif isinstance(s, NDArrayView):
                    seqs.append(s)
                else:
                    a = np.asarray(s, dtype=dt)
                    if a.ndim == len(shape):  # a sequence of one step without its length axis
                        a = a[np.newaxis]
                    seqs.append(_view_from_dense(np.require(a, requirements="C")))
            return _NativeValue.from_sequences(seqs, True)
        arr = np.asarray(data, dtype=dt)
        if arr.ndim == len(shape) + 1:  # one sequence
            arr = arr[np.newaxis]
        return _NativeValue(_view_from_dense(np.require(arr, requirements="C"), borrow=True), None)
    if _is_sparse(data):
        return _NativeValue(_csr_rows_view(data, dt, shape), None)
    if isinstance(data, (list, tuple)) and data and _is_sparse(data[0]):
        return _NativeValue(_csr_rows_view(_sparse.vstack(data), dt, shape), None)
    arr = np.asarray(data, dtype=dt)
    return _NativeValue(_view_from_dense(np.require(arr, requirements="C"), borrow=True), None)


def _from_value(var, value, as_numpy=True):
    """Native Value -> what CNTK returns: an array for a batch, a list of arrays for sequences."""
    if not as_numpy:
        return value
    if len(var.dynamic_axes) == 2:
        return _value_as_sequences(value, var)
    return _value_asarray(value)


def asarray(variable, value):
    """Converts `value` (a Value or NDArrayView) for `variable` into NumPy data."""
    if isinstance(value, NDArrayView):
        return value.asarray()
    return _from_value(variable, value, True)


def asvalue(variable, value):
    """Converts NumPy data or sequences into a Value for `variable`."""
    return _to_value(variable, value)


__all__ = ['NDArrayView', 'Value', 'NDMask', 'asarray', 'asvalue']
