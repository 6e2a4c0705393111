"""Lattice sequence training: the serialized lattice codec, CNTK's model files, the
LatticeSequenceWithSoftmax criterion (MMI, boosted MMI, sMBR, smoothing, frame dropping)
against a brute-force enumeration of lattice paths and HMM state sequences in NumPy, and
LatticeDeserializer over TOC/archive files written with the test encoder."""
import itertools
import os

import numpy as np
import pytest

import cntk as C
from cntk import _cntk
from op_harness import covers_op

# ------------------------------------------------------------------ a tiny acoustic model
# senones: a0 b0 c0 c1 sp0; units a, b (1 state), c (2 states), sp (1 state with a tee)
SENONES = ['a0', 'b0', 'c0', 'c1', 'sp0']
NUM_SENONES = len(SENONES)
TRANS = {  # rows from -1 .. n-1, columns to 0 .. n (n = exit)
    'T1': np.array([[1.0, 0.0], [0.6, 0.4]]),
    'T2': np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.7, 0.3]]),
    'Tsp': np.array([[0.8, 0.2], [0.5, 0.5]]),
}
UNITS = {'a': ('T1', [0]), 'b': ('T1', [1]), 'c': ('T2', [2, 3]), 'sp': ('Tsp', [4])}
SYMBOLS = ['a', 'b', 'c', 'sp']  # lattice unit ids; id 4 (the implied extra entry) is sp too
SYM = {s: i for i, s in enumerate(SYMBOLS)}


def write_model(d):
    paths = {k: os.path.join(str(d), k) for k in ('states', 'transp', 'tying', 'symlist')}
    with open(paths['states'], 'w') as f:
        f.write('\n'.join(SENONES) + '\n')
    with open(paths['transp'], 'w') as f:
        for name, m in TRANS.items():
            f.write('%s %d %s\n' % (name, m.shape[0] - 1, ' '.join('%.17g' % v for v in m.ravel())))
    with open(paths['tying'], 'w') as f:
        for u, (t, s) in UNITS.items():
            f.write('%s %s %s\n' % (u, t, ' '.join(SENONES[i] for i in s)))
    with open(paths['symlist'], 'w') as f:
        f.write('\n'.join(SYMBOLS) + '\nsp sp\n')
    return paths


@pytest.fixture
def model(tmp_path):
    return write_model(tmp_path)


def encode(num_frames, node_times, edges, **kw):
    return _cntk._encode_lattice(num_frames, node_times,
                                 [(s, e, ac, lm, [(SYM[u], f) for u, f in units]) for s, e, ac, lm, units in edges],
                                 **kw)


# Lattice 1: 4 frames, paths {e0 e3}, {e1 e4}, {e2}, then the 0-frame final edge.
LAT1 = dict(num_frames=4, node_times=[0, 2, 2, 4, 4], edges=[
    (0, 1, 0.0, -1.0, [('a', 2)]),
    (0, 2, 0.0, -2.0, [('c', 2)]),
    (0, 3, 0.0, -2.5, [('c', 2), ('b', 1), ('b', 1)]),
    (1, 3, 0.0, -0.5, [('b', 2), ('sp', 0)]),
    (2, 3, 0.0, -1.5, [('a', 1), ('sp', 1)]),
    (3, 4, 0.0, 0.0, []),
])
# Lattice 2: 3 frames, competing edges (one with a tee /sp/ inside, one that no state sequence
# can align: c's second state cannot be reached in one frame) and the final edge.
LAT2 = dict(num_frames=3, node_times=[0, 3, 3], edges=[
    (0, 1, 0.0, -0.2, [('a', 1), ('b', 2)]),
    (0, 1, 0.0, -0.9, [('c', 3)]),
    (0, 1, 0.0, -1.2, [('a', 1), ('sp', 0), ('b', 2)]),
    (0, 1, 0.0, -0.1, [('c', 1), ('b', 2)]),
    (1, 2, 0.0, 0.0, []),
])


def lattice_bytes(lat):
    return encode(lat['num_frames'], lat['node_times'], lat['edges'], implied_sp_unit=SYM['sp'])


def as_samples(b):
    b = b + b'\0' * (-len(b) % 4)
    return np.frombuffer(b, dtype=np.float32).reshape(-1, 1).copy()


# ------------------------------------------------------------------ brute force reference

def unit_best(unit, frames, ll):
    """Max over the unit's state sequences of transitions + loglikelihoods, and the senones."""
    tname, senones = UNITS[SYMBOLS[unit]]
    with np.errstate(divide='ignore'):  # CNTK keeps the log-probabilities in float32
        lt = np.log(TRANS[tname].astype(np.float32)).astype(np.float64)
    n = len(senones)
    if frames == 0:
        return lt[0, n], []
    best, arg = -np.inf, None
    for seq in itertools.product(range(n), repeat=frames):
        s = lt[0, seq[0]] + sum(lt[1 + seq[i], seq[i + 1]] for i in range(frames - 1)) + lt[1 + seq[-1], n]
        s += sum(ll[i, senones[q]] for i, q in enumerate(seq))
        if s > best:
            best, arg = s, [senones[q] for q in seq]
    return best, arg


def edge_align(edge, times, ll):
    s, e, _, _, units = edge
    t = times[s]
    score, align = 0.0, []
    for u, f in units:
        sc, al = unit_best(SYM[u], f, ll[t:t + f])
        if sc == -np.inf:
            return -np.inf, []
        score += sc
        align += al
        t += f
    return score, align


def paths_of(lat):
    last = len(lat['node_times']) - 1
    out = []

    def walk(node, path):
        if node == last:
            out.append(path)
        for j, ed in enumerate(lat['edges']):
            if ed[0] == node:
                walk(ed[1], path + [j])
    walk(0, [])
    return out


def reference(lat, ll, uids, amf=14.0, lmf=14.0, wp=0.0, bmmi=0.0, smbr=False):
    """(value, gamma) of one utterance by enumerating the lattice's paths."""
    T, Cn = ll.shape
    times = lat['node_times']
    edges = lat['edges']
    info = []
    for ed in edges:
        ac, al = edge_align(ed, times, ll)
        correct = sum(1 for i, s in enumerate(al) if s == uids[times[ed[0]] + i])
        lm = 0.0 if ed[3] < -200 else float(np.float32(ed[3]))  # stored as float32
        info.append(((lm * lmf + wp + ac) / amf - bmmi * correct, al, correct))
    paths = paths_of(lat)
    scores = np.array([sum(info[j][0] for j in p) for p in paths])
    logz = np.logaddexp.reduce(scores)
    prob = np.exp(scores - logz)
    correct = np.array([sum(info[j][2] for j in p) for p in paths])
    gamma = np.zeros((T, Cn))
    numer = sum(ll[t, uids[t]] for t in range(T)) / amf
    if not smbr:
        for p, pr in zip(paths, prob):
            for j in p:
                for i, s in enumerate(info[j][1]):
                    gamma[times[edges[j][0]] + i, s] += pr
        return numer - logz, gamma
    cbar = float(np.sum(prob * correct))
    for j in range(len(edges)):
        on = [k for k, p in enumerate(paths) if j in p]
        pp = sum(prob[k] for k in on)
        if pp == 0:
            continue
        c = sum(prob[k] * correct[k] for k in on) / pp
        for i, s in enumerate(info[j][1]):
            gamma[times[edges[j][0]] + i, s] += pp * (c - cbar) / amf
    return numer - cbar, gamma


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def log_softmax(z):
    return z - z.max(axis=1, keepdims=True) - np.log(np.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True))


def one_hot(uids, n=NUM_SENONES):
    m = np.zeros((len(uids), n))
    m[np.arange(len(uids)), uids] = 1
    return m


def network(model, dtype=np.float64, **kw):
    label = C.sequence.input_variable(NUM_SENONES, dtype=dtype)
    z = C.sequence.input_variable(NUM_SENONES, dtype=dtype, sequence_axis=label.dynamic_axes[1])
    ll = C.sequence.input_variable(NUM_SENONES, dtype=dtype, sequence_axis=label.dynamic_axes[1])
    lat = C.sequence.input_variable(1, dtype=np.float32, sequence_axis=C.Axis.new_unique_dynamic_axis('lattice'))
    crit = C.lattice_sequence_with_softmax(label, z, ll, lat, model['symlist'], model['tying'], model['states'],
                                           model['transp'], **kw)
    return crit, label, z, ll, lat


def forward_and_grad(crit, args, z):
    state, outs = crit.forward(args, [crit.output], keep_for_backward=[crit.output])
    grads = crit.backward(state, {crit.output: np.array(1.0)}, [z])
    return float(np.asarray(outs[crit.output])), grads[z]


UIDS1 = [0, 0, 1, 1]
UIDS2 = [2, 3, 3]


def batch(rng, lats=(LAT1, LAT2), uids=(UIDS1, UIDS2)):
    zs = [rng.standard_normal((len(u), NUM_SENONES)) for u in uids]
    lls = [log_softmax(z) * 3.0 for z in zs]
    return zs, lls, [one_hot(u) for u in uids], [as_samples(lattice_bytes(l)) for l in lats]


# ------------------------------------------------------------------ codec

def test_encode_decode_round_trip_expands_implied_sp():
    b = lattice_bytes(LAT1)
    assert b[:4] == b'LAT ' and b[-4:] == b'END '
    d = _cntk._decode_lattice(b)
    assert d['num_frames'] == 4 and list(d['node_times']) == LAT1['node_times']
    assert d['implied_sp_unit'] == SYM['sp'] and d['has_ac_scores']
    for got, want in zip(d['edges'], LAT1['edges']):
        assert got[:2] == want[:2] and got[3] == pytest.approx(want[3])
        assert [tuple(u) for u in got[4]] == [(SYM[u], f) for u, f in want[4]]
    # the /sp/ endings are stored as flags, not tokens: fewer bytes than with sp written out
    plain = encode(LAT1['num_frames'], LAT1['node_times'], LAT1['edges'])
    assert len(b) < len(plain)
    assert _cntk._decode_lattice(plain)['edges'] == d['edges']


def test_decode_without_ac_scores_and_with_padding():
    b = encode(3, [0, 3], [(0, 1, 5.0, -0.5, [('a', 3)])], has_ac_scores=False)
    d = _cntk._decode_lattice(b + b'\0\0\0')
    assert not d['has_ac_scores'] and d['edges'][0][3] == pytest.approx(-0.5) and d['edges'][0][2] < -1e29


def test_decode_rejects_every_truncation_and_corruptions():
    b = lattice_bytes(LAT2)
    for n in range(len(b)):
        with pytest.raises(OSError, match='lattice bytes'):
            _cntk._decode_lattice(b[:n])
    bad_tag = b'LAX' + b[3:]
    with pytest.raises(OSError, match="tag 'LAT '"):
        _cntk._decode_lattice(bad_tag)
    bad_version = b[:4] + np.int32(1).tobytes() + b[8:]
    with pytest.raises(OSError, match='version 1'):
        _cntk._decode_lattice(bad_version)
    bad_frames = b[:32] + np.uint64(7).tobytes() + b[40:]  # header numframes 7, last node at 3
    with pytest.raises(OSError, match='7 frames'):
        _cntk._decode_lattice(bad_frames)
    # an alignment that does not cover its edge
    short = encode(3, [0, 3], [(0, 1, 0.0, 0.0, [('a', 2)])])
    with pytest.raises(OSError, match='aligns 2 frames but spans 3'):
        _cntk._decode_lattice(short)
    # edges out of order
    unordered = encode(3, [0, 1, 3], [(1, 2, 0.0, 0.0, [('a', 2)]), (0, 1, 0.0, 0.0, [('a', 1)])])
    with pytest.raises(OSError, match='out of order'):
        _cntk._decode_lattice(unordered)


def test_encode_rejects_values_the_bit_fields_cannot_hold():
    with pytest.raises(ValueError, match='frames'):
        _cntk._encode_lattice(3000, [0, 3000], [(0, 1, 0.0, 0.0, [(0, 3000)])])
    with pytest.raises(ValueError, match='no units'):
        _cntk._encode_lattice(2, [0, 1, 2], [(0, 1, 0.0, 0.0, []), (1, 2, 0.0, 0.0, [(0, 1)])])


# ------------------------------------------------------------------ the criterion

@covers_op('LatticeSequenceWithSoftmax', 'forward')
@pytest.mark.parametrize('kw', [
    dict(),
    dict(seqGammarAMF=2.0, seqGammarLMF=3.0, seqGammarWordPen=-0.7, hSmoothingWeight=0.6),
    dict(seqGammarAMF=1.5, seqGammarBMMIFactor=0.4, hSmoothingWeight=1.0),
])
def test_mmi_value_and_gradient_match_path_enumeration(model, kw):
    rng = np.random.RandomState(0)
    zs, lls, labels, lats = batch(rng)
    crit, label, z, ll, lat = network(model, **kw)
    value, grad = forward_and_grad(crit, {label: labels, z: zs, ll: lls, lat: lats}, z)
    amf, lmf = kw.get('seqGammarAMF', 14.0), kw.get('seqGammarLMF', 14.0)
    wp, bmmi, h = kw.get('seqGammarWordPen', 0.0), kw.get('seqGammarBMMIFactor', 0.0), kw.get('hSmoothingWeight', 0.95)
    want = 0.0
    for k, (lt, u) in enumerate(zip((LAT1, LAT2), (UIDS1, UIDS2))):
        v, gamma = reference(lt, lls[k], u, amf=amf, lmf=lmf, wp=wp, bmmi=bmmi)
        want += v
        g = (1 - h) * softmax(zs[k]) + h * gamma - labels[k]
        g[gamma[np.arange(len(u)), u] < 1e-10] = 0
        np.testing.assert_allclose(grad[k], g, rtol=1e-6, atol=1e-8)  # float32 log-probabilities
        np.testing.assert_allclose(gamma.sum(axis=1), 1.0)  # posteriors per frame
    assert value == pytest.approx(want, rel=1e-7)


def test_smbr_value_and_gradient_match_path_enumeration(model):
    rng = np.random.RandomState(1)
    zs, lls, labels, lats = batch(rng)
    crit, label, z, ll, lat = network(model, seqGammarUsesMBR=True, seqGammarAMF=2.0, seqGammarLMF=1.0,
                                      hSmoothingWeight=0.8, frameDropThresh=-1.0)
    value, grad = forward_and_grad(crit, {label: labels, z: zs, ll: lls, lat: lats}, z)
    want = 0.0
    for k, (lt, u) in enumerate(zip((LAT1, LAT2), (UIDS1, UIDS2))):
        v, gamma = reference(lt, lls[k], u, amf=2.0, lmf=1.0, smbr=True)
        want += v
        assert np.abs(gamma).max() > 1e-3  # the lattices hold paths of different accuracy
        np.testing.assert_allclose(grad[k], 0.2 * softmax(zs[k]) + 0.8 * gamma - labels[k], rtol=1e-6, atol=1e-8)
    assert value == pytest.approx(want, rel=1e-7)


def test_frame_dropping_zeroes_frames_with_a_low_label_posterior(model):
    rng = np.random.RandomState(2)
    zs, lls, labels, lats = batch(rng)
    crit, label, z, ll, lat = network(model, frameDropThresh=0.5, seqGammarAMF=1.0)
    _, grad = forward_and_grad(crit, {label: labels, z: zs, ll: lls, lat: lats}, z)
    dropped = kept = 0
    for k, (lt, u) in enumerate(zip((LAT1, LAT2), (UIDS1, UIDS2))):
        _, gamma = reference(lt, lls[k], u, amf=1.0)
        low = gamma[np.arange(len(u)), u] < 0.5
        dropped += low.sum()
        kept += (~low).sum()
        assert np.all(grad[k][low] == 0)
        assert np.all(np.abs(grad[k][~low]).sum(axis=1) > 0)
    assert dropped > 0 and kept > 0


@covers_op('LatticeSequenceWithSoftmax', 'gradient:1')
def test_gradient_is_minus_the_value_derivative_for_log_softmax_loglikelihoods(model):
    """h = 1, amf = 1 and loglikelihood = log_softmax(prediction): the gradient CNTK gives the
    prediction is the derivative of minus the criterion (float64 central differences)."""
    rng = np.random.RandomState(3)
    zs, _, labels, lats = batch(rng)
    crit, label, z, ll, lat = network(model, hSmoothingWeight=1.0, seqGammarAMF=1.0, seqGammarLMF=1.0,
                                      frameDropThresh=-1.0)

    def value(zz):
        return float(crit.eval({label: labels, z: zz, ll: [log_softmax(q) for q in zz], lat: lats}))

    _, grad = forward_and_grad(crit, {label: labels, z: zs, ll: [log_softmax(q) for q in zs], lat: lats}, z)
    eps = 1e-6
    for k in range(len(zs)):
        numeric = np.zeros_like(zs[k])
        for idx in np.ndindex(*zs[k].shape):
            for sign in (1, -1):
                trial = [q.copy() for q in zs]
                trial[k][idx] += sign * eps
                numeric[idx] -= sign * value(trial) / (2 * eps)
        np.testing.assert_allclose(grad[k], numeric, rtol=1e-5, atol=1e-7)


@covers_op('LatticeSequenceWithSoftmax', 'zero:0', 'zero:2')
def test_no_gradient_flows_to_loglikelihood_and_training_raises_the_criterion(model):
    rng = np.random.RandomState(4)
    zs, lls, labels, lats = batch(rng)
    crit, label, z, ll, lat = network(model, hSmoothingWeight=1.0, seqGammarAMF=1.0, seqGammarLMF=1.0)
    state, _ = crit.forward({label: labels, z: zs, ll: lls, lat: lats}, [crit.output], keep_for_backward=[crit.output])
    g = crit.backward(state, {crit.output: np.array(1.0)}, [ll, label])
    assert all(np.all(np.asarray(a) == 0) for a in g[ll])
    assert all(np.all(np.asarray(a) == 0) for a in g[label])
    # a trained linear layer: value = num - den must rise (the gradient descends on -value)
    feats = [rng.standard_normal((len(u), 3)) for u in (UIDS1, UIDS2)]
    x = C.sequence.input_variable(3, dtype=np.float64, sequence_axis=label.dynamic_axes[1])
    w = C.parameter((3, NUM_SENONES), init=C.glorot_uniform(seed=2), dtype=np.float64)
    out = C.times(x, w)
    crit2 = C.lattice_sequence_with_softmax(label, out, C.log_softmax(out), lat, model['symlist'], model['tying'],
                                            model['states'], model['transp'], hSmoothingWeight=1.0,
                                            seqGammarAMF=1.0, seqGammarLMF=1.0)
    trainer = C.Trainer(out, (crit2, None), [C.sgd([w], C.learning_parameter_schedule(0.2))])
    values = []
    for _ in range(15):
        trainer.train_minibatch({x: feats, label: labels, lat: lats})
        values.append(trainer.previous_minibatch_loss_average)
    assert values[-1] > values[0]


def test_float32_criterion_and_lattice_config_override(model, tmp_path):
    rng = np.random.RandomState(5)
    zs, lls, labels, lats = batch(rng)
    cfg = tmp_path / 'LatticeNode.config'
    cfg.write_text('\n'.join([model['symlist'], model['tying'], model['states'], model['transp']]) + '\n')
    crit, label, z, ll, lat = network({k: 'missing-' + k for k in model}, dtype=np.float32,
                                      latticeConfigPath=str(cfg))
    got = crit.eval({label: [a.astype(np.float32) for a in labels], z: [a.astype(np.float32) for a in zs],
                     ll: [a.astype(np.float32) for a in lls], lat: lats})
    want = sum(reference(lt, l.astype(np.float32).astype(np.float64), u)[0]
               for lt, l, u in zip((LAT1, LAT2), lls, (UIDS1, UIDS2)))
    assert float(got) == pytest.approx(want, rel=1e-5)


def test_criterion_argument_and_input_errors(model, tmp_path):
    label = C.sequence.input_variable(NUM_SENONES)
    z = C.sequence.input_variable(NUM_SENONES, sequence_axis=label.dynamic_axes[1])
    lat = C.sequence.input_variable(1, sequence_axis=C.Axis.new_unique_dynamic_axis('lattice'))
    paths = (model['symlist'], model['tying'], model['states'], model['transp'])
    f = C.lattice_sequence_with_softmax
    with pytest.raises(NotImplementedError, match='doReferenceAlign'):
        f(label, z, z, lat, *paths, doReferenceAlign=True)
    with pytest.raises(ValueError, match='phonePath'):
        f(label, z, z, lat, paths[0], '', paths[2], paths[3])
    with pytest.raises(TypeError):
        f(label, z, z, lat, *paths, hSmoothingWeight='high')
    with pytest.raises(ValueError, match='seqGammarAMF'):
        f(label, z, z, lat, *paths, seqGammarAMF=0)
    lat64 = C.sequence.input_variable(1, dtype=np.float64, sequence_axis=C.Axis.new_unique_dynamic_axis('l64'))
    with pytest.raises(TypeError, match='float32'):
        f(label, z, z, lat64, *paths)
    small = C.sequence.input_variable(3)
    small_z = C.sequence.input_variable(3, sequence_axis=small.dynamic_axes[1])
    with pytest.raises(ValueError, match='5 senones'):
        f(small, small_z, small_z, lat, *paths)
    wrong = C.sequence.input_variable(NUM_SENONES + 1, sequence_axis=label.dynamic_axes[1])
    with pytest.raises(ValueError):
        f(label, wrong, z, lat, *paths)
    # label frames and lattice frames must agree
    crit, label, z, ll, lat = network(model)
    zs = [np.zeros((5, NUM_SENONES))]
    with pytest.raises(ValueError, match='5 label frames but its lattice has 4'):
        crit.eval({label: [one_hot([0] * 5)], z: zs, ll: zs, lat: [as_samples(lattice_bytes(LAT1))]})
    # a corrupt lattice names the sequence
    with pytest.raises(OSError, match='sequence 0'):
        crit.eval({label: [one_hot(UIDS1)], z: [np.zeros((4, 5))], ll: [np.zeros((4, 5))],
                   lat: [as_samples(lattice_bytes(LAT1)[:40])]})


def test_model_file_errors_name_the_file_and_line(model, tmp_path):
    label = C.sequence.input_variable(NUM_SENONES)
    z = C.sequence.input_variable(NUM_SENONES, sequence_axis=label.dynamic_axes[1])
    lat = C.sequence.input_variable(1, sequence_axis=C.Axis.new_unique_dynamic_axis('lattice'))

    def build(**over):
        p = dict(model, **over)
        return C.lattice_sequence_with_softmax(label, z, z, lat, p['symlist'], p['tying'], p['states'], p['transp'])

    with pytest.raises(OSError, match='nowhere'):
        build(states=str(tmp_path / 'nowhere'))
    bad = tmp_path / 'transp_bad'
    bad.write_text('T1 1 1.0 0.0 0.6\n')
    with pytest.raises(OSError, match='transp_bad:1: a 1-state matrix needs 4'):
        build(transp=str(bad))
    bad = tmp_path / 'tying_bad'
    bad.write_text('a T1 a0\nb T1 zz\n')
    with pytest.raises(OSError, match="tying_bad:2: senone 'zz'"):
        build(tying=str(bad))
    bad = tmp_path / 'sym_bad'
    bad.write_text('a\nq\n')
    with pytest.raises(OSError, match="sym_bad:2: unit 'q'"):
        build(symlist=str(bad))
    bad = tmp_path / 'tying_nosp'
    bad.write_text('a T1 a0\nb T1 b0\n')
    sym = tmp_path / 'sym_ab'
    sym.write_text('a\nb\n')
    with pytest.raises(OSError, match="no unit 'sp'"):
        build(tying=str(bad), symlist=str(sym))


# ------------------------------------------------------------------ the deserializer

def write_archive(d, lattices, keys, name='arch.lats', split_at=None):
    """An archive file, its TOC and an index file; returns (index path, bytes per key)."""
    arch = os.path.join(str(d), name)
    blobs = [lattice_bytes(l) for l in lattices]
    lines, offset = [], 0
    with open(arch, 'wb') as f:
        for i, (k, b) in enumerate(zip(keys, blobs)):
            lines.append('%s=%s[%d]' % (k, arch if i == 0 else '', offset))
            f.write(b)
            offset += len(b)
    toc = arch + '.toc'
    with open(toc, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    index = os.path.join(str(d), name + '.index')
    with open(index, 'w') as f:
        f.write(toc + '\n')
    return index, dict(zip(keys, blobs))


def test_deserializer_streams_lattice_bytes(tmp_path):
    index, blobs = write_archive(tmp_path, [LAT1, LAT2, LAT1], ['utt1', 'utt2', 'utt3'])
    d = C.io.LatticeDeserializer(index, C.io.StreamDefs(lattice=C.io.StreamDef()))
    nat = d._native()
    assert list(nat.stream_names) == ['lattice'] and nat.num_chunks() == 1
    seqs = nat.load_chunk(0)
    assert [k for k, _ in seqs] == [_cntk._lattice_key(n) for n in ('utt1', 'utt2', 'utt3')]
    for (_, streams), name in zip(seqs, ('utt1', 'utt2', 'utt3')):
        data = np.asarray(streams['lattice'], dtype=np.float32)
        assert data.shape == (len(as_samples(blobs[name])), 1)
        assert data.tobytes()[:len(blobs[name])] == blobs[name]
    # FNV-1a 64, as the HTK deserializers key their utterance names
    h = 14695981039346656037
    for c in b'utt1':
        h = ((h ^ c) * 1099511628211) % 2 ** 64
    assert _cntk._lattice_key('utt1') == h
    # small chunks: one lattice per chunk
    d2 = C.io.LatticeDeserializer(index, C.io.StreamDefs(lattice=C.io.StreamDef()), chunk_size_in_bytes=1)
    assert d2._native().num_chunks() == 3


def test_deserializer_joins_a_ctf_primary_and_feeds_the_criterion(model, tmp_path):
    rng = np.random.RandomState(6)
    zs, lls, labels, lats = batch(rng)
    index, _ = write_archive(tmp_path, [LAT1, LAT2], ['0', '1'])
    ctf = tmp_path / 'data.ctf'
    with open(str(ctf), 'w') as f:
        for sid, (z, lab) in enumerate(zip(zs, labels)):
            for t in range(len(z)):
                f.write('%d |z %s |l %s\n' % (sid, ' '.join('%.17g' % v for v in z[t]),
                                              ' '.join('%d' % v for v in lab[t])))
    src = C.io.MinibatchSource([
        C.io.CTFDeserializer(str(ctf), C.io.StreamDefs(z=C.io.StreamDef(field='z', shape=NUM_SENONES, dtype=np.float64),
                                                       l=C.io.StreamDef(field='l', shape=NUM_SENONES, dtype=np.float64))),
        C.io.LatticeDeserializer(index, C.io.StreamDefs(lattice=C.io.StreamDef()), numeric_keys=True)],
        randomize=False, max_sweeps=1)
    crit, label, z, ll, lat = network(model, hSmoothingWeight=1.0)
    zl = C.log_softmax(z) * 3.0
    crit = C.lattice_sequence_with_softmax(label, z, zl, lat, model['symlist'], model['tying'], model['states'],
                                           model['transp'])
    mb = src.next_minibatch(100000, input_map={z: src.streams.z, label: src.streams.l, lat: src.streams.lattice})
    got = crit.eval(mb)
    want = sum(reference(lt, l, u)[0] for lt, l, u in zip((LAT1, LAT2), lls, (UIDS1, UIDS2)))
    assert float(got) == pytest.approx(want, rel=1e-9)
    # minibatches cut by feature frames when the features' stream defines the size: 4 + 3 frames fit in 7
    def sizes(defines):
        s2 = C.io.MinibatchSource([
            C.io.CTFDeserializer(str(ctf), C.io.StreamDefs(
                z=C.io.StreamDef(field='z', shape=NUM_SENONES, dtype=np.float64, defines_mb_size=defines),
                l=C.io.StreamDef(field='l', shape=NUM_SENONES, dtype=np.float64))),
            C.io.LatticeDeserializer(index, C.io.StreamDefs(lattice=C.io.StreamDef()), numeric_keys=True)],
            randomize=False, max_sweeps=1)
        return s2.next_minibatch(7)[s2.streams.z].num_sequences
    assert sizes(True) == 2 and sizes(False) == 1
    with pytest.raises(ValueError, match='primary'):
        C.io.MinibatchSource([C.io.LatticeDeserializer(index, C.io.StreamDefs(lattice=C.io.StreamDef()))])


def test_deserializer_file_errors(tmp_path):
    streams = C.io.StreamDefs(lattice=C.io.StreamDef())
    with pytest.raises(OSError, match='nope.index'):
        C.io.LatticeDeserializer(str(tmp_path / 'nope.index'), streams)._native()
    index, _ = write_archive(tmp_path, [LAT1, LAT2], ['a', 'b'])
    toc = index[:-len('.index')] + '.toc'
    lines = open(toc).read().splitlines()
    bad_toc = tmp_path / 'bad.toc'
    bad_toc.write_text(lines[0] + '\nb=[12x]\n')
    bad_index = tmp_path / 'bad.index'
    bad_index.write_text(str(bad_toc) + '\n')
    with pytest.raises(OSError, match="bad.toc:2: the offset '12x'"):
        C.io.LatticeDeserializer(str(bad_index), streams)._native()
    bad_toc.write_text('b[0]\n')
    with pytest.raises(OSError, match='bad.toc:1: expected'):
        C.io.LatticeDeserializer(str(bad_index), streams)._native()
    bad_toc.write_text(lines[0] + '\n' + lines[1] + '\nc=[4]\n')  # offsets going back
    with pytest.raises(OSError, match='empty, past the end'):
        C.io.LatticeDeserializer(str(bad_index), streams)._native()
    bad_toc.write_text(lines[0] + '\n' + lines[1].replace('b=', 'a=') + '\n')
    with pytest.raises(OSError, match="'a' and 'a' have the same key"):
        C.io.LatticeDeserializer(str(bad_index), streams)._native()
    bad_toc.write_text('a=%s[0]\n' % (tmp_path / 'missing.lats'))
    with pytest.raises(OSError, match='missing.lats'):
        C.io.LatticeDeserializer(str(bad_index), streams)._native()
    # an offset that is not the start of a lattice is found when its chunk is loaded
    off = int(lines[1].split('[')[1][:-1])
    bad_toc.write_text(lines[0] + '\nb=[%d]\n' % (off + 4))
    nat = C.io.LatticeDeserializer(str(bad_index), streams)._native()
    with pytest.raises(OSError, match="'b' at byte %d does not start with the tag 'LAT '" % (off + 4)):
        nat.load_chunk(0)
    with pytest.raises(OSError, match='numeric keys'):
        C.io.LatticeDeserializer(index, streams, numeric_keys=True)._native()
    with pytest.raises(ValueError, match='single stream'):
        C.io.LatticeDeserializer(index, C.io.StreamDefs(a=C.io.StreamDef(), b=C.io.StreamDef()))
    with pytest.raises(ValueError, match='alias'):
        C.io.LatticeDeserializer(index, C.io.StreamDefs(a=C.io.StreamDef(field='x')))


def test_saved_model_keeps_the_criterion(model, tmp_path):
    rng = np.random.RandomState(7)
    zs, lls, labels, lats = batch(rng)
    crit, label, z, ll, lat = network(model, seqGammarAMF=2.0, seqGammarUsesMBR=True, hSmoothingWeight=0.5)
    want = float(crit.eval({label: labels, z: zs, ll: lls, lat: lats}))
    path = str(tmp_path / 'crit.model')
    crit.save(path)
    loaded = C.load_model(path)
    assert loaded.root_function.op_name == 'LatticeSequenceWithSoftmax'
    attrs = loaded.root_function.attributes
    assert attrs['SeqGammarUsesMBR'] is True and attrs['SeqGammarAMF'] == 2.0 and attrs['PhonePath'] == model['tying']
    a = loaded.arguments
    assert float(loaded.eval({a[0]: labels, a[1]: zs, a[2]: lls, a[3]: lats})) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize('kw', [dict(), dict(seqGammarBMMIFactor=0.3), dict(seqGammarUsesMBR=True)])
def test_gradient_is_minus_the_value_derivative_wrt_loglikelihood(model, kw):
    """With h = 1 and amf = 1 the prediction's gradient is gamma - label, and gamma is the derivative
    of the lattice term: d value / d loglikelihood = label - gamma = -gradient (MMI, boosted MMI and
    sMBR; float64 central differences)."""
    rng = np.random.RandomState(8)
    zs, lls, labels, lats = batch(rng)
    crit, label, z, ll, lat = network(model, hSmoothingWeight=1.0, seqGammarAMF=1.0, seqGammarLMF=0.5,
                                      frameDropThresh=-1e9, **kw)
    _, grad = forward_and_grad(crit, {label: labels, z: zs, ll: lls, lat: lats}, z)
    eps = 1e-6
    for k in range(len(lls)):
        numeric = np.zeros_like(lls[k])
        for idx in np.ndindex(*lls[k].shape):
            for sign in (1, -1):
                trial = [q.copy() for q in lls]
                trial[k][idx] += sign * eps
                numeric[idx] += sign * float(crit.eval({label: labels, z: zs, ll: trial, lat: lats})) / (2 * eps)
        np.testing.assert_allclose(-grad[k], numeric, rtol=1e-5, atol=1e-7)


def test_sparse_one_hot_labels_give_the_dense_result(model):
    rng = np.random.RandomState(9)
    zs, _, labels, lats = batch(rng)
    zs = [a.astype(np.float32) for a in zs]
    lat = C.sequence.input_variable(1, sequence_axis=C.Axis.new_unique_dynamic_axis('lattice'))
    values = []
    for sparse in (True, False):
        label = C.sequence.input_variable(NUM_SENONES, is_sparse=sparse)
        z = C.sequence.input_variable(NUM_SENONES, sequence_axis=label.dynamic_axes[1])
        crit = C.lattice_sequence_with_softmax(label, z, z, lat, model['symlist'], model['tying'], model['states'],
                                               model['transp'])
        lab = C.Value.one_hot([UIDS1, UIDS2], NUM_SENONES) if sparse else [a.astype(np.float32) for a in labels]
        values.append(float(crit.eval({label: lab, z: zs, lat: lats})))
    want = sum(reference(lt, q.astype(np.float64), u)[0] for lt, q, u in zip((LAT1, LAT2), zs, (UIDS1, UIDS2)))
    assert values[0] == values[1] == pytest.approx(want, rel=1e-5)


def test_training_from_a_minibatch_source_with_lattices(model, tmp_path):
    """CNTK's recipe in small: features and labels from the primary deserializer, lattices joined by
    key, float32 throughout, a Trainer over the criterion; the criterion rises."""
    rng = np.random.RandomState(10)
    index, _ = write_archive(tmp_path, [LAT1, LAT2], ['0', '1'])
    ctf = tmp_path / 'train.ctf'
    feats = [rng.standard_normal((len(u), 3)) for u in (UIDS1, UIDS2)]
    with open(str(ctf), 'w') as f:
        for sid, (x, u) in enumerate(zip(feats, (UIDS1, UIDS2))):
            for t in range(len(u)):
                f.write('%d |x %s |l %d:1\n' % (sid, ' '.join('%.6f' % v for v in x[t]), u[t]))
    src = C.io.MinibatchSource([
        C.io.CTFDeserializer(str(ctf), C.io.StreamDefs(
            x=C.io.StreamDef(field='x', shape=3, defines_mb_size=True),
            l=C.io.StreamDef(field='l', shape=NUM_SENONES, is_sparse=True))),
        C.io.LatticeDeserializer(index, C.io.StreamDefs(lattice=C.io.StreamDef()), numeric_keys=True)],
        randomize=False)
    x = C.sequence.input_variable(3)
    label = C.sequence.input_variable(NUM_SENONES, is_sparse=True, sequence_axis=x.dynamic_axes[1])
    lat = C.sequence.input_variable(1, sequence_axis=C.Axis.new_unique_dynamic_axis('lattice'))
    z = C.layers.Dense(NUM_SENONES, init=C.glorot_uniform(seed=3))(x)
    crit = C.lattice_sequence_with_softmax(label, z, C.log_softmax(z), lat, model['symlist'], model['tying'],
                                           model['states'], model['transp'], hSmoothingWeight=0.9,
                                           seqGammarAMF=1.0, seqGammarLMF=1.0)
    trainer = C.Trainer(z, (crit, C.classification_error(z, label)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    input_map = {x: src.streams.x, label: src.streams.l, lat: src.streams.lattice}
    values = []
    for _ in range(12):
        trainer.train_minibatch(src.next_minibatch(7, input_map=input_map))
        assert trainer.previous_minibatch_sample_count == 7
        values.append(trainer.previous_minibatch_loss_average)
    assert values[-1] > values[0]


def test_lattices_join_htk_features_and_mlf_labels_by_utterance_name(model, tmp_path):
    """CNTK's speech recipe: HTK features (SCP), MLF senone labels and lattices keyed by the same
    utterance names meet in one MinibatchSource; the criterion over a minibatch from it equals the
    criterion over the same arrays fed directly."""
    from test_io_htk import write_htk, write_lines
    rng = np.random.RandomState(12)
    uids = {'utt0': UIDS1, 'utt1': UIDS2}
    lats = {'utt0': LAT1, 'utt1': LAT2}
    feats, scp, mlf = {}, [], ['#!MLF!#']
    for name, u in uids.items():
        p = tmp_path / (name + '.fea')
        feats[name] = write_htk(p, rng.standard_normal((len(u), 3)))
        scp.append('%s.fea=%s[0,%d]' % (name, p, len(u) - 1))
        mlf.append('"*/%s.lab"' % name)
        mlf += ['%d %d %s' % (t * 100000, (t + 1) * 100000, SENONES[s]) for t, s in enumerate(u)]
        mlf.append('.')
    scp = write_lines(tmp_path / 'train.scp', scp)
    mlf = write_lines(tmp_path / 'train.mlf', mlf)
    mapping = write_lines(tmp_path / 'senones.list', SENONES)
    # the archive lists the utterances in the other order: the join is by name, not position
    index, _ = write_archive(tmp_path, [lats['utt1'], lats['utt0']], ['utt1', 'utt0'])
    src = C.io.MinibatchSource([
        C.io.HTKFeatureDeserializer(C.io.StreamDefs(x=C.io.StreamDef(scp=scp, shape=3, defines_mb_size=True))),
        C.io.HTKMLFDeserializer(mapping, C.io.StreamDefs(l=C.io.StreamDef(shape=NUM_SENONES, mlf=mlf))),
        C.io.LatticeDeserializer(index, C.io.StreamDefs(lattice=C.io.StreamDef()))],
        randomize=False, max_sweeps=1)
    x = C.sequence.input_variable(3)
    label = C.sequence.input_variable(NUM_SENONES, is_sparse=True, sequence_axis=x.dynamic_axes[1])
    lat = C.sequence.input_variable(1, sequence_axis=C.Axis.new_unique_dynamic_axis('lattice'))
    z = C.layers.Dense(NUM_SENONES, init=C.glorot_uniform(seed=4))(x)
    crit = C.lattice_sequence_with_softmax(label, z, C.log_softmax(z), lat, model['symlist'], model['tying'],
                                           model['states'], model['transp'], seqGammarAMF=1.0, seqGammarLMF=1.0)
    mb = src.next_minibatch(100, input_map={x: src.streams.x, label: src.streams.l, lat: src.streams.lattice})
    assert mb[x].num_sequences == 2 and mb[x].num_samples == len(UIDS1) + len(UIDS2)
    from_reader = float(np.asarray(crit.eval(mb)))
    direct = float(np.asarray(crit.eval({
        x: [feats['utt0'], feats['utt1']],
        label: [one_hot(uids['utt0']).astype(np.float32), one_hot(uids['utt1']).astype(np.float32)],
        lat: [as_samples(lattice_bytes(lats['utt0'])), as_samples(lattice_bytes(lats['utt1']))]})))
    assert from_reader == pytest.approx(direct, rel=1e-5)
