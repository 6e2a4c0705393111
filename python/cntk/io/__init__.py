"""cntk.io: minibatch sources. MinibatchSource reads deserializers (CTFDeserializer, CBFDeserializer,
ImageDeserializer, HTKFeatureDeserializer and HTKMLFDeserializer for speech, deserializers written in
Python as UserDeserializer) through the engine's reader (src/io): randomization by chunks,
frame mode, truncated BPTT, data partitions, checkpointable position and prefetch on a background
thread. MinibatchSourceFromData and UserMinibatchSource are sources written in Python."""
import numbers
import weakref

import numpy as np

from ..core import Value, _to_value, _is_sparse
from ..variables import Record

INFINITELY_REPEAT = 2 ** 64 - 1
FULL_DATA_SWEEP = 2 ** 64 - 3
DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS = 128  # CNTK's: 4 GB of data in chunks of 32 MB


class StreamInformation(object):
    """Describes one stream of a minibatch source: name, id, storage format, dtype and sample shape."""

    def __init__(self, name, stream_id, storage_format, dtype, shape, defines_mb_size=False):
        self.m_name = name
        self.stream_id = stream_id
        self.storage_format = storage_format
        self.dtype = dtype
        self.shape = tuple(shape)
        self.defines_mb_size = defines_mb_size

    @property
    def name(self):
        """The stream's name."""
        return self.m_name

    @property
    def is_sparse(self):
        return self.storage_format == 'sparse'

    @property
    def sample_shape(self):
        """The shape of one sample (the same as `shape`; CNTK's name for it)."""
        return self.shape

    def __eq__(self, other):
        return isinstance(other, StreamInformation) and (self.name, self.stream_id) == (other.name, other.stream_id)

    def __hash__(self):
        return hash((self.name, self.stream_id))

    def __repr__(self):
        return "StreamInformation(%r, %d, %r, %s, %s)" % (self.name, self.stream_id, self.storage_format,
                                                          np.dtype(self.dtype).name, self.shape)


class MinibatchData(object):
    """One stream's data in a minibatch: a Value plus its sequence and sample counts."""

    def __init__(self, value, num_sequences, num_samples, sweep_end):
        self._value = value
        self._num_sequences = num_sequences
        self._num_samples = num_samples
        self._sweep_end = sweep_end
        self._batch = None

    def _value_for(self, var):
        """The Value as `var` takes it: the reader's [sequences, steps, ...] data loses its step axis
        for a variable without a sequence axis (every sequence must then be one sample long), and
        sparse data becomes dense for a dense variable."""
        from .. import _cntk
        value = self._value
        if value is None:
            raise ValueError("this partition's minibatch holds no data for %s" % (var,))
        if len(var._dynamic_axes) < 2 and value._mask is not None:
            if self._batch is None:
                try:
                    self._batch = _cntk.drop_sequence_axis(value)
                except ValueError as e:
                    raise ValueError("the data for %s (no sequence axis) has sequences longer than one sample; "
                                     "declare it with a sequence axis or read with frame_mode=True (%s)" % (var, e))
            value = self._batch
        if value._is_sparse and not var.is_sparse:
            value = _cntk.Value(value._data.to_dense(), value._mask)
        return value

    @property
    def data(self):
        """The Value holding the data."""
        return self._value

    @property
    def num_sequences(self):
        return self._num_sequences

    @property
    def num_samples(self):
        """Samples in the minibatch (for sequences: steps)."""
        return self._num_samples

    # CNTK's names of the same counts.
    number_of_sequences = num_sequences
    number_of_samples = num_samples

    @property
    def end_of_sweep(self):
        """True when this minibatch ends a pass over the data."""
        return self._sweep_end

    sweep_end = end_of_sweep

    @property
    def shape(self):
        return self._value.shape

    @property
    def mask(self):
        return self._value.mask

    @property
    def is_sparse(self):
        return self._value.is_sparse

    def as_sequences(self, variable=None):
        """The sequences with padding removed (NumPy arrays; SciPy CSR matrices for sparse data)."""
        if self._value._mask is not None and self._value._is_sparse and variable is None:
            from scipy import sparse
            dense = _NativeDense(self._value)
            return [sparse.csr_matrix(a.reshape(a.shape[0], int(np.prod(a.shape[1:])))) for a in dense]
        return self._value.as_sequences(variable)

    def asarray(self):
        """The data with its padding: a NumPy array; sparse data of rank 2 (no sequence axis, vector
        samples) as a SciPy CSR matrix. As in CNTK, sparse data of higher rank (which CSR cannot
        hold) comes out dense."""
        if self._value._is_sparse and len(self._value.shape) > 2:
            return self._value._data.to_dense().to_numpy()
        return self._value.asarray()

    def __len__(self):
        return self._num_sequences


class UserMinibatchSource(object):
    """Base of minibatch sources written in Python: implement stream_infos() and next_minibatch()."""

    def __init__(self):
        self._streams = None

    def stream_infos(self):
        raise NotImplementedError

    @property
    def streams(self):
        """The streams by name (a Record: `source.streams.features`)."""
        if self._streams is None:
            self._streams = Record(**{si.name: si for si in self.stream_infos()})
        return self._streams

    def stream_info(self, name):
        """The StreamInformation named `name`."""
        for si in self.stream_infos():
            if si.name == name:
                return si
        raise ValueError("no stream named '%s'" % name)

    def __getitem__(self, name):
        return self.stream_info(name)

    def next_minibatch(self, num_samples, number_of_workers=1, worker_rank=0, device=None):
        raise NotImplementedError

    def get_checkpoint_state(self):
        return {}

    def restore_from_checkpoint(self, state):
        pass

    def is_infinite(self):
        return False


def _NativeDense(value):
    """The sequences of a masked Value as dense NumPy arrays [len, *shape]."""
    from .. import _cntk
    return [v.to_numpy() for v in _cntk.Value(value._data.to_dense(), value._mask).unpack(1)]


def _sample_count(value):
    return len(value) if isinstance(value, list) else value.shape[0]


class MinibatchSourceFromData(UserMinibatchSource):
    """A minibatch source over in-memory data, read in order without randomization.

    `data_streams` maps stream names to NumPy arrays (rows are samples), SciPy CSR matrices,
    or `(list_of_sequences, type)` pairs whose type has a sequence axis
    (e.g. `Sequence[Tensor[3]]`). All streams must hold the same number of entries.
    After `max_samples` samples it returns empty minibatches; by default it repeats forever.
    """

    def __init__(self, data_streams, max_samples=INFINITELY_REPEAT):
        super(MinibatchSourceFromData, self).__init__()
        if not data_streams:
            raise ValueError("MinibatchSourceFromData: give at least one stream, as name=data or name=(data, type)")
        self._data, self._is_sequence, self._infos, self._vars = {}, {}, [], {}
        self._max_samples = max_samples
        count = None
        for i, (name, arg) in enumerate(data_streams.items()):
            type_ = None
            if isinstance(arg, tuple):
                arg, type_ = arg
            is_seq = type_ is not None and len(getattr(type_, 'dynamic_axes', ())) > 1
            if isinstance(arg, Value):
                arg = arg.asarray() if not arg.is_sparse else arg.data.asarray()
            first = arg[0] if isinstance(arg, list) else arg
            if not (isinstance(first, np.ndarray) or _is_sparse(first)):
                raise TypeError("MinibatchSourceFromData: stream '%s' must be a NumPy array, a CSR matrix "
                                "or a list of those" % name)
            n = _sample_count(arg)
            if n == 0:
                raise ValueError("MinibatchSourceFromData: stream '%s' is empty" % name)
            if count is None:
                count = n
            elif n != count:
                raise ValueError("MinibatchSourceFromData: all streams must have the same number of entries "
                                 "(%s has %d, expected %d)" % (name, n, count))
            shape = first.shape[1:] if is_seq or not isinstance(arg, list) else first.shape
            sparse = _is_sparse(first)
            self._data[name] = arg
            self._is_sequence[name] = is_seq
            self._types = getattr(self, '_types', {})
            self._types[name] = type_
            self._infos.append(StreamInformation(name, i, 'sparse' if sparse else 'dense',
                                                 first.dtype.type if hasattr(first, 'dtype') else np.float32, shape))
        self._count = count
        self._cursor = 0
        self._total = 0

    def stream_infos(self):
        return list(self._infos)

    def _length(self, name, index):
        return _sample_count(self._data[name][index]) if self._is_sequence[name] else 1

    def next_minibatch(self, num_samples, number_of_workers=1, worker_rank=0, device=None, input_map=None,
                       num_data_partitions=None, partition_index=None):
        """The next `num_samples` samples (whole sequences; at least one), as {StreamInformation: MinibatchData}
        (or {variable: MinibatchData} when `input_map` maps variables to streams)."""
        if num_data_partitions is not None:
            number_of_workers, worker_rank = num_data_partitions, partition_index or 0
        if self._total >= self._max_samples:
            return {}
        begin = end = self._cursor
        taken = {name: 0 for name in self._data}
        while end < self._count:
            grown = {name: taken[name] + self._length(name, end) for name in self._data}
            biggest = max(grown.values())
            if end > begin and (biggest > num_samples or self._total + biggest > self._max_samples):
                break
            taken = grown
            end += 1
        self._total += max(taken.values())
        at_end = end == self._count
        result = {}
        for si in self._infos:
            arg = self._data[si.name]
            part = arg[begin + worker_rank:end:number_of_workers]
            if self._is_sequence[si.name]:
                var = self._vars.get(si.name)
                if var is None:
                    from ..layers.typing import _to_input
                    var = self._vars[si.name] = _to_input(self._types[si.name])
                value = _to_value(var, list(part))
            elif _is_sparse(part):
                from ..core import _view_from_csr
                from .. import _cntk
                value = _cntk.Value(_view_from_csr(part.tocsr(), shape=(part.shape[0],) + si.shape), None)
            else:
                value = Value(batch=np.require(part, requirements='C'))
            n_seq = len(range(begin + worker_rank, end, number_of_workers))
            result[si] = MinibatchData(value, n_seq, taken[si.name] if number_of_workers == 1 else n_seq,
                                       at_end or self._total >= self._max_samples)
        self._cursor = 0 if at_end else end
        if input_map is not None:
            return {var: result[si] for var, si in input_map.items()}
        return result

    def get_checkpoint_state(self):
        return dict(cursor=self._cursor, total_num_samples=self._total)

    def restore_from_checkpoint(self, checkpoint):
        self._cursor = checkpoint['cursor']
        self._total = checkpoint['total_num_samples']


def _not_yet(name):
    def f(*args, **kwargs):
        raise NotImplementedError("cntk.io.%s is not implemented yet (data readers)" % name)
    f.__name__ = name
    return f


# Binary MLFs and lattices are not part of this package's readers yet.
for _n in ['HTKMLFBinaryDeserializer', 'LatticeDeserializer']:
    globals()[_n] = _not_yet(_n)

from ._formats import CBFDeserializer, ImageDeserializer, Base64ImageDeserializer, convert_ctf_to_cbf  # noqa: E402
from ._htk import HTKFeatureDeserializer, HTKMLFDeserializer  # noqa: E402
from . import transforms  # noqa: E402


# ---------------------------------------------------------------- stream definitions

def StreamDef(field=None, shape=None, is_sparse=False, transforms=None, context=None, scp=None, mlf=None,
              broadcast=None, defines_mb_size=False, max_sequence_length=None, dtype=None):
    """Configuration of one stream for a deserializer, as a Record.

    `field` is the stream's name in the file (for CTFDeserializer the name after '|'); `shape` its
    dimension (an int or a tuple; CTF reads shape's product values per sample, or indices below it
    when `is_sparse`). `transforms`, `context`, `scp`, `mlf`, `broadcast` configure the image and HTK
    deserializers. `defines_mb_size`: this stream's samples count for the minibatch size. `dtype`
    (an addition to CNTK's signature): numpy.float32 (default) or numpy.float64.
    """
    config = dict(stream_alias=field, is_sparse=bool(is_sparse))
    if shape is not None:
        config['dim'] = shape
    if transforms is not None:
        config['transforms'] = transforms
    if context is not None:
        config['context'] = context
    if scp is not None:
        config['scp'] = scp
    if mlf is not None:
        config['mlf'] = mlf
        config['is_sparse'] = True
    if broadcast is not None:
        config['broadcast'] = broadcast
    if max_sequence_length is not None:
        config['max_sequence_length'] = max_sequence_length
    if dtype is not None:
        config['dtype'] = dtype
    config['defines_mb_size'] = bool(defines_mb_size)
    return Record(**config)


StreamDefs = Record


class StreamConfiguration(object):
    """Configuration of a stream of a text-format reader: name, dim, sparsity, alias in the file."""

    def __init__(self, name, dim, is_sparse=False, stream_alias='', defines_mb_size=False):
        self.m_name = self.name = name
        self.dim = dim
        self.is_sparse = bool(is_sparse)
        self.stream_alias = stream_alias or name
        self.defines_mb_size = bool(defines_mb_size)


def _shape_of(name, stream):
    shape = stream.get('dim') if isinstance(stream, dict) else getattr(stream, 'dim', None)
    if shape is None:
        raise ValueError("stream '%s' needs a shape (StreamDef(shape=...))" % name)
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    shape = tuple(int(d) for d in shape)
    if not shape or any(d <= 0 for d in shape):
        raise ValueError("stream '%s' needs a positive shape, got %s" % (name, shape))
    return shape


def _dtype_code(name, dtype):
    from ..internal import dtype_code
    dt = np.dtype(np.float32 if dtype is None else dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError("stream '%s': only float32 and float64 data can be read, not %s" % (name, dt))
    return dtype_code(dt)


class _Deserializer(object):
    """Base of the deserializers MinibatchSource takes: `_native()` gives the engine's Deserializer."""

    def _native(self):
        raise NotImplementedError

    def stream_names(self):
        return list(self._native().stream_names)


class _CTFDeserializer(_Deserializer):
    def __init__(self, filename, streams, chunk_size, max_errors):
        if not isinstance(filename, str):
            raise TypeError("CTFDeserializer: filename must be a string, not %s" % type(filename).__name__)
        # (no streams: the engine's deserializer refuses it with a ValueError)
        self.filename = filename
        self._streams = []
        for name, s in streams.items():
            if isinstance(s, StreamConfiguration):
                alias, sparse, dtype, mb = s.stream_alias, s.is_sparse, None, s.defines_mb_size
            else:
                alias, sparse, dtype, mb = (s.get('stream_alias'), s.get('is_sparse', False), s.get('dtype'),
                                            s.get('defines_mb_size', False))
            if alias is None:
                raise ValueError("CTFDeserializer: stream name for key %s must be specified (StreamDef(field=...))"
                                 % name)
            self._streams.append((name, alias, _shape_of(name, s), bool(sparse), _dtype_code(name, dtype), bool(mb)))
        self._chunk_size = int(chunk_size)
        self._max_errors = int(max_errors)
        self._impl = None

    def _native(self):
        if self._impl is None:
            from .. import _cntk
            self._impl = _cntk.ctf_deserializer(self.filename, self._streams, self._chunk_size, self._max_errors)
        return self._impl

    def _cntk_configs(self):
        inputs = {name: dict(dim=int(np.prod(shape)), format='sparse' if sparse else 'dense', definesMBSize=mb,
                             alias=alias)
                  for name, alias, shape, sparse, _, mb in self._streams}
        return [dict(type='CNTKTextFormatDeserializer', file=self.filename, input=inputs)]

    def __repr__(self):
        return "CTFDeserializer(%r, streams=%s)" % (self.filename, [s[0] for s in self._streams])


def CTFDeserializer(filename, streams, chunk_size_in_bytes=32 * 1024 * 1024, max_errors=0):
    """A deserializer for the CNTK Text Format: lines ``[sequence_id] (|field values...)+``.

    `streams` maps stream names to StreamDef(field=..., shape=..., is_sparse=...). The file is indexed
    in one pass and read in chunks of about `chunk_size_in_bytes` (CNTK's default: 32 MB), never
    whole. A malformed line raises IOError naming the file and line; with `max_errors` = N, up to N
    malformed lines are skipped.
    """
    return _CTFDeserializer(filename, streams, chunk_size_in_bytes, max_errors)


class UserDeserializer(_Deserializer):
    """Base of deserializers written in Python. Implement stream_infos() (a list of StreamInformation),
    num_chunks() and get_chunk(chunk_id): a dict mapping each stream name to the chunk's data, a NumPy
    array or CSR matrix with one row per sample (each sample its own sequence), or a list of those, one
    per sequence. MinibatchSource then randomizes, partitions, checkpoints and prefetches it like any
    other deserializer; get_chunk is called on the reader's thread (with the GIL) and must not depend
    on the chunks read before. Chunks are read once when the source is built, to count them.
    """

    def __init__(self):
        self._impl = None
        self._last_chunk = None

    def stream_infos(self):
        raise NotImplementedError('should return a list of StreamInformation for all streams')

    def num_chunks(self):
        raise NotImplementedError('should return the total number of chunks')

    def get_chunk(self, chunk_id):
        raise NotImplementedError('should return the data of a chunk')

    def _infos(self):
        infos = list(self.stream_infos())
        if not infos:
            raise ValueError('UserDeserializer: stream_infos() must give at least one stream')
        return infos

    def _sequences(self, chunk_id):
        """The chunk as [(key, [stream data])] in the form the engine takes."""
        infos = self._infos()
        data = self.get_chunk(chunk_id)
        self._last_chunk = data
        if not isinstance(data, dict):
            raise TypeError("UserDeserializer.get_chunk must return a dict of stream name -> data, not %s"
                            % type(data).__name__)
        per_stream = []
        count = None
        for si in infos:
            if si.name not in data:
                raise ValueError("UserDeserializer.get_chunk(%d) gave no data for stream '%s'" % (chunk_id, si.name))
            d = data[si.name]
            seqs = list(d) if isinstance(d, list) else [d[i:i + 1] for i in range(d.shape[0])]
            if count is None:
                count = len(seqs)
            elif len(seqs) != count:
                raise ValueError("UserDeserializer.get_chunk(%d): stream '%s' has %d sequences, expected %d"
                                 % (chunk_id, si.name, len(seqs), count))
            dt = np.dtype(si.dtype)
            dim = int(np.prod(si.shape))
            conv = []
            for s in seqs:
                if _is_sparse(s):
                    csr = s.tocsr()
                    if not si.is_sparse:
                        conv.append(np.ascontiguousarray(csr.toarray(), dtype=dt).reshape(-1, dim))
                        continue
                    conv.append((np.ascontiguousarray(csr.indices, dtype=np.int32),
                                 np.ascontiguousarray(csr.indptr, dtype=np.int64),
                                 np.ascontiguousarray(csr.data, dtype=dt)))
                else:
                    a = np.asarray(s, dtype=dt)
                    a = np.ascontiguousarray(a.reshape(-1, dim) if a.size else a.reshape(0, dim))
                    if si.is_sparse:
                        from scipy import sparse
                        csr = sparse.csr_matrix(a)
                        conv.append((csr.indices.astype(np.int32), csr.indptr.astype(np.int64),
                                     np.ascontiguousarray(csr.data, dtype=dt)))
                    else:
                        conv.append(a)
            per_stream.append(conv)
        base = chunk_id << 32
        return [(base + i, [ps[i] for ps in per_stream]) for i in range(count or 0)]

    def _native(self):
        if self._impl is None:
            from .. import _cntk
            infos = self._infos()
            n = int(self.num_chunks())
            if n <= 0:
                raise ValueError('UserDeserializer: num_chunks() must be positive')
            chunks = []
            for c in range(n):
                seqs = self._sequences(c)
                samples = sum(max(_n_samples(d) for d in streams) for _, streams in seqs)
                chunks.append((len(seqs), samples))
            self._last_chunk = None
            streams = [(si.name, tuple(si.shape), si.is_sparse, _dtype_code(si.name, si.dtype),
                        bool(getattr(si, 'defines_mb_size', False))) for si in infos]
            ref = weakref.ref(self)  # the native object must not keep its Python owner alive (a cycle)

            def load(chunk_id):
                owner = ref()
                if owner is None:
                    raise ValueError("UserDeserializer: the deserializer object was deleted")
                return owner._sequences(chunk_id)
            self._impl = _cntk.py_deserializer(streams, chunks, load)
        return self._impl


def _n_samples(d):
    return len(d[1]) - 1 if isinstance(d, tuple) else d.shape[0]


# ---------------------------------------------------------------- MinibatchSource

class MinibatchSource(object):
    """Reads minibatches from deserializers (one, or several joined by sequence key).

    Args:
        deserializers: a deserializer or a list of them (CTFDeserializer, UserDeserializer, ...).
        max_samples: samples to read in all; afterwards next_minibatch returns {}. Exclusive with max_sweeps.
        max_sweeps: passes over the data to read in all.
        randomization_window_in_chunks: chunks whose sequences are shuffled together (chunk order is
         shuffled per sweep). randomization_window_in_samples: the window in samples instead.
        randomization_seed: the seed of the first sweep (each sweep adds one).
        trace_level: accepted for compatibility (the reader logs nothing).
        multithreaded_deserializer: accepted for compatibility (chunks load on the prefetch thread).
        frame_mode: every sample is read as a sequence of its own (randomized by sample).
        truncation_length: truncated BPTT: sequences are cut into pieces of this many samples that
         continue across minibatches (minibatch_size // truncation_length sequences side by side).
        randomize: False reads in file order.
        max_errors: malformed lines each text deserializer may skip (as CTFDeserializer's max_errors).
        prefetch: read the next minibatch on a background thread while the current one is used.
    """

    def __init__(self, deserializers, max_samples=INFINITELY_REPEAT, max_sweeps=INFINITELY_REPEAT,
                 randomization_window_in_chunks=DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS,
                 randomization_window_in_samples=0, randomization_seed=0, trace_level=None,
                 multithreaded_deserializer=None, frame_mode=False, truncation_length=0, randomize=True,
                 max_errors=0, prefetch=True):
        from .. import _cntk
        if not isinstance(deserializers, (list, tuple)):
            deserializers = [deserializers]
        if not deserializers:
            raise ValueError("MinibatchSource: give at least one deserializer")
        if not isinstance(max_errors, numbers.Integral) or max_errors < 0:
            raise ValueError("MinibatchSource: max_errors must be a non-negative integer, got %r" % (max_errors,))
        natives = []
        if isinstance(deserializers[0], _LatticeDeserializer):
            raise ValueError("MinibatchSource: a LatticeDeserializer cannot be the first (primary) deserializer; "
                             "put the features' deserializer first")
        for d in deserializers:
            if not hasattr(d, '_native'):
                raise TypeError("MinibatchSource: %s is not a deserializer (CTFDeserializer, UserDeserializer, ...)"
                                % type(d).__name__)
            if max_errors and isinstance(d, _CTFDeserializer) and d._max_errors < max_errors:
                d._max_errors = int(max_errors)  # the file is indexed (and checked) when first used
                d._impl = None
            if frame_mode and getattr(d, '_phone_boundaries', False):
                raise ValueError("MinibatchSource: frame_mode and an HTKMLFDeserializer with phoneBoundaries "
                                 "are mutually exclusive (phone boundaries mark sequences)")
            if hasattr(d, '_native_list'):  # one configuration, several engine deserializers (HTK feature streams)
                natives.extend(d._native_list())
                continue
            natives.append(d._native(seed=int(randomization_seed)) if isinstance(d, (ImageDeserializer,))
                           else d._native())
        for name, v in (('max_samples', max_samples), ('max_sweeps', max_sweeps),
                        ('randomization_window_in_chunks', randomization_window_in_chunks),
                        ('randomization_window_in_samples', randomization_window_in_samples),
                        ('truncation_length', truncation_length), ('randomization_seed', randomization_seed)):
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 0:
                raise ValueError("MinibatchSource: %s must be a non-negative integer, got %r" % (name, v))
        if randomization_window_in_samples and randomization_window_in_chunks not in (0, DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS):
            raise ValueError("MinibatchSource: randomization_window_in_chunks and randomization_window_in_samples "
                             "are mutually exclusive")
        self._deserializers = list(deserializers)
        self._max_samples = int(max_samples)
        self._max_sweeps = int(max_sweeps)
        self._impl = _cntk.MinibatchSource(natives, int(max_samples), int(max_sweeps), bool(randomize),
                                           int(randomization_window_in_chunks),
                                           int(randomization_window_in_samples), int(randomization_seed),
                                           bool(frame_mode), int(truncation_length), bool(prefetch))
        from ..internal import np_dtype
        self._infos = [StreamInformation(name, i, 'sparse' if sparse else 'dense', np_dtype(dt), shape, mb)
                       for i, (name, shape, sparse, dt, mb) in enumerate(self._impl.streams)]
        self._streams = None
        self._distributed = False

    def __del__(self):
        impl = getattr(self, '_impl', None)
        if impl is not None:
            impl.close()

    def stream_infos(self):
        """The StreamInformation of each stream."""
        return list(self._infos)

    @property
    def streams(self):
        """The streams by name (a Record: `source.streams.features`)."""
        if self._streams is None:
            self._streams = Record(**{si.name: si for si in self._infos})
        return self._streams

    def stream_info(self, name):
        """The StreamInformation named `name`."""
        for si in self._infos:
            if si.name == name:
                return si
        raise ValueError("MinibatchSource: no stream named '%s' (streams: %s)"
                         % (name, ", ".join(si.name for si in self._infos)))

    def __getitem__(self, name):
        return self.stream_info(name)

    def next_minibatch(self, minibatch_size_in_samples, input_map=None, device=None, num_data_partitions=None,
                       partition_index=None):
        """The next minibatch: {StreamInformation: MinibatchData}, or {variable: MinibatchData} with
        `input_map` ({variable: StreamInformation}); {} once max_samples / max_sweeps are reached.

        Sequences are taken whole while the minibatch stays within `minibatch_size_in_samples` (at least
        one). With `num_data_partitions` (workers), partition `partition_index` reads its own sequences
        of the global order (every n-th one in file order; randomized, those of every n-th chunk), up to
        its share of the size; max_samples counts the samples of all partitions, as in CNTK.
        """
        if not isinstance(minibatch_size_in_samples, numbers.Integral) or minibatch_size_in_samples <= 0:
            raise ValueError("next_minibatch: minibatch_size_in_samples must be a positive integer, got %r"
                             % (minibatch_size_in_samples,))
        parts = 1 if num_data_partitions is None else int(num_data_partitions)
        index = 0 if partition_index is None else int(partition_index)
        if parts < 1 or not 0 <= index < parts:
            raise ValueError("next_minibatch: partition_index %d is out of range for %d partitions" % (index, parts))
        self._distributed = parts > 1
        raw = self._impl.next_minibatch(int(minibatch_size_in_samples), parts, index)
        if raw is None:
            return {}
        result = {si: MinibatchData(v, nseq, nsmp, end) for si, (v, nseq, nsmp, end) in zip(self._infos, raw)}
        if input_map:
            out = {}
            for var, si in input_map.items():
                if isinstance(si, str):
                    si = self.stream_info(si)
                if si not in result:
                    raise ValueError("next_minibatch: input_map names %r, which is not a stream of this source" % (si,))
                out[var] = result[si]
            return out
        return result

    def get_checkpoint_state(self):
        """The position after the last minibatch returned (randomization included), as a dict."""
        return self._impl.checkpoint_state()

    def restore_from_checkpoint(self, checkpoint):
        """Continues from a position given by get_checkpoint_state (in this or another process)."""
        if not isinstance(checkpoint, dict):
            raise TypeError("restore_from_checkpoint: expected the dict from get_checkpoint_state, not %s"
                            % type(checkpoint).__name__)
        self._impl.restore_from_checkpoint(checkpoint)

    @property
    def current_position(self):
        """The position on the global timeline (get_checkpoint_state); assign one to move there."""
        return self.get_checkpoint_state()

    @current_position.setter
    def current_position(self, position):
        self.restore_from_checkpoint(position)

    @property
    def is_distributed(self):
        """Whether the last minibatch was read as one of several data partitions."""
        return self._distributed

    def is_infinite(self):
        """True when neither max_samples nor max_sweeps limits the data."""
        return self._max_samples == INFINITELY_REPEAT and self._max_sweeps == INFINITELY_REPEAT


# ---------------------------------------------------------------- CTF helpers

def _dense_to_str(data):
    return ' '.join(repr(float(v)) if not float(v).is_integer() else str(int(v)) if abs(v) < 1e15 else repr(float(v))
                    for v in np.asarray(data).ravel(order='C'))


def _sparse_to_str(data):
    return ' '.join('%s:%s' % (k, v) for k, v in sorted(data.items()))


def _is_tensor(data):
    """Whether `data` is a NumPy array or nested lists of numbers (judged by first elements). As in
    CNTK, a list holding NumPy arrays is not a tensor."""
    if isinstance(data, np.ndarray):
        return True
    if not isinstance(data, list):
        return False
    while isinstance(data, list) and data:
        data = data[0]
    return isinstance(data, numbers.Number) or (isinstance(data, list) and not data)


def sequence_to_cntk_text_format(seq_idx, alias_tensor_map):
    """The CTF lines of one sequence: `seq_idx` is its id; `alias_tensor_map` maps each field name to
    the sequence's samples, a tensor (dense; first axis the steps) or a list of {index: value} dicts
    (sparse). Fields are written in sorted order; a field shorter than the others is left out of the
    later lines. Returns the lines joined by newlines ('' for an empty sequence)."""
    if not alias_tensor_map:
        return ''
    max_len = max(len(t) for t in alias_tensor_map.values())
    lines = []
    for i in range(max_len):
        fields = []
        for alias, tensor in sorted(alias_tensor_map.items()):
            if i >= len(tensor):
                continue
            if isinstance(tensor, list) and tensor and isinstance(tensor[0], dict):
                fields.append('%s %s' % (alias, _sparse_to_str(tensor[i])))
            elif _is_tensor(tensor) or (isinstance(tensor, list) and all(isinstance(a, np.ndarray) for a in tensor)):
                fields.append('%s %s' % (alias, _dense_to_str(np.asarray(tensor)[i])))
            else:
                raise ValueError('sequence_to_cntk_text_format: expected a tensor (dense) or a list of dicts '
                                 '(sparse) for field %r, got %s' % (alias, type(tensor).__name__))
        lines.append('%i\t|' % seq_idx + ' |'.join(fields))
    return '\n'.join(lines)


from ._lattice import LatticeDeserializer, _LatticeDeserializer  # noqa: E402
