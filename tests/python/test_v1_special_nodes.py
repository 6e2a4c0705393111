"""CNTK v1 model files (.dnn) with the KhatriRaoProduct and Trace nodes: files laid out as CNTK's
ComputationNetwork::Save writes them load and evaluate against NumPy (KhatriRaoProduct in CNTK's
element order; Trace as the pass-through it is, without its logging), and the `cntk` command's
Trace is saved as CNTK's v1 Trace node with its settings."""
import struct

import numpy as np

import cntk as C
from cntk import _cntk

from test_brainscript_library import train_and_write


def _s(text):
    return text.encode('utf-16-le') + b'\0\0'


def _narrow(text):
    return text.encode('utf-8') + b'\0'


def _trace_payload(message, log_first, log_frequency, precision):
    """TraceNode::Save after the node's common entries: message, logFirst, logFrequency,
    logGradientToo, the format (category flag, labelMappingFile, sparse and transpose flags,
    eight 8-bit strings), onlyUpToRow, onlyUpToT."""
    strings = ['', '', '', '', '\\n', ' ', '\\n', precision]
    return (_s(message) + struct.pack('<QQ?', log_first, log_frequency, False) + struct.pack('<?', False) + _s('') +
            struct.pack('<??', False, True) + b''.join(_narrow(v) for v in strings) + struct.pack('<QQ', 100, 100))


def _cntk_file():
    """x [2], y [3], k = KhatriRaoProduct (x, y), t = Trace (k): a version-31 file."""
    def input_node(name, dim):
        return (_s('float') + _s('InputValue') + _s(name) + struct.pack('<QQ', dim, 1) +
                struct.pack('<II', 1, dim) + struct.pack('<I', 1) + _s('*') + struct.pack('<f', 0))

    nodes = [input_node('x', 2), input_node('y', 3), _s('float') + _s('KhatriRaoProduct') + _s('k'),
             _s('float') + _s('Trace') + _s('t') + _trace_payload('kr', 1, 10, '.3')]
    relations = [('x', []), ('y', []), ('k', ['x', 'y']), ('t', ['k'])]
    out = _s('BCN') + _s('BVersion') + struct.pack('<Q', 31) + _s('EVersion') + struct.pack('<Q', len(nodes))
    out += _s('BNodeList') + b''.join(nodes) + _s('ENodeList') + _s('BRelation')
    for name, ins in relations:
        out += _s(name) + struct.pack('<Q', len(ins)) + b''.join(_s(i) for i in ins)
    out += _s('ERelation') + _s('BRootNodes')
    for group, names in [('FeatureNodes', ['x', 'y']), ('LabelNodes', []), ('CriterionNodes', []),
                         ('EvalNodes', []), ('OutputNodes', ['t', 'k'])]:
        out += _s('B' + group) + struct.pack('<Q', len(names)) + b''.join(_s(n) for n in names) + _s('E' + group)
    return out + _s('ERootNodes') + _s('ECN')


def test_cntk_khatri_rao_and_trace_nodes_load(tmp_path):
    path = tmp_path / 'kr.dnn'
    path.write_bytes(_cntk_file())
    f = C.load_model(str(path))
    args = {a.name: a for a in f.arguments}
    rng = np.random.default_rng(3)
    x = [rng.standard_normal((n, 2)).astype(np.float32) for n in (3, 1)]
    y = [rng.standard_normal((n, 3)).astype(np.float32) for n in (3, 1)]
    got = f.eval({args['x']: x, args['y']: y})
    outs = {o.name: got[o] for o in f.outputs}
    assert sorted(outs) == ['k', 't']
    for xs, ys, k, t in zip(x, y, outs['k'], outs['t']):
        # CNTK's order: out[j * 2 + i] = x[i] * y[j]
        want = np.einsum('tj,ti->tji', ys, xs).reshape(len(xs), 6)
        np.testing.assert_allclose(np.asarray(k).reshape(-1, 6), want, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(t).reshape(-1, 6), want, rtol=1e-6)
    # the dump names the nodes' types as the file holds them
    dump = _cntk.dump_legacy_model(path.read_bytes(), str(path))
    assert 'k=KhatriRaoProduct' in dump and 't=Trace' in dump, dump


def test_cntk_command_saves_trace_as_v1_trace_node(tmp_path):
    got, log = train_and_write(
        tmp_path, '0 |x 1 |y 2\n1 |x 2 |y 4\n2 |x 3 |y 6\n', {'x': (1, 'dense'), 'y': (1, 'dense')}, """
    x = Input (1) ; y = Input (1)
    w = ParameterTensor {1, initValue = 3}
    z = Trace (w .* x, say = 'scaled', logFirst = 1, logFrequency = 7, format = [ precisionFormat = '.1' ])
    crit = SquareError (y, z)
    featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (crit)""", ['z'])
    # the training pass logged the values (one line per sample, precision .1)
    assert '------- Trace[] scaled --> ' in log
    assert '3.0\n6.0\n9.0\n' in log
    # the model holds CNTK's Trace node with its settings
    data = (tmp_path / 'm' / 'model.dnn').read_bytes()
    at = data.find(_s('Trace'))
    assert at > 0
    assert _s('scaled') + struct.pack('<QQ', 1, 7) in data[at:]
    assert _narrow('.1') + struct.pack('<QQ', 100000000, 100000000) in data[at:]
    # and loads back as a pass-through
    np.testing.assert_allclose(got['z'].ravel(), [3, 6, 9])
