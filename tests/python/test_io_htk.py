"""cntk.io.HTKFeatureDeserializer and HTKMLFDeserializer through MinibatchSource: HTK files written
here (big- and little-endian, compressed, archives with frame ranges), context windows at utterance
edges, MLF labels (times and frame numbers, label mapping, phone boundaries), frame mode randomization,
checkpoints, and the errors of bad files."""
import os
import struct

import numpy as np
import pytest

import cntk as C
from cntk.io import (HTKFeatureDeserializer, HTKMLFDeserializer, MinibatchSource, StreamDef, StreamDefs)

# ---------------------------------------------------------------- writers

USER, MFCC, FBANK, PLP, WAVEFORM = 9, 6, 7, 11, 0
COMPRESSED = 0o2000


def write_htk(path, frames, kind=USER, period=100000, big_endian=True, compress=False):
    """Writes an HTK parameter file; returns the frames as a reader must give them back (float32)."""
    frames = np.asarray(frames, np.float32)
    n, d = frames.shape
    e = '>' if big_endian else '<'
    with open(path, 'wb') as f:
        if not compress:
            f.write(struct.pack(e + 'iihh', n, period, 4 * d, kind))
            f.write(frames.astype(e + 'f4').tobytes())
            return frames
        # HTK's compression: x = round(v * A - B) in int16; A and B take the room of four frames.
        lo, hi = frames.min(0), frames.max(0)
        span = np.where(hi > lo, hi - lo, 1.0).astype(np.float32)
        a = (2 * 32767 / span).astype(np.float32)
        b = ((hi + lo) * 32767 / span).astype(np.float32)
        x = np.clip(np.round(frames * a - b), -32767, 32767).astype(np.int16)
        f.write(struct.pack(e + 'iihh', n + 4, period, 2 * d, kind | COMPRESSED))
        f.write(a.astype(e + 'f4').tobytes() + b.astype(e + 'f4').tobytes() + x.astype(e + 'i2').tobytes())
        return (x.astype(np.float32) + b) / a


def write_lines(path, lines):
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return str(path)


def splice(frames, left, right):
    """NumPy reference of a context window: frames t-left..t+right side by side, edges held."""
    n = len(frames)
    idx = np.clip(np.arange(n)[:, None] + np.arange(-left, right + 1)[None, :], 0, n - 1)
    return frames[idx].reshape(n, -1)


def corpus(tmp_path, lengths=(5, 3, 7, 1, 4), dim=3, seed=0, **kw):
    """One file per utterance, frames numbered so each is unique: value = 1000 * utt + 10 * t + k."""
    utts = {}
    lines = []
    for u, n in enumerate(lengths):
        frames = (1000 * u + 10 * np.arange(n)[:, None] + np.arange(dim)[None, :]).astype(np.float32)
        p = tmp_path / ('utt%d.fea' % u)
        utts['utt%d' % u] = write_htk(p, frames, **kw)
        lines.append('utt%d.fea=%s[0,%d]' % (u, p, n - 1))
    return write_lines(tmp_path / 'train.scp', lines), utts


def read_all(src, stream, size=10000):
    """Every sequence of one sweep, in order, as dense arrays."""
    out = []
    while True:
        mb = src.next_minibatch(size)
        if not mb:
            return out
        seqs = mb[src.streams[stream]].as_sequences()
        out += [s.toarray() if hasattr(s, 'toarray') else np.asarray(s) for s in seqs]


def features(scp, dim, name='features', **kw):
    return HTKFeatureDeserializer(StreamDefs(**{name: StreamDef(scp=scp, shape=dim, **kw)}))


# ---------------------------------------------------------------- features

def test_features_match_numpy_in_file_order(tmp_path):
    scp, utts = corpus(tmp_path)
    src = MinibatchSource(features(scp, 3), randomize=False, max_sweeps=1)
    si = src.streams.features
    assert si.shape == (3,) and not si.is_sparse and si.dtype == np.float32
    got = read_all(src, 'features')
    assert len(got) == len(utts)
    for g, want in zip(got, utts.values()):
        np.testing.assert_array_equal(g, want)


def test_archive_ranges_whole_files_and_dotdotdot(tmp_path):
    frames = np.random.RandomState(1).randn(20, 4).astype(np.float32)
    write_htk(tmp_path / 'arch.htk', frames, kind=MFCC)
    other = write_htk(tmp_path / 'b.mfc', np.random.RandomState(2).randn(6, 4), kind=MFCC)
    # ".../" stands for the SCP file's folder; "key=path" takes the whole file; relative paths are
    # also looked up beside the SCP file.
    scp = write_lines(tmp_path / 'a.scp', ['a=.../arch.htk[0,4]', '', 'b.mfc=%s' % (tmp_path / 'b.mfc'),
                                           'c=arch.htk[12,19]\r', 'd=%s[5,11]' % (tmp_path / 'arch.htk')])
    got = read_all(MinibatchSource(features(scp, 4), randomize=False, max_sweeps=1), 'features')
    for g, want in zip(got, [frames[0:5], other, frames[12:20], frames[5:12]]):
        np.testing.assert_array_equal(g, want)
    assert len(got) == 4


def test_little_endian_and_compressed_files(tmp_path):
    rs = np.random.RandomState(3)
    a = write_htk(tmp_path / 'le.htk', rs.randn(6, 5), big_endian=False, kind=FBANK)
    b = write_htk(tmp_path / 'c.htk', rs.randn(9, 5) * 4, compress=True, kind=FBANK)
    c = write_htk(tmp_path / 'cle.htk', rs.randn(2, 5), compress=True, big_endian=False, kind=FBANK)
    scp = write_lines(tmp_path / 'x.scp', ['le=%s' % (tmp_path / 'le.htk'), 'c=%s[1,8]' % (tmp_path / 'c.htk'),
                                           'cle=%s' % (tmp_path / 'cle.htk')])
    got = read_all(MinibatchSource(features(scp, 5), randomize=False, max_sweeps=1), 'features')
    np.testing.assert_array_equal(got[0], a)
    np.testing.assert_array_equal(got[1], b[1:9])
    np.testing.assert_array_equal(got[2], c)


@pytest.mark.parametrize('left,right', [(2, 1), (0, 3), (4, 0), (1, 1)])
def test_context_window_at_utterance_edges(tmp_path, left, right):
    scp, utts = corpus(tmp_path, lengths=(4, 1, 6, 2))
    src = MinibatchSource(features(scp, 3, context=(left, right)), randomize=False, max_sweeps=1)
    assert src.streams.features.shape == (3 * (1 + left + right),)
    got = read_all(src, 'features')
    for g, want in zip(got, utts.values()):
        np.testing.assert_array_equal(g, splice(want, left, right))
    # Frame mode gives the same spliced frames, one per sample (the window stays inside the utterance).
    src = MinibatchSource(features(scp, 3, context=(left, right)), randomize=False, max_sweeps=1, frame_mode=True)
    frames = np.concatenate(read_all(src, 'features', size=5))
    np.testing.assert_array_equal(frames, np.concatenate([splice(u, left, right) for u in utts.values()]))


def test_window_from_dimension_without_context(tmp_path):
    # CNTK: with no context, a dimension that is an odd multiple of the files' asks for a symmetric window.
    scp, utts = corpus(tmp_path, lengths=(3, 5))
    got = read_all(MinibatchSource(features(scp, 15), randomize=False, max_sweeps=1), 'features')
    for g, want in zip(got, utts.values()):
        np.testing.assert_array_equal(g, splice(want, 2, 2))
    with pytest.raises(ValueError, match="odd multiple"):
        MinibatchSource(features(scp, 6))
    with pytest.raises(ValueError, match="values per frame"):
        MinibatchSource(features(scp, 4, context=(1, 1)))


def test_float64_stream_and_two_feature_streams(tmp_path):
    scp, utts = corpus(tmp_path, lengths=(2, 3))
    lines = []
    second = {}
    for i, (k, v) in enumerate(utts.items()):
        second[k] = write_htk(tmp_path / ('%s.ivec' % k), -v[:, :2])
        lines.append('%s=%s' % (k, tmp_path / ('%s.ivec' % k)))
    scp2 = write_lines(tmp_path / 'iv.scp', lines[::-1])  # another order: joined by key
    d = HTKFeatureDeserializer(StreamDefs(f=StreamDef(scp=scp, shape=3, dtype=np.float64),
                                          g=StreamDef(scp=[scp2], shape=2, context=(1, 0))))
    src = MinibatchSource(d, randomize=False, max_sweeps=1)
    assert src.streams.f.dtype == np.float64 and src.streams.g.shape == (4,)
    mb = src.next_minibatch(100)
    for f, g, k in zip(mb[src.streams.f].as_sequences(), mb[src.streams.g].as_sequences(), utts):
        assert f.dtype == np.float64
        np.testing.assert_array_equal(f, utts[k])
        np.testing.assert_array_equal(g, splice(second[k], 1, 0))


@pytest.mark.parametrize('frame_mode', [False, True])
def test_broadcast_stream_repeats_its_frame_over_the_utterance(tmp_path, frame_mode):
    scp, mapping, mlf, utts, labels = labelled_corpus(tmp_path, lengths=(4, 2, 3))
    lines, ivec = [], {}
    for k in utts:
        ivec[k] = write_htk(tmp_path / ('%s.iv' % k), np.random.RandomState(len(k)).randn(1, 2) + int(k[3:]))
        lines.append('%s=%s[0,0]' % (k, tmp_path / ('%s.iv' % k)))
    iv = HTKFeatureDeserializer(StreamDefs(ivector=StreamDef(scp=write_lines(tmp_path / 'iv.scp', lines[::-1]), shape=2,
                                                             broadcast=True)))
    lab = HTKMLFDeserializer(mapping, StreamDefs(labels=StreamDef(shape=5, mlf=mlf)))
    src = MinibatchSource([features(scp, 3), iv, lab], randomize=False, max_sweeps=1, frame_mode=frame_mode)
    mb = src.next_minibatch(100)
    f = np.concatenate(mb[src.streams.features].as_sequences())
    v = np.concatenate(mb[src.streams.ivector].as_sequences())
    l = np.concatenate([s.toarray() for s in mb[src.streams.labels].as_sequences()])
    np.testing.assert_array_equal(f, np.concatenate(list(utts.values())))
    np.testing.assert_array_equal(v, np.concatenate([np.repeat(ivec[k], len(utts[k]), 0) for k in utts]))
    np.testing.assert_array_equal(l, np.concatenate([onehot(labels[k]) for k in utts]))


def test_max_sequence_length_and_duplicates_are_skipped(tmp_path):
    scp, utts = corpus(tmp_path, lengths=(5, 3, 7))
    with open(scp, 'a') as f:
        f.write('utt1=%s\n' % (tmp_path / 'utt0.fea'))  # utt1 twice: every copy is dropped (as CNTK)
    d = features(scp, 3, max_sequence_length=6)
    got = read_all(MinibatchSource(d, randomize=False, max_sweeps=1), 'features')
    assert len(got) == 1
    np.testing.assert_array_equal(got[0], utts['utt0'])
    warnings = ' '.join(d.warnings())
    assert "'utt2' has 7 frames" in warnings and "'utt1' is listed 2 times" in warnings


# ---------------------------------------------------------------- labels

STATES = ['sil', 'a_s2', 'a_s3', 'b_s2', 'b_s3']


def labelled_corpus(tmp_path, lengths=(5, 3, 7, 1, 4), **kw):
    """Features plus an MLF labelling frame t of utterance u with state (u + t // 2) % 5, in time units."""
    scp, utts = corpus(tmp_path, lengths=lengths, **kw)
    mapping = write_lines(tmp_path / 'states.list', STATES)
    lines = ['#!MLF!#']
    labels = {}
    for u, n in enumerate(lengths):
        lab = np.array([(u + t // 2) % 5 for t in range(n)])
        labels['utt%d' % u] = lab
        lines.append('"*/utt%d.lab"' % u)
        t = 0
        while t < n:
            e = min(n, t + 2 - t % 2)
            lines.append('%d %d %s -12.5 extra' % (t * 100000, e * 100000, STATES[lab[t]]))
            t = e
        lines.append('.')
    mlf = write_lines(tmp_path / 'train.mlf', lines)
    return scp, mapping, mlf, utts, labels


def onehot(labels, dim=5):
    return np.eye(dim, dtype=np.float32)[labels]


def test_labels_joined_with_features(tmp_path):
    scp, mapping, mlf, utts, labels = labelled_corpus(tmp_path)
    lab = HTKMLFDeserializer(mapping, StreamDefs(labels=StreamDef(shape=5, mlf=mlf)))
    src = MinibatchSource([features(scp, 3), lab], randomize=False, max_sweeps=1)
    assert src.streams.labels.is_sparse and src.streams.labels.shape == (5,)
    mb = src.next_minibatch(1000)
    feats = mb[src.streams.features].as_sequences()
    labs = mb[src.streams.labels].as_sequences()
    assert len(feats) == len(labs) == 5
    for f, l, k in zip(feats, labs, utts):
        np.testing.assert_array_equal(f, utts[k])
        np.testing.assert_array_equal(l.toarray(), onehot(labels[k]))


def test_frame_numbers_four_columns_and_several_mlfs(tmp_path):
    scp, utts = corpus(tmp_path, lengths=(4, 3))
    # Entries shorter than 99999 units are frame numbers (CNTK); no mapping file: 'start end name class'.
    m1 = write_lines(tmp_path / 'a.mlf', ['#!MLF!#', '"utt0.rec"', '0 1 x 2', '1 4 y 0', '.'])
    # A zero-length label (an HTK 'sp') in 100 ns units keeps the unit of the line before it.
    m2 = write_lines(tmp_path / 'b.mlf', ['#!MLF!#', '"*/utt1"', '0 300000 z 1', '300000 300000 sp 3', '.'])
    src = MinibatchSource([features(scp, 3), HTKMLFDeserializer(None, StreamDefs(l=StreamDef(shape=4, mlf=[m1, m2])))],
                          randomize=False, max_sweeps=1)
    got = read_all(src, 'l')
    np.testing.assert_array_equal(got[0], onehot([2, 0, 0, 0], 4))
    np.testing.assert_array_equal(got[1], onehot([1, 1, 1], 4))


def test_phone_boundaries_mark_first_frames(tmp_path):
    scp, mapping, mlf, utts, labels = labelled_corpus(tmp_path, lengths=(5, 2))
    lab = HTKMLFDeserializer(mapping, StreamDefs(labels=StreamDef(shape=5, mlf=mlf)), phoneBoundaries=True)
    src = MinibatchSource([features(scp, 3), lab], randomize=False, max_sweeps=1)
    got = read_all(src, 'labels')
    for g, k in zip(got, utts):
        want = onehot(labels[k])
        want[::2] *= 2  # ranges start at even frames
        np.testing.assert_array_equal(g, want)


    with pytest.raises(ValueError, match="frame_mode and an HTKMLFDeserializer with phoneBoundaries"):
        MinibatchSource([features(scp, 3), lab], frame_mode=True)


def test_float64_labels(tmp_path):
    scp, mapping, mlf, utts, labels = labelled_corpus(tmp_path, lengths=(3,))
    lab = HTKMLFDeserializer(mapping, StreamDefs(labels=StreamDef(shape=7, mlf=mlf, dtype=np.float64)))
    src = MinibatchSource([features(scp, 3), lab], randomize=False, max_sweeps=1)
    assert src.streams.labels.dtype == np.float64
    np.testing.assert_array_equal(read_all(src, 'labels')[0], onehot(labels['utt0'], 7))


# ---------------------------------------------------------------- randomization and checkpoints

def frame_id(row):
    return int(round(row[0]))  # 1000 * utt + 10 * t


def test_frame_mode_randomization_covers_every_frame_once_per_sweep(tmp_path):
    lengths = (5, 3, 7, 1, 4, 9, 2, 6)
    scp, mapping, mlf, utts, labels = labelled_corpus(tmp_path, lengths=lengths)
    all_frames = sorted(1000 * u + 10 * t for u, n in enumerate(lengths) for t in range(n))

    def sweep_orders(seed, sweeps=2):
        f = HTKFeatureDeserializer(StreamDefs(features=StreamDef(scp=scp, shape=3, context=(1, 1))), frames_per_chunk=8)
        l = HTKMLFDeserializer(mapping, StreamDefs(labels=StreamDef(shape=5, mlf=mlf)), frames_per_chunk=8)
        src = MinibatchSource([f, l], frame_mode=True, randomization_window_in_chunks=2, randomization_seed=seed,
                              max_sweeps=sweeps)
        frames, ends = [], 0
        while True:
            mb = src.next_minibatch(6)
            if not mb:
                break
            fd, ld = mb[src.streams.features], mb[src.streams.labels]
            assert fd.num_samples == fd.num_sequences <= 6
            x = fd.asarray().reshape(fd.num_sequences, -1)
            y = np.concatenate([s.toarray() for s in ld.as_sequences()])
            for row, lab in zip(x, y):
                fid = frame_id(row[3:6])  # the centre frame of the window
                u, t = divmod(fid, 1000)
                t //= 10
                assert lab.argmax() == labels['utt%d' % u][t] and lab.sum() == 1
                np.testing.assert_array_equal(row, splice(utts['utt%d' % u], 1, 1)[t])
                frames.append(fid)
            ends += fd.end_of_sweep
        # minibatches run on across a sweep boundary, as CNTK's: the sweeps are the frames cut by count
        assert ends == sweeps and len(frames) == sweeps * len(all_frames)
        return [frames[i:i + len(all_frames)] for i in range(0, len(frames), len(all_frames))]

    orders = sweep_orders(5)
    assert len(orders) == 2
    for o in orders:
        assert sorted(o) == all_frames
    assert orders[0] != all_frames and orders[0] != orders[1]  # shuffled, anew each sweep
    assert sweep_orders(5) == orders


def test_sequence_mode_randomized_and_checkpoint(tmp_path):
    lengths = tuple(range(1, 16))
    scp, mapping, mlf, utts, labels = labelled_corpus(tmp_path, lengths=lengths)

    def source(seed=3):
        f = HTKFeatureDeserializer(StreamDefs(features=StreamDef(scp=scp, shape=3)), frames_per_chunk=10)
        l = HTKMLFDeserializer(mapping, StreamDefs(labels=StreamDef(shape=5, mlf=mlf)), frames_per_chunk=10)
        return MinibatchSource([f, l], randomization_seed=seed, randomization_window_in_chunks=2)

    def ids(mb, src):
        return [frame_id(s[0]) // 1000 for s in mb[src.streams.features].as_sequences()]

    a = source()
    seen = []
    while True:
        mb = a.next_minibatch(20)
        seen += ids(mb, a)
        if mb[a.streams.features].end_of_sweep:
            break
    assert sorted(seen) == list(range(len(lengths))) and seen != sorted(seen)
    for _ in range(3):
        a.next_minibatch(20)
    state = a.get_checkpoint_state()
    following = [ids(a.next_minibatch(20), a) for _ in range(6)]
    b = source()
    b.restore_from_checkpoint(state)
    assert [ids(b.next_minibatch(20), b) for _ in range(6)] == following


def test_truncated_bptt_pieces_rebuild_each_utterance(tmp_path):
    # CNTK's speech examples read HTK + MLF with truncation_length: the pieces of each slot, joined,
    # give every utterance's frames and labels in order.
    lengths = (7, 3, 11, 5, 2)
    scp, mapping, mlf, utts, labels = labelled_corpus(tmp_path, lengths=lengths)
    lab = HTKMLFDeserializer(mapping, StreamDefs(labels=StreamDef(shape=5, mlf=mlf)))
    src = MinibatchSource([features(scp, 3), lab], randomize=False, max_sweeps=1, truncation_length=4)
    pieces = {}
    while True:
        mb = src.next_minibatch(8)  # two slots of 4 steps
        if not mb:
            break
        fs = mb[src.streams.features].as_sequences()
        ls = mb[src.streams.labels].as_sequences()
        assert len(fs) <= 2 and all(len(f) <= 4 for f in fs)
        for f, l in zip(fs, ls):
            u = frame_id(f[0]) // 1000
            pieces.setdefault(u, []).append((f, l.toarray()))
    assert sorted(pieces) == list(range(len(lengths)))
    for u, ps in pieces.items():
        np.testing.assert_array_equal(np.concatenate([f for f, _ in ps]), utts['utt%d' % u])
        np.testing.assert_array_equal(np.concatenate([l for _, l in ps]), onehot(labels['utt%d' % u]))


def test_train_on_htk_source(tmp_path):
    # A linear classifier learns labels that are a function of the features.
    rs = np.random.RandomState(0)
    lines, mlf = [], ['#!MLF!#']
    for u in range(6):
        x = rs.randn(40, 4).astype(np.float32)
        y = (x[:, 0] > 0).astype(int)
        write_htk(tmp_path / ('u%d.htk' % u), x)
        lines.append('u%d=%s[0,39]' % (u, tmp_path / ('u%d.htk' % u)))
        mlf.append('"u%d.lab"' % u)
        mlf += ['%d %d %s' % (t, t + 1, 'ab'[y[t]]) for t in range(40)]
        mlf.append('.')
    scp = write_lines(tmp_path / 't.scp', lines)
    src = MinibatchSource([features(scp, 4), HTKMLFDeserializer(write_lines(tmp_path / 'm', ['a', 'b']),
                                                                StreamDefs(labels=StreamDef(shape=2, mlf=write_lines(tmp_path / 't.mlf', mlf))))],
                          frame_mode=True, randomization_seed=1)
    x = C.input_variable(4)
    y = C.input_variable(2, is_sparse=True)
    z = C.layers.Dense(2, init=C.glorot_uniform(seed=1))(x)
    loss = C.cross_entropy_with_softmax(z, y)
    err = C.classification_error(z, y)
    trainer = C.Trainer(z, (loss, err), [C.sgd(z.parameters, C.learning_parameter_schedule(0.5))])
    imap = {x: src.streams.features, y: src.streams.labels}
    errs = []
    for i in range(60):
        trainer.train_minibatch(src.next_minibatch(32, input_map=imap))
        errs.append(trainer.previous_minibatch_evaluation_average)
    assert np.mean(errs[-10:]) < 0.1


# ---------------------------------------------------------------- errors

def test_bad_feature_files_raise_ioerror_naming_file_and_problem(tmp_path):
    good = np.ones((4, 3), np.float32)

    def scp_for(name, data=None, range_=''):
        p = tmp_path / name
        if data is not None:
            p.write_bytes(data)
        return write_lines(tmp_path / (name + '.scp'), ['k=%s%s' % (p, range_)])

    write_htk(tmp_path / 'ok.htk', good)
    raw = (tmp_path / 'ok.htk').read_bytes()
    cases = [
        (scp_for('short.htk', raw[:8]), "short.htk.*truncated header"),
        (scp_for('cut.htk', raw[:-5]), "cut.htk.*truncated data: the header says 4 frames"),
        (scp_for('size.htk', struct.pack('>iihh', 1, 100000, 6, USER) + b'\0' * 6), "size.htk.*sample size 6"),
        (scp_for('wave.htk', struct.pack('>iihh', 1, 100000, 4, WAVEFORM) + b'\0' * 4), "wave.htk.*parameter kind 0"),
        (scp_for('neg.htk', struct.pack('>iihh', -3, 100000, 4, USER)), "neg.htk.*negative frame count"),
        (scp_for('ok.htk', None, '[2,9]'), r"ok.htk.*past its end \(it has 4 frames\)"),
        (scp_for('missing.htk'), "missing.htk.*cannot open"),
        (write_lines(tmp_path / 'bad.scp', ['k=%s[1,x]' % (tmp_path / 'ok.htk')]), r"bad.scp:1: malformed SCP entry"),
        (write_lines(tmp_path / 'rev.scp', ['k=%s[3,1]' % (tmp_path / 'ok.htk')]), r"rev.scp:1:.*start frame after"),
        (write_lines(tmp_path / 'empty.scp', ['', '  ']), "no utterance"),
    ]
    for scp, pattern in cases:
        with pytest.raises(IOError, match=pattern):
            MinibatchSource(features(scp, 3))
    with pytest.raises(IOError, match="nothere.scp"):
        MinibatchSource(features(str(tmp_path / 'nothere.scp'), 3))
    # Files of one stream must agree on kind, dimension and period.
    write_htk(tmp_path / 'mfcc.htk', good, kind=MFCC)
    scp = write_lines(tmp_path / 'mix.scp', ['a=%s' % (tmp_path / 'ok.htk'), 'b=%s' % (tmp_path / 'mfcc.htk')])
    with pytest.raises(IOError, match="mix.scp:2: .*mfcc.htk' holds 3-dimensional MFCC .*USER"):
        MinibatchSource(features(scp, 3))


def test_file_changed_after_indexing(tmp_path):
    write_htk(tmp_path / 'a.htk', np.ones((6, 2)))
    scp = write_lines(tmp_path / 'a.scp', ['a=%s[0,5]' % (tmp_path / 'a.htk')])
    src = MinibatchSource(features(scp, 2), randomize=False, prefetch=False)
    with open(tmp_path / 'a.htk', 'r+b') as f:
        f.truncate(20)
    with pytest.raises(IOError, match="a.htk.*cannot read frames 0..5"):
        src.next_minibatch(10)


def test_bad_label_files_raise_ioerror(tmp_path):
    scp, mapping, mlf, utts, labels = labelled_corpus(tmp_path, lengths=(3, 2))

    def mlf_source(lines, mapping=mapping, dim=5):
        m = write_lines(tmp_path / 'bad.mlf', lines)
        return MinibatchSource([features(scp, 3), HTKMLFDeserializer(mapping, StreamDefs(l=StreamDef(shape=dim, mlf=m)))])

    head = ['#!MLF!#', '"utt0.lab"']
    cases = [
        (head + ['0 100000 zz', '.'], r"bad.mlf':3: label 'zz' is not in the label mapping file"),
        (head + ['0 100000 sil', '200000 300000 sil', '.'], r"bad.mlf':4: .*starts at frame 2, expected 1"),
        (head + ['100000 300000 sil', '.'], r"bad.mlf':3: .*first label starts at 0"),
        (head + ['0 100000 sil'], r"bad.mlf':2: utterance 'utt0' is not closed"),
        (head + ['0 100000 sil', '"utt1.lab"'], r"bad.mlf':4: .*not closed"),
        (head + ['0 x sil', '.'], r"bad.mlf':3: cannot read the start and end times"),
        (head + ['300000 100000 sil', '.'], r"bad.mlf':3: the end .* is before its start"),
        (head + ['0 100000', '.'], r"bad.mlf':3: expected 'start end label'"),
        (['#!MLF!#', 'utt0.lab', '.'], r"bad.mlf':2: expected a quoted utterance name"),
        (head + ['0 100000 sil', '.', '"*/utt0.rec"', '0 1 sil', '.'], r"bad.mlf':5: utterance 'utt0' is labelled twice"),
    ]
    for lines, pattern in cases:
        with pytest.raises(IOError, match=pattern):
            mlf_source(lines)
    with pytest.raises(IOError, match=r"class 4 \('b_s3'\) is not below the stream's dimension 4"):
        mlf_source(head + ['0 100000 a_s2', '100000 300000 b_s3', '.'], dim=4)
    with pytest.raises(IOError, match="dup.list':2: state 'sil' is listed twice"):
        mlf_source(head, mapping=write_lines(tmp_path / 'dup.list', ['sil', 'sil']))
    with pytest.raises(IOError, match=r"bad.mlf':3: .*four columns|'start end name class'"):
        mlf_source(head + ['0 3 sil', '.'], mapping=None)
    with pytest.raises(IOError, match="no labelled utterance"):
        mlf_source(['#!MLF!#', '"utt0.lab"', '.'])


def test_missing_label_names_the_utterance(tmp_path):
    scp, mapping, mlf, utts, labels = labelled_corpus(tmp_path, lengths=(3, 2))
    m = write_lines(tmp_path / 'one.mlf', ['#!MLF!#', '"utt0.lab"', '0 300000 sil', '.'])
    src = MinibatchSource([features(scp, 3), HTKMLFDeserializer(mapping, StreamDefs(l=StreamDef(shape=5, mlf=m)))],
                          randomize=False)
    with pytest.raises(IOError, match="sequence 'utt1' of the primary deserializer has no data in deserializer 1"):
        read_all(src, 'l')


def test_configuration_errors(tmp_path):
    scp, mapping, mlf, utts, labels = labelled_corpus(tmp_path, lengths=(3,))
    with pytest.raises(ValueError, match="does not support stream names"):
        HTKFeatureDeserializer(StreamDefs(f=StreamDef(field='x', scp=scp, shape=3)))
    with pytest.raises(ValueError, match="no scp files"):
        HTKFeatureDeserializer(StreamDefs(f=StreamDef(shape=3)))
    with pytest.raises(ValueError, match="needs a dimension"):
        HTKFeatureDeserializer(StreamDefs(f=StreamDef(scp=scp)))
    with pytest.raises(ValueError, match="context"):
        HTKFeatureDeserializer(StreamDefs(f=StreamDef(scp=scp, shape=3, context=(1,))))
    with pytest.raises(TypeError, match="scp"):
        HTKFeatureDeserializer(StreamDefs(f=StreamDef(scp=3, shape=3)))
    with pytest.raises(ValueError, match="no feature streams"):
        HTKFeatureDeserializer(StreamDefs())
    one = write_lines(tmp_path / 'one.scp', ['u=%s[0,0]' % (tmp_path / 'utt0.fea')])
    with pytest.raises(ValueError, match="broadcast .* cannot be the first"):
        MinibatchSource(HTKFeatureDeserializer(StreamDefs(f=StreamDef(scp=one, shape=3, broadcast=True))))
    with pytest.raises(IOError, match="train.scp:1: utterance 'utt0' has 3 frames, but stream 'f' is broadcast"):
        MinibatchSource([features(scp, 3, name='g'),
                         HTKFeatureDeserializer(StreamDefs(f=StreamDef(scp=scp, shape=3, broadcast=True)))])
    with pytest.raises(ValueError, match="single stream"):
        HTKMLFDeserializer(mapping, StreamDefs(a=StreamDef(shape=5, mlf=mlf), b=StreamDef(shape=5, mlf=mlf)))
    with pytest.raises(ValueError, match="no master label files"):
        HTKMLFDeserializer(mapping, StreamDefs(a=StreamDef(shape=5)))
    with pytest.raises(ValueError, match="does not support stream names"):
        HTKMLFDeserializer(mapping, StreamDefs(a=StreamDef(field='l', shape=5, mlf=mlf)))
    with pytest.raises(TypeError, match="float32 or float64"):
        HTKMLFDeserializer(mapping, StreamDefs(a=StreamDef(shape=5, mlf=mlf, dtype=np.int32)))
    with pytest.raises(IOError, match="train.mlf':4: class 1 .* not below the stream's dimension 1"):
        MinibatchSource([features(scp, 3), HTKMLFDeserializer(mapping, StreamDefs(l=StreamDef(shape=1, mlf=mlf)))])
    with pytest.raises(IOError, match="nope.list"):
        MinibatchSource([features(scp, 3), HTKMLFDeserializer(str(tmp_path / 'nope.list'),
                                                             StreamDefs(l=StreamDef(shape=5, mlf=mlf)))])


def test_signatures_follow_cntk():
    import inspect
    assert list(inspect.signature(HTKFeatureDeserializer).parameters)[:1] == ['streams']
    assert list(inspect.signature(HTKMLFDeserializer).parameters)[:3] == ['label_mapping_file', 'streams',
                                                                          'phoneBoundaries']
    assert C.io.HTKFeatureDeserializer is HTKFeatureDeserializer
    with pytest.raises(NotImplementedError):
        C.io.HTKMLFBinaryDeserializer(StreamDefs())
