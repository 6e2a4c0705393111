"""The file-format deserializers of cntk.io: CNTK Binary Format (CBF) and images, and the CTF -> CBF
converter. Each deserializer object describes its configuration; ``_native()`` builds the native
``_cntk.Deserializer`` that the minibatch source reads chunks from."""
import numbers

from .. import _cntk

__all__ = ['CBFDeserializer', 'ImageDeserializer', 'Base64ImageDeserializer', 'convert_ctf_to_cbf']


def _field(s, *names, default=None):
    """An entry of a StreamDef (a Record/dict, or any object with attributes)."""
    for n in names:
        v = s.get(n) if isinstance(s, dict) else getattr(s, n, None)
        if v is not None:
            return v
    return default


def _alias(key, s):
    return _field(s, 'stream_alias', 'field', default=None)


def _dim(s):
    shape = _field(s, 'dim', 'shape', default=None)
    if isinstance(shape, (tuple, list)):
        if len(shape) != 1:
            raise ValueError("stream shape must be one-dimensional, got %r" % (shape,))
        shape = shape[0]
    return shape


class CBFDeserializer(object):
    """Configures the CNTK Binary Format deserializer.

    Args:
        filename (str): the CBF file (as written by :func:`convert_ctf_to_cbf` or CNTK's ctf2bin.py).
        streams: a mapping from stream names to :class:`StreamDef` objects whose ``field`` names the
          stream in the file; the streams' shapes, sparsity and element types come from the file.
          Empty (the default): every stream of the file, under its own name.
    """

    def __init__(self, filename, streams={}):
        if not isinstance(filename, str):
            raise TypeError("CBFDeserializer: filename must be a str, not %s" % type(filename).__name__)
        self.filename = filename
        self.streams = dict(streams)
        self._selection = []
        for k, s in self.streams.items():
            field = _alias(k, s)
            self._selection.append((k, field if field is not None else k))
        self._deserializer = None

    def _native(self):
        if self._deserializer is None:
            d = _cntk.cbf_deserializer(self.filename, self._selection)
            # A shape given in a StreamDef must agree with the file's.
            for name, shape, _, _ in _cntk._deserializer_streams(d):
                dim = _dim(self.streams[name]) if name in self.streams else None
                if dim is not None and int(dim) != shape[0]:
                    raise ValueError("CBFDeserializer: stream '%s' has dimension %d in %s, not %s"
                                     % (name, shape[0], self.filename, dim))
            self._deserializer = d
        return self._deserializer

    def _cntk_configs(self):
        inputs = {name: dict(alias=field) for name, field in self._selection if field != name}
        return [dict(type='CNTKBinaryFormatDeserializer', file=self.filename, input=inputs)]


def _ratio_pair(value, name):
    """0.5, '0.5', '0.5:0.75' or (0.5, 0.75) -> (min, max)."""
    if isinstance(value, str):
        parts = value.split(':')
        if len(parts) not in (1, 2):
            raise ValueError("%s: expected 'x' or 'min:max', got %r" % (name, value))
        try:
            nums = [float(p) for p in parts]
        except ValueError:
            raise ValueError("%s: %r is not a number or a 'min:max' range" % (name, value))
    elif isinstance(value, numbers.Real):
        nums = [float(value)]
    elif isinstance(value, (tuple, list)) and len(value) in (1, 2):
        nums = [float(v) for v in value]
    else:
        raise TypeError("%s: expected a number or a 'min:max' string, got %r" % (name, value))
    return (nums[0], nums[-1])


def _crop_size(value):
    """256, '256', '256:224' or (256, 224) -> (width, height)."""
    if isinstance(value, str):
        parts = value.split(':')
        try:
            nums = [int(p) for p in parts]
        except ValueError:
            raise ValueError("crop_size: %r is not 'size' or 'width:height'" % (value,))
    elif isinstance(value, numbers.Integral):
        nums = [int(value)]
    elif isinstance(value, (tuple, list)):
        nums = [int(v) for v in value]
    else:
        raise TypeError("crop_size: expected an int or 'width:height', got %r" % (value,))
    if len(nums) not in (1, 2):
        raise ValueError("crop_size: expected 'size' or 'width:height', got %r" % (value,))
    return (nums[0], nums[-1])


def _native_transform(t):
    if not isinstance(t, dict) or 'type' not in t:
        raise TypeError("ImageDeserializer: transforms must be dicts made by cntk.io.transforms, got %r" % (t,))
    t = dict(t)
    if t['type'] == 'Crop':
        t['cropSize'] = _crop_size(t.get('cropSize', 0))
        for key, name, default in (('sideRatio', 'side_ratio', 0.0), ('areaRatio', 'area_ratio', 0.0),
                                   ('aspectRatio', 'aspect_ratio', 1.0)):
            t[key] = _ratio_pair(t.get(key, default), name)
    elif t['type'] == 'Scale':
        interp = t.get('interpolations', 'linear')
        if isinstance(interp, str):
            interp = [s for s in interp.split(':') if s] or ['linear']
        t['interpolations'] = list(interp)
        for key in ('width', 'height', 'channels', 'padValue'):
            if key in t and not isinstance(t[key], numbers.Integral):
                raise TypeError("scale: %s must be an int, got %r" % (key, t[key]))
    return t


class ImageDeserializer(object):
    """Configures the image deserializer: a map file with lines ``path<TAB>label`` (optionally
    ``sequence id<TAB>path<TAB>label``; relative paths are looked up beside the map file first).

    Args:
        filename (str): the map file.
        streams: a mapping from stream names to :class:`StreamDef` objects: the one with field
          ``'image'`` gives the images, shape ``(channels, height, width)`` (CHW, channels B, G, R,
          values 0..255 before mean/color), with its ``transforms`` (see :mod:`cntk.io.transforms`;
          a ``scale`` or a crop of fixed ``crop_size`` gives the width and height; channels are the
          scale's, else 3); the one with field ``'label'`` and ``shape`` = number of classes gives
          one-hot sparse labels (optional: without it the map file's labels are not read out). A path
          starting with ``...`` is taken relative to the map file's directory.
    """

    _base64 = False

    def __init__(self, filename, streams):
        if not isinstance(filename, str):
            raise TypeError("%s: filename must be a str, not %s" % (type(self).__name__, type(filename).__name__))
        self.filename = filename
        self.streams = dict(streams)
        self._image = self._label = None
        self._num_classes = None
        self._transforms = []
        for k, s in self.streams.items():
            alias = _alias(k, s)
            if alias == 'image':
                self._image = k
                transforms = _field(s, 'transforms', default=None) or []
                if isinstance(transforms, dict):
                    transforms = [transforms]
                self._transforms = [_native_transform(t) for t in transforms]
            elif alias == 'label':
                self._label = k
                self._num_classes = _dim(s)
            else:
                raise ValueError("ImageDeserializer: stream '%s' has field %r; the fields are 'image' and 'label'"
                                 % (k, alias))
        if self._image is None:
            raise ValueError("ImageDeserializer: no stream with field 'image'")
        if self._label is not None and (not isinstance(self._num_classes, numbers.Integral) or self._num_classes <= 0):
            raise ValueError("ImageDeserializer: the label stream needs shape = the number of classes (> 0), got %r"
                             % (self._num_classes,))
        self._natives = {}

    def _native(self, seed=0, sequences_per_chunk=256):
        """The native deserializer; random transforms are a function of ``seed`` (the minibatch source's
        randomization seed), the sweep and the sequence."""
        key = (int(seed), int(sequences_per_chunk))
        if key not in self._natives:
            self._natives[key] = _cntk.image_deserializer(self.filename, self._image, self._label or '',
                                                          int(self._num_classes or 0), self._transforms, key[0], key[1],
                                                          self._base64)
        return self._natives[key]

    def _cntk_configs(self):
        from ._config import image_transform_config
        # CNTK's image reader ends every transform list with a transpose (HWC -> CHW), which the
        # configuration shows; this deserializer gives CHW directly.
        transforms = [image_transform_config(t) for t in self._transforms] + [dict(type='Transpose')]
        inputs = {self._image: dict(transforms=transforms)}
        if self._label is not None:
            inputs[self._label] = dict(labelDim=int(self._num_classes))
        kind = 'Base64ImageDeserializer' if self._base64 else 'ImageDeserializer'
        return [dict(type=kind, file=self.filename, input=inputs)]


class Base64ImageDeserializer(ImageDeserializer):
    """Configures the image deserializer over a file whose lines hold the images themselves:
    ``label<TAB>base64 image`` (optionally ``sequence id<TAB>label<TAB>base64 image``), the base64 of
    a JPEG or PNG file. Streams and transforms are as for :class:`ImageDeserializer`.

    Args:
        filename (str): the file of labels and base64-encoded images.
        streams: a mapping from stream names to :class:`StreamDef` objects (fields ``'image'`` and
          ``'label'``).
    """
    _base64 = True


def _read_header_file(path):
    """CNTK's ctf2bin header: one stream per line, ``name alias dense|sparse dimension``."""
    streams = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise ValueError("%s:%d: expected 'name alias dense|sparse dimension', got %r" % (path, n, line.strip()))
            streams.append(tuple(parts))
    return streams


def convert_ctf_to_cbf(input_file, output_file, streams, chunk_size=32 * 1024 * 1024, precision='float'):
    """Converts a CNTK Text Format file into a CNTK Binary Format file (what CNTK's ctf2bin.py does).

    Args:
        input_file (str): the CTF file.
        output_file (str): the CBF file to write.
        streams: the streams to convert: a path to a ctf2bin header file (lines ``name alias
          dense|sparse dimension``), a list of ``(name, alias, 'dense'|'sparse', dim)`` tuples, or a
          mapping from names to :class:`StreamDef` objects (``field`` = alias, ``shape``, ``is_sparse``).
        chunk_size (int): bytes of data per chunk (a chunk is closed once it reaches this size).
        precision (str): 'float' or 'double'.

    Returns:
        int: the number of chunks written.
    """
    if isinstance(streams, str):
        streams = _read_header_file(streams)
    elif isinstance(streams, dict):
        streams = [(k, _alias(k, s) or k, 'sparse' if _field(s, 'is_sparse', default=False) else 'dense', _dim(s))
                   for k, s in streams.items()]
    native = []
    for entry in streams:
        if len(entry) != 4:
            raise ValueError("convert_ctf_to_cbf: a stream is (name, alias, 'dense'|'sparse', dim), got %r" % (entry,))
        name, alias, kind, dim = entry
        if str(kind).lower() not in ('dense', 'sparse'):
            raise ValueError("convert_ctf_to_cbf: stream '%s': matrix type must be dense or sparse, not %r" % (name, kind))
        try:
            dim = int(dim)
        except (TypeError, ValueError):
            raise ValueError("convert_ctf_to_cbf: stream '%s': dimension %r is not an integer" % (name, dim))
        if dim <= 0:
            raise ValueError("convert_ctf_to_cbf: stream '%s': dimension must be positive" % name)
        native.append((str(name), str(alias), str(kind).lower() == 'sparse', dim))
    if not isinstance(chunk_size, numbers.Integral) or chunk_size <= 0:
        raise ValueError("convert_ctf_to_cbf: chunk_size must be a positive number of bytes")
    return _cntk.convert_ctf_to_cbf(input_file, output_file, native, int(chunk_size), precision)
