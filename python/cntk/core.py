"""NDArrayView and Value: data as the engine holds it, and conversions from and
to NumPy, lists of sequences and SciPy sparse matrices."""
import numbers
import warnings

import numpy as np

from . import _cntk
from .device import use_default_device
from .internal import dtype_code, np_dtype, sanitize_shape

try:
    import scipy.sparse as _sparse
except ImportError:  # pragma: no cover - scipy is a dependency
    _sparse = None

NDArrayView = _cntk.NDArrayView
NDMask = _cntk.NDMask
_NativeValue = _cntk.Value
_native_one_hot = _NativeValue.one_hot

_FLOAT_TYPES = (np.float32, np.float64, np.float16)
_INT_STORAGE_TYPES = (np.int8, np.int16)


def _c_order(a):
    """`a` in C order; unlike np.ascontiguousarray this keeps 0-d arrays 0-d."""
    return a if a.flags.c_contiguous else np.array(a, order='C')


def _is_sparse(x):
    return _sparse is not None and _sparse.issparse(x)


def _describe(var):
    return repr(var) if var is not None else 'the data'


# ---------------------------------------------------------------- NDArrayView

def _as_float_array(arr, what='data'):
    """`arr` as an array of a storable float type (integers and booleans become float32)."""
    if arr.dtype in _FLOAT_TYPES:
        return arr
    if arr.dtype.kind in 'iub':
        return arr.astype(np.float32)
    raise TypeError("%s of dtype %s cannot be stored; use float32, float64 or float16 numbers" % (what, arr.dtype))


def _view_from_dense(np_array, device=None, read_only=False, borrow=False):
    """An NDArrayView of a NumPy array; copied unless `borrow` (and then it shares the array's memory)."""
    if not isinstance(np_array, np.ndarray):
        raise TypeError("from_dense needs a numpy.ndarray, not %s" % type(np_array).__name__)
    # int8 and int16 data stays as it is (a storage type of CNTK's); other integers become float32.
    arr = np_array if np_array.dtype in _INT_STORAGE_TYPES else _as_float_array(np_array)
    borrow = bool(borrow) and arr is np_array and arr.flags.c_contiguous
    v = NDArrayView.from_numpy(_c_order(arr), borrow)
    v._is_read_only = bool(read_only) or (borrow and not arr.flags.writeable)
    return v


def _csr_of(x):
    if not _is_sparse(x):
        raise TypeError("expected a SciPy sparse matrix, not %s" % type(x).__name__)
    csr = x.tocsr() if x.format != 'csr' else x
    if csr.dtype not in _FLOAT_TYPES:
        csr = csr.astype(np.float32)
    if not csr.has_sorted_indices:
        csr = csr.sorted_indices()
    return csr


def _view_from_csr(csr_array, device=None, read_only=False, borrow=False, shape=None):
    """A sparse NDArrayView from a SciPy CSR matrix; `shape` (default: the matrix's)
    must end in the number of columns and hold as many elements as the matrix."""
    if not (_is_sparse(csr_array) and csr_array.format == 'csr'):
        raise TypeError("from_csr needs a scipy.sparse CSR matrix, not %s; convert with tocsr()"
                        % type(csr_array).__name__)
    csr = _csr_of(csr_array)
    shape = tuple(csr.shape) if shape is None else sanitize_shape(shape)
    if not shape or shape[-1] != csr.shape[1]:
        raise ValueError("the CSR matrix has %d columns but the last axis of shape %s is %s"
                         % (csr.shape[1], shape, shape[-1] if shape else 'missing'))
    if int(np.prod(shape)) != csr.shape[0] * csr.shape[1]:
        raise ValueError("the CSR matrix of shape %s does not hold the %d elements of shape %s"
                         % (csr.shape, int(np.prod(shape)), shape))
    v = NDArrayView.sparse(dtype_code(csr.dtype), shape, [int(i) for i in csr.indptr],
                           [int(i) for i in csr.indices], np.ascontiguousarray(csr.data))
    v._is_read_only = bool(read_only)
    return v


def _view_from_data(data, device=None, read_only=False, borrow=False):
    """An NDArrayView from a NumPy array, a NumPy scalar or a SciPy sparse matrix."""
    if isinstance(data, NDArrayView):
        return data
    if isinstance(data, np.number):
        data = np.asarray(data)
    if isinstance(data, np.ndarray):
        return _view_from_dense(data, device, read_only, borrow)
    if _is_sparse(data):
        return _view_from_csr(_csr_of(data), device, read_only, borrow)
    raise TypeError("data of type %s is not supported; give a NumPy array or a SciPy CSR matrix"
                    % type(data).__name__)


def _view_slice(self, start_offset, extent, read_only=True):
    """A view (no copy) of the block at `start_offset` (one index per axis) whose
    trailing axes have the sizes in `extent`; the leading axes `extent` leaves out
    are taken at their offset and dropped (CNTK's right-aligned extent)."""
    start = sanitize_shape(start_offset)
    ext = sanitize_shape(extent)
    shape = self._shape
    if len(start) != len(shape):
        raise ValueError("slice_view: start_offset %s must have one entry per axis of shape %s" % (start, shape))
    if len(ext) > len(shape):
        raise ValueError("slice_view: extent %s has more axes than shape %s" % (ext, shape))
    lead = len(shape) - len(ext)
    sizes = (1,) * lead + ext
    for axis, (b, n) in enumerate(zip(start, sizes)):
        if b < 0 or n < 0 or b + n > shape[axis]:
            raise ValueError("slice_view: [%d, %d) is out of bounds for axis %d of size %d"
                             % (b, b + n, axis, shape[axis]))
    v = self
    for axis, (b, n) in enumerate(zip(start, sizes)):
        v = v.slice(axis, b, b + n)
    for _ in range(lead):
        v = v.drop_axis(0)
    v._is_read_only = bool(read_only) or self._is_read_only
    return v


def _view_asarray(self):
    """The data as a NumPy array (a copy), or as a SciPy CSR matrix (rows x last axis) when sparse."""
    if self._is_sparse:
        starts, indices, values = self.sparse_parts()
        shape = self._shape
        rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        return _sparse.csr_matrix((values, indices, starts), shape=(rows, shape[-1]))
    return self.to_numpy()


def _view_deep_clone(self, device=None, read_only=False):
    """A copy with its own storage."""
    v = self.copy()
    v._is_read_only = bool(read_only)
    return v


def _view_alias(self, read_only=False):
    """Another view of the same storage."""
    if self._is_sparse:
        v = self.copy()
    elif self._shape:
        v = self.slice(0, 0, self._shape[0])
    else:
        v = self.reshape(())
    v._is_read_only = bool(read_only) or self._is_read_only
    return v


def _view_as_shape(self, shape):
    """The same data viewed with another shape of the same size."""
    return self.reshape(sanitize_shape(shape))


def _view_repr(self):
    return "NDArrayView(%s, %s%s)" % (self._shape, np.dtype(np_dtype(self._dtype)).name,
                                     ', sparse' if self._is_sparse else '')


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
NDArrayView.to_ndarray = lambda self: self.to_dense().to_numpy()
NDArrayView.deep_clone = _view_deep_clone
NDArrayView.alias = _view_alias
NDArrayView.as_shape = _view_as_shape
NDArrayView._as_numpy = lambda self: self.to_numpy()
NDArrayView.__array__ = lambda self, dtype=None, copy=None: np.asarray(self.to_numpy(), dtype=dtype)
NDArrayView.__repr__ = _view_repr


# --------------------------------------------------------------------- NDMask

NDMask.__array__ = lambda self, dtype=None, copy=None: np.asarray(self.to_list(), dtype=dtype or np.int8).reshape(
    self.shape)
NDMask.asarray = lambda self: np.asarray(self.to_list(), dtype=np.int8).reshape(self.shape)


# ---------------------------------------------------------------------- Value

def _apply_seq_starts(value, seq_starts):
    """Marks the sequences whose flag is False as continuations (mask entry 1 instead of 2 at t=0)."""
    if not seq_starts:
        return value
    shape = value._shape
    if len(shape) < 2:
        raise ValueError("seq_starts needs sequence data, but the value has shape %s" % (shape,))
    if len(seq_starts) != shape[0]:
        raise ValueError("seq_starts has %d entries for %d sequences" % (len(seq_starts), shape[0]))
    mask = value._mask
    if mask is None:
        mask = NDMask(shape[0], shape[1])
    for b, start in enumerate(seq_starts):
        if not start:
            mask._set(b, 0, _cntk.MaskKind_Valid)
    return _NativeValue(value._data, mask)


def _sequences_value(seqs, dtype=None):
    """A Value from a list of sequences (arrays [len, *shape], CSR matrices or NDArrayViews)."""
    if len(seqs) == 0:
        raise ValueError("no sequences given")
    views = []
    for s in seqs:
        if isinstance(s, NDArrayView):
            views.append(s)
        elif _is_sparse(s):
            views.append(_view_from_csr(_csr_of(s).astype(dtype) if dtype else _csr_of(s)))
        else:
            views.append(_view_from_dense(np.asarray(s, dtype=dtype)))
    return _NativeValue.from_sequences(views, True)


def _make_value(batch=None, seq_starts=None, device=None, shape=None, dtype=None):
    mask = None
    if batch is None:
        if shape is None:
            raise ValueError("Value needs a batch (or a shape and a dtype)")
        view = NDArrayView.zeros(dtype_code(dtype), sanitize_shape(shape))
    elif isinstance(batch, _NativeValue):
        view, mask = batch._data, batch._mask
    elif isinstance(batch, NDArrayView):
        view = batch
    elif isinstance(batch, np.ndarray):
        view = _view_from_dense(batch if dtype is None else batch.astype(dtype))
    elif _is_sparse(batch):
        view = _view_from_data(batch)
    elif isinstance(batch, (list, tuple)):
        v = _sequences_value(batch, dtype)
        view, mask = v._data, v._mask
    else:
        raise TypeError("Value: batch of type %s is not supported" % type(batch).__name__)
    return _apply_seq_starts(_NativeValue(view, mask), seq_starts)


class _ValueMeta(type):
    # Every Value is the engine's native Value; `Value(...)` makes one and isinstance accepts them all.
    def __call__(cls, batch=None, seq_starts=None, device=None, shape=None, dtype=None):
        return _make_value(batch, seq_starts, device, shape, dtype)

    def __instancecheck__(cls, obj):
        return isinstance(obj, _NativeValue)

    def __subclasscheck__(cls, sub):
        return isinstance(sub, type) and issubclass(sub, _NativeValue)


class Value(metaclass=_ValueMeta):
    """Data for one variable: `Value(batch, seq_starts=None, device=None)`.

    `batch` is a NumPy array `[batch, *shape]`, an NDArrayView, a SciPy sparse
    matrix, or a list of sequences (arrays `[len_i, *shape]` or CSR matrices).
    `seq_starts` marks, per sequence, whether it starts a new sequence (True) or
    continues the one of the previous minibatch (False). For compatibility,
    `Value(shape=..., dtype=...)` makes a value of zeros.
    """

    @staticmethod
    def create(var, data, seq_starts=None, device=None, read_only=False):
        """A Value for variable `var` from a NumPy batch, a list of sequences or samples,
        or SciPy sparse matrices (see `Function.forward` for the accepted forms)."""
        if not isinstance(var, _cntk.Variable):
            raise TypeError("Value.create needs a Variable, not %s" % type(var).__name__)
        if seq_starts:
            data = _with_seq_starts_layout(data)
        value = _apply_seq_starts(_to_value(var, data), seq_starts)
        if read_only:
            value._data._is_read_only = True
        return value

    # The index that gives an all-zero sample in one_hot.
    ONE_HOT_SKIP = _NativeValue.one_hot_skip

    @staticmethod
    def one_hot(batch, num_classes, dtype=None, device=None):
        """One-hot sparse sequences from lists of class indices.

        `num_classes` is the number of classes, or a sample shape whose last axis is
        the one-hot one: then each sample takes prod(shape[:-1]) consecutive indices.
        """
        if isinstance(num_classes, numbers.Integral):
            sample_shape = (int(num_classes),)
        else:
            sample_shape = sanitize_shape(num_classes)
        if not sample_shape or sample_shape[-1] <= 0:
            raise ValueError("Value.one_hot: num_classes must be positive, got %r" % (num_classes,))
        if isinstance(batch, np.ndarray):
            batch = batch.tolist()
        if isinstance(batch, (list, tuple)) and batch and len(sample_shape) == 1 and \
                all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in batch):
            # A flat list of indices: one sample each and no sequence axis (as CNTK).
            n = sample_shape[0]
            for i in batch:
                if not 0 <= i < n:
                    raise ValueError("Value.one_hot: index %d out of range for %d classes" % (i, n))
            code = dtype_code(dtype)
            view = NDArrayView.sparse(code, (len(batch), n), list(range(len(batch) + 1)), [int(i) for i in batch],
                                      np.ones(len(batch), dtype=np_dtype(code)))
            return _NativeValue(view, None)
        if not isinstance(batch, (list, tuple)) or not all(isinstance(s, (list, tuple, np.ndarray)) for s in batch):
            raise ValueError("Value.one_hot: the input must be a list of lists of integers")
        seqs = []
        for s in batch:
            # Plain ints or an integer array pass at once (a Python loop testing each
            # index costs more than building the whole Value); the slow check names the culprit.
            if isinstance(s, np.ndarray):
                if s.ndim == 1 and s.dtype.kind in 'iu':
                    seqs.append(s.tolist())
                    continue
            elif isinstance(s, list) and set(map(type, s)) <= {int}:
                seqs.append(s)
                continue
            s = list(s.tolist() if isinstance(s, np.ndarray) else s)
            for i in s:
                if not isinstance(i, numbers.Integral) or isinstance(i, bool):
                    raise ValueError("Value.one_hot: indices must be integers, not %r" % (i,))
            seqs.append([int(i) for i in s])
        code = dtype_code(dtype)
        if len(sample_shape) == 1:
            return _native_one_hot(seqs, sample_shape[0], code, True)
        per_sample = int(np.prod(sample_shape[:-1]))
        n = sample_shape[-1]
        views = []
        for s in seqs:
            if len(s) % per_sample:
                raise ValueError("Value.one_hot: a sequence of %d indices does not fill samples of shape %s"
                                 % (len(s), sample_shape))
            for i in s:
                if not (0 <= i < n or i == Value.ONE_HOT_SKIP):
                    raise ValueError("Value.one_hot: index %d out of range for %d classes" % (i, n))
            hot = [i for i in s if i != Value.ONE_HOT_SKIP]
            starts = np.cumsum([0] + [int(i != Value.ONE_HOT_SKIP) for i in s]).tolist()
            values = np.ones(len(hot), dtype=np_dtype(code))
            views.append(NDArrayView.sparse(code, (len(s) // per_sample,) + sample_shape, starts, hot, values))
        return _NativeValue.from_sequences(views, True)


def _value_as_sequences(self, variable=None):
    """The sequences with padding removed: NumPy arrays (dense) or SciPy CSR matrices
    (sparse, which needs `variable`). Without a sequence axis, the samples."""
    has_seq = variable is not None and len(variable.dynamic_axes) > 1
    if self._is_sparse:
        if variable is None:
            raise ValueError("as_sequences: cannot convert sparse data to sequences without its variable")
        dense = _NativeValue(self._data.to_dense(), self._mask)
        seqs = dense.unpack(1 if (has_seq or self._mask is not None) else 0)
        out = []
        for s in seqs:
            a = s.to_numpy()
            a = a.reshape(1, -1) if a.ndim == 1 else a.reshape(-1, a.shape[-1])
            out.append(_sparse.csr_matrix(a))
        return out
    if self._mask is not None:
        return [s.to_numpy() for s in self.unpack(1)]
    # without a mask, as CNTK: the entries along the first axis, whatever the layout
    arr = self._data.to_numpy()
    return [arr] if arr.ndim == 0 else list(arr)


def _value_asarray(self):
    """The data as a NumPy array (padding included), or as a CSR matrix when sparse."""
    return _view_asarray(self._data)


def _value_dense(self):
    return self._data.to_dense().to_numpy()


def _value_repr(self):
    return "Value(%s, %s%s%s)" % (self._shape, np.dtype(np_dtype(self._dtype)).name,
                                  ', sparse' if self._is_sparse else '', ', masked' if self._mask is not None else '')


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
_NativeValue.deep_clone = lambda self, read_only=False: _NativeValue(_view_deep_clone(self._data, None, read_only),
                                                                     self._mask)
_NativeValue.__len__ = lambda self: self._shape[0]
_NativeValue.__array__ = lambda self, dtype=None, copy=None: np.asarray(_value_dense(self), dtype=dtype)
_NativeValue.__repr__ = _value_repr
_NativeValue.create = staticmethod(Value.create)
_NativeValue.one_hot = staticmethod(Value.one_hot)
for _k in ('shape', 'dtype', 'data', 'mask', 'device', 'is_sparse', 'is_read_only', 'is_valid', 'as_sequences',
           'asarray', 'deep_clone'):
    setattr(Value, _k, getattr(_NativeValue, _k))


# ------------------------------------------------------- user data <-> Values

def _static_matches(declared, actual):
    """Whether a data shape fits a variable's static shape (free and inferred dimensions match any size)."""
    if len(declared) != len(actual):
        return False
    return all(d < 0 or d == a for d, a in zip(declared, actual))


def _csr_rows_view(var, csr, dtype):
    """A sparse view [n, *var.shape] from a CSR matrix whose columns are var's last axis."""
    csr = _csr_of(csr)
    if csr.dtype != dtype:
        csr = csr.astype(dtype)
    shape = var.shape
    if not shape or csr.shape[1] != shape[-1]:
        raise ValueError("sparse data for %s has %d columns, expected %s" % (_describe(var), csr.shape[1],
                                                                              shape[-1] if shape else 'none'))
    per_item = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    if csr.shape[0] % per_item:
        raise ValueError("sparse data for %s has %d rows, not a whole number of samples of shape %s"
                         % (_describe(var), csr.shape[0], shape))
    return _view_from_csr(csr, shape=(csr.shape[0] // per_item,) + tuple(shape))


def _dense_array(var, data):
    """`data` as a NumPy array of var's dtype, with a clear error for what cannot be converted."""
    try:
        arr = np.asarray(data)
    except ValueError as e:
        raise ValueError("the data for %s cannot be made into an array (%s); give sequences of differing "
                         "lengths as a list and samples of one shape" % (_describe(var), e))
    if arr.dtype == object or arr.dtype.kind in 'SUV':
        raise ValueError("the data for %s has elements of type %s; expected numbers of shape %s"
                         % (_describe(var), arr.dtype, var.shape))
    if arr.dtype.kind == 'c':
        raise TypeError("the data for %s is complex; only real numbers are supported" % _describe(var))
    return _c_order(arr.astype(var.dtype, copy=False))


def _with_seq_starts_layout(data):
    """Data given with sequence-start flags: as CNTK, one NumPy array is split along its
    first axis, one sequence per entry (as many as there are flags)."""
    if isinstance(data, np.ndarray):
        return list(np.atleast_1d(data))
    return data


def _split_seq_starts(data):
    """Splits CNTK's `(data, [True, False, ...])` form into data and sequence-start flags."""
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[1], (list, tuple)) and data[1] and \
            all(isinstance(b, (bool, np.bool_)) for b in data[1]):
        return data[0], list(data[1])
    return data, None


_FAST_CODES = {np.dtype(np.float32): 1, np.dtype(np.float64): 2}


def _to_value(var, data):
    """Converts user data for variable `var` into a native Value, checking shapes against `var`."""
    # Fast path for the common case: a C-contiguous array of the variable's type for a
    # batch (or static) variable is borrowed as is; the engine checks its shape.
    if type(data) is np.ndarray and data.flags.c_contiguous and _FAST_CODES.get(data.dtype) == var._dtype \
            and len(var._dynamic_axes) < 2 and data.ndim > len(var.shape):
        return _NativeValue(NDArrayView.from_numpy(data, True), None)
    data, seq_starts = _split_seq_starts(data)
    if seq_starts is not None:
        return _apply_seq_starts(_to_value(var, _with_seq_starts_layout(data)), seq_starts)
    if isinstance(data, _NativeValue):
        return data
    if hasattr(data, '_value_for'):  # MinibatchData: laid out for the variable
        return data._value_for(var)
    if hasattr(data, 'data') and isinstance(getattr(data, 'data'), _NativeValue):  # MinibatchData
        return data.data
    if isinstance(data, NDArrayView):
        return _NativeValue(data, None)
    if data is None:
        raise ValueError("no data given for %s" % _describe(var))
    dt = var.dtype
    n_dyn = len(var.dynamic_axes)
    shape = tuple(var.shape)
    if n_dyn == 2:
        if _is_sparse(data):
            data = [data]
        if isinstance(data, (list, tuple)):
            if len(data) == 0:
                raise ValueError("no sequences given for %s" % _describe(var))
            views = []
            for i, s in enumerate(data):
                if _is_sparse(s):
                    views.append(_csr_rows_view(var, s, dt))
                elif isinstance(s, NDArrayView):
                    views.append(s)
                else:
                    if isinstance(s, np.ndarray) and not s.flags.c_contiguous:
                        # as CNTK: the copy into C order costs, so say so
                        warnings.warn('data is not C contiguous; rearrange your data/computation to avoid '
                                      'costly data conversions', RuntimeWarning)
                    a = _dense_array(var, s)
                    if shape == (1,) and a.ndim > 0 and a.shape[-1] != 1:
                        a = a[..., np.newaxis]  # as CNTK: samples of one value may come without their axis
                    if _static_matches(shape, a.shape):  # a sequence of one step without its length axis
                        a = a[np.newaxis]
                    elif not _static_matches(shape, a.shape[1:]):
                        raise ValueError("sequence %d for %s has shape %s; expected (length,) + %s"
                                         % (i, _describe(var), a.shape, shape))
                    views.append(_view_from_dense(a))
            if len({v._dtype for v in views}) > 1 or len({v._is_sparse for v in views}) > 1:
                raise ValueError("the sequences for %s mix dense and sparse data or data types" % _describe(var))
            return _NativeValue.from_sequences(views, True)
        # As in CNTK, an array keeps its shape: (batch, length) + shape, or without the
        # leading axes one sequence (length,) + shape or a single sample (the engine reads them so).
        arr = _dense_array(var, data)
        if not any(_static_matches(shape, arr.shape[k:]) for k in (0, 1, 2)):
            raise ValueError("the data for %s has shape %s; expected (batch, length) + %s, (length,) + %s, "
                             "or a list of sequences" % (_describe(var), arr.shape, shape, shape))
        return _NativeValue(_view_from_dense(arr, borrow=True), None)
    if _is_sparse(data):
        return _NativeValue(_csr_rows_view(var, data, dt), None)
    if isinstance(data, (list, tuple)) and data and all(_is_sparse(d) for d in data):
        if n_dyn == 0:
            raise ValueError("a list of sparse matrices for %s, which has no dynamic axes; give one matrix"
                             % _describe(var))
        # As in CNTK, each matrix is a sequence (of length 1 for batch data): (batch, length) + shape.
        return _NativeValue.from_sequences([_csr_rows_view(var, d, dt) for d in data], True)
    if isinstance(data, (list, tuple)) and n_dyn == 1:
        # As in CNTK, each entry is a sequence of samples; a sample alone is a sequence of
        # length 1, so the Value is (batch, 1) + shape; the engine reads it as a batch.
        arr = _dense_array(var, data)
        if _static_matches(shape, arr.shape[1:]):
            arr = arr[:, np.newaxis]
        if not _static_matches(shape, arr.shape[2:]):
            raise ValueError("the samples given for %s have shape %s; expected %s (data of shape %s)"
                             % (_describe(var), arr.shape[1:], shape, arr.shape))
        return _NativeValue(_view_from_dense(arr, borrow=True), None)
    arr = _dense_array(var, data)
    return _NativeValue(_view_from_dense(arr, borrow=True), None)


def _from_value(var, value, as_numpy=True):
    """Native Value -> what CNTK returns: an array for a batch, a list of arrays for sequences."""
    if not as_numpy:
        return value
    if len(var._dynamic_axes) == 2:
        return [s if not _is_sparse(s) else s.toarray() for s in _value_as_sequences(value, var)]
    data = value._data
    if (data._is_sparse or var.is_sparse) and len(data._shape) <= 2:
        # as CNTK: a sparse result of rank <= 2 comes back as a SciPy CSR matrix (higher ranks dense)
        return _view_asarray(data) if data._is_sparse else _sparse.csr_matrix(data.to_numpy())
    return data.to_numpy()


def asarray(value, dtype=None):
    """`value` (a Value, NDArrayView or array-like) as a NumPy array (CSR for sparse data), cast to `dtype` if given.

    The older form `asarray(variable, value)` converts a Value as `variable` lays it out.
    """
    if isinstance(value, _cntk.Variable) and dtype is not None and not isinstance(dtype, type):
        return _from_value(value, dtype, True)
    if hasattr(value, 'asarray'):
        result = value.asarray()
    else:
        result = np.asarray(value)
        if result.dtype == object:
            raise ValueError("could not convert an instance of %s to an array" % type(value).__name__)
    if dtype is not None:
        result = result.astype(dtype)
    return result


def asvalue(variable, data_array):
    """Converts NumPy data, lists of sequences or SciPy sparse matrices into a Value for `variable`."""
    return _to_value(variable, data_array)


def user_function(user_func):
    """The composite Function rooted at `user_func`."""
    from .ops import as_composite
    return as_composite(user_func)


__all__ = ['NDArrayView', 'Value', 'NDMask', 'asarray', 'asvalue', 'user_function']
