"""CNTK's Dictionary: a string-keyed map of configuration values and saved states.

OpenCNTK's APIs take and return plain dicts; Dictionary is a dict that also reads and
writes CNTK's binary dictionary files (checkpoints, saved learner state), as CNTK's
native Dictionary did with `Dictionary.load(path)` / `save(path)`.
"""
from . import _cntk


class Dictionary(dict):
    """A dict with CNTK's Dictionary file methods."""

    @staticmethod
    def load(filename):
        """The Dictionary saved in `filename` (a CNTK checkpoint or dictionary file)."""
        return Dictionary(_cntk.load_dictionary(str(filename)))

    def save(self, filename):
        """Writes the dictionary to `filename` in CNTK's binary dictionary format."""
        _cntk.save_dictionary(dict(self), str(filename))


class DictionaryValue(object):
    """One value of a Dictionary (CNTK's DictionaryValue): OpenCNTK's APIs take plain
    Python values, and take a DictionaryValue for the value it holds. It reads and writes
    files of one value, as CNTK's DictionaryValue.save / load."""

    def __init__(self, value=None):
        self.value = value._cntk_dict_value if isinstance(value, DictionaryValue) else value

    @property
    def _cntk_dict_value(self):
        # the plain value the engine's conversions unwrap
        return self.value

    def save(self, filename):
        """Writes the value to `filename` (one protobuf DictionaryValue message)."""
        _cntk.save_dictionary_value(self.value, str(filename))

    @staticmethod
    def load(filename):
        """The DictionaryValue saved in `filename`."""
        return DictionaryValue(_cntk.load_dictionary_value(str(filename)))

    def __eq__(self, other):
        if not isinstance(other, DictionaryValue):
            return NotImplemented
        return _cntk.dictionary_value_bytes(self.value) == _cntk.dictionary_value_bytes(other.value)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __repr__(self):
        return 'DictionaryValue(%r)' % (self.value,)
