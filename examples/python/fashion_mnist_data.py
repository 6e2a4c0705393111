"""Fashion-MNIST from Debian's dataset-fashion-mnist package (IDX files, gzip)."""
import gzip
import os

import numpy as np

DATA_DIR = os.environ.get('FASHION_MNIST_DIR', '/usr/share/datasets/fashion-mnist')


def _read_idx(path):
    with gzip.open(path, 'rb') as f:
        data = f.read()
    if len(data) < 8:
        raise IOError("%s: file too short for an IDX header" % path)
    dtype_code, ndim = data[2], data[3]
    if data[0] != 0 or data[1] != 0 or dtype_code != 0x08:
        raise IOError("%s: not an unsigned-byte IDX file" % path)
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], 'big') for i in range(ndim)]
    offset = 4 + 4 * ndim
    count = int(np.prod(dims))
    if len(data) - offset != count:
        raise IOError("%s: expected %d bytes of data, found %d" % (path, count, len(data) - offset))
    return np.frombuffer(data, np.uint8, count, offset).reshape(dims)


def available(data_dir=DATA_DIR):
    return os.path.exists(os.path.join(data_dir, 'train-images-idx3-ubyte.gz'))


def load(kind='train', data_dir=DATA_DIR):
    """Images as float32 in [0, 1] with shape (n, 28, 28) and labels as int64 (n,)."""
    prefix = 'train' if kind == 'train' else 't10k'
    images = _read_idx(os.path.join(data_dir, '%s-images-idx3-ubyte.gz' % prefix))
    labels = _read_idx(os.path.join(data_dir, '%s-labels-idx1-ubyte.gz' % prefix))
    return images.astype(np.float32) / 255.0, labels.astype(np.int64)


def one_hot(labels, num_classes=10):
    return np.eye(num_classes, dtype=np.float32)[labels]
