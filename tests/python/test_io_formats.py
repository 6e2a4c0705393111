"""CBFDeserializer, the CTF -> CBF converter (function and CLI), ImageDeserializer and cntk.io.transforms,
read through each deserializer's native chunks (``_native().load_chunk(i)``)."""
import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import cntk as C
from cntk import _cntk
from cntk.io import transforms as T
from cntk.io._formats import Base64ImageDeserializer, CBFDeserializer, ImageDeserializer, convert_ctf_to_cbf
from cntk.variables import Record


def stream_def(**kw):
    """cntk.io.StreamDef, or the Record CNTK's StreamDef returns while cntk.io has none yet."""
    try:
        return C.io.StreamDef(**kw)
    except NotImplementedError:
        cfg = dict(stream_alias=kw.get('field'), is_sparse=kw.get('is_sparse', False))
        if 'shape' in kw:
            cfg['dim'] = kw['shape']
        if 'transforms' in kw:
            cfg['transforms'] = kw['transforms']
        return Record(**cfg)


def all_sequences(native):
    out = []
    for c in range(native.num_chunks()):
        out.extend(native.load_chunk(c))
    return out


# ----------------------------------------------------------------------------------------------------
# CBF

TWINS = {  # CBF file -> (streams: name, CTF alias, dense|sparse, dim; precision)
    '10x10_dense': ([('features', 'F0', 'dense', 5)], 'float'),
    '10x10_sparse': ([('features', 'F0', 'sparse', 100)], 'double'),
    '50x20_jagged_sequences_dense': ([('features', 'F0', 'dense', 3)], 'double'),
    '50x20_jagged_sequences_sparse': ([('features', 'F0', 'sparse', 100)], 'float'),
    'Simple_dense': ([('features', 'F', 'dense', 2), ('labels', 'L', 'dense', 2)], 'float'),
}


def test_cbf_reads_every_shipped_file(shared_data):
    files = sorted(glob.glob(os.path.join(shared_data, 'cbf-reader', '*.bin')))
    assert len(files) == 6
    for f in files:
        d = CBFDeserializer(f)._native()
        assert d.num_chunks() >= 1
        n = 0
        for c in range(d.num_chunks()):
            seqs = d.load_chunk(c)
            num_sequences, num_samples = d.chunk_info(c)
            assert len(seqs) == num_sequences
            n += len(seqs)
        assert n > 0


def test_cbf_dense_values_match_the_text_file(shared_data):
    d = CBFDeserializer(os.path.join(shared_data, 'cbf-reader', 'Simple_dense.bin'))._native()
    assert d.stream_names == ['features', 'labels']
    seqs = all_sequences(d)
    text = np.loadtxt(os.path.join(shared_data, 'ctf-reader', 'Simple_dense.txt'), dtype=str)
    # columns: |F x y |L a b
    feats = text[:, 1:3].astype(np.float64).astype(np.float32)
    labels = text[:, 4:6].astype(np.float32)
    assert len(seqs) == len(text) == 10000
    got_f = np.concatenate([s[1]['features'] for s in seqs])
    got_l = np.concatenate([s[1]['labels'] for s in seqs])
    np.testing.assert_array_equal(got_f, feats)
    np.testing.assert_array_equal(got_l, labels)
    assert [s[0] for s in seqs[:3]] == [0, 1, 2]


def test_cbf_sparse_sequences(shared_data):
    d = CBFDeserializer(os.path.join(shared_data, 'cbf-reader', '50x20_jagged_sequences_sparse.bin'))._native()
    seqs = all_sequences(d)
    assert len(seqs) == 50
    # The first sequence of the text file has id 0; its first line: 10 entries, index 8 first.
    first_line = open(os.path.join(shared_data, 'ctf-reader', '50x20_jagged_sequences_sparse.txt')).readline()
    pairs = sorted((int(p.split(':')[0]), float(p.split(':')[1])) for p in first_line.split('|F0')[1].split())
    indices, offsets, values = seqs[0][1]['features']
    assert values.dtype == np.float32
    k0, k1 = offsets[0], offsets[1]
    assert list(indices[k0:k1]) == [i for i, _ in pairs]
    np.testing.assert_array_equal(values[k0:k1], np.array([v for _, v in pairs], np.float64).astype(np.float32))


def test_cbf_stream_selection_and_rename(shared_data):
    path = os.path.join(shared_data, 'cbf-reader', 'Simple_dense.bin')
    d = CBFDeserializer(path, {'y': stream_def(field='labels', shape=2)})._native()
    assert d.stream_names == ['y']
    full = all_sequences(CBFDeserializer(path)._native())
    sel = all_sequences(d)
    np.testing.assert_array_equal(sel[5][1]['y'], full[5][1]['labels'])
    with pytest.raises(ValueError, match="no stream 'nope'"):
        CBFDeserializer(path, {'y': stream_def(field='nope')})._native()
    with pytest.raises(ValueError, match="dimension 2"):
        CBFDeserializer(path, {'y': stream_def(field='labels', shape=3)})._native()
    infos = _cntk._deserializer_streams(CBFDeserializer(os.path.join(shared_data, 'cbf-reader', '10x10_sparse.bin'))._native())
    assert infos == [('features', [100], True, 'float64')]


def test_cbf_bad_files_raise(tmp_path, shared_data):
    src = open(os.path.join(shared_data, 'cbf-reader', '10x10_dense.bin'), 'rb').read()
    bad = tmp_path / 'cut.bin'
    bad.write_bytes(src[:len(src) // 2])
    with pytest.raises(IOError, match='cut.bin'):
        CBFDeserializer(str(bad))._native()
    text = tmp_path / 'text.bin'
    text.write_text('hello, this is not a CBF file; it is long enough to hold a header')
    with pytest.raises(IOError, match='magic'):
        CBFDeserializer(str(text))._native()
    with pytest.raises(IOError):
        CBFDeserializer(str(tmp_path / 'missing.bin'))._native()
    with pytest.raises(TypeError):
        CBFDeserializer(42)


@pytest.mark.parametrize('name', sorted(TWINS))
def test_convert_round_trip_gives_cntk_bytes(tmp_path, shared_data, name):
    streams, precision = TWINS[name]
    out = str(tmp_path / (name + '.bin'))
    assert convert_ctf_to_cbf(os.path.join(shared_data, 'ctf-reader', name + '.txt'), out, streams,
                              precision=precision) == 1
    shipped = os.path.join(shared_data, 'cbf-reader', name + '.bin')
    a = all_sequences(CBFDeserializer(out)._native())
    b = all_sequences(CBFDeserializer(shipped)._native())
    assert len(a) == len(b)
    for (ka, sa), (kb, sb) in zip(a, b):
        assert ka == kb
        for k in sa:
            if isinstance(sa[k], tuple):
                for x, y in zip(sa[k], sb[k]):
                    np.testing.assert_array_equal(x, y)
            else:
                np.testing.assert_array_equal(sa[k], sb[k])
    # The encoding is deterministic: the same bytes as the file CNTK wrote.
    assert open(out, 'rb').read() == open(shipped, 'rb').read()


def test_convert_chunking_and_stream_forms(tmp_path, shared_data):
    src = os.path.join(shared_data, 'ctf-reader', 'Simple_dense.txt')
    out = str(tmp_path / 'o.bin')
    defs = {'features': stream_def(field='F', shape=2), 'labels': stream_def(field='L', shape=2)}
    # 28 bytes per sequence: 2800 bytes -> chunks of 100 sequences
    assert convert_ctf_to_cbf(src, out, defs, chunk_size=2800) == 100
    d = CBFDeserializer(out)._native()
    assert d.num_chunks() == 100 and d.chunk_info(99) == (100, 100)
    with pytest.raises(ValueError, match='dense or sparse'):
        convert_ctf_to_cbf(src, out, [('features', 'F', 'blob', 2)])
    with pytest.raises(ValueError, match='chunk_size'):
        convert_ctf_to_cbf(src, out, [('features', 'F', 'dense', 2)], chunk_size=0)
    with pytest.raises(ValueError, match='precision'):
        convert_ctf_to_cbf(src, out, [('features', 'F', 'dense', 2)], precision='half')
    with pytest.raises(IOError, match='missing.txt'):
        convert_ctf_to_cbf(str(tmp_path / 'missing.txt'), out, [('features', 'F', 'dense', 2)])


def test_ctf2bin_cli(tmp_path, shared_data):
    header = tmp_path / 'header.txt'
    header.write_text('features\tF\tdense\t2\nlabels\tL\tdense\t2\n')
    out = tmp_path / 'simple.bin'
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(C.__file__)))
    r = subprocess.run([sys.executable, '-m', 'cntk.io.ctf2bin', '--input',
                        os.path.join(shared_data, 'ctf-reader', 'Simple_dense.txt'), '--header', str(header),
                        '--chunk_size', str(1 << 30), '--output', str(out)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == open(os.path.join(shared_data, 'cbf-reader', 'Simple_dense.bin'), 'rb').read()
    header.write_text('features F dense\n')
    r = subprocess.run([sys.executable, '-m', 'cntk.io.ctf2bin', '--input', 'x', '--header', str(header),
                        '--chunk_size', '10', '--output', str(out)], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and 'header.txt:1' in r.stderr


# ----------------------------------------------------------------------------------------------------
# Transforms

def test_signatures_match_cntk_27():
    """Parameter names as CNTK 2.7's Python API lists them (shared/reference/cntk27_python_api.tsv)."""
    import inspect
    tsv = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'reference', 'cntk27_python_api.tsv')
    if not os.path.exists(tsv):
        pytest.skip("the reference list is absent")
    ours = {('cntk.io.transforms', n): getattr(T, n) for n in ('crop', 'scale', 'mean', 'color')}
    ours[('cntk.io', 'CBFDeserializer')] = CBFDeserializer
    ours[('cntk.io', 'ImageDeserializer')] = ImageDeserializer
    ours[('cntk.io', 'Base64ImageDeserializer')] = Base64ImageDeserializer
    found = 0
    for line in open(tsv):
        module, kind, sig = (line.rstrip('\n').split('\t') + ['', '', ''])[:3]
        name = sig.split('(')[0]
        if (module, name) in ours:
            expected = [p.strip() for p in sig[len(name) + 1:-1].split(',') if p.strip()]
            params = list(inspect.signature(ours[(module, name)]).parameters)
            assert params == expected, (module, name)
            found += 1
    assert found == 7

def test_transform_dicts_have_cntk_keys():
    assert T.crop() == dict(type='Crop', cropType='center', cropSize=0, sideRatio=0.0, areaRatio=0.0,
                            aspectRatio=1.0, jitterType='none')
    c = T.crop(crop_type='randomside', side_ratio='0.5:0.75', jitter_type='uniratio')
    assert c['cropType'] == 'randomside' and c['sideRatio'] == '0.5:0.75' and c['jitterType'] == 'uniratio'
    assert T.scale(32, 24, 3) == dict(type='Scale', width=32, height=24, channels=3, interpolations='linear',
                                      scaleMode='fill', padValue=-1)
    assert T.scale(8, 8, 1, 'cubic', 'pad', 0)['scaleMode'] == 'pad'
    assert T.mean('m.xml') == dict(type='Mean', meanFile='m.xml')
    assert T.color(0.1, 0.2, 0.3) == dict(type='Color', brightnessRadius=0.1, contrastRadius=0.2,
                                          saturationRadius=0.3)


# ----------------------------------------------------------------------------------------------------
# Images

def pattern(h, w, c, salt=0):
    y, x, k = np.meshgrid(np.arange(h), np.arange(w), np.arange(c), indexing='ij')
    return ((x * 7 + y * 13 + k * 50 + salt) % 256).astype(np.uint8)


def image_reader(tmp_path, images, transforms, num_classes=3, labels=None, fmt='png', seed=0):
    """Writes the [H, W, C] uint8 images and a map file; returns the native deserializer."""
    lines = []
    for i, img in enumerate(images):
        p = tmp_path / ('img%d.%s' % (i, fmt))
        _cntk._write_image(str(p), np.ascontiguousarray(img), fmt, 100)
        lines.append('%s\t%d' % (p.name, (labels or [i % num_classes] * len(images))[i]))
    m = tmp_path / 'map.txt'
    m.write_text('\n'.join(lines) + '\n')
    d = ImageDeserializer(str(m), {'features': stream_def(field='image', transforms=transforms),
                                   'labels': stream_def(field='label', shape=num_classes)})
    return d._native(seed=seed)


def images_of(native):
    return [s[1]['features'].reshape(-1) for s in all_sequences(native)]


def chw(img_hwc):
    return np.transpose(img_hwc, (2, 0, 1)).astype(np.float32).reshape(-1)


def test_png_and_jpeg_decode(tmp_path):
    img = pattern(5, 7, 3)
    p = str(tmp_path / 'a.png')
    _cntk._write_image(p, img, 'png')
    np.testing.assert_array_equal(_cntk._read_image(p, 3), img.astype(np.float32))
    grey = pattern(5, 7, 1)[:, :, 0].copy()
    _cntk._write_image(p, grey, 'png')
    np.testing.assert_array_equal(_cntk._read_image(p, 1)[:, :, 0], grey)
    smooth = (np.add.outer(np.arange(24) * 3, np.arange(32) * 4)[:, :, None] + np.array([40, 70, 100])).astype(np.uint8)
    j = str(tmp_path / 'a.jpg')
    _cntk._write_image(j, smooth, 'jpeg', 100)
    assert np.abs(_cntk._read_image(j, 3) - smooth).mean() < 4
    (tmp_path / 'bad.jpg').write_bytes(open(j, 'rb').read()[:40])
    with pytest.raises(IOError, match='bad.jpg'):
        _cntk._read_image(str(tmp_path / 'bad.jpg'), 3)


def test_oversized_image_header_is_refused(tmp_path):
    """A PNG whose header claims 30000 x 30000 pixels is refused before anything that size is allocated."""
    import struct
    import zlib
    p = tmp_path / 'a.png'
    _cntk._write_image(str(p), pattern(4, 4, 3), 'png')
    b = bytearray(p.read_bytes())
    assert b[12:16] == b'IHDR'
    b[16:24] = struct.pack('>II', 30000, 30000)
    b[29:33] = struct.pack('>I', zlib.crc32(bytes(b[12:29])) & 0xffffffff)
    p.write_bytes(bytes(b))
    with pytest.raises(IOError, match='30000x30000 is not supported'):
        _cntk._read_image(str(p), 3)


def test_image_stream_is_chw_bgr_and_labels_one_hot(tmp_path):
    imgs = [pattern(4, 6, 3, s) for s in (0, 90)]
    d = image_reader(tmp_path, imgs, [T.scale(6, 4, 3, 'nearest')], num_classes=5, labels=[3, 1])
    assert d.stream_names == ['features', 'labels']
    seqs = all_sequences(d)
    for (key, s), img, label in zip(seqs, imgs, [3, 1]):
        assert s['features'].shape == (1, 3 * 4 * 6)
        np.testing.assert_array_equal(s['features'][0], chw(img))
        indices, offsets, values = s['labels']
        dense = np.zeros(5, np.float32)
        dense[indices[offsets[0]:offsets[1]]] = values[offsets[0]:offsets[1]]
        np.testing.assert_array_equal(dense, np.eye(5, dtype=np.float32)[label])
    assert [k for k, _ in seqs] == [0, 1]


def test_center_crop_is_exact(tmp_path):
    img = pattern(30, 40, 3)
    d = image_reader(tmp_path, [img], [T.crop(crop_type='center', crop_size='10:8'), T.scale(10, 8, 3, 'nearest')])
    np.testing.assert_array_equal(images_of(d)[0], chw(img[11:19, 15:25]))
    # side_ratio 0.5: a 15x15 window in the centre of a 40x30 image
    d = image_reader(tmp_path, [img], [T.crop(crop_type='center', side_ratio=0.5), T.scale(15, 15, 3, 'nearest')])
    np.testing.assert_array_equal(images_of(d)[0], chw(img[7:22, 12:27]))
    # area_ratio 0.3: sqrt(1200 * 0.3) = 19 pixels a side
    d = image_reader(tmp_path, [img], [T.crop(area_ratio=0.3), T.scale(19, 19, 3, 'nearest')])
    np.testing.assert_array_equal(images_of(d)[0], chw(img[5:24, 10:29]))


def windows(img, h, w):
    """Every h x w window of img, and its horizontal mirror, as CHW vectors."""
    out = []
    for y in range(img.shape[0] - h + 1):
        for x in range(img.shape[1] - w + 1):
            win = img[y:y + h, x:x + w]
            out.append(chw(win))
            out.append(chw(win[:, ::-1]))
    return np.stack(out)


def test_random_crop_in_range_and_deterministic_per_seed(tmp_path):
    img = pattern(30, 40, 3)
    tr = [T.crop(crop_type='randomside', side_ratio=0.5), T.scale(15, 15, 3, 'nearest')]
    a = images_of(image_reader(tmp_path, [img] * 12, tr, seed=3))
    all_windows = windows(img, 15, 15)
    for v in a:
        assert (all_windows == v).all(axis=1).any()  # some 15x15 window, maybe mirrored
    assert len({v.tobytes() for v in a}) > 3
    b = images_of(image_reader(tmp_path, [img] * 12, tr, seed=3))
    c = images_of(image_reader(tmp_path, [img] * 12, tr, seed=4))
    assert all((x == y).all() for x, y in zip(a, b))
    assert any((x != y).any() for x, y in zip(a, c))
    # a new sweep draws new crops, the same for every reader with that seed and sweep
    r1, r2 = image_reader(tmp_path, [img] * 12, tr, seed=3), image_reader(tmp_path, [img] * 12, tr, seed=3)
    _cntk._image_deserializer_set_sweep(r1, 1)
    _cntk._image_deserializer_set_sweep(r2, 1)
    s1, s2 = images_of(r1), images_of(r2)
    assert all((x == y).all() for x, y in zip(s1, s2))
    assert any((x != y).any() for x, y in zip(a, s1))


def test_unlabelled_stream_fixed_crop_shape_three_dots_and_synchronized_crops(tmp_path):
    # As CNTK's image reader: the label stream is optional, a crop of fixed crop_size fixes the shape
    # without a scale (colour, 3 channels), '...' stands for the map file's directory, and the k-th crop of
    # two deserializers draws alike, whatever other transforms come before it.
    img = pattern(20, 40, 3)
    _cntk._write_image(str(tmp_path / 'a.png'), img, 'png')
    m = tmp_path / 'map.txt'
    m.write_text('.../a.png\t5\n' * 6)
    crop = T.crop(crop_type='randomside', crop_size=(20, 10), side_ratio=(0.2, 0.5), jitter_type='uniratio')
    plain = ImageDeserializer(str(m), {'f': stream_def(field='image', transforms=[crop])})._native(seed=2)
    scaled = ImageDeserializer(str(m), {'f': stream_def(field='image', transforms=[T.scale(40, 20, 3), crop])})
    scaled = scaled._native(seed=2)
    assert [(n, tuple(shape)) for n, shape, _, _ in _cntk._deserializer_streams(plain)] == [('f', (3, 10, 20))]
    a = [s[1]['f'] for s in all_sequences(plain)]
    b = [s[1]['f'] for s in all_sequences(scaled)]
    assert len({x.tobytes() for x in a}) > 1
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
        assert (windows(img, 10, 20) == x.reshape(-1)).all(axis=1).any()


def test_random_area_with_aspect_jitter_stays_inside(tmp_path):
    img = pattern(30, 40, 3)
    tr = [T.crop(crop_type='randomarea', area_ratio='0.2:0.6', aspect_ratio='0.5:1', jitter_type='uniratio'),
          T.scale(12, 12, 3)]
    out = images_of(image_reader(tmp_path, [img] * 6, tr, seed=1))
    assert all(v.shape == (3 * 12 * 12,) for v in out)
    assert len({v.tobytes() for v in out}) == 6


def np_resize_linear(img, h, w):
    """Bilinear resize with OpenCV's pixel geometry (centres at +0.5, replicated border)."""
    def taps(src, dst):
        f = (np.arange(dst) + 0.5) * src / dst - 0.5
        x0 = np.floor(f).astype(int)
        t = f - x0
        return np.clip(x0, 0, src - 1), np.clip(x0 + 1, 0, src - 1), t
    img = img.astype(np.float64)
    y0, y1, ty = taps(img.shape[0], h)
    x0, x1, tx = taps(img.shape[1], w)
    rows = img[y0] * (1 - ty)[:, None, None] + img[y1] * ty[:, None, None]
    return rows[:, x0] * (1 - tx)[None, :, None] + rows[:, x1] * tx[None, :, None]


def test_scale_dims_and_interpolation(tmp_path):
    img = pattern(30, 40, 3)
    # nearest: source index floor(d * src / dst)
    d = image_reader(tmp_path, [img], [T.scale(16, 12, 3, 'nearest')])
    ys, xs = np.floor(np.arange(12) * 30 / 12).astype(int), np.floor(np.arange(16) * 40 / 16).astype(int)
    np.testing.assert_array_equal(images_of(d)[0], chw(img[ys][:, xs]))
    # linear, rounded to 8 bits as CNTK does before mean/colour
    d = image_reader(tmp_path, [img], [T.scale(13, 11, 3, 'linear')])
    ref = chw(np_resize_linear(img, 11, 13))
    assert np.abs(images_of(d)[0] - ref).max() <= 0.5 + 1e-3
    for interp in ('cubic', 'lanczos', 'nearest:linear'):
        d = image_reader(tmp_path, [img], [T.scale(9, 7, 1, interp)])
        v = images_of(d)[0]
        assert v.shape == (7 * 9,) and v.min() >= 0 and v.max() <= 255
    # a constant image stays constant under every interpolation
    flat = np.full((10, 12, 3), 77, np.uint8)
    for interp in ('nearest', 'linear', 'cubic', 'lanczos'):
        np.testing.assert_array_equal(images_of(image_reader(tmp_path, [flat], [T.scale(5, 7, 3, interp)]))[0], 77)


def test_scale_modes(tmp_path):
    img = pattern(20, 40, 3)  # 40 wide, 20 high
    # crop: scale to cover 10x10 (-> 20x10), keep the centre
    d = image_reader(tmp_path, [img], [T.scale(10, 10, 3, 'nearest', 'crop')])
    np.testing.assert_array_equal(images_of(d)[0], chw(img[::2, ::2][:, 5:15]))
    # pad: scale to fit (-> 10 wide, 5 high), centre it (rows 2..6), pad rows 0-1 and 7-9 with 0
    d = image_reader(tmp_path, [img], [T.scale(10, 10, 3, 'nearest', 'pad', 0)])
    v = images_of(d)[0].reshape(3, 10, 10)
    np.testing.assert_array_equal(v[:, 2:7, :], chw(img[::4, ::4]).reshape(3, 5, 10))
    assert (v[:, :2] == 0).all() and (v[:, 7:] == 0).all()
    # a very long image is cut to the target's aspect first (no huge intermediate image)
    strip = pattern(2, 3000, 3)
    v = images_of(image_reader(tmp_path, [strip], [T.scale(64, 64, 3, 'nearest', 'crop')]))[0]
    np.testing.assert_array_equal(v, chw(strip[:, 1499:1501][np.repeat(np.arange(2), 32)][:, np.repeat(np.arange(2), 32)]))
    # pad with -1 replicates the border rows
    d = image_reader(tmp_path, [img], [T.scale(10, 10, 3, 'nearest', 'pad', -1)])
    v = images_of(d)[0].reshape(3, 10, 10)
    np.testing.assert_array_equal(v[:, 0], v[:, 2])
    np.testing.assert_array_equal(v[:, 9], v[:, 6])


def write_mean(path, mean_hwc):
    h, w, c = mean_hwc.shape
    data = ' '.join('%.9g' % v for v in mean_hwc.reshape(-1))
    path.write_text('<?xml version="1.0"?>\n<opencv_storage>\n<Channel>%d</Channel>\n<Row>%d</Row>\n<Col>%d</Col>\n'
                    '<MeanImg type_id="opencv-matrix">\n  <rows>1</rows>\n  <cols>%d</cols>\n  <dt>f</dt>\n'
                    '  <data>\n    %s</data></MeanImg>\n</opencv_storage>\n' % (c, h, w, h * w * c, data))


def test_mean_subtraction_is_exact(tmp_path):
    img = pattern(6, 8, 3)
    mean = np.random.RandomState(0).uniform(0, 255, size=(6, 8, 3)).astype(np.float32)
    write_mean(tmp_path / 'mean.xml', mean)
    d = image_reader(tmp_path, [img], [T.scale(8, 6, 3), T.mean(str(tmp_path / 'mean.xml'))])
    np.testing.assert_array_equal(images_of(d)[0], chw(img.astype(np.float32) - mean))
    d = image_reader(tmp_path, [img], [T.scale(9, 6, 3), T.mean(str(tmp_path / 'mean.xml'))])
    with pytest.raises(IOError, match='mean.xml'):
        d.load_chunk(0)
    with pytest.raises(IOError, match='nope.xml'):
        image_reader(tmp_path, [img], [T.scale(8, 6, 3), T.mean(str(tmp_path / 'nope.xml'))])


def test_color_jitter(tmp_path):
    img = (pattern(8, 8, 3) // 2 + 40).astype(np.uint8)  # values 40..167: no clipping
    base = chw(img)
    out = images_of(image_reader(tmp_path, [img] * 4, [T.scale(8, 8, 3), T.color(brightness_radius=0.2)], seed=2))
    for v in out:
        shift = v - base
        np.testing.assert_allclose(shift, shift[0], atol=1e-3)  # one offset for the whole image
        assert abs(shift[0]) <= 0.2 * base.mean() + 1e-3
    assert len({round(float(v[0] - base[0]), 3) for v in out}) > 1
    out = images_of(image_reader(tmp_path, [img] * 4, [T.scale(8, 8, 3), T.color(contrast_radius=0.2)], seed=2))
    for v in out:
        ratio = v / base
        np.testing.assert_allclose(ratio, ratio[0], rtol=1e-5)
        assert 0.8 - 1e-6 <= ratio[0] <= 1.2 + 1e-6
    # saturation keeps each pixel's maximum (HSV value) and leaves grey pixels grey
    grey_and_colour = img.copy()
    grey_and_colour[0, :] = 100
    out = images_of(image_reader(tmp_path, [grey_and_colour] * 3, [T.scale(8, 8, 3), T.color(saturation_radius=0.5)]))
    ref = chw(grey_and_colour).reshape(3, 8, 8)
    for v in out:
        v = v.reshape(3, 8, 8)
        np.testing.assert_allclose(v.max(axis=0), ref.max(axis=0), rtol=1e-6)
        np.testing.assert_array_equal(v[:, 0], 100)
    assert any(np.abs(v - chw(grey_and_colour)).max() > 1 for v in out)


def test_multiview10_gives_ten_sequences(tmp_path):
    img = pattern(6, 8, 1)
    d = image_reader(tmp_path, [img], [T.crop('multiview10', side_ratio=0.5), T.scale(3, 3, 1, 'nearest')],
                     num_classes=1)
    v = images_of(d)
    assert len(v) == 10
    np.testing.assert_array_equal(v[4], chw(img[1:4, 2:5]))      # centre
    np.testing.assert_array_equal(v[9], chw(img[1:4, 2:5][:, ::-1]))


def test_image_deserializer_configuration_errors(tmp_path):
    m = tmp_path / 'map.txt'
    m.write_text('a.png\t0\n')
    img = stream_def(field='image', transforms=[T.scale(4, 4, 3)])
    lab = stream_def(field='label', shape=2)
    with pytest.raises(ValueError, match="'image' and 'label'"):
        ImageDeserializer(str(m), {'x': img, 'y': lab, 'z': stream_def(field='other')})
    with pytest.raises(ValueError, match='number of classes'):
        ImageDeserializer(str(m), {'x': img, 'y': stream_def(field='label')})
    with pytest.raises(ValueError, match='scale transform'):
        ImageDeserializer(str(m), {'x': stream_def(field='image'), 'y': lab})._native()
    with pytest.raises(ValueError, match='crop_type'):
        ImageDeserializer(str(m), {'x': stream_def(field='image', transforms=[T.crop('diagonal'), T.scale(4, 4, 3)]),
                                   'y': lab})._native()
    with pytest.raises(ValueError, match='side_ratio'):
        ImageDeserializer(str(m), {'x': stream_def(field='image', transforms=[T.crop(side_ratio='a:b')]), 'y': lab})
    with pytest.raises(TypeError):
        ImageDeserializer(str(m), {'x': stream_def(field='image', transforms=['crop']), 'y': lab})
    m.write_text('missing.png\t1\n')
    with pytest.raises(IOError, match='missing.png'):
        ImageDeserializer(str(m), {'x': img, 'y': lab})._native().load_chunk(0)
    m.write_text('a.png\t7\n')
    with pytest.raises(IOError, match='map.txt:1'):
        ImageDeserializer(str(m), {'x': img, 'y': lab})._native()


def test_decode_and_resize_agree_with_opencv(tmp_path):
    """Cross-check with OpenCV (what CNTK used), where it is installed: JPEG decoding identical, resizing
    within one 8-bit level for every interpolation (OpenCV computes 8-bit resizes in fixed point)."""
    cv2 = pytest.importorskip('cv2')
    img = (np.random.RandomState(0).rand(23, 31, 3) * 255).astype(np.uint8)
    j = str(tmp_path / 'a.jpg')
    _cntk._write_image(j, img, 'jpeg', 90)
    assert np.abs(_cntk._read_image(j, 3) - cv2.imread(j)).max() <= 1
    assert np.abs(_cntk._read_image(j, 1)[:, :, 0] - cv2.imread(j, cv2.IMREAD_GRAYSCALE)).max() <= 1
    modes = dict(nearest=cv2.INTER_NEAREST, linear=cv2.INTER_LINEAR, cubic=cv2.INTER_CUBIC,
                 lanczos=cv2.INTER_LANCZOS4)
    for interp, code in modes.items():
        for w, h in ((13, 9), (50, 40), (31, 11)):
            got = images_of(image_reader(tmp_path, [img], [T.scale(w, h, 3, interp)]))[0]
            ref = chw(cv2.resize(img, (w, h), interpolation=code))
            assert np.abs(got - ref).max() <= 1, (interp, w, h)


def test_base64_images_equal_the_files(tmp_path):
    import base64
    imgs = [pattern(6, 5, 3, s) for s in (0, 40, 80)]
    files = image_reader(tmp_path, imgs, [T.scale(5, 6, 3, 'nearest')], labels=[2, 0, 1])
    lines = ['%d\t%s' % (label, base64.b64encode(open(str(tmp_path / ('img%d.png' % i)), 'rb').read()).decode())
             for i, label in enumerate([2, 0, 1])]
    (tmp_path / 'b64.txt').write_text('\n'.join(lines) + '\n')
    streams = {'features': stream_def(field='image', transforms=[T.scale(5, 6, 3, 'nearest')]),
               'labels': stream_def(field='label', shape=3)}
    inline = Base64ImageDeserializer(str(tmp_path / 'b64.txt'), streams)._native()
    a, b = all_sequences(files), all_sequences(inline)
    assert len(b) == 3
    for (ka, sa), (kb, sb) in zip(a, b):
        np.testing.assert_array_equal(sa['features'], sb['features'])
        for x, y in zip(sa['labels'], sb['labels']):
            np.testing.assert_array_equal(x, y)
    (tmp_path / 'b64.txt').write_text('0\t%%%%\n')
    with pytest.raises(IOError, match='b64.txt:1'):
        Base64ImageDeserializer(str(tmp_path / 'b64.txt'), streams)._native().load_chunk(0)
