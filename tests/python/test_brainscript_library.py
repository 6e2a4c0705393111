"""CNTK's BrainScript library (CNTK.core.bs names) through the `cntk` command: a network is
trained with learning rate 0 (its parameters stay as drawn), saved as a v1 model, and the
`write` action's outputs over a small CTF file are compared with NumPy."""
import os
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
    got, _ = train_and_write(tmp_path, '\n'.join(lines) + '\n', {'x': (1, 'dense'), 'y': (1, 'dense')},
                             'x = Input (1) ; y = Input (1)\n' + members +
                             '\n    featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (crit)', outputs)
    # (a layer's output is named by its inner member path: 'norm.out')
    return {name: values.ravel() for name, values in got.items()}


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
    clipped = Clip (-1, 2, v)
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


def train_and_write(tmp_path, data, inputs, members, outputs):
    """Trains (learning rate 0) the BrainScript `members` on the CTF `data` whose streams are
    `inputs` ({name: (dim, format)}), saves the v1 model, writes `outputs` through the `write`
    action (the model read back) and returns ({name: array of lines of values}, stderr)."""
    (tmp_path / 'data.txt').write_text(data)
    streams = ' ; '.join('%s = [ dim = %d ; format = "%s" ]' % (n, d, f) for n, (d, f) in inputs.items())
    reader = ('[ readerType = "CNTKTextFormatReader" ; file = "data.txt" ; randomize = false ; input = [ %s ] ]'
              % streams)
    (tmp_path / 'net.cntk').write_text('''command = T:W
modelPath = "m/model.dnn"
r = %s
T = [
  action = "train"
  BrainScriptNetworkBuilder = [
    %s
    outputNodes = (%s)
  ]
  SGD = [ maxEpochs = 1 ; minibatchSize = 16 ; learningRatesPerSample = 0 ]
  reader = $r$
]
W = [ action = "write" ; outputPath = "out/o" ; reader = $r$ ]
''' % (reader, members, ' : '.join(outputs)))
    p = subprocess.run([cntk_command(), 'configFile=net.cntk'], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    got = {}
    for name in outputs:
        files = sorted((tmp_path / 'out').glob('o.' + name + '*'))
        assert files, name
        got[name] = np.array([[float(v) for v in line.split()] for line in files[0].read_text().splitlines()
                              if line.strip()])
    return got, p.stderr


def test_embedding_from_file_khatri_rao_and_reverse(tmp_path):
    # CNTK's seqcla form: a fixed embedding of one row per word, applied transposed
    table = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], dtype=float)
    np.savetxt(tmp_path / 'emb.txt', table)
    words = [[2, 0], [3]]
    data = ''.join('%d |x %d:1 |y %d\n' % (s, w, w) for s, seq in enumerate(words) for w in seq)
    got, _ = train_and_write(tmp_path, data, {'x': (4, 'sparse'), 'y': (1, 'dense')}, '''
    x = SparseInput (4) ; y = Input (1)
    e = EmbeddingLayer {2, embeddingPath = 'emb.txt', transpose = true} (x)
    k = KhatriRaoProduct (e, 10 * e)
    rev = BS.Sequences.Reverse (e)
    z = DenseLayer {1} (e)
    crit = SquareError (y, z)
    featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (crit)
    ''', ['e', 'k', 'rev'])
    e = [table[seq] for seq in words]
    np.testing.assert_allclose(got['e'], np.concatenate(e))
    # CNTK's order: left's index fastest, out[j * rows + i] = left[i] * right[j]
    kr = np.concatenate([np.einsum('tj,ti->tji', 10 * s, s).reshape(len(s), -1) for s in e])
    np.testing.assert_allclose(got['k'], kr)
    np.testing.assert_allclose(got['rev'], np.concatenate([s[::-1] for s in e]))


def test_bilinear_upsampling_layer(tmp_path):
    image = np.arange(1, 10, dtype=float).reshape(3, 3) ** 1.5  # [height, width]
    data = '|x %s |y 1\n' % ' '.join('%g' % v for v in image.ravel())
    got, _ = train_and_write(tmp_path, data, {'x': (9, 'dense'), 'y': (1, 'dense')}, '''
    x = Input (3 : 3 : 1) ; y = Input (1 : 1 : 1)
    up = BilinearUpsamplingLayer {1, 4, 2} (x)
    crit = SquareError (y, ReduceSum (up) .* ParameterTensor {1, initValue = 1})
    featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (crit)
    ''', ['up'])
    # the transposed convolution (stride 2, no padding) with CNTK's bilinear kernel
    k = 4
    f, c = (k + 1) // 2, (k - 1) / 2
    w = 1 - np.abs(np.arange(k) - c) / f
    kernel = np.outer(w, w)
    out = np.zeros((2 * 2 + k, 2 * 2 + k))
    for i in range(3):
        for j in range(3):
            out[2 * i:2 * i + k, 2 * j:2 * j + k] += image[i, j] * kernel
    np.testing.assert_allclose(got['up'].ravel(), out.ravel(), rtol=1e-5)


ATIS = '/work/shared/data/atis'
if not os.path.isdir(ATIS):
    ATIS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'data', 'atis')

# CNTK's SLUHandsOn tutorial, task 4 (intent classification): the bidirectional LSTM of task 3
# reduced to the last step of the forward and the first step of the backward recurrence, the
# query on a DynamicAxis of its own and one intent label per query.
SLU_INTENT_CONFIG = '''
command = TrainTagger:TestTagger
makeMode = false ; traceLevel = 0
modelPath = "Models/slu.cmf"
vocabSize = 943 ; numLabels = 129 ; numIntents = 26
Input = [
    query        = [ alias = "S0" ; dim = $vocabSize$ ;  format = "sparse" ]
    intentLabels = [ alias = "S1" ; dim = $numIntents$ ; format = "sparse" ]
    slotLabels   = [ alias = "S2" ; dim = $numLabels$ ;  format = "sparse" ]
]
TrainTagger = [
    action = "train"
    BrainScriptNetworkBuilder = [
        inputDim = $vocabSize$ ; intentDim = $numIntents$ ; embDim = 150 ; hiddenDim = 150
        BiRecurrentLSTMLayer {outDim} = {
            F = RecurrentLSTMLayer {outDim, goBackwards=false}
            G = RecurrentLSTMLayer {outDim, goBackwards=true}
            apply (x) = Splice (BS.Sequences.Last(F(x)):BS.Sequences.First(G(x)))
        }.apply
        model = Sequential (
            EmbeddingLayer {embDim} : BatchNormalizationLayer {} :
            BiRecurrentLSTMLayer {hiddenDim} : BatchNormalizationLayer {} :
            DenseLayer {intentDim})
        n = DynamicAxis()
        query        = Input {inputDim, dynamicAxis=n}
        intentLabels = Input {intentDim}
        z = model (query)
        ce   = CrossEntropyWithSoftmax (intentLabels, z)
        errs = ErrorPrediction         (intentLabels, z)
        featureNodes = (query) ; labelNodes = (intentLabels)
        criterionNodes = (ce) ; evaluationNodes = (errs) ; outputNodes = (z)
    ]
    SGD = [
        maxEpochs = 4 ; epochSize = 36000 ; minibatchSize = 70
        learningRatesPerSample = 0.003*2:0.0015*12:0.0003
        gradUpdateType = "fsAdaGrad"
        gradientClippingWithTruncation = true ; clippingThresholdPerSample = 15.0
        numMBsToShowResult = 100
    ]
    reader = [ readerType = "CNTKTextFormatReader" ; file = "%(atis)s/atis.train.ctf" ; input = $Input$ ]
]
TestTagger = [
    action = "eval"
    reader = [ readerType = "CNTKTextFormatReader" ; file = "%(atis)s/atis.test.ctf" ; randomize = false ; input = $Input$ ]
]
'''


def percent(text):
    """An error rate as the log prints it (a fraction, or a percentage)."""
    return float(text[:-1]) / 100 if text.endswith('%') else float(text)


def intents(path):
    """The intent label of each query of a CTF file (S1, on each sequence's first line only)."""
    return [int(m.group(1)) for line in open(path) for m in [re.search(r'\|S1 (\d+):1', line)] if m]


def test_slu_intent_classification_on_its_own_dynamic_axis(tmp_path):
    (tmp_path / 'slu.cntk').write_text(SLU_INTENT_CONFIG % {'atis': os.path.abspath(ATIS)})
    # One thread: OpenMP's spinning team slows small minibatches badly when another process
    # holds a core (the results are the same).
    env = dict(os.environ, OMP_NUM_THREADS='1')
    p = subprocess.run([cntk_command(), 'configFile=slu.cntk'], cwd=tmp_path, capture_output=True, text=True,
                       timeout=1200, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    test = intents(os.path.join(ATIS, 'atis.test.ctf'))
    # One sample per query: a minibatch of 70 samples packs about 6 queries of 70 words, and
    # the criteria count the queries.
    number = r'([0-9.e+-]+%?)'
    lines = re.findall(r'Minibatch\[\s*(\d+)-\s*(\d+)(?:, [\d.]+%%)?\]: ce = %s \* (\d+)' % number, p.stderr)
    assert len(lines) > 10, p.stderr[-3000:]
    # (the epoch's last minibatches are cut short to end it at epochSize)
    per_minibatch = [int(k) / (int(b) - int(a) + 1) for a, b, _, k in lines[:-1]]
    assert all(2 < k < 15 for k in per_minibatch), per_minibatch
    # An epoch is 36000 of the reader's samples (words), about 2700 queries: the tutorial's epochs
    # of "* 2702", "* 2677", ...
    epochs = re.findall(r'Finished Epoch\[ \d of 4\]: \[Training\] ce = %s \* (\d+); errs = %s' % (number, number),
                        p.stderr)
    assert len(epochs) == 4 and all(2500 < int(n) < 2900 for _, n, _ in epochs), epochs
    trained = re.search(r'Finished Epoch\[ 4 of 4\]: \[Training\] ce = %s \* (\d+); errs = %s' % (number, number),
                        p.stderr)
    assert trained, p.stderr[-3000:]
    final = re.search(r'Final Results: Minibatch\[1-1\]: errs = %s \* (\d+); ce = %s \* (\d+)' % (number, number),
                      p.stderr)
    assert final, p.stderr[-3000:]
    assert int(final.group(2)) == int(final.group(4)) == len(test) == 893
    # Chance here is always answering the most frequent intent (29% of the test queries).
    majority_error = 1 - np.bincount(test).max() / len(test)
    assert majority_error > 0.29
    assert percent(final.group(1)) < 0.5 * majority_error, final.group(0)
    assert percent(trained.group(3)) < majority_error, trained.group(0)
