"""CNTK's layout for models over 2 GB: metadata message first, tensor values after it.

Writing one needs a model over 2 GB (CNTK's persist tests do that); here a small file in
that layout is built by hand and read back.
"""
import struct

import numpy as np

import cntk as C


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def _msg(field, payload):
    return _key(field, 2) + _varint(len(payload)) + payload


def _view_meta(data_type, numpy_shape):
    dims = b''.join(_varint(d) for d in reversed(numpy_shape))  # CNTK's order: fastest axis first
    return _key(1, 0) + _varint(data_type) + _msg(3, _msg(1, dims))


def _dict_value_of_view(data_type, shape):
    return _key(1, 0) + _varint(1) + _key(2, 0) + _varint(11) + _msg(13, _view_meta(data_type, shape))


def test_a_dictionary_with_values_stored_after_the_message_loads():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = np.array([-3, 300], dtype=np.int16)
    entries = [(b'v', _dict_value_of_view(6, v.shape)), (b'w', _dict_value_of_view(1, w.shape))]
    meta = _key(1, 0) + _varint(1) + b''.join(_msg(2, _msg(1, k) + _msg(2, dv)) for k, dv in entries)
    # values in key order: int16 as sign-extended varints, float32 raw little-endian
    values = b''.join(_varint(int(x) & 0xFFFFFFFFFFFFFFFF) for x in v) + w.tobytes()
    data = struct.pack('<II', 0x636e746b, len(meta)) + meta + values
    d = C.cntk_py.Dictionary(C._cntk.dictionary_from_bytes(data))
    np.testing.assert_array_equal(np.asarray(d['w']), w)
    np.testing.assert_array_equal(np.asarray(d['v']), v)


def test_shapes_may_be_given_as_whole_floats():
    # as in CNTK (e.g. a size computed as 2**31 / 8 + 10)
    assert C.input_variable(4.0).shape == (4,)
    assert C.parameter((2, 3.0)).shape == (2, 3)
    import pytest
    with pytest.raises(TypeError):
        C.input_variable(2.5)
