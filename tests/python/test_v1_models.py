"""CNTK v1 model files (.dnn, .cmf): CNTK's own files load, evaluate, train and dump as CNTK
printed them; save_as_legacy_model round-trips; malformed files raise IOError."""
import os

import numpy as np
import pytest

import cntk as C
from cntk import _cntk
from cntk.debugging import save_as_legacy_model

SHARED = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared')
V1 = os.path.join(SHARED, 'data', 'cntk-files', 'v1')
NETWORKS = os.path.join(SHARED, 'cntk-brainscript', 'Tests', 'UnitTests', 'BrainScriptTests', 'Data',
                        'ComputationNetwork')
ATIS = os.path.join(SHARED, 'data', 'atis', 'atis.test.ctf')

V1_FILES = sorted(os.listdir(V1)) if os.path.isdir(V1) else []
needs_v1 = pytest.mark.skipif(not V1_FILES, reason='CNTK v1 files not available')


def _random_input(var, rng, steps=3):
    shape = (1, steps) + tuple(var.shape)  # one sequence of `steps` samples
    return rng.standard_normal(shape).astype(np.float32)


@needs_v1
@pytest.mark.parametrize('name', V1_FILES)
def test_cntk_v1_file_loads_and_evaluates(name):
    m = C.load_model(os.path.join(V1, name))
    assert m.parameters, name
    rng = np.random.default_rng(0)
    args = {a: _random_input(a, rng) for a in m.arguments}
    for out in m.outputs:
        res = C.combine([out]).eval(args)
        seq = res[0] if isinstance(res, list) else res[0]
        seq = np.asarray(seq)
        assert seq.shape == (3,) + tuple(out.shape), (name, out.name, seq.shape)
        assert np.all(np.isfinite(seq)), (name, out.name)


@needs_v1
def test_v1_lr_model_matches_numpy():
    # LR_reg: p = sigmoid(w . features + b); lr = logistic loss; err = squared error.
    m = C.Function.load(os.path.join(V1, 'LR_reg.dnn'))
    params = {p.name: p.value for p in m.parameters}
    assert set(params) == {'w', 'b'}
    feats = np.array([[[1.0, -2.0]], [[0.5, 0.25]]], dtype=np.float32)
    labels = np.array([[[1.0]], [[0.0]]], dtype=np.float32)
    byname = {a.name: a for a in m.arguments}
    p_out = [o for o in m.outputs if o.name == 'lr'][0]
    z = feats[:, 0].astype(np.float64) @ params['w'] + params['b'].reshape(-1)
    p = 1 / (1 + np.exp(-z))
    expected = -(labels[:, 0] * np.log(p) + (1 - labels[:, 0]) * np.log(1 - p))
    got = C.combine([p_out]).eval({byname['features']: feats, byname['labels']: labels})
    np.testing.assert_allclose(np.asarray(got).reshape(-1), expected.reshape(-1), rtol=1e-4, atol=1e-6)


@pytest.mark.skipif(not os.path.isdir(NETWORKS), reason='CNTK network unit-test data not available')
@pytest.mark.parametrize('name', ['01_OneHidden.dnn', 'LR_reg.dnn', 'MC.dnn'])
def test_v1_dump_matches_cntk(name):
    # CNTK's ComputationNetworkTests: DumpNodeInfoToFile(values and metadata) of the loaded network
    # against the *_Expected.txt CNTK wrote. (CNTK's test read only the first word of each file;
    # this compares the whole text.)
    with open(os.path.join(NETWORKS, name), 'rb') as f:
        got = _cntk.dump_legacy_model(f.read(), name)
    with open(os.path.join(NETWORKS, name + '_Expected.txt')) as f:
        expected = f.read()
    assert got == expected


@needs_v1
def test_v1_model_continues_training():
    m = C.load_model(os.path.join(V1, 'MC.dnn'))
    byname = {a.name: a for a in m.arguments}
    ce = [o for o in m.outputs if o.name == 'ce'][0]
    z = [o for o in m.outputs if o.name == 'z'][0]
    assert all(isinstance(p, C.Parameter) for p in m.parameters)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 1, 2)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)].reshape(8, 1, 3)
    before = {p.name: p.value.copy() for p in m.parameters}
    loss = C.combine([ce])
    learner = C.sgd(m.parameters, C.learning_parameter_schedule(0.1))
    trainer = C.Trainer(C.combine([z]), (loss, None), [learner])
    first = None
    for _ in range(20):
        trainer.train_minibatch({byname['features']: x, byname['labels']: y})
        first = trainer.previous_minibatch_loss_average if first is None else first
    assert trainer.previous_minibatch_loss_average < first
    assert any(not np.allclose(before[p.name], p.value) for p in m.parameters)
    # and saves as v2
    data = m.save_to_bytes() if hasattr(m, 'save_to_bytes') else None
    if data is None:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'mc.model')
            m.save(path)
            again = C.load_model(path)
    else:
        again = C.load_model(data)
    args = {a: np.ones((1, 1) + a.shape, np.float32) for a in again.arguments}
    out = [o for o in again.outputs if o.name == 'z'][0]
    ref_args = {byname[a.name]: v for a, v in args.items()}
    np.testing.assert_allclose(C.combine([out]).eval(args), C.combine([z]).eval(ref_args), rtol=1e-6)


# ---------------------------------------------------------------- save_as_legacy_model


def _round_trip(f, args, tmp_path):
    path = str(tmp_path / 'model.dnn')
    save_as_legacy_model(f, path)
    with open(path, 'rb') as fh:
        assert fh.read(8) == 'BCN'.encode('utf-16-le') + b'\0\0'
    g = C.load_model(path)
    byname = {a.name: a for a in g.arguments}
    gargs = {byname[a.name]: v for a, v in args.items()}
    got, want = g.eval(gargs), f.eval(args)
    if isinstance(want, list):  # sequences
        assert len(got) == len(want)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return g


def test_save_as_legacy_model_dense(tmp_path):
    x = C.input_variable(5, name='x')
    f = C.layers.Sequential([C.layers.Dense(7, activation=C.relu), C.layers.Dense(3)])(x)
    f = C.softmax(f)
    data = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    g = _round_trip(f, {x: data}, tmp_path)
    assert len(g.parameters) == 4


def test_save_as_legacy_model_conv(tmp_path):
    x = C.input_variable((3, 8, 8), name='img')
    f = C.layers.Convolution2D((3, 3), 4, pad=True, activation=C.relu)(x)
    f = C.layers.MaxPooling((2, 2), strides=2)(f)
    f = C.layers.Dense(2)(f)
    data = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    _round_trip(f, {x: data}, tmp_path)


def test_save_as_legacy_model_recurrent(tmp_path):
    x = C.sequence.input_variable(4, name='seq')
    f = C.layers.Recurrence(C.layers.LSTM(6))(x)
    f = C.layers.Dense(2)(f)
    rng = np.random.default_rng(0)
    data = [rng.standard_normal((n, 4)).astype(np.float32) for n in (3, 5)]
    g = _round_trip(f, {x: data}, tmp_path)
    assert g.arguments[0].dynamic_axes == x.dynamic_axes


def test_save_as_legacy_model_batch_norm(tmp_path):
    x = C.input_variable((2, 4, 4), name='img')
    f = C.layers.BatchNormalization(map_rank=1)(x)
    f = C.layers.Dense(3)(f)
    # Give the running statistics values of their own.
    bn = [c for c in f.constants if c.shape == (2,)]
    for i, c in enumerate(bn):
        c.value = np.array([0.5 + i, 1.5 + i], np.float32)
    data = np.random.default_rng(0).standard_normal((3, 2, 4, 4)).astype(np.float32)
    _round_trip(f, {x: data}, tmp_path)


def test_save_as_legacy_model_keeps_names_and_uids(tmp_path):
    i1 = C.input_variable((1, 2), name='i1')
    w = C.parameter((2, 3), init=np.arange(6, dtype=np.float32).reshape(2, 3), name='w')
    f = C.times(i1, w, name='prod')
    path = str(tmp_path / 'n.dnn')
    save_as_legacy_model(f, path)
    g = C.load_model(path)
    assert g.arguments[0].name == 'i1' and g.arguments[0].uid == i1.uid
    assert g.parameters[0].name == 'w' and g.parameters[0].uid == w.uid
    assert g.root_function.name == 'prod'


def test_save_as_legacy_model_output_feeding_another_output(tmp_path):
    # Both outputs of a Combine, one computed from the other: each is listed once in the file.
    x = C.input_variable(3, name='x')
    a = C.tanh(x, name='a')
    s = C.sigmoid(a, name='s')
    f = C.combine([s, a])
    data = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    path = str(tmp_path / 'two.dnn')
    save_as_legacy_model(f, path)
    g = C.load_model(path)
    assert sorted(o.name for o in g.outputs) == ['a', 's']
    got = {o.name: v for o, v in g.eval({g.arguments[0]: data}).items()}
    np.testing.assert_allclose(got['a'], np.tanh(data), rtol=1e-6)
    np.testing.assert_allclose(got['s'], 1 / (1 + np.exp(-np.tanh(data))), rtol=1e-6)


def test_save_as_legacy_model_keeps_the_names_of_named_blocks(tmp_path):
    # v1 files keep no blocks: the node of a named block's output takes the block's name.
    x = C.sequence.input_variable(2, name='x')
    f = C.combine([C.sequence.is_first(x, name='isfirst'), C.layers.Dense(3, name='dense')(x)])
    path = str(tmp_path / 'named.dnn')
    save_as_legacy_model(f, path)
    g = C.load_model(path)
    assert sorted(o.name for o in g.outputs) == ['dense', 'isfirst']
    data = [np.random.default_rng(1).standard_normal((3, 2)).astype(np.float32)]
    want = {o.name: v for o, v in f.eval({x: data}).items()}
    got = {o.name: v for o, v in g.eval({g.arguments[0]: data}).items()}
    for name in want:
        np.testing.assert_allclose(got[name][0], want[name][0], rtol=1e-6, err_msg=name)


# ---------------------------------------------------------------- SLUHandsOn on ATIS


def _slot_error_rate(path):
    m = C.load_model(path)
    q = [a for a in m.arguments if a.name == 'query'][0]
    lab = [a for a in m.arguments if a.name == 'slotLabels'][0]
    errs = C.combine([[o for o in m.outputs if o.name == 'errs'][0]])
    src = C.io.MinibatchSource(C.io.CTFDeserializer(ATIS, C.io.StreamDefs(
        query=C.io.StreamDef(field='S0', shape=943, is_sparse=True),
        slots=C.io.StreamDef(field='S2', shape=129, is_sparse=True))), randomize=False, max_sweeps=1)
    wrong, words = 0.0, 0
    while True:
        mb = src.next_minibatch(2000, input_map={q: src.streams.query, lab: src.streams.slots})
        if not mb:
            break
        out = errs.eval({q: mb[q], lab: mb[lab]})
        wrong += sum(float(np.asarray(s).sum()) for s in out)
        words += mb[lab].num_samples
    return wrong / words, words


# CNTK's SLUHandsOn tutorial (BrainScript, Tutorials/SLUHandsOn; its page "Hands-on Labs
# Language Understanding with Recurrent Networks" in CNTK's documentation) evaluates its saved
# models on ATIS test, 10,984 words, and reports "errs = 2.922% * 10984" for slu.forward.nobn.cmf,
# 2.039% for slu.forward.cmf (task 1, batch normalization), 1.839% for slu.forward.lookahead.cmf
# (task 2) and 1.830% for slu.forward.backward.cmf (task 3, bidirectional).
SLU_MODELS = [
    ('slu.forward.nobn.cmf', 0.02922),
    pytest.param('slu.forward.cmf', 0.02039, marks=pytest.mark.slow),
    pytest.param('slu.forward.lookahead.cmf', 0.01839, marks=pytest.mark.slow),
    pytest.param('slu.forward.backward.cmf', 0.01830, marks=pytest.mark.slow),
]


@pytest.mark.skipif(not (V1_FILES and os.path.exists(ATIS)), reason='ATIS or the SLU models not available')
@pytest.mark.parametrize('name,rate', SLU_MODELS)
def test_slu_hands_on_models_on_atis(name, rate):
    got, words = _slot_error_rate(os.path.join(V1, name))
    assert words == 10984
    assert abs(got - rate) < 0.0001, (name, got)


# ---------------------------------------------------------------- malformed files


@needs_v1
def test_truncated_v1_files_raise_ioerror():
    with open(os.path.join(V1, 'LR_reg.dnn'), 'rb') as f:
        data = f.read()
    for n in list(range(8, len(data), 7)) + [len(data) - 1]:
        with pytest.raises(IOError) as e:
            C.load_model(data[:n])
        assert 'offset' in str(e.value)


@needs_v1
def test_corrupt_v1_file_names_offset_and_node():
    with open(os.path.join(V1, 'LR_reg.dnn'), 'rb') as f:
        data = bytearray(f.read())
    at = data.find('BMAT'.encode('utf-16-le'))
    data[at - 1:at] = b'x'  # the matrix type byte
    with pytest.raises(IOError, match=r"offset \d+ \(node 'b'\)"):
        C.load_model(bytes(data))
    # an unknown node type is named with its node
    with open(os.path.join(V1, 'LR_reg.dnn'), 'rb') as f:
        data = f.read()
    bad = data.replace('Logistic'.encode('utf-16-le'), 'Logistix'.encode('utf-16-le'))
    with pytest.raises(NotImplementedError, match="node 'lr'.*Logistix"):
        C.load_model(bad)


def test_v1_random_bytes_never_crash():
    rng = np.random.default_rng(0)
    head = 'BCN'.encode('utf-16-le') + b'\0\0'
    for _ in range(200):
        body = rng.integers(0, 256, int(rng.integers(0, 300)), dtype=np.uint8).tobytes()
        with pytest.raises((IOError, NotImplementedError)):
            C.load_model(head + body)
