"""TensorBoard event files: TFRecord framing around hand-encoded `Event` protobufs.

Only what scalar and image summaries need is encoded: Event{wall_time=1, step=2,
file_version=3, summary=5}, Summary{value=1}, Summary.Value{tag=1, simple_value=2,
image=4}, Summary.Image{height=1, width=2, colorspace=3, encoded_image_string=4}.
"""
import os
import socket
import struct
import time
import zlib

import numpy as np

_CRC_TABLE = []


def _crc32c_table():
    poly = 0x82F63B78
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        _CRC_TABLE.append(c)


def crc32c(data):
    if not _CRC_TABLE:
        _crc32c_table()
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked_crc(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number, wire_type):
    return _varint((number << 3) | wire_type)


def _bytes_field(number, payload):
    return _field(number, 2) + _varint(len(payload)) + payload


def _event(wall_time, step, file_version=None, summary=None):
    msg = _field(1, 1) + struct.pack('<d', wall_time)
    msg += _field(2, 0) + _varint(step & 0xFFFFFFFFFFFFFFFF)
    if file_version is not None:
        msg += _bytes_field(3, file_version.encode())
    if summary is not None:
        msg += _bytes_field(5, summary)
    return msg


def _scalar_summary(tag, value):
    v = _bytes_field(1, tag.encode()) + _field(2, 5) + struct.pack('<f', value)
    return _bytes_field(1, v)


def _png(pixels):
    """PNG bytes of an (height, width, channels) uint8 array: 1 channel is grayscale,
    3 are RGB, 4 are RGBA."""
    h, w, c = pixels.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[c]

    def chunk(kind, data):
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b''.join(b'\x00' + pixels[r].tobytes() for r in range(h))  # filter type 0 per row
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, color_type, 0, 0, 0)) +
            chunk(b'IDAT', zlib.compress(rows, 6)) + chunk(b'IEND', b''))


def _image_summary(tag, images):
    """Summary with one Image value per (height, width, channels) uint8 array, tagged
    '<tag>/image/<i>' as CNTK's writer tags them."""
    values = b''
    for i, img in enumerate(images):
        h, w, c = img.shape
        image = (_field(1, 0) + _varint(h) + _field(2, 0) + _varint(w) + _field(3, 0) + _varint(c) +
                 _bytes_field(4, _png(img)))
        values += _bytes_field(1, _bytes_field(1, ('%s/image/%d' % (tag, i)).encode()) + _bytes_field(4, image))
    return values


def to_image_pixels(batch):
    """A batch (N, C, H, W) of images as N (H, W, C) uint8 arrays: values saturate to
    0..255 as OpenCV's PNG writer (used by CNTK) casts them; 3 or 4 channels are taken
    as CNTK's BGR(A) order and stored as RGB(A)."""
    batch = np.asarray(batch)
    if batch.ndim != 4 or batch.shape[1] not in (1, 2, 3, 4):
        raise ValueError("write_image: images must be a batch of shape (N, channels, height, width) with 1 to 4 "
                         "channels, not %s" % (batch.shape,))
    pixels = np.clip(np.rint(batch), 0, 255).astype(np.uint8).transpose(0, 2, 3, 1)
    if pixels.shape[3] in (3, 4):
        pixels = pixels[..., [2, 1, 0] + ([3] if pixels.shape[3] == 4 else [])]
    return [np.ascontiguousarray(p) for p in pixels]


class EventFileWriter(object):
    """Appends records to `events.out.tfevents.<time>.<host>` in `log_dir`."""

    def __init__(self, log_dir):
        os.makedirs(log_dir, exist_ok=True)
        name = 'events.out.tfevents.%010d.%s' % (int(time.time()), socket.gethostname())
        self.path = os.path.join(log_dir, name)
        self._file = open(self.path, 'wb')
        self._write(_event(time.time(), 0, file_version='brain.Event:2'))

    def _write(self, record):
        header = struct.pack('<Q', len(record))
        self._file.write(header + struct.pack('<I', _masked_crc(header)) + record +
                         struct.pack('<I', _masked_crc(record)))

    def write_scalar(self, tag, value, step):
        self._write(_event(time.time(), int(step), summary=_scalar_summary(tag, float(value))))

    def write_image(self, tag, images, step):
        """One event with an image summary of the (height, width, channels) uint8 arrays `images`."""
        self._write(_event(time.time(), int(step), summary=_image_summary(tag, images)))

    def flush(self):
        self._file.flush()

    def close(self):
        self._file.close()
