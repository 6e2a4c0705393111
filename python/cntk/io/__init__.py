"""cntk.io: minibatch sources. This module has the in-memory source
(MinibatchSourceFromData) and the types every source shares; the file readers
(CTF, CBF, images) arrive with the data-readers work and raise until then."""
import numpy as np

from ..core import Value, _to_value, _is_sparse
from ..variables import Record

INFINITELY_REPEAT = 2 ** 64 - 1
FULL_DATA_SWEEP = 2 ** 64 - 3
DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS = 4


class StreamInformation(object):
    """Describes one stream of a minibatch source: name, id, storage format, dtype and sample shape."""

    def __init__(self, name, stream_id, storage_format, dtype, shape, defines_mb_size=False):
        self.name = name
        self.m_name = name
        self.stream_id = stream_id
        self.storage_format = storage_format
        self.dtype = dtype
        self.shape = tuple(shape)
        self.defines_mb_size = defines_mb_size

    @property
    def is_sparse(self):
        return self.storage_format == 'sparse'

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
        """The sequences with padding removed (sparse data needs `variable`)."""
        return self._value.as_sequences(variable)

    def asarray(self):
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

    def next_minibatch(self, num_samples, number_of_workers=1, worker_rank=0, device=None):
        raise NotImplementedError

    def get_checkpoint_state(self):
        return {}

    def restore_from_checkpoint(self, state):
        pass

    def is_infinite(self):
        return False


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


for _n in ['MinibatchSource', 'CTFDeserializer', 'CBFDeserializer', 'ImageDeserializer', 'HTKFeatureDeserializer',
           'HTKMLFDeserializer', 'HTKMLFBinaryDeserializer', 'LatticeDeserializer', 'Base64ImageDeserializer',
           'StreamDef', 'StreamDefs', 'UserDeserializer', 'sequence_to_cntk_text_format']:
    globals()[_n] = _not_yet(_n)
