"""cntk.io.LatticeDeserializer: lattice archives for lattice sequence training (see
src/io/lattice_deserializer.h for the TOC and archive formats)."""
from .. import _cntk

__all__ = ['LatticeDeserializer']


class _LatticeDeserializer(object):
    def __init__(self, lattice_index_file, stream_name, numeric_keys, chunk_size):
        self.lattice_index_file = lattice_index_file
        self.stream_name = stream_name
        self._numeric_keys = bool(numeric_keys)
        self._chunk_size = int(chunk_size)
        self._impl = None

    def _native(self):
        if self._impl is None:
            self._impl = _cntk.lattice_deserializer(self.lattice_index_file, self.stream_name, self._chunk_size,
                                                    self._numeric_keys)
        return self._impl

    def stream_names(self):
        return [self.stream_name]

    def _cntk_configs(self):
        return [dict(type='LatticeDeserializer', input={self.stream_name: dict(latticeIndexFile=self.lattice_index_file)})]

    def __repr__(self):
        return "LatticeDeserializer(%r, streams=[%r])" % (self.lattice_index_file, self.stream_name)


def LatticeDeserializer(lattice_index_file, streams, numeric_keys=False, chunk_size_in_bytes=64 * 1024 * 1024):
    """Configures a lattice deserializer: the lattices of lattice sequence training
    (:func:`cntk.losses.lattice_sequence_with_softmax`), joined by utterance name with the features and
    labels of the other deserializers. It cannot be the first deserializer of a MinibatchSource.

    Args:
        lattice_index_file (str): a file listing lattice TOC files, one path per line; a TOC line reads
          ``KEY=ARCHIVE[OFFSET]`` (``KEY=[OFFSET]`` continues the previous archive).
        streams: one stream, e.g. ``StreamDefs(lattice=StreamDef())``; it carries each utterance's lattice
          bytes as float32 samples of shape (1,), so its variable is
          ``sequence.input_variable(1, sequence_axis=Axis.new_unique_dynamic_axis('lattice'))``.
        numeric_keys (bool): keys are decimal numbers used as the sequence keys themselves (joins a CTF
          file's sequence ids); by default names are hashed as the HTK deserializers hash theirs.
        chunk_size_in_bytes (int): lattices of one archive are loaded in chunks of about this size.
    """
    if not isinstance(lattice_index_file, str):
        raise TypeError("LatticeDeserializer: lattice_index_file must be a str, not %s"
                        % type(lattice_index_file).__name__)
    if not hasattr(streams, 'keys') or len(streams) != 1:
        raise ValueError("LatticeDeserializer only accepts a single stream")
    name, s = list(streams.items())[0]
    alias = s.get('stream_alias') if isinstance(s, dict) else getattr(s, 'stream_alias', None)
    if alias and alias != name:
        raise ValueError("LatticeDeserializer does not support stream alias")
    if not isinstance(chunk_size_in_bytes, int) or isinstance(chunk_size_in_bytes, bool) or chunk_size_in_bytes <= 0:
        raise ValueError("LatticeDeserializer: chunk_size_in_bytes must be a positive integer, not %r"
                         % (chunk_size_in_bytes,))
    return _LatticeDeserializer(lattice_index_file, name, numeric_keys, chunk_size_in_bytes)
