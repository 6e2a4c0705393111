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


# CNTK's DictionaryValue wrapped one value of a Dictionary; values are plain Python here.
def DictionaryValue(value=None):
    return value
