"""cntk.io.MinibatchSource over CTFDeserializer: CNTK's reader-test files, ATIS, randomization,
partitions, checkpoints (restored in a new process), prefetch, limits, frame mode, truncated BPTT,
UserDeserializer, the CTF helpers and training from CTF."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse

import cntk as C
from cntk.io import (CTFDeserializer, FULL_DATA_SWEEP, INFINITELY_REPEAT, MinibatchSource, StreamDef, StreamDefs,
                     StreamInformation, UserDeserializer, sequence_to_cntk_text_format)


# ---------------------------------------------------------------- a reference reader for the checks

def _reference_ctf(path):
    """The sequences of a CTF file, read naively: [(key, {alias: [sample tokens]})]."""
    with open(path, 'rb') as f:
        text = f.read().decode('utf-8-sig')
    seqs = []
    has_ids = None
    for lineno, line in enumerate(text.split('\n'), 1):
        line = line.rstrip('\r')
        if not line.strip():
            continue
        m = re.match(r'\s*(\d+)', line)
        key = int(m.group(1)) if m else None
        rest = line[m.end():] if m else line
        if has_ids is None:
            has_ids = key is not None
        fields = {}
        p = 0
        while p < len(rest):
            if rest[p] in ' \t':
                p += 1
                continue
            assert rest[p] == '|', (path, lineno)
            p += 1
            if rest.startswith('#', p):  # comment: to the next '|' not followed by '#'
                p += 1
                while True:
                    bar = rest.find('|', p)
                    if bar < 0:
                        p = len(rest)
                        break
                    if rest.startswith('#', bar + 1):
                        p = bar + 2
                        continue
                    p = bar
                    break
                continue
            end = rest.find('|', p)
            end = len(rest) if end < 0 else end
            tokens = rest[p:end].split()
            if len(tokens) > 1:
                fields[tokens[0]] = tokens[1:]
            p = end
        cont = seqs and ((key is not None and seqs[-1][0] == key) or (key is None and has_ids))
        if not cont:
            seqs.append((key if key is not None else lineno, {}))
        for a, toks in fields.items():
            seqs[-1][1].setdefault(a, []).append(toks)
    return [s for s in seqs if s[1]]


def _stream_defs(seqs):
    """StreamDefs for every field of the reference sequences (sparse when the values are index:value)."""
    dims, sparse = {}, {}
    for _, fields in seqs:
        for a, samples in fields.items():
            for toks in samples:
                if ':' in toks[0]:
                    sparse[a] = True
                    dims[a] = max(dims.get(a, 1), max(int(t.split(':')[0]) for t in toks) + 1)
                else:
                    dims[a] = len(toks)
    return StreamDefs(**{a: StreamDef(field=a, shape=d, is_sparse=sparse.get(a, False), dtype=np.float64)
                         for a, d in dims.items()})


def _expected_dense(toks_list, dim, sparse):
    out = np.zeros((len(toks_list), dim), np.float64)
    for i, toks in enumerate(toks_list):
        if sparse:
            for t in toks:
                k, v = t.split(':')
                out[i, int(k)] += float(v)
        else:
            out[i] = [float(t) for t in toks]
    return out


def _read_all(source, size=10 ** 6):
    """Every minibatch of a finite source as {stream name: list of dense [len, dim] arrays}."""
    out = {si.name: [] for si in source.stream_infos()}
    while True:
        mb = source.next_minibatch(size)
        if not mb:
            return out
        for si, d in mb.items():
            out[si.name].extend(_dense_sequences(d))


def _dense_sequences(d):
    if d.data is None:
        return []
    seqs = d.as_sequences()
    return [s.toarray() if scipy.sparse.issparse(s) else s.reshape(s.shape[0], -1) for s in seqs]


CTF_DIR = 'ctf-reader'
VALID = ['100x100_jagged_sequences_sparse.txt', '100x100_jagged_sparse.txt', '100x1_dense.txt', '10x10_dense.txt',
         '10x10_sparse.txt', '10x1_MI_dense.txt', '1x10_dense.txt', '1x10_sparse.txt', '1x1_dense.txt',
         '1x1_sparse.txt', '1x2_dense.txt', '1x2_sparse.txt', '20x10_MI_jagged_samples_sparse.txt',
         '3x5_MI_sparse.txt', '50x20_jagged_sequences_dense.txt', '50x20_jagged_sequences_sparse.txt',
         '5x10_and_5x5_jagged.txt', '5x10_jagged.txt', '5x5_jagged.txt', 'MNIST_dense.txt', 'Simple_dense.txt',
         'contains_blank_lines.txt', 'missing_trailing_newline.txt', 'ref_data_with_escape_sequences.txt',
         'space_separated.txt']
INVALID = {'duplicate_inputs.txt': (1, "given twice"), 'empty_samples.txt': (2, "expected"),
           'invalid_inputs.txt': (2, "out of range")}


def test_every_reader_test_file_is_listed(shared_data):
    assert sorted(os.listdir(os.path.join(shared_data, CTF_DIR))) == sorted(VALID + list(INVALID))


@pytest.mark.parametrize('name', VALID)
def test_cntk_reader_files_read_like_the_reference(shared_data, name):
    path = os.path.join(shared_data, CTF_DIR, name)
    ref = _reference_ctf(path)
    streams = _stream_defs(ref)
    # small chunks, so that most files span several
    src = MinibatchSource(CTFDeserializer(path, streams, chunk_size_in_bytes=2048), randomize=False, max_sweeps=1)
    got = _read_all(src, size=37)
    for name_, sdef in streams.items():
        dim = sdef['dim']
        expect = [_expected_dense(f.get(name_, []), dim, sdef['is_sparse']) for _, f in ref]
        assert len(got[name_]) == len(expect)
        for g, e in zip(got[name_], expect):
            np.testing.assert_allclose(g.reshape(-1, dim) if g.size else np.zeros((0, dim)), e, rtol=1e-15)


@pytest.mark.parametrize('name', sorted(INVALID))
def test_invalid_reader_files_raise_with_file_and_line(shared_data, name):
    path = os.path.join(shared_data, CTF_DIR, name)
    streams = {'duplicate_inputs.txt': StreamDefs(a=StreamDef('F1', 1), b=StreamDef('F2', 1)),
               'empty_samples.txt': StreamDefs(a=StreamDef('F0', 10), b=StreamDef('F1', 10, is_sparse=True)),
               'invalid_inputs.txt': StreamDefs(a=StreamDef('A', 1), b=StreamDef('B', 10, is_sparse=True))}[name]
    line, what = INVALID[name]
    with pytest.raises(IOError, match=r"%s:%d: .*%s" % (re.escape(name), line, what)):
        MinibatchSource(CTFDeserializer(path, streams))
    # CNTK's tolerance: malformed lines are skipped up to max_errors
    if name == 'duplicate_inputs.txt':  # its only line is malformed: nothing is left
        with pytest.raises(IOError, match="holds no sequence"):
            MinibatchSource(CTFDeserializer(path, streams, max_errors=100))
        return
    src = MinibatchSource(CTFDeserializer(path, streams, max_errors=100), randomize=False, max_sweeps=1)
    got = _read_all(src)
    assert len(got['a']) > 0
    src = MinibatchSource(CTFDeserializer(path, streams), randomize=False, max_sweeps=1, max_errors=100)
    assert [len(v) for v in _read_all(src).values()] == [len(v) for v in got.values()]
    with pytest.raises(IOError, match="malformed lines"):
        MinibatchSource(CTFDeserializer(path, streams, max_errors=1))


def test_atis_counts(shared_data):
    for split, n_seq, n_tok in (('train', 4978, 66547), ('test', 893, 10984)):
        path = os.path.join(shared_data, 'atis', 'atis.%s.ctf' % split)
        streams = StreamDefs(query=StreamDef('S0', 943, is_sparse=True), intent=StreamDef('S1', 26, is_sparse=True),
                             slots=StreamDef('S2', 129, is_sparse=True))
        src = MinibatchSource(CTFDeserializer(path, streams, chunk_size_in_bytes=100000), max_sweeps=1)
        seqs = tokens = intents = 0
        ends = 0
        while True:
            mb = src.next_minibatch(2000)
            if not mb:
                break
            q = mb[src.streams.query]
            assert q.is_sparse
            seqs += q.num_sequences
            tokens += q.num_samples
            intents += mb[src.streams.intent].num_samples
            ends += q.end_of_sweep
            assert mb[src.streams.slots].num_samples == q.num_samples
        assert (seqs, tokens) == (n_seq, n_tok)
        assert intents == n_seq and ends == 1


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_jagged_sparse_dense_mix_missing_streams_escapes_blank_lines(tmp_path):
    path = _write(tmp_path, 'mix.ctf', textwrap.dedent("""\
        7 |a 1 2 |b 3:0.5 |# a comment |# with an escaped bar
        7 |a 3 4

        7 |b 0:1 1:2
        9 |#only a comment|b 2
        9 |a 5 6 |b
        """))
    streams = StreamDefs(a=StreamDef('a', 2), b=StreamDef('b', 4, is_sparse=True))
    src = MinibatchSource(CTFDeserializer(path, streams), randomize=False, max_sweeps=1)
    mb = src.next_minibatch(100)
    a, b = mb[src.streams.a], mb[src.streams.b]
    assert (a.num_sequences, a.num_samples, b.num_samples) == (2, 3, 3)
    seq_a = a.as_sequences()
    np.testing.assert_array_equal(seq_a[0], [[1, 2], [3, 4]])
    np.testing.assert_array_equal(seq_a[1], [[5, 6]])
    seq_b = b.as_sequences()
    np.testing.assert_array_equal(seq_b[0].toarray(), [[0, 0, 0, 0.5], [1, 2, 0, 0]])
    np.testing.assert_array_equal(seq_b[1].toarray(), [[0, 0, 1, 0]])  # a bare index has the value 1
    assert a.end_of_sweep and src.next_minibatch(100) == {}


def test_malformed_file_names_file_line_and_what_was_expected(tmp_path):
    path = _write(tmp_path, 'bad.ctf', "1 |a 1 2\n2 |a 1 x\n")
    with pytest.raises(IOError, match=r"bad\.ctf:2: expected a number in dense stream 'a', found 'x'"):
        CTFDeserializer(path, StreamDefs(a=StreamDef('a', 2)))._native()
    with pytest.raises(IOError, match="cannot open"):
        CTFDeserializer(str(tmp_path / 'missing.ctf'), StreamDefs(a=StreamDef('a', 2)))._native()
    with pytest.raises(ValueError, match="field"):
        CTFDeserializer(path, StreamDefs(a=StreamDef(shape=2)))
    with pytest.raises(ValueError, match="shape"):
        CTFDeserializer(path, StreamDefs(a=StreamDef('a')))


def test_double_streams_and_float_overflow(tmp_path):
    path = _write(tmp_path, 'f.ctf', "0 |a 1e39 -1e39\n1 |a 1e-50 2\n")
    src = MinibatchSource(CTFDeserializer(path, StreamDefs(a=StreamDef('a', 2))), randomize=False)
    np.testing.assert_array_equal(np.concatenate(src.next_minibatch(2)[src.streams.a].as_sequences()),
                                  np.array([[np.inf, -np.inf], [0, 2]], np.float32))
    path = _write(tmp_path, 'd.ctf', "0 |a 0.1 0.2\n1 |a 0.3 0.4\n")
    src = MinibatchSource(CTFDeserializer(path, StreamDefs(a=StreamDef('a', 2, dtype=np.float64))), randomize=False)
    assert src.streams.a.dtype == np.float64
    mb = src.next_minibatch(2)
    np.testing.assert_array_equal(np.concatenate(mb[src.streams.a].as_sequences()), [[0.1, 0.2], [0.3, 0.4]])


def _numbered(tmp_path, n=120, name='num.ctf'):
    """Sequence i has i % 4 + 1 steps: |x i t and a sparse one-hot |y (i % 3)."""
    lines = []
    for i in range(n):
        for t in range(i % 4 + 1):
            lines.append("%d |x %d %d |y %d:1" % (i, i, t, i % 3))
    return _write(tmp_path, name, "\n".join(lines) + "\n")


def _source(path, **kw):
    streams = StreamDefs(x=StreamDef('x', 2), y=StreamDef('y', 3, is_sparse=True))
    return MinibatchSource(CTFDeserializer(path, streams, chunk_size_in_bytes=150), **kw)


def _ids(mb, src):
    return [int(s[0, 0]) for s in mb[src.streams.x].as_sequences()]


def test_randomization_is_deterministic_per_seed_and_a_permutation(tmp_path):
    path = _numbered(tmp_path)

    def order(seed, **kw):
        src = _source(path, randomization_seed=seed, max_sweeps=1, **kw)
        out = []
        while True:
            mb = src.next_minibatch(10)
            if not mb:
                return out
            out += _ids(mb, src)

    a = order(5)
    assert a == order(5)
    assert a != order(6)
    assert sorted(a) == list(range(120)) and a != list(range(120))
    b = order(5, randomization_window_in_chunks=0, randomization_window_in_samples=50)
    assert sorted(b) == list(range(120)) and b != a
    assert order(5, randomize=False) == list(range(120))


def test_prefetch_on_and_off_identical(tmp_path):
    path = _numbered(tmp_path)
    on, off = _source(path, max_samples=500), _source(path, max_samples=500, prefetch=False)
    sizes = [8, 8, 3, 20, 20, 5]
    i = 0
    while True:
        x, y = on.next_minibatch(sizes[i % 6]), off.next_minibatch(sizes[i % 6])
        assert bool(x) == bool(y)
        if not x:
            break
        assert _ids(x, on) == _ids(y, off)
        i += 1


def test_max_samples_and_max_sweeps(tmp_path):
    path = _numbered(tmp_path, n=20)  # 50 samples per sweep
    src = _source(path, max_samples=75)
    total = 0
    while True:
        mb = src.next_minibatch(10)
        if not mb:
            break
        total += mb[src.streams.x].num_samples
    assert 75 <= total < 79
    src = _source(path, max_sweeps=2)
    total, ends = 0, 0
    while True:
        mb = src.next_minibatch(10)
        if not mb:
            break
        total += mb[src.streams.x].num_samples
        ends += mb[src.streams.x].end_of_sweep
    assert (total, ends) == (100, 2)
    with pytest.raises(ValueError, match="mutually exclusive"):
        _source(path, max_samples=10, max_sweeps=1)
    assert _source(path).is_infinite() and not _source(path, max_sweeps=1).is_infinite()
    assert FULL_DATA_SWEEP == 2 ** 64 - 3 and INFINITELY_REPEAT == 2 ** 64 - 1


def test_minibatches_cross_sweeps_full_data_sweep_and_max_samples_flags(tmp_path):
    # As CNTK's reader: a minibatch runs on into the next sweep (end_of_sweep marks one that holds a
    # sweep's end), FULL_DATA_SWEEP reads exactly one sweep, and reaching max_samples is no sweep end.
    path = _write(tmp_path, 'four.ctf', "|x 1\n|x 2\n|x 3\n|x 4\n")
    streams = StreamDefs(x=StreamDef('x', 1))
    src = MinibatchSource(CTFDeserializer(path, streams), randomize=False, max_sweeps=3)
    got = [(mb[src.streams.x].num_samples, mb[src.streams.x].end_of_sweep)
           for mb in iter(lambda: src.next_minibatch(5), {})]
    assert got == [(5, True), (5, True), (2, True)]
    src = MinibatchSource(CTFDeserializer(path, streams), randomize=False, max_samples=11)
    got = [(mb[src.streams.x].num_samples, mb[src.streams.x].end_of_sweep)
           for mb in iter(lambda: src.next_minibatch(5), {})]
    assert got == [(5, True), (5, True), (1, False)]
    src = MinibatchSource(CTFDeserializer(path, streams), randomize=False)
    np.testing.assert_array_equal(src.next_minibatch(6)[src.streams.x].asarray().ravel(), [1, 2, 3, 4, 1, 2])
    for kw in (dict(max_samples=FULL_DATA_SWEEP), dict(max_samples=FULL_DATA_SWEEP, max_sweeps=INFINITELY_REPEAT)):
        src = MinibatchSource(CTFDeserializer(path, streams), **kw)
        mb = src.next_minibatch(100)
        assert mb[src.streams.x].num_samples == 4 and mb[src.streams.x].end_of_sweep
        assert src.next_minibatch(100) == {}


def test_minibatch_source_config_to_dictionary(tmp_path):
    from cntk.cntk_py import MinibatchSourceConfig, to_dictionary
    from cntk.logging import TraceLevel
    path = _write(tmp_path, 'one.ctf', "|x 1\n")
    ctf = CTFDeserializer(path, StreamDefs(x=StreamDef('x', 3, is_sparse=True)))
    d = to_dictionary(MinibatchSourceConfig([ctf], False))
    assert d == dict(randomize=False, frameMode=False, traceLevel=TraceLevel.Warning,
                     multiThreadedDeserialization=False,
                     deserializers=[dict(type='CNTKTextFormatDeserializer', module='CNTKTextFormatReader', file=path,
                                         input=dict(x=dict(dim=3, format='sparse', definesMBSize=False, alias='x')))])
    config = MinibatchSourceConfig().add_deserializer(ctf)
    d = to_dictionary(config)
    assert (d['randomize'], d['randomizationWindow'], d['sampleBasedRandomizationWindow']) == (True, 128, False)
    assert C.io.DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS == 128  # CNTK's: 4 GB of 32 MB chunks
    config.randomization_window_in_samples = 50
    with pytest.raises(ValueError, match="mutually exclusive"):
        to_dictionary(config)
    config.randomization_window_in_chunks = 0
    config.truncation_length = 7
    config.is_multithreaded.set(True)
    d = to_dictionary(config)
    assert (d['randomizationWindow'], d['sampleBasedRandomizationWindow'], d['truncationLength']) == (50, True, 7)
    assert d['multiThreadedDeserialization'] is True
    config.is_frame_mode_enabled = True
    with pytest.raises(ValueError, match="frame mode"):
        to_dictionary(config)
    config.is_frame_mode_enabled = False
    src = config.create_minibatch_source()
    assert src.next_minibatch(1)[src.streams.x].num_samples == 1


def test_frame_mode_and_truncation(tmp_path):
    path = _numbered(tmp_path, n=12)
    src = _source(path, frame_mode=True, max_sweeps=1)
    frames = []
    while True:
        mb = src.next_minibatch(7)
        if not mb:
            break
        d = mb[src.streams.x]
        assert d.num_samples == d.num_sequences <= 7
        frames += [tuple(s[0]) for s in d.as_sequences()]
    assert sorted(frames) == sorted((i, t) for i in range(12) for t in range(i % 4 + 1))
    with pytest.raises(ValueError, match="frame_mode"):
        _source(path, frame_mode=True, truncation_length=2)
    src = _source(path, truncation_length=3, randomize=False, max_sweeps=1)
    steps = {}
    while True:
        mb = src.next_minibatch(6)  # two sequences side by side, 3 steps each
        if not mb:
            break
        d = mb[src.streams.x]
        assert d.shape[0] <= 2 and d.shape[1] <= 3
        for s in d.as_sequences():
            for i, t in s:
                steps.setdefault(int(i), []).append(int(t))
    assert steps == {i: list(range(i % 4 + 1)) for i in range(12)}


def test_checkpoint_and_current_position(tmp_path):
    path = _numbered(tmp_path)
    a = _source(path, randomization_seed=9)
    for _ in range(17):
        a.next_minibatch(11)
    state = a.get_checkpoint_state()
    assert a.current_position == state
    following = [_ids(a.next_minibatch(11), a) for _ in range(20)]
    b = _source(path, randomization_seed=9)
    b.current_position = state
    assert [_ids(b.next_minibatch(11), b) for _ in range(20)] == following
    with pytest.raises(ValueError, match="seed"):
        _source(path, randomization_seed=1).restore_from_checkpoint(state)


_CHILD = """
import json, sys
sys.path.insert(0, %(pkg)r)
from cntk.io import MinibatchSource, CTFDeserializer, StreamDef, StreamDefs
streams = StreamDefs(x=StreamDef('x', 2), y=StreamDef('y', 3, is_sparse=True))
src = MinibatchSource(CTFDeserializer(%(path)r, streams, chunk_size_in_bytes=150), randomization_seed=4)
src.restore_from_checkpoint(json.loads(sys.stdin.read()))
out = []
for _ in range(25):
    mb = src.next_minibatch(9)
    out.append([s.tolist() for s in mb[src.streams.x].as_sequences()])
print(json.dumps(out))
"""


def test_checkpoint_restored_in_a_new_process(tmp_path):
    import json
    path = _numbered(tmp_path)
    src = _source(path, randomization_seed=4)
    for _ in range(23):  # into the second sweep
        src.next_minibatch(9)
    state = src.get_checkpoint_state()
    expect = []
    for _ in range(25):
        mb = src.next_minibatch(9)
        expect.append([s.tolist() for s in mb[src.streams.x].as_sequences()])
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(C.__file__)))
    r = subprocess.run([sys.executable, '-c', _CHILD % dict(pkg=pkg, path=path)], input=json.dumps(state),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == expect


def test_stream_infos_and_input_map(tmp_path):
    path = _numbered(tmp_path, n=10)
    src = _source(path)
    infos = src.stream_infos()
    assert [si.name for si in infos] == ['x', 'y']
    assert src.streams.y.is_sparse and src.stream_info('x').shape == (2,) and src['y'].shape == (3,)
    with pytest.raises(ValueError, match="no stream named"):
        src.stream_info('z')
    x = C.sequence.input_variable(2)
    y = C.sequence.input_variable(3, is_sparse=True)
    mb = src.next_minibatch(5, input_map={x: src.streams.x, y: src.streams.y})
    assert set(mb) == {x, y}
    with pytest.raises(ValueError, match="positive"):
        src.next_minibatch(0)
    with pytest.raises(ValueError, match="partition_index"):
        src.next_minibatch(5, num_data_partitions=2, partition_index=2)
    with pytest.raises(TypeError, match="not a deserializer"):
        MinibatchSource([object()])


def test_trainer_reads_ctf(tmp_path):
    # A separable problem: class = argmax of the features.
    rng = np.random.RandomState(0)
    X = rng.randn(600, 4).astype(np.float32)
    labels = X.argmax(axis=1)
    lines = ["|features %s |labels %d:1" % (" ".join("%.5f" % v for v in x), l) for x, l in zip(X, labels)]
    path = _write(tmp_path, 'train.ctf', "\n".join(lines) + "\n")
    src = MinibatchSource(CTFDeserializer(path, StreamDefs(features=StreamDef('features', 4),
                                                           labels=StreamDef('labels', 4, is_sparse=True))),
                          max_sweeps=8)
    f = C.input_variable(4)
    l = C.input_variable(4, is_sparse=True)
    z = C.layers.Dense(4, init=C.glorot_uniform(seed=3))(f)  # seeded: the test must not depend on test order
    loss = C.cross_entropy_with_softmax(z, l)
    err = C.classification_error(z, l)
    trainer = C.Trainer(z, (loss, err), [C.sgd(z.parameters, C.learning_parameter_schedule(0.5))])
    input_map = {f: src.streams.features, l: src.streams.labels}
    errors = []
    while True:
        mb = src.next_minibatch(32, input_map=input_map)
        if not mb:
            break
        trainer.train_minibatch(mb)
        errors.append(trainer.previous_minibatch_evaluation_average)
    assert np.mean(errors[:5]) > 0.3 and np.mean(errors[-20:]) < 0.1


def test_training_session_with_minibatch_source(tmp_path):
    X = np.random.RandomState(1).randn(200, 3).astype(np.float32)
    path = _write(tmp_path, 't.ctf', "\n".join("|x %f %f %f |y %f" % (a, b, c, a - b) for a, b, c in X) + "\n")
    src = MinibatchSource(CTFDeserializer(path, StreamDefs(x=StreamDef('x', 3), y=StreamDef('y', 1))))
    x, y = C.input_variable(3), C.input_variable(1)
    z = C.layers.Dense(1)(x)
    loss = C.squared_error(z, y)
    trainer = C.Trainer(z, (loss, loss), [C.sgd(z.parameters, C.learning_parameter_schedule(0.05))])
    C.training_session(trainer=trainer, mb_source=src, mb_size=20,
                       model_inputs_to_streams={x: src.streams.x, y: src.streams.y}, max_samples=2000).train()
    w = z.W.value.ravel()
    np.testing.assert_allclose(w, [1, -1, 0], atol=0.1)


class _Squares(UserDeserializer):
    """3 chunks of 4 sequences: sequence k has k % 3 + 1 steps of [k, t] and a one-hot label k % 2."""

    def stream_infos(self):
        return [StreamInformation('x', 0, 'dense', np.float32, (2,)),
                StreamInformation('l', 1, 'sparse', np.float32, (2,))]

    def num_chunks(self):
        return 3

    def get_chunk(self, chunk_id):
        xs, ls = [], []
        for k in range(chunk_id * 4, chunk_id * 4 + 4):
            n = k % 3 + 1
            xs.append(np.array([[k, t] for t in range(n)], np.float32))
            ls.append(scipy.sparse.csr_matrix(np.tile(np.eye(2, dtype=np.float32)[k % 2], (n, 1))))
        return dict(x=xs, l=ls)


class _Broken(_Squares):
    """Chunk 2 reads once (when the source counts it), then fails."""

    def __init__(self):
        super(_Broken, self).__init__()
        self.reads = 0

    def get_chunk(self, chunk_id):
        if chunk_id == 2:
            self.reads += 1
            if self.reads > 1:
                raise RuntimeError("chunk 2 is gone")
        return super(_Broken, self).get_chunk(chunk_id)


def test_user_deserializer(tmp_path):
    src = MinibatchSource(_Squares(), randomization_seed=1, max_sweeps=1)
    seen = {}
    while True:
        mb = src.next_minibatch(5)
        if not mb:
            break
        for xs, ls in zip(mb[src.streams.x].as_sequences(), mb[src.streams.l].as_sequences()):
            k = int(xs[0, 0])
            np.testing.assert_array_equal(xs[:, 1], range(k % 3 + 1))
            np.testing.assert_array_equal(ls.toarray().argmax(axis=1), [k % 2] * (k % 3 + 1))
            seen[k] = True
    assert sorted(seen) == list(range(12))
    # The error comes from the reader's background thread, with its type and message.
    src = MinibatchSource(_Broken(), randomize=False)
    with pytest.raises(RuntimeError, match="chunk 2 is gone"):
        for _ in range(5):
            src.next_minibatch(4)
    with pytest.raises(NotImplementedError):
        MinibatchSource(UserDeserializer())


def test_sequence_to_cntk_text_format_round_trip(tmp_path):
    text = "\n".join([
        sequence_to_cntk_text_format(0, {'a': np.array([[1, 2], [3, 4]], np.float32), 'b': [{1: 2.5}]}),
        sequence_to_cntk_text_format(1, {'a': np.array([[5, 6.5]]), 'b': [{0: 1}, {2: 3}]})]) + "\n"
    assert text.splitlines()[0] == "0\t|a 1 2 |b 1:2.5"
    path = _write(tmp_path, 'rt.ctf', text)
    src = MinibatchSource(CTFDeserializer(path, StreamDefs(a=StreamDef('a', 2), b=StreamDef('b', 3, is_sparse=True))),
                          randomize=False)
    mb = src.next_minibatch(10)
    a = mb[src.streams.a].as_sequences()
    np.testing.assert_array_equal(a[1], [[5, 6.5]])
    b = mb[src.streams.b].as_sequences()
    np.testing.assert_array_equal(b[1].toarray(), [[1, 0, 0], [0, 0, 3]])
    assert sequence_to_cntk_text_format(3, {'a': []}) == ''
    with pytest.raises(ValueError, match="expected a tensor"):
        sequence_to_cntk_text_format(0, {'a': ['x']})


def test_defines_mb_size_and_stream_configuration(tmp_path):
    # Sequences of 4 steps of x and a single label: by default 4 samples each, with defines_mb_size on
    # the label stream 1 sample each.
    path = _write(tmp_path, 'mb.ctf', "".join("%d |x %d |l 1\n%d |x 0\n%d |x 0\n%d |x 0\n" % (i, i, i, i, i)
                                              for i in range(10)))
    src = MinibatchSource(CTFDeserializer(path, StreamDefs(x=StreamDef('x', 1), l=StreamDef('l', 1))),
                          randomize=False)
    assert src.next_minibatch(8)[src.streams.x].num_sequences == 2
    src = MinibatchSource(CTFDeserializer(path, StreamDefs(x=StreamDef('x', 1),
                                                           l=StreamDef('l', 1, defines_mb_size=True))),
                          randomize=False)
    mb = src.next_minibatch(8)
    assert mb[src.streams.x].num_sequences == 8 and mb[src.streams.l].num_samples == 8
    assert src.streams.l.defines_mb_size
    cfg = {'x': C.io.StreamConfiguration('x', 1, stream_alias='x')}
    src = MinibatchSource(CTFDeserializer(path, cfg), randomize=False, max_sweeps=1)
    assert src.next_minibatch(100)[src.streams.x].num_samples == 40


def test_user_deserializer_is_released_with_its_source():
    import gc
    import weakref
    d = _Squares()
    src = MinibatchSource(d)
    src.next_minibatch(3)  # leaves a prefetch in flight
    ref = weakref.ref(d)
    del d, src
    gc.collect()
    assert ref() is None


def test_a_partition_without_sequences(tmp_path):
    path = _numbered(tmp_path, n=3)
    src = _source(path, randomize=False, truncation_length=2)
    mb = src.next_minibatch(2, num_data_partitions=2, partition_index=1)  # one truncation slot: partition 0's
    d = mb[src.streams.x]
    assert d.num_sequences == 0 and d.num_samples == 0 and d.data is None
    x = C.sequence.input_variable(2)
    with pytest.raises(ValueError, match="no data"):
        d._value_for(x)
