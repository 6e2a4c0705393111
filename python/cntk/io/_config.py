"""MinibatchSourceConfig and to_dictionary: the configuration object of the built-in composite
minibatch source as CNTK's native module exposed it (``cntk.cntk_py.MinibatchSourceConfig``), and its
rendering as the reader configuration dictionary (keys ``randomize``, ``frameMode``, ``deserializers``,
...). The deserializers stay the cntk.io objects; each describes itself as CNTK's deserializer
dictionary (``_cntk_configs()``)."""
from . import INFINITELY_REPEAT, DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS

__all__ = ['MinibatchSourceConfig', 'to_dictionary', 'OptionalBool']

# The reader module that reads each deserializer type in CNTK's plugin scheme; to_dictionary records it
# under 'module' as CNTK's configuration does.
_MODULE_OF_TYPE = {
    'CNTKTextFormatDeserializer': 'CNTKTextFormatReader',
    'CNTKBinaryFormatDeserializer': 'CNTKBinaryReader',
    'ImageDeserializer': 'ImageReader',
    'Base64ImageDeserializer': 'ImageReader',
    'HTKFeatureDeserializer': 'HTKDeserializers',
    'HTKMLFDeserializer': 'HTKDeserializers',
    'HTKMLFBinaryDeserializer': 'HTKDeserializers',
    'LatticeDeserializer': 'HTKDeserializers',
}


class OptionalBool(object):
    """A bool that may be unset (CNTK's Optional<bool>): ``set(v)``, ``get()``, ``is_initialized()``,
    ``reset()``."""

    def __init__(self):
        self._value = None

    def set(self, value):
        self._value = bool(value)

    def get(self):
        if self._value is None:
            raise ValueError("OptionalBool: the value is not set")
        return self._value

    def is_initialized(self):
        return self._value is not None

    def reset(self):
        self._value = None

    def __repr__(self):
        return "OptionalBool(%s)" % ('unset' if self._value is None else self._value)


def _default_trace_level():
    from ..logging import TraceLevel
    return int(TraceLevel.Warning)


class MinibatchSourceConfig(object):
    """Configuration of the built-in composite minibatch source.

    Args:
        deserializers: the deserializers (CTFDeserializer, ImageDeserializer, ...), a list or one.
        randomize (bool): False sets both randomization windows to 0.

    Attributes (CNTK's defaults): max_samples, max_sweeps (INFINITELY_REPEAT, mutually exclusive),
    randomization_window_in_chunks (DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS) and
    randomization_window_in_samples (0, mutually exclusive), randomization_seed (0), trace_level
    (TraceLevel.Warning), truncation_length (0), is_frame_mode_enabled (False; exclusive with
    truncation), is_multithreaded (an OptionalBool; unset: on when an image deserializer is present),
    max_errors (0). :func:`to_dictionary` validates the combination.
    """

    def __init__(self, deserializers=(), randomize=True):
        if not isinstance(deserializers, (list, tuple)):
            deserializers = [deserializers]
        self.deserializers = list(deserializers)
        self.max_samples = INFINITELY_REPEAT
        self.max_sweeps = INFINITELY_REPEAT
        self.randomization_window_in_chunks = DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS if randomize else 0
        self.randomization_window_in_samples = 0
        self.randomization_seed = 0
        self.trace_level = _default_trace_level()
        self.truncation_length = 0
        self.is_frame_mode_enabled = False
        self.is_multithreaded = OptionalBool()
        self.max_errors = 0

    def add_deserializer(self, deserializer):
        """Appends a deserializer; returns the configuration (calls chain)."""
        self.deserializers.append(deserializer)
        return self

    def validate(self):
        """Raises ValueError for mutually exclusive settings."""
        if self.max_samples != INFINITELY_REPEAT and self.max_sweeps != INFINITELY_REPEAT:
            raise ValueError("MinibatchSourceConfig: max_samples and max_sweeps are mutually exclusive; "
                             "at most one may differ from INFINITELY_REPEAT")
        if self.randomization_window_in_chunks and self.randomization_window_in_samples:
            raise ValueError("MinibatchSourceConfig: randomization_window_in_chunks and "
                             "randomization_window_in_samples are mutually exclusive; one must be 0")
        if self.is_frame_mode_enabled and self.truncation_length:
            raise ValueError("MinibatchSourceConfig: frame mode and truncation (truncation_length > 0) "
                             "are mutually exclusive")

    def create_minibatch_source(self):
        """The MinibatchSource this configuration describes."""
        from . import MinibatchSource
        self.validate()
        return MinibatchSource(self.deserializers, max_samples=self.max_samples, max_sweeps=self.max_sweeps,
                               randomization_window_in_chunks=self.randomization_window_in_chunks,
                               randomization_window_in_samples=self.randomization_window_in_samples,
                               randomization_seed=self.randomization_seed, trace_level=self.trace_level,
                               multithreaded_deserializer=(self.is_multithreaded.get()
                                                           if self.is_multithreaded.is_initialized() else None),
                               frame_mode=self.is_frame_mode_enabled, truncation_length=self.truncation_length,
                               randomize=bool(self.randomization_window_in_chunks or
                                              self.randomization_window_in_samples),
                               max_errors=self.max_errors)


def _deserializer_configs(d):
    """CNTK's configuration dictionaries of one deserializer (several for an HTK feature deserializer
    with several streams: each stream is a deserializer of its own); a dict is taken as it is."""
    if isinstance(d, dict) and 'type' in d:
        return [dict(d)]
    configs = getattr(d, '_cntk_configs', None)
    if configs is None:
        raise TypeError("MinibatchSourceConfig: %s is not a deserializer" % type(d).__name__)
    return configs()


def to_dictionary(config):
    """The reader configuration dictionary of a MinibatchSourceConfig, after validating it."""
    if not isinstance(config, MinibatchSourceConfig):
        raise TypeError("to_dictionary: expected a MinibatchSourceConfig, not %s" % type(config).__name__)
    config.validate()
    result = {}
    if config.randomization_window_in_samples:
        result.update(randomize=True, randomizationWindow=int(config.randomization_window_in_samples),
                      sampleBasedRandomizationWindow=True, randomizationSeed=int(config.randomization_seed))
    elif config.randomization_window_in_chunks:
        result.update(randomize=True, randomizationWindow=int(config.randomization_window_in_chunks),
                      sampleBasedRandomizationWindow=False, randomizationSeed=int(config.randomization_seed))
    else:
        result['randomize'] = False
    if config.truncation_length:
        result.update(truncated=True, truncationLength=int(config.truncation_length))
    result['frameMode'] = bool(config.is_frame_mode_enabled)
    level = config.trace_level
    result['traceLevel'] = int(level.value if hasattr(level, 'value') else level)
    if config.max_errors:
        result['maxErrors'] = int(config.max_errors)
    deserializers = []
    images = False
    for d in config.deserializers:
        for c in _deserializer_configs(d):
            kind = c.get('type')
            images = images or kind in ('ImageDeserializer', 'Base64ImageDeserializer')
            if kind in _MODULE_OF_TYPE:
                c['module'] = _MODULE_OF_TYPE[kind]
            elif 'module' not in c:
                raise ValueError("to_dictionary: unknown deserializer type %r" % (kind,))
            deserializers.append(c)
    multithreaded = config.is_multithreaded
    result['multiThreadedDeserialization'] = (multithreaded.get() if multithreaded.is_initialized() else images)
    result['deserializers'] = deserializers
    return result


def _colon_pair(pair, fmt):
    return '%s:%s' % (fmt % pair[0], fmt % pair[1])


def image_transform_config(t):
    """CNTK's dictionary of one image transform (ranges as 'min:max' strings)."""
    from ._formats import _native_transform
    t = _native_transform(t)
    if t['type'] == 'Crop':
        return dict(type='Crop', cropType=t.get('cropType', 'center'), cropSize=_colon_pair(t['cropSize'], '%d'),
                    sideRatio=_colon_pair(t['sideRatio'], '%g'), areaRatio=_colon_pair(t['areaRatio'], '%g'),
                    aspectRatio=_colon_pair(t['aspectRatio'], '%g'), jitterType=t.get('jitterType', 'none'))
    if t['type'] == 'Scale':
        t = dict(t)
        t['interpolations'] = ':'.join(t['interpolations'])
        return t
    return dict(t)
