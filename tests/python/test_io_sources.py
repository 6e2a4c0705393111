"""MinibatchSource over the binary and image deserializers: CBF files read minibatch for minibatch as
their CTF twins (in file order, randomized, in two partitions in file order), and ImageDeserializer with random
crops (deterministic per seed, new crops each sweep, checkpoint/restore)."""
import os

import numpy as np
import pytest
import scipy.sparse

import cntk as C
from cntk import _cntk
from cntk.io import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
from cntk.io import transforms as T
from cntk.io._formats import CBFDeserializer, ImageDeserializer

SHARED_DATA = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'data'))

# CBF files of ../shared/data/cbf-reader with a CTF twin in ctf-reader: {stream name: CTF alias}.
# (Simple_jagged_sequence.bin has no twin.)
TWINS = {
    '10x10_dense': {'features': 'F0'},
    '10x10_sparse': {'features': 'F0'},
    '50x20_jagged_sequences_dense': {'features': 'F0'},
    '50x20_jagged_sequences_sparse': {'features': 'F0'},
    'Simple_dense': {'features': 'F', 'labels': 'L'},
}


def twin_dirs():
    cbf, ctf = os.path.join(SHARED_DATA, 'cbf-reader'), os.path.join(SHARED_DATA, 'ctf-reader')
    if not (os.path.isdir(cbf) and os.path.isdir(ctf)):
        pytest.skip("CNTK's reader test files are absent (%s and %s)" % (cbf, ctf))
    return cbf, ctf


def twin_sources(name, **kw):
    """MinibatchSource(CBFDeserializer) and MinibatchSource(CTFDeserializer) over the same streams;
    the CTF streams take the CBF file's shapes, sparsity and element types."""
    cbf_dir, ctf_dir = twin_dirs()
    cbf = MinibatchSource(CBFDeserializer(os.path.join(cbf_dir, name + '.bin')), **kw)
    infos = {si.name: si for si in cbf.stream_infos()}
    assert sorted(infos) == sorted(TWINS[name])
    defs = StreamDefs(**{n: StreamDef(field=alias, shape=infos[n].shape[0], is_sparse=infos[n].is_sparse,
                                      dtype=infos[n].dtype) for n, alias in TWINS[name].items()})
    ctf = MinibatchSource(CTFDeserializer(os.path.join(ctf_dir, name + '.txt'), defs), **kw)
    return cbf, ctf


def dense_sequences(d):
    """A stream's minibatch data as a list of dense [len, dim] arrays (sparse made dense)."""
    if d.data is None:
        return []
    return [s.toarray() if scipy.sparse.issparse(s) else np.asarray(s).reshape(s.shape[0], -1)
            for s in d.as_sequences()]


def by_name(mb):
    return {si.name: d for si, d in mb.items()}


def assert_same_minibatch(a, b, what):
    a, b = by_name(a), by_name(b)
    assert sorted(a) == sorted(b), what
    for n in a:
        x, y = a[n], b[n]
        assert (x.num_sequences, x.num_samples, x.end_of_sweep) == (y.num_sequences, y.num_samples, y.end_of_sweep), \
            '%s, stream %s' % (what, n)
        xs, ys = dense_sequences(x), dense_sequences(y)
        assert len(xs) == len(ys) == x.num_sequences, '%s, stream %s' % (what, n)
        assert sum(len(s) for s in xs) == x.num_samples
        for i, (p, q) in enumerate(zip(xs, ys)):
            assert p.dtype == q.dtype, '%s, stream %s, sequence %d' % (what, n, i)
            np.testing.assert_array_equal(p, q, err_msg='%s, stream %s, sequence %d' % (what, n, i))


@pytest.mark.parametrize('randomize', [False, True])
@pytest.mark.parametrize('name', sorted(TWINS))
def test_cbf_minibatches_equal_the_ctf_twin(name, randomize):
    kw = dict(randomize=randomize, randomization_seed=5, max_sweeps=2)
    cbf, ctf = twin_sources(name, **kw)
    mb_size = 997 if name == 'Simple_dense' else 7  # Simple_dense has 10,000 samples
    count = sweeps = 0
    while count < 10000:
        a, b = cbf.next_minibatch(mb_size), ctf.next_minibatch(mb_size)
        assert bool(a) == bool(b), 'minibatch %d' % count
        if not a:
            break
        assert_same_minibatch(a, b, '%s minibatch %d' % (name, count))
        sweeps += next(iter(a.values())).end_of_sweep
        count += 1
    assert sweeps == 2 and count >= 4


def test_cbf_randomized_order_differs_from_file_order():
    """The randomized comparison above is not file order in disguise."""
    orders = []
    for randomize in (False, True):
        cbf, _ = twin_sources('50x20_jagged_sequences_dense', randomize=randomize, randomization_seed=5, max_sweeps=1)
        seqs = []
        while True:
            mb = cbf.next_minibatch(20)
            if not mb:
                break
            seqs += [s[0].tolist() for s in dense_sequences(by_name(mb)['features'])]
        orders.append(seqs)
    assert sorted(orders[0]) == sorted(orders[1]) and orders[0] != orders[1]


@pytest.mark.parametrize('name', ['10x10_sparse', '50x20_jagged_sequences_dense', 'Simple_dense'])
def test_cbf_and_ctf_twin_in_two_partitions_equal_the_single_reader(name):
    # In file order partition k of 2 reads every second sequence from the k-th (randomized, it reads
    # whole chunks, and the twins' chunks differ).
    kw = dict(randomize=False, max_sweeps=2)
    whole, _ = twin_sources(name, **kw)
    parts = [twin_sources(name, **kw) for _ in range(2)]  # [(cbf, ctf) for partition 0, 1]
    size = 1500 if name == 'Simple_dense' else 12

    def sequences(src, index=None):
        out, n = {}, 0
        while True:
            mb = src.next_minibatch(size) if index is None else \
                src.next_minibatch(size, num_data_partitions=2, partition_index=index)
            if not mb:
                return out, n
            for s, d in by_name(mb).items():
                out.setdefault(s, []).extend(dense_sequences(d))
            n += 1

    w, _ = sequences(whole)
    for i in range(2):
        got = [sequences(src, i) for src in parts[i]]
        (cbf, n), (ctf, m) = got
        assert n == m and n >= 2
        for s in w:
            assert len(cbf[s]) == len(ctf[s]) == len(w[s][i::2])
            for x, y, z in zip(w[s][i::2], cbf[s], ctf[s]):  # the CBF and CTF readers give the same share
                np.testing.assert_array_equal(x, y)
                np.testing.assert_array_equal(x, z)


# ----------------------------------------------------------------------------------------------------
# ImageDeserializer through MinibatchSource

NUM_CLASSES = 4
LABELS = [2, 0, 3, 1, 1, 2, 0, 3, 2, 1]


def image_source(tmp_path, seed=7, **kw):
    """A map file over ten generated 24x32 PNG images; random side crop (half the shorter side, random
    flip) scaled to 8x8."""
    m = tmp_path / 'map.txt'
    if not m.exists():
        lines = []
        for i, label in enumerate(LABELS):
            y, x, c = np.meshgrid(np.arange(24), np.arange(32), np.arange(3), indexing='ij')
            img = ((x * 7 + y * 13 + c * 50 + 31 * i) % 256).astype(np.uint8)
            _cntk._write_image(str(tmp_path / ('img%d.png' % i)), np.ascontiguousarray(img), 'png', 100)
            lines.append('img%d.png\t%d' % (i, label))
        m.write_text('\n'.join(lines) + '\n')
    tr = [T.crop(crop_type='randomside', side_ratio=0.5), T.scale(8, 8, 3, 'linear')]
    d = ImageDeserializer(str(m), StreamDefs(features=StreamDef(field='image', transforms=tr),
                                             labels=StreamDef(field='label', shape=NUM_CLASSES)))
    return MinibatchSource(d, randomization_seed=seed, **kw)


def read_images(src, n_minibatches, size=3):
    """n minibatches as lists of (image bytes, dense label) per sequence, plus each end_of_sweep."""
    out = []
    for _ in range(n_minibatches):
        mb = by_name(src.next_minibatch(size))
        if not mb:
            break
        imgs, labels = dense_sequences(mb['features']), dense_sequences(mb['labels'])
        assert len(imgs) == len(labels) == mb['features'].num_sequences
        out.append(([(i.tobytes(), l.tolist()) for i, l in zip(imgs, labels)], mb['features'].end_of_sweep))
    return out


def split_sweeps(mbs):
    """The sequences of two sweeps. Minibatches run on across a sweep boundary (as CNTK's reader);
    end_of_sweep marks each minibatch that holds a sweep's last sequence."""
    ends = [i for i, (_, end) in enumerate(mbs) if end]
    assert len(ends) == 2 and ends[1] == len(mbs) - 1
    seqs = [s for m, _ in mbs for s in m]
    n = len(seqs) // 2
    assert len(seqs) == 2 * n and sum(len(m) for m, _ in mbs[:ends[0]]) < n <= sum(len(m) for m, _ in mbs[:ends[0] + 1])
    return seqs[:n], seqs[n:]


def test_image_source_streams_and_one_hot_labels(tmp_path):
    src = image_source(tmp_path, randomize=False, max_sweeps=1)
    assert src.streams.features.shape == (3, 8, 8) and not src.streams.features.is_sparse
    assert src.streams.labels.shape == (NUM_CLASSES,) and src.streams.labels.is_sparse
    mbs = read_images(src, 10, size=4)
    assert [len(m) for m, _ in mbs] == [4, 4, 2] and [e for _, e in mbs] == [False, False, True]
    seqs = [s for m, _ in mbs for s in m]
    for (img, label), want in zip(seqs, LABELS):
        assert label == [np.eye(NUM_CLASSES)[want].tolist()]
        pixels = np.frombuffer(img, np.float32)
        assert pixels.size == 3 * 8 * 8 and pixels.min() >= 0 and pixels.max() <= 255


def test_image_source_deterministic_per_seed_and_new_crops_each_sweep(tmp_path):
    a = read_images(image_source(tmp_path, seed=7, max_sweeps=2), 100)
    b = read_images(image_source(tmp_path, seed=7, max_sweeps=2), 100)
    c = read_images(image_source(tmp_path, seed=8, max_sweeps=2), 100)
    assert a == b
    assert a != c
    first, second = split_sweeps(a)
    assert len(first) == len(second) == len(LABELS)
    # each sweep holds every image once (labels are a permutation of LABELS) ...
    for sweep in (first, second):
        assert sorted(int(np.argmax(l)) for _, l in sweep) == sorted(LABELS)
    # ... and the second sweep crops differently: the set of images read differs
    assert {img for img, _ in first} != {img for img, _ in second}
    # file order, no randomization: the source still moves the deserializer to the next sweep
    first, second = split_sweeps(read_images(image_source(tmp_path, seed=7, randomize=False, max_sweeps=2), 100))
    assert [l for _, l in first] == [l for _, l in second] == [[np.eye(NUM_CLASSES)[k].tolist()] for k in LABELS]
    assert len([1 for x, y in zip(first, second) if x[0] != y[0]]) >= len(LABELS) // 2


def test_image_source_checkpoint_mid_sweep(tmp_path):
    src = image_source(tmp_path, seed=11, max_sweeps=3)
    read_images(src, 2)  # 6 of 10 images into the first sweep
    state = src.get_checkpoint_state()
    expect = read_images(src, 100)
    assert len(expect) >= 6 and sum(e for _, e in expect) == 3
    again = image_source(tmp_path, seed=11, max_sweeps=3)
    again.restore_from_checkpoint(state)
    assert read_images(again, 100) == expect
    # restoring in a source that already read further gives the same minibatches too
    src.restore_from_checkpoint(state)
    assert read_images(src, 100) == expect
