"""Sequence ops in CNTK v1 model files (.dnn): IsWithin (is_first / is_last and their N-step
forms), sequence slices (BrainScript's First / Last), Where, gather and scatter are written as
CNTK's v1 nodes (PastValue / FutureValue over ReconcileDynamicAxis, Where, PackedIndex,
GatherPacked, ScatterPacked) and read back with equal outputs and their names; the `cntk`
command trains such a BrainScript network (a v1 model per epoch) and its `write` action
reloads it, compared with NumPy."""
import re
import subprocess

import numpy as np
import pytest

import cntk as C
from cntk.debugging import save_as_legacy_model
from cntk.ops._prim import prim

from test_brainscript_cli import cntk_command, final_results

LENGTHS = (4, 3, 1, 5)


def _sequences(rng, dim):
    return [rng.standard_normal((n, dim)).astype(np.float32) for n in LENGTHS]


def _by_name(values, f):
    if not isinstance(values, dict):
        return {f.outputs[0].name: values}
    return {v.name: values[v] for v in f.outputs}


def _round_trip(f, args, tmp_path):
    """Saves `f` as a v1 model, loads it back and checks every output (by name) equal."""
    path = str(tmp_path / 'model.dnn')
    save_as_legacy_model(f, path)
    g = C.load_model(path)
    byname = {a.name: a for a in g.arguments}
    assert sorted(byname) == sorted(a.name for a in f.arguments)
    want = _by_name(f.eval(args), f)
    got = _by_name(g.eval({byname[a.name]: v for a, v in args.items()}), g)
    assert sorted(got) == sorted(want)
    for name, w in want.items():
        a = got[name]
        if isinstance(w, list):
            assert len(a) == len(w), name
            for p, q in zip(a, w):
                np.testing.assert_allclose(p, q, rtol=1e-6, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_allclose(a, w, rtol=1e-6, atol=1e-6, err_msg=name)
    return g, want


def _flat(values):
    return [np.asarray(v).reshape(-1) for v in values]


def test_is_first_is_last_and_n_step_forms(tmp_path):
    x = C.sequence.input_variable(2, name='x')
    first = C.sequence.is_first(x, name='first')
    last = C.sequence.is_last(x, name='last')
    first2 = prim('IsWithin', [x], {'offset': 2}, 'first2')
    last3 = prim('IsWithin', [x], {'offset': -3}, 'last3')
    f = C.combine([first, last, first2, last3])
    data = _sequences(np.random.default_rng(0), 2)
    g, got = _round_trip(f, {x: data}, tmp_path)
    for name, want in [('first', lambda n: np.arange(n) < 1), ('last', lambda n: np.arange(n) >= n - 1),
                       ('first2', lambda n: np.arange(n) < 2), ('last3', lambda n: np.arange(n) >= n - 3)]:
        for v, n in zip(_flat(got[name]), LENGTHS):
            np.testing.assert_array_equal(v, want(n).astype(np.float32), err_msg=name)
    # They come back as the engine's op, named.
    ops = {o.name: o.owner.op_name for o in g.outputs}
    assert ops == {'first': 'IsWithin', 'last': 'IsWithin', 'first2': 'IsWithin', 'last3': 'IsWithin'}


@pytest.mark.parametrize('begin,end', [(1, 3), (-2, 0), (0, 2), (1, -1), (-3, -1), (0, 1), (-1, 0)])
def test_sequence_slice(tmp_path, begin, end):
    x = C.sequence.input_variable(3, name='x')
    f = prim('SequenceSlice', [x], {'beginIndex': begin, 'endIndex': end}, 'part')
    f = C.combine([f, C.tanh(f, name='after')])
    data = _sequences(np.random.default_rng(1), 3)
    g, got = _round_trip(f, {x: data}, tmp_path)
    for seq, v in zip(data, got['part']):
        n = len(seq)
        lo = max(n + begin, 0) if begin < 0 else min(begin, n)
        hi = max(n + end, 0) if end <= 0 else min(end, n)
        np.testing.assert_allclose(np.asarray(v).reshape(-1, 3), seq[lo:hi], rtol=1e-6)


def test_where_gather_scatter(tmp_path):
    x = C.sequence.input_variable(2, name='x')
    c = C.sequence.input_variable(1, name='c')
    cond = C.greater(c, 0, name='cond')
    idx = C.sequence.where(cond, name='idx')
    gathered = C.sequence.gather(x, cond, name='gathered')
    scattered = C.sequence.scatter(C.tanh(gathered), cond, name='scattered')
    f = C.combine([idx, gathered, scattered])
    rng = np.random.default_rng(2)
    data = _sequences(rng, 2)
    flags = [np.array([[1], [0], [1], [1]], np.float32)[:n] if n <= 4 else
             np.array([[0], [1], [1], [0], [1]], np.float32) for n in LENGTHS]
    g, got = _round_trip(f, {x: data, c: flags}, tmp_path)
    for seq, fl, i, ga, sc in zip(data, flags, got['idx'], got['gathered'], got['scattered']):
        sel = fl[:, 0] > 0
        np.testing.assert_array_equal(np.asarray(i).reshape(-1), np.nonzero(sel)[0].astype(np.float32))
        np.testing.assert_allclose(np.asarray(ga).reshape(-1, 2), seq[sel], rtol=1e-6)
        want = np.where(sel[:, None], np.tanh(seq), 0)
        np.testing.assert_allclose(np.asarray(sc).reshape(-1, 2), want, rtol=1e-5, atol=1e-6)


def test_scatter_of_one_item_per_sequence(tmp_path):
    # A seq without a sequence axis: its Where has no sequence axis either ("__noSequenceAxis").
    x = C.sequence.input_variable(2, name='x')
    y = C.input_variable(2, name='y')
    f = C.sequence.scatter(y, C.sequence.is_first(x), name='spread')
    rng = np.random.default_rng(3)
    data = _sequences(rng, 2)
    ys = rng.standard_normal((len(LENGTHS), 2)).astype(np.float32)
    g, got = _round_trip(f, {x: data, y: ys}, tmp_path)
    for n, yv, v in zip(LENGTHS, ys, got['spread']):
        want = np.zeros((n, 2), np.float32)
        want[0] = yv
        np.testing.assert_allclose(np.asarray(v).reshape(-1, 2), want, rtol=1e-6)


# ---------------------------------------------------------------- the `cntk` command

SEQUENCES = [[1.0, 2.0, 3.0, 4.0], [0.5, -1.5, 2.5], [-2.0, 3.0]]


def _train_and_write(tmp_path, members, outputs, sequences=True):
    samples = [(s, v) for s, seq in enumerate(SEQUENCES) for v in seq]
    lines = ['%d |x %g |y %g' % (s if sequences else i, v, 2 * v) for i, (s, v) in enumerate(samples)]
    (tmp_path / 'data.txt').write_text('\n'.join(lines) + '\n')
    reader = ('reader = [ readerType = "CNTKTextFormatReader" ; file = "data.txt" ; randomize = false ; input = [ '
              'x = [ dim = 1 ; format = "dense" ] ; y = [ dim = 1 ; format = "dense" ] ] ]')
    (tmp_path / 'seq.cntk').write_text('''command = T:W:E
modelPath = "m/model.dnn"
T = [
  action = "train"
  BrainScriptNetworkBuilder = [
    x = Input (1) ; y = Input (1)
    %s
    featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (crit) ; outputNodes = (%s)
  ]
  SGD = [ maxEpochs = 2 ; minibatchSize = 16 ; learningRatesPerSample = 0 ]
  %s
]
W = [ action = "write" ; outputPath = "out/o" ; %s ]
E = [ action = "test" ; %s ]
''' % (members, ' : '.join(outputs), reader, reader, reader))
    p = subprocess.run([cntk_command(), 'configFile=seq.cntk'], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    # a v1 model per epoch, the last one also as modelPath
    assert sorted(f.name for f in (tmp_path / 'm').iterdir() if not f.name.endswith('.ckp')) == [
        'model.dnn', 'model.dnn.1']
    # `test` reloads the model too: crit = (y - w x)^2 = x^2 per sample (w = 1, y = 2x)
    x = np.concatenate([np.array(s) for s in SEQUENCES])
    np.testing.assert_allclose(final_results(p.stderr)['crit'], np.mean(x ** 2), rtol=1e-5)
    written = sorted(f.name for f in (tmp_path / 'out').iterdir())
    assert written == sorted('o.' + n for n in outputs)  # every node kept its name (no 'o.')
    return {n: [float(v) for v in re.findall(r'[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?', (tmp_path / 'out' /
                                                                                   ('o.' + n)).read_text())]
            for n in outputs}


def test_cli_trains_and_writes_a_network_of_sequence_nodes(tmp_path):
    got = _train_and_write(tmp_path, '''
    w = ParameterTensor {1, initValue = 1}
    crit = SquareError (y, w .* x)
    isFirst = BS.Loop.IsFirst (x)
    isLast2 = BS.Loop.IsLastN (2, x)
    head = BS.Sequences.First (x)
    tail = BS.Sequences.Last (x)
    positive = x > 0
    kept = BS.Sequences.Gather (positive, x)
    spread = BS.Sequences.Scatter (positive, 2 * kept)
    total = BS.Sequences.FoldL (Plus, 0, x)
    ''', ['isFirst', 'isLast2', 'head', 'tail', 'kept', 'spread', 'total'])
    seqs = [np.array(s) for s in SEQUENCES]
    cat = np.concatenate
    expected = {
        'isFirst': cat([np.arange(len(s)) < 1 for s in seqs]),
        'isLast2': cat([np.arange(len(s)) >= len(s) - 2 for s in seqs]),
        'head': [s[0] for s in seqs],
        'tail': [s[-1] for s in seqs],
        'kept': cat([s[s > 0] for s in seqs]),
        'spread': cat([np.where(s > 0, 2 * s, 0) for s in seqs]),
        'total': [s.sum() for s in seqs],
    }
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], np.asarray(want, np.float64), rtol=1e-5, atol=1e-6, err_msg=name)


def test_cli_output_feeding_another_output(tmp_path):
    # outputNodes = (s : a) with s = Sigmoid (a): the v1 file lists each output node once.
    got = _train_and_write(tmp_path, '''
    w = ParameterTensor {1, initValue = 1}
    crit = SquareError (y, w .* x)
    a = Tanh (x)
    s = Sigmoid (a)
    ''', ['s', 'a'], sequences=False)  # (a network without sequence ops takes one sample per sequence)
    x = np.concatenate([np.array(s) for s in SEQUENCES])
    np.testing.assert_allclose(got['a'], np.tanh(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got['s'], 1 / (1 + np.exp(-np.tanh(x))), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- bytes as CNTK wrote them


def _s(text):
    return text.encode('utf-16-le') + b'\0\0'


def _cntk_gather_scatter_file():
    """A version-31 file laid out as CNTK's ComputationNetwork::Save writes BrainScript's
    Gather (cond, x) = GatherPacked (PackedIndex (x, Where (cond)), x) and
    Scatter (cond, y) = ScatterPacked (cond, PackedIndex (cond, Where (cond)), y)."""
    import struct

    def input_node(name, dim):
        return (_s('float') + _s('InputValue') + _s(name) + struct.pack('<QQ', dim, 1) +
                struct.pack('<II', 1, dim) + struct.pack('<I', 1) + _s('*') + struct.pack('<f', 0))

    def plain(op, name, extra=b''):
        return _s('float') + _s(op) + _s(name) + extra

    nodes = [input_node('x', 2), input_node('c', 1),
             plain('Where', 'w', _s('WhereNodeAxis')), plain('PackedIndex', 'px'), plain('GatherPacked', 'g'),
             plain('PackedIndex', 'pc'), plain('ScatterPacked', 's')]
    relations = [('x', []), ('c', []), ('w', ['c']), ('px', ['x', 'w']), ('g', ['px', 'x']), ('pc', ['c', 'w']),
                 ('s', ['c', 'pc', 'g'])]
    out = _s('BCN') + _s('BVersion') + struct.pack('<Q', 31) + _s('EVersion') + struct.pack('<Q', len(nodes))
    out += _s('BNodeList') + b''.join(nodes) + _s('ENodeList') + _s('BRelation')
    for name, ins in relations:
        out += _s(name) + struct.pack('<Q', len(ins)) + b''.join(_s(i) for i in ins)
    out += _s('ERelation') + _s('BRootNodes')
    for group, names in [('FeatureNodes', ['x', 'c']), ('LabelNodes', []), ('CriterionNodes', []),
                         ('EvalNodes', []), ('OutputNodes', ['g', 's'])]:
        out += _s('B' + group) + struct.pack('<Q', len(names)) + b''.join(_s(n) for n in names) + _s('E' + group)
    return out + _s('ERootNodes') + _s('ECN')


def test_cntk_gather_and_scatter_nodes_load(tmp_path):
    path = tmp_path / 'gs.dnn'
    path.write_bytes(_cntk_gather_scatter_file())
    g = C.load_model(str(path))
    args = {a.name: a for a in g.arguments}
    rng = np.random.default_rng(4)
    data = _sequences(rng, 2)
    flags = [(rng.random((n, 1)) < 0.6).astype(np.float32) for n in LENGTHS]
    for fl in flags:
        fl[-1] = 1  # every sequence selects a step
    got = _by_name(g.eval({args['x']: data, args['c']: flags}), g)
    for seq, fl, ga, sc in zip(data, flags, got['g'], got['s']):
        sel = fl[:, 0] > 0
        np.testing.assert_allclose(np.asarray(ga).reshape(-1, 2), seq[sel], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(sc).reshape(-1, 2), np.where(sel[:, None], seq, 0), rtol=1e-6)
    # and it saves back into the same nodes
    save_as_legacy_model(g, str(tmp_path / 'again.dnn'))
    h = C.load_model(str(tmp_path / 'again.dnn'))
    hargs = {a.name: a for a in h.arguments}
    again = _by_name(h.eval({hargs['x']: data, hargs['c']: flags}), h)
    for name in ('g', 's'):
        for p, q in zip(again[name], got[name]):
            np.testing.assert_array_equal(p, q)
