"""The `cntk` command's reader blocks: CNTKTextFormatReader, CNTKBinaryReader and the
`deserializers = (...)` form read the same data into the same training run (CNTK's reader test
files ../shared/data/ctf-reader and cbf-reader hold the same data in both formats)."""
import os
import re

import pytest

from test_brainscript_cli import run

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', '..', '..', 'shared', 'data')
CTF = os.path.abspath(os.path.join(DATA, 'ctf-reader', 'Simple_dense.txt'))
CBF = os.path.abspath(os.path.join(DATA, 'cbf-reader', 'Simple_dense.bin'))

NETWORK = '''
  BrainScriptNetworkBuilder = [
    x = Input (2) ; y = Input (2)
    h = DenseLayer {8, activation = Sigmoid, init = "uniform", initValueScale = 1} (x)
    z = LinearLayer {2, init = "uniform"} (h)
    ce = CrossEntropyWithSoftmax (y, z) ; err = ClassificationError (y, z)
    featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (ce) ; evaluationNodes = (err)
  ]
  SGD = [ maxEpochs = 2 ; minibatchSize = 25 ; learningRatesPerSample = 0.05 ]
'''

# The network's inputs x and y are the text file's F and L, the binary file's features and labels.
CTF_INPUT = ('input = [ x = [ alias = "F" ; dim = 2 ; format = "dense" ] ; '
             'y = [ alias = "L" ; dim = 2 ; format = "dense" ] ]')
CBF_INPUT = 'input = [ x = [ alias = "features" ] ; y = [ alias = "labels" ] ]'

READERS = {
    'text': '[ readerType = "CNTKTextFormatReader" ; file = "%s" ; %s ; randomize = %%s ]' % (CTF, CTF_INPUT),
    'binary': '[ readerType = "CNTKBinaryReader" ; file = "%s" ; %s ; randomize = %%s ]' % (CBF, CBF_INPUT),
    'text deserializer': ('[ randomize = %%s ; deserializers = ( [ type = "CNTKTextFormatDeserializer" ; '
                          'module = "CNTKTextFormatReader" ; file = "%s" ; %s ] ) ]' % (CTF, CTF_INPUT)),
    'binary deserializer': ('[ randomize = %%s ; deserializers = ( [ type = "CNTKBinaryFormatDeserializer" ; '
                            'module = "CNTKBinaryReader" ; file = "%s" ; %s ] ) ]' % (CBF, CBF_INPUT)),
}


def need_data():
    for f in (CTF, CBF):
        if not os.path.exists(f):
            pytest.skip('%s is absent' % f)


def train(tmp_path, reader, name='run'):
    work = tmp_path / name
    work.mkdir()
    (work / 'r.cntk').write_text('command = T\nmodelPath = "m.dnn"\nT = [\n  action = "train"\n%s\n  reader = %s\n]\n'
                                 % (NETWORK, reader))
    rc, log = run(['configFile=r.cntk'], work)
    assert rc == 0, log[-3000:]
    return re.findall(r'(Finished Epoch.*totalSamplesSeen = \d+)', log)


@pytest.mark.parametrize('randomize', ['false', 'true'])
def test_text_reader_and_its_deserializer_form_agree(tmp_path, randomize):
    need_data()
    a = train(tmp_path, READERS['text'] % randomize, 'a')
    b = train(tmp_path, READERS['text deserializer'] % randomize, 'b')
    assert len(a) == 2 and a == b, (a, b)
    losses = [float(x) for x in re.findall(r'ce = ([\d.]+)', ' '.join(a))]
    assert losses[1] < losses[0], a


def test_binary_reader_reads_what_the_text_reader_reads(tmp_path):
    need_data()
    text = train(tmp_path, READERS['text'] % 'false', 'text')
    binary = train(tmp_path, READERS['binary'] % 'false', 'binary')
    deserializer = train(tmp_path, READERS['binary deserializer'] % 'false', 'deserializer')
    assert len(text) == 2 and text == binary == deserializer, (text, binary, deserializer)


def test_unknown_reader_types_name_what_is_missing(tmp_path):
    (tmp_path / 'r.cntk').write_text('command = T\nmodelPath = "m.dnn"\nT = [\n  action = "train"\n%s\n'
                                     '  reader = [ readerType = "LUSequenceReader" ; file = "x" ]\n]\n' % NETWORK)
    rc, log = run(['configFile=r.cntk'], tmp_path)
    assert rc != 0 and "reader type 'LUSequenceReader'" in log and 'is not implemented yet' in log, log[-2000:]
    (tmp_path / 'd.cntk').write_text('command = T\nmodelPath = "m.dnn"\nT = [\n  action = "train"\n%s\n'
                                     '  reader = [ deserializers = ( [ type = "Nonsense" ] ) ]\n]\n' % NETWORK)
    rc, log = run(['configFile=d.cntk'], tmp_path)
    assert rc != 0 and "reader type 'Nonsense'" in log, log[-2000:]
    # `default` is the config language's "not given": a list of deserializers is missing.
    (tmp_path / 'e.cntk').write_text('command = T\nmodelPath = "m.dnn"\nT = [\n  action = "train"\n%s\n'
                                     '  reader = [ deserializers = default ]\n]\n' % NETWORK)
    rc, log = run(['configFile=e.cntk'], tmp_path)
    assert rc != 0 and 'required configuration parameter missing' in log and 'deserializers' in log, log[-2000:]


# ------------------------------------------------------------------------------------------
# Image and HTK readers: small files made here; the write action prints the data read for the
# network's inputs, which is compared with the files' contents.

import struct
import zlib

import numpy as np

TRAIN_AND_WRITE = '''command = T:W
modelPath = "m.dnn"
T = [
  action = "train"
  BrainScriptNetworkBuilder = [
    %s
    z = LinearLayer {%d, init = "uniform"} (features)
    ce = CrossEntropyWithSoftmax (labels, z)
    featureNodes = (features) ; labelNodes = (labels) ; criterionNodes = (ce) ; outputNodes = (z)
  ]
  SGD = [ maxEpochs = 1 ; minibatchSize = 4 ; learningRatesPerSample = 0.00001 ]
  reader = %s
]
W = [
  action = "write" ; outputNodeNames = features : labels ; outputPath = "out"
  reader = %s
]
'''


def write_png(path, rgb):
    h, w, _ = rgb.shape
    raw = b''.join(b'\x00' + rgb[r].astype(np.uint8).tobytes() for r in range(h))

    def chunk(kind, data):
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)

    path.write_bytes(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) +
                     chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))


def write_images(tmp_path, n, size, seed, low=0):
    """n random RGB images of size (rows, columns) as img<i>.png, and map.txt giving image i the
    label i % 2; the images as arrays."""
    rng = np.random.RandomState(seed)
    images = [rng.randint(low, 256, size=size + (3,)) for _ in range(n)]
    for i, rgb in enumerate(images):
        write_png(tmp_path / ('img%d.png' % i), rgb)
    (tmp_path / 'map.txt').write_text(''.join('img%d.png\t%d\n' % (i, i % 2) for i in range(n)))
    return images


def read_written(path, dim):
    rows = [[float(v) for v in line.split()] for line in path.read_text().splitlines() if line.strip()]
    assert all(len(r) == dim for r in rows), path
    return np.array(rows)


@pytest.mark.parametrize('form', ['ImageDeserializer', 'ImageReader'])
def test_image_reader_gives_channels_height_width(tmp_path, form):
    images = write_images(tmp_path, 6, (5, 4), seed=3, low=0)
    if form == 'ImageDeserializer':
        reader = ('[ randomize = false ; deserializers = ( [ type = "ImageDeserializer" ; module = "ImageReader" ; '
                  'file = "map.txt" ; input = [ features = [ transforms = ( [ type = "Scale" ; width = 4 ; '
                  'height = 5 ; channels = 3 ] : [ type = "Transpose" ] ) ] ; labels = [ labelDim = 2 ] ] ] ) ]')
    else:
        reader = ('[ readerType = "ImageReader" ; file = "map.txt" ; randomize = false ; '
                  'features = [ width = 4 ; height = 5 ; channels = 3 ] ; labels = [ labelDim = 2 ] ]')
    (tmp_path / 'i.cntk').write_text(TRAIN_AND_WRITE % ('features = Input {(4:5:3)} ; labels = Input {2}', 2,
                                                        reader, reader))
    rc, log = run(['configFile=i.cntk'], tmp_path)
    assert rc == 0, log[-3000:]
    features = read_written(tmp_path / 'out.features', 60)
    labels = read_written(tmp_path / 'out.labels', 2)
    # channels B, G, R (as CNTK's OpenCV decoding), then rows, then columns
    expected = np.array([rgb[:, :, ::-1].transpose(2, 0, 1).reshape(-1) for rgb in images])
    np.testing.assert_array_equal(features, expected)
    np.testing.assert_array_equal(labels.argmax(axis=1), [i % 2 for i in range(6)])


def write_htk(path, frames):
    n, dim = frames.shape
    path.write_bytes(struct.pack('>iihh', n, 100000, dim * 4, 9) + frames.astype('>f4').tobytes())


@pytest.mark.parametrize('form', ['deserializers', 'HTKMLFReader', 'context'])
def test_htk_features_and_mlf_labels(tmp_path, form):
    rng = np.random.RandomState(5)
    utterances = {'utt%d' % i: rng.randn(n, 3).astype(np.float32) for i, n in enumerate([6, 4, 5])}
    scp, mlf, labels = [], ['#!MLF!#'], {}
    for key, frames in utterances.items():
        write_htk(tmp_path / (key + '.htk'), frames)
        scp.append('%s=%s' % (key, tmp_path / (key + '.htk')))
        n = len(frames)
        cut = n // 2
        mlf += ['"*/%s.lab"' % key, '0 %d s1' % (cut * 100000), '%d %d s2' % (cut * 100000, n * 100000), '.']
        labels[key] = [1] * cut + [2] * (n - cut)
    (tmp_path / 'all.scp').write_text('\n'.join(scp) + '\n')
    (tmp_path / 'all.mlf').write_text('\n'.join(mlf) + '\n')
    (tmp_path / 'states.list').write_text('s0\ns1\ns2\n')
    window = ' ; contextWindow = 3' if form == 'context' else ''
    features = 'features = [ dim = 3 ; scpFile = "all.scp"%s ]' % window
    label = 'labels = [ mlfFile = "all.mlf" ; labelMappingFile = "states.list" ; labelDim = 3 ]'
    if form != 'HTKMLFReader':
        reader = ('[ randomize = false ; deserializers = ( [ type = "HTKFeatureDeserializer" ; '
                  'module = "HTKDeserializers" ; input = [ %s ] ] : [ type = "HTKMLFDeserializer" ; '
                  'module = "HTKDeserializers" ; input = [ %s ] ] ) ]' % (features, label))
    else:
        reader = '[ readerType = "HTKMLFReader" ; randomize = false ; %s ; %s ]' % (features, label)
    dim = 9 if form == 'context' else 3
    (tmp_path / 'h.cntk').write_text(TRAIN_AND_WRITE % ('features = Input {%d} ; labels = Input {3}' % dim, 3,
                                                        reader, reader))
    rc, log = run(['configFile=h.cntk'], tmp_path)
    assert rc == 0, log[-3000:]
    written = read_written(tmp_path / 'out.features', dim)
    written_labels = read_written(tmp_path / 'out.labels', 3)
    if form == 'context':  # frames t-1, t, t+1 side by side, the utterance's ends repeated
        spliced = []
        for frames in utterances.values():
            padded = np.concatenate([frames[:1], frames, frames[-1:]])
            spliced.append(np.concatenate([padded[:-2], padded[1:-1], padded[2:]], axis=1))
        expected = np.concatenate(spliced)
    else:
        expected = np.concatenate(list(utterances.values()))
    np.testing.assert_allclose(written, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(written_labels.argmax(axis=1), sum(labels.values(), []))


def test_image_deserializer_crop_and_mean_transforms(tmp_path):
    images = write_images(tmp_path, 4, (5, 6), seed=4, low=40)  # 5 rows, 6 columns
    # OpenCV's FileStorage layout: rows x columns x channels (B, G, R), here 10, 20, 30 everywhere
    mean = np.tile([10.0, 20.0, 30.0], 3 * 4)
    (tmp_path / 'mean.xml').write_text(
        '<?xml version="1.0" ?>\n<opencv_storage>\n<Channel>3</Channel>\n<Row>3</Row>\n<Col>4</Col>\n'
        '<MeanImg type_id="opencv-matrix">\n<rows>1</rows>\n<cols>36</cols>\n<dt>f</dt>\n<data>%s</data></MeanImg>\n'
        '</opencv_storage>\n' % ' '.join('%g' % v for v in mean))
    reader = ('[ randomize = false ; deserializers = ( [ type = "ImageDeserializer" ; file = "map.txt" ; '
              'input = [ features = [ transforms = ( [ type = "Crop" ; cropType = "center" ; cropSize = 4:3 ] : '
              '[ type = "Scale" ; width = 4 ; height = 3 ; channels = 3 ] : [ type = "Mean" ; meanFile = "mean.xml" ] '
              ') ] ; labels = [ labelDim = 2 ] ] ] ) ]')
    (tmp_path / 'i.cntk').write_text(TRAIN_AND_WRITE % ('features = Input {(4:3:3)} ; labels = Input {2}', 2,
                                                        reader, reader))
    rc, log = run(['configFile=i.cntk'], tmp_path)
    assert rc == 0, log[-3000:]
    features = read_written(tmp_path / 'out.features', 36)
    # the centre 3 x 4 window (rows 1-3, columns 1-4), B G R, less the mean, channels first
    expected = np.array([(rgb[1:4, 1:5, ::-1] - [10, 20, 30]).transpose(2, 0, 1).reshape(-1) for rgb in images])
    np.testing.assert_allclose(features, expected, atol=1e-4)


@pytest.mark.parametrize('crop,hflip,flips', [('center', 'true', 'some'), ('center', None, 'none'),
                                              ('randomside', 'false', 'none'), ('randomside', None, 'some')])
def test_image_crop_hflip(tmp_path, crop, hflip, flips):
    """Crop's hflip: a crop flipped horizontally with probability 1/2; unset, random crops are
    flipped and center crops not (CNTK's default). The window is the whole image, so a random
    crop's place does not move it."""
    images = write_images(tmp_path, 12, (3, 4), seed=5, low=0)
    flip_key = '' if hflip is None else ' ; hflip = %s' % hflip
    reader = ('[ randomize = false ; deserializers = ( [ type = "ImageDeserializer" ; file = "map.txt" ; '
              'input = [ features = [ transforms = ( [ type = "Crop" ; cropType = "%s" ; cropSize = 4:3%s ] : '
              '[ type = "Scale" ; width = 4 ; height = 3 ; channels = 3 ] ) ] ; labels = [ labelDim = 2 ] ] ] ) ]'
              % (crop, flip_key))
    (tmp_path / 'i.cntk').write_text(TRAIN_AND_WRITE % ('features = Input {(4:3:3)} ; labels = Input {2}', 2,
                                                        reader, reader))
    rc, log = run(['configFile=i.cntk'], tmp_path)
    assert rc == 0, log[-3000:]
    features = read_written(tmp_path / 'out.features', 36)
    flipped = []
    for got, rgb in zip(features, images):
        plain = rgb[:, :, ::-1].transpose(2, 0, 1).reshape(-1)
        mirrored = rgb[:, ::-1, ::-1].transpose(2, 0, 1).reshape(-1)
        assert np.array_equal(got, plain) or np.array_equal(got, mirrored)
        flipped.append(not np.array_equal(got, plain))
    if flips == 'none':
        assert not any(flipped)
    else:
        assert 0 < sum(flipped) < len(flipped), flipped
