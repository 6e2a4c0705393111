"""TensorBoard event files: TFRecord framing around hand-encoded `Event` protobufs.

Only what scalar summaries need is encoded: Event{wall_time=1, step=2,
file_version=3, summary=5}, Summary{value=1}, Summary.Value{tag=1, simple_value=2}.
"""
import os
import socket
import struct
import time

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

    def flush(self):
        self._file.flush()

    def close(self):
        self._file.close()
