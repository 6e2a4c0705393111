"""CNTK's BrainScript library (CNTK.core.bs names) through the `cntk` command: a network is
trained with learning rate 0 (its parameters stay as drawn), saved as a v1 model, and the
`write` action's outputs over a small CTF file are compared with NumPy."""
import re
import subprocess

import numpy as np

from test_brainscript_cli import cntk_command


SEQUENCES = [[1.0, 2.0, 3.0, 4.0], [0.5, -1.5, 2.5], [-2.0, 3.0]]


def run_network(tmp_path, members, outputs, sequences=True):
    """Trains `members` (BrainScript network members over inputs x and y, with criterion `crit`)
    with learning rate 0 on SEQUENCES (each value a sample of its own unless `sequences`),
    writes `outputs` and returns {name: the values written}."""
    lines = []
    for s, seq in enumerate(SEQUENCES):
        for v in seq:
            lines.append('%d |x %g |y %g' % (s if sequences else len(lines), v, 2 * v))
    (tmp_path / 'data.txt').write_text('\n'.join(lines) + '\n')
    reader = ('reader = [ readerType = "CNTKTextFormatReader" ; file = "data.txt" ; randomize = false ; input = [ '
              'x = [ dim = 1 ; format = "dense" ] ; y = [ dim = 1 ; format = "dense" ] ] ]')
    (tmp_path / 'lib.cntk').write_text('''command = T:W
modelPath = "m/model.dnn"
T = [
  action = "train"
  BrainScriptNetworkBuilder = [
    x = Input (1) ; y = Input (1)
    %s
    featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (crit) ; outputNodes = (%s)
  ]
  SGD = [ maxEpochs = 1 ; minibatchSize = 16 ; learningRatesPerSample = 0 ]
  %s
]
W = [ action = "write" ; outputPath = "out/o" ; %s ]
''' % (members, ' : '.join(outputs), reader, reader))
    p = subprocess.run([cntk_command(), 'configFile=lib.cntk'], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    got = {}
    for name in outputs:
        # a layer's output is named by its inner member path ('norm.out')
        files = sorted((tmp_path / 'out').glob('o.' + name + '*'))
        assert files, name
        text = files[0].read_text()
        got[name] = [float(v) for v in re.findall(r'[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?', text)]
    return got


def test_sequence_functions_and_delay_layer(tmp_path):
    got = run_network(tmp_path, '''
    w = ParameterTensor {1, initValue = 1}
    crit = SquareError (y, w .* x)
    first = BS.Loop.IsFirst (x)
    delayed = DelayLayer {T = 1} (x)
    ahead = DelayLayer {T = -1, defaultHiddenActivation = 5} (x)
    previous = BS.Loop.Previous (x)
    running = BS.Loop.Iteration (x) + 0
    ''', ['first', 'delayed', 'ahead', 'previous', 'running'])
    seqs = [np.array(s) for s in SEQUENCES]
    cat = np.concatenate
    expected = {
        'first': cat([np.eye(1, len(s))[0] for s in seqs]),
        'delayed': cat([np.r_[0, s[:-1]] for s in seqs]),
        'ahead': cat([np.r_[s[1:], 5] for s in seqs]),
        'previous': cat([np.r_[0.1, s[:-1]] for s in seqs]),  # PastValue's default initial activation
        'running': cat([np.arange(1, len(s) + 1) for s in seqs]),
    }
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_elementwise_primitives_and_layer_normalization(tmp_path):
    got = run_network(tmp_path, '''
    w = ParameterTensor {1, initValue = 1}
    crit = SquareError (y, w .* x)
    v = Splice ((x : 2 * x : x - 1), axis = 1)
    # (one value per sample would be taken for a metric: two)
    reduced = Splice ((ReduceMax (v) : ReduceLogSum (v)))
    clipped = Clip (v, -1, 2)
    rounded = Round (v .* 0.75)
    hard = Hardmax (v)
    norm = LayerNormalizationLayer {initScale = 2, initBias = 1} (v)
    ''', ['reduced', 'clipped', 'rounded', 'hard', 'norm'], sequences=False)
    x = np.concatenate([np.array(s) for s in SEQUENCES])
    v = np.stack([x, 2 * x, x - 1], axis=1)
    centred = v - v.mean(axis=1, keepdims=True)
    expected = {
        'reduced': np.stack([v.max(axis=1), np.log(np.exp(v).sum(axis=1))], axis=1).ravel(),
        'clipped': np.clip(v, -1, 2).ravel(),
        'rounded': np.floor(v * 0.75 + 0.5).ravel(),
        'hard': (v == v.max(axis=1, keepdims=True)).astype(float).ravel(),
        'norm': (centred / np.sqrt((centred ** 2).mean(axis=1, keepdims=True)) * 2 + 1).ravel(),
    }
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5, err_msg=name)
