"""The speech deserializers of cntk.io: HTK feature files listed in SCP files, and HTK master label
files (MLF). Each object describes its configuration; ``_native_list()`` builds the engine's
``_cntk.Deserializer`` objects (one per feature stream, joined by utterance name in the source)."""
import numbers

import numpy as np

__all__ = ['HTKFeatureDeserializer', 'HTKMLFDeserializer']

# CNTK's chunks: 15 minutes of 10 ms frames.
_FRAMES_PER_CHUNK = 15 * 60 * 100


def _get(s, name, default=None):
    v = s.get(name) if isinstance(s, dict) else getattr(s, name, None)
    return default if v is None else v


def _files(what, value):
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return list(value)
    raise TypeError("%s must be a file name or a list of file names, not %r" % (what, value))


def _dimension(who, name, s):
    shape = _get(s, 'dim')
    if shape is None:
        raise ValueError("%s: stream '%s' needs a dimension (StreamDef(shape=...))" % (who, name))
    if isinstance(shape, (tuple, list)):
        if len(shape) != 1:
            raise ValueError("%s: stream '%s' must be one-dimensional, got shape %r" % (who, name, shape))
        shape = shape[0]
    if not isinstance(shape, numbers.Integral) or shape <= 0:
        raise ValueError("%s: stream '%s' needs a positive dimension, got %r" % (who, name, shape))
    return int(shape)


def _dtype(who, name, s):
    from ..internal import dtype_code
    dt = np.dtype(_get(s, 'dtype', np.float32))
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError("%s: stream '%s' can be float32 or float64, not %s" % (who, name, dt))
    return dtype_code(dt)


class _HTKFeatureDeserializer(object):
    def __init__(self, streams, frames_per_chunk):
        if not streams:
            raise ValueError("HTKFeatureDeserializer: no feature streams found (give StreamDefs(name=StreamDef(...)))")
        self._configs = []
        for name, s in streams.items():
            if _get(s, 'stream_alias') is not None:
                raise ValueError("HTKFeatureDeserializer does not support stream names (field=...); "
                                 "stream '%s' has field %r" % (name, _get(s, 'stream_alias')))
            if _get(s, 'scp') is None:
                raise ValueError("HTKFeatureDeserializer: no scp files specified for stream '%s'" % name)
            scp = _files("HTKFeatureDeserializer: the scp of stream '%s'" % name, _get(s, 'scp'))
            dim = _dimension('HTKFeatureDeserializer', name, s)
            context = _get(s, 'context', (0, 0))
            if (not isinstance(context, (tuple, list)) or len(context) != 2 or
                    not all(isinstance(c, numbers.Integral) and c >= 0 for c in context)):
                raise ValueError("HTKFeatureDeserializer: the context of stream '%s' must be a pair "
                                 "(left, right) of non-negative frame counts, got %r" % (name, context))
            max_len = _get(s, 'max_sequence_length', 65535)
            if not isinstance(max_len, numbers.Integral) or max_len <= 0:
                raise ValueError("HTKFeatureDeserializer: max_sequence_length of stream '%s' must be a positive "
                                 "integer, got %r" % (name, max_len))
            self._configs.append((name, scp, dim, int(context[0]), int(context[1]), bool(_get(s, 'broadcast', False)),
                                  bool(_get(s, 'defines_mb_size', False)), int(max_len),
                                  _dtype('HTKFeatureDeserializer', name, s)))
        self._frames_per_chunk = int(frames_per_chunk)
        self._impl = None

    def _native_list(self):
        if self._impl is None:
            from .. import _cntk
            self._impl = [_cntk.htk_feature_deserializer(*c, frames_per_chunk=self._frames_per_chunk)
                          for c in self._configs]
        return self._impl

    def _native(self):
        natives = self._native_list()
        if len(natives) != 1:
            raise ValueError("HTKFeatureDeserializer: this configuration has %d streams, each its own deserializer"
                             % len(natives))
        return natives[0]

    def stream_names(self):
        return [c[0] for c in self._configs]

    def _cntk_configs(self):
        # One deserializer per feature stream, as CNTK's configuration flattens them.
        return [dict(type='HTKFeatureDeserializer',
                     input={name: dict(scpFile=scp[0] if len(scp) == 1 else list(scp), dim=dim,
                                       contextWindow=[left, right], expandToUtterance=broadcast,
                                       maxSequenceLength=max_len, definesMBSize=mb)})
                for name, scp, dim, left, right, broadcast, mb, max_len, _ in self._configs]

    def warnings(self):
        """What indexing skipped: duplicate utterance names, empty or over-long utterances."""
        from .. import _cntk
        return [w for d in self._native_list() for w in _cntk._htk_deserializer_warnings(d)]

    def __repr__(self):
        return "HTKFeatureDeserializer(streams=%s)" % [c[0] for c in self._configs]


def HTKFeatureDeserializer(streams, frames_per_chunk=_FRAMES_PER_CHUNK):
    """Configures the HTK feature reader that reads speech data from scp files.

    `streams` maps stream names to ``StreamDef(scp=..., shape=dim, context=(left, right),
    max_sequence_length=65535, defines_mb_size=False)``. Each SCP line names an utterance:
    ``key=path[start,end]`` (frames start..end of an HTK archive file), ``key=path`` or ``path``.
    The files hold HTK parameter frames (MFCC, FBANK, PLP or USER kinds; compressed files are read).
    With a context, each sample is frames t-left..t+right of its utterance side by side (edges repeat the
    first or last frame), dimension ``dim * (1 + left + right)``; without one, ``dim`` may be an odd
    multiple of the files' dimension, giving a symmetric window. Utterances are joined with the other
    deserializers (labels) by their keys. Utterances longer than max_sequence_length are skipped.

    A stream with ``broadcast=True`` (CNTK's expandToUtterance, e.g. i-vectors) has one frame per
    utterance, repeated over the frames of the primary deserializer's utterance of the same key; its
    deserializer cannot be the first one of the source.

    `frames_per_chunk` (an addition): frames per chunk of the randomizer (CNTK: 15 minutes, 90000).
    """
    return _HTKFeatureDeserializer(streams, frames_per_chunk)


class _HTKMLFDeserializer(object):
    def __init__(self, label_mapping_file, streams, phone_boundaries, frames_per_chunk):
        if len(streams) != 1:
            raise ValueError("HTKMLFDeserializer only accepts a single stream, got %d" % len(streams))
        if label_mapping_file is not None and not isinstance(label_mapping_file, str):
            raise TypeError("HTKMLFDeserializer: label_mapping_file must be a file name, not %r" % (label_mapping_file,))
        (name, s), = streams.items()
        if _get(s, 'stream_alias') is not None:
            raise ValueError("HTKMLFDeserializer does not support stream names (field=...); stream '%s' has field %r"
                             % (name, _get(s, 'stream_alias')))
        if _get(s, 'mlf') is None:
            raise ValueError("HTKMLFDeserializer: no master label files specified for stream '%s'" % name)
        self._config = (name, label_mapping_file or '', _dimension('HTKMLFDeserializer', name, s),
                        _files("HTKMLFDeserializer: the mlf of stream '%s'" % name, _get(s, 'mlf')),
                        bool(phone_boundaries), _dtype('HTKMLFDeserializer', name, s),
                        bool(_get(s, 'defines_mb_size', False)))
        self._phone_boundaries = bool(phone_boundaries)
        self._frames_per_chunk = int(frames_per_chunk)
        self._impl = None

    def _native(self):
        if self._impl is None:
            from .. import _cntk
            self._impl = _cntk.htk_mlf_deserializer(*self._config, frames_per_chunk=self._frames_per_chunk)
        return self._impl

    def stream_names(self):
        return [self._config[0]]

    def _cntk_configs(self):
        name, mapping, dim, mlfs, boundaries = self._config[:5]
        labels = dict(labelMappingFile=mapping, dim=dim, phoneBoundaries='true' if boundaries else 'false')
        if len(mlfs) == 1:
            labels['mlfFile'] = mlfs[0]
        else:
            labels['mlfFileList'] = list(mlfs)
        return [dict(type='HTKMLFDeserializer', input={name: labels})]

    def warnings(self):
        """What parsing skipped: entries without labels."""
        from .. import _cntk
        return list(_cntk._htk_deserializer_warnings(self._native()))

    def __repr__(self):
        return "HTKMLFDeserializer(%r, streams=[%r])" % (self._config[1], self._config[0])


def HTKMLFDeserializer(label_mapping_file, streams, phoneBoundaries=False, frames_per_chunk=_FRAMES_PER_CHUNK):
    """Configures an HTK label reader that reads speech HTK format MLF (Master Label File).

    `label_mapping_file` lists one state name per line (the line's index among the non-empty lines is
    its class); `streams` has one ``StreamDef(mlf=file or [files], shape=number of classes)``. Each
    frame's label comes out as a one-hot sparse sample. Times in the MLF are in 100 ns units (HTK) or,
    for entries shorter than 99999, frame numbers (as CNTK reads them). With `phoneBoundaries` (for CTC
    training) the first frame of each label range has the value 2 instead of 1. Passing None as the
    mapping file (an addition) reads four-column lines ``start end name class``.
    """
    return _HTKMLFDeserializer(label_mapping_file, streams, phoneBoundaries, frames_per_chunk)
