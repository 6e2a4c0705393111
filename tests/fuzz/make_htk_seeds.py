"""Seeds for the fuzz-htk target: small HTK files (both byte orders, compressed, FESTREAM), MLFs,
a label mapping file and SCP lines, each behind the mode byte fuzz_htk.cpp reads first."""
import os
import struct
import sys

import numpy as np


def htk(frames, kind=9, big=True, compress=False):
    e = '>' if big else '<'
    frames = np.asarray(frames, np.float32)
    n, d = frames.shape
    if not compress:
        return struct.pack(e + 'iihh', n, 100000, 4 * d, kind) + frames.astype(e + 'f4').tobytes()
    a = np.full(d, 100.0, np.float32)
    b = np.zeros(d, np.float32)
    x = np.round(frames * a).astype(e + 'i2')
    return (struct.pack(e + 'iihh', n + 4, 100000, 2 * d, kind | 0o2000) + a.astype(e + 'f4').tobytes() +
            b.astype(e + 'f4').tobytes() + x.tobytes())


def main(out):
    os.makedirs(out, exist_ok=True)
    rs = np.random.RandomState(0)
    seeds = {
        'htk_be': b'\x00' + htk(rs.randn(3, 2)),
        'htk_le': b'\x00' + htk(rs.randn(2, 3), kind=6 | 0o100, big=False),
        'htk_c': b'\x00' + htk(rs.randn(4, 2), kind=7, compress=True),
        'htk_fe': b'\x00' + struct.pack('>iihh', 1, 100000, 4, 12) + bytes(16) + struct.pack('>f', 1.5),
        'deser_be': b'\x04' + htk(rs.randn(9, 2)),
        'deser_c': bytes([44]) + htk(rs.randn(6, 3), kind=7, compress=True),
        'deser_le': bytes([249]) + htk(rs.randn(12, 1), big=False),
        'mlf_states': b'\x05#!MLF!#\n"*/u1.lab"\n0 200000 sil -1.5 w\n200000 200000 sp\n200000 500000 a\n.\n'
                      b'"u2.rec"\r\n0 2 b\r\n2 3 sil\r\n.\r\n',
        'mlf_numeric': b'\x01#!MLF!#\n"u"\n0 1 x 0\n1 3 y 0\n.\n',
        'mapping': b'\x02sil\na_s2\n\nb_s3 \r\n',
        'scp': b'\x03a.mfc=/d/arch.htk[0,99]\nb=.../b.htk\nc.htk\nd=x[3,4]\r\n',
    }
    for name, data in seeds.items():
        with open(os.path.join(out, 'seed_' + name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main(sys.argv[1])
