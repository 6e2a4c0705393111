"""NDLNetworkBuilder: CNTK's Network Description Language run by the `cntk` command.

CNTK's two NDL configs in ../shared/cntk-brainscript run unmodified (the reader and output path
given on the command line, as CNTK's test driver gave them), and their outputs are compared
with NumPy; an NDL network with macros trains with the SGD block; errors name the NDL line.
"""
import os
import re

import numpy as np
import pytest

from test_brainscript_cli import MATERIAL, run

SIMPLE2D = os.path.join(MATERIAL, 'Tests', 'EndToEndTests', 'Simple2d')
DATA = os.path.join(SIMPLE2D, 'Data')


def simple2d_config(name):
    path = os.path.join(SIMPLE2D, name)
    if not os.path.exists(path):
        pytest.skip('%s is absent' % path)
    return path


def one_column_data(tmp_path, values):
    path = tmp_path / 'x.txt'
    path.write_text(''.join('|features %r\n' % float(v) for v in values))
    return str(path)


def write_override(data, output):
    return ('Add_Operator_Constant=[reader=[readerType=CNTKTextFormatReader;file=%s;'
            'input=[features=[dim=1;format=dense]]];outputPath=%s]' % (data, output))


def read_values(path):
    with open(path) as f:
        return np.array([float(line) for line in f if line.strip()])


def test_add_operator_constant_writes_input_plus_one(tmp_path):
    config = simple2d_config('AddOperatorConstant_ndl_deprecated.cntk')
    x = np.random.RandomState(0).uniform(-5, 5, size=37).round(4)
    data = one_column_data(tmp_path, x)
    rc, log = run(['configFile=' + config, write_override(data, str(tmp_path / 'out'))], tmp_path)
    assert rc == 0, log[-3000:]
    assert 'COMPLETED.' in log
    np.testing.assert_allclose(read_values(tmp_path / 'out.ol'), x + 1, rtol=1e-6, atol=1e-6)


def test_add_operator_constant_without_input_writes_the_sum(tmp_path):
    config = simple2d_config('AddOperatorConstantNoInput_ndl_deprecated.cntk')
    data = one_column_data(tmp_path, [0.5, 1.5, 2.5])
    rc, log = run(['configFile=' + config, write_override(data, str(tmp_path / 'out'))], tmp_path)
    assert rc == 0, log[-3000:]
    # No input: the network's one value, once per minibatch read (one here).
    np.testing.assert_allclose(read_values(tmp_path / 'out.ol'), [np.float32(1) + np.float32(2)])


def test_ndl_write_of_outputs_one_reads_from_another(tmp_path):
    x = np.array([0.5, -1.0, 2.25])
    data = one_column_data(tmp_path, x)
    config = tmp_path / 'w.cntk'
    config.write_text('\n'.join([
        'command = W',
        'W = [ action = write ; outputPath = %s ; run = net ; NDLNetworkBuilder = [ ]' % (tmp_path / 'out'),
        '  reader = [ readerType = CNTKTextFormatReader ; file = %s ;' % data,
        '             input = [ features = [ dim = 1 ; format = dense ] ] ]',
        '  net = [ features = Input(1, tag=feature) ; h = Tanh(features) ; s = Sigmoid(h) ; OutputNodes = (h, s) ]',
        ']', '']))
    rc, log = run(['configFile=%s' % config], tmp_path)
    assert rc == 0, log[-3000:]
    np.testing.assert_allclose(read_values(tmp_path / 'out.h'), np.tanh(x), rtol=1e-5)
    np.testing.assert_allclose(read_values(tmp_path / 'out.s'), 1 / (1 + np.exp(-np.tanh(x))), rtol=1e-5)


MACROS = """
# bare macro definitions, as CNTK's default macro files hold them
SBFF(in, rowCount, colCount)
{
    B = Parameter(rowCount, init=fixedValue, value=0)
    W = Parameter(rowCount, colCount, init="uniform", initValueScale=$initScale$)
    FF = Plus(Times(W, in), b)
    S = Sigmoid(FF)
}
LinearOut(x, W, b) = Plus(Times(W, x), b)
"""

NETWORK = """
load = ndlMacroDefine
run = ndlCreateNetwork

ndlMacroDefine = [
    MVN(x) = [
        xMean = Mean(x)
        xStdDev = InvStdDev(x)
        xNorm = PerDimMeanVarNormalization(x, xMean, xStdDev)
    ]
]

ndlCreateNetwork = [
    featDim = 2; labelDim = 2; hiddenDim = $hiddenDim$
    features = Input(featDim, tag=feature)
    labels = InputValue(labelDim, tag=label)
    featNorm = MVN(features)
    L1 = SBFF(featNorm, hiddenDim, featDim)
    W2 = Parameter(labelDim, hiddenDim)
    b2 = Parameter(labelDim, 1, init=fixedvalue, value=0)
    out = LinearOut(L1, w2, B2)
    hidden = Tanh(L1.FF)
    CE = CrossEntropyWithSoftmax(labels, out, tag=Criteria)
    Err = ErrorPrediction(labels, out, tag=eval)
    OutputNodes = (out, hidden)
]
"""

READER = ('reader = [ readerType = CNTKTextFormatReader ; file = %s ; '
          'input = [ features = [ dim = 2 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ]')


def ndl_training_config(tmp_path, max_epochs=3):
    (tmp_path / 'macros.ndl').write_text(MACROS)
    (tmp_path / 'net.ndl').write_text(NETWORK)
    config = tmp_path / 'ndl.cntk'
    config.write_text('\n'.join([
        'command = Train:Test:Output',
        'deviceId = -1', 'precision = "float"',
        'modelPath = %s' % (tmp_path / 'Models' / 'ndl.dnn'),
        'ndlMacros = %s' % (tmp_path / 'macros.ndl'),
        'hiddenDim = 25', 'initScale = 1',  # the NDL files' $variables$
        'Train = [', '  action = "train"',
        '  NDLNetworkBuilder = [ networkDescription = %s ]' % (tmp_path / 'net.ndl'),
        '  SGD = [ epochSize = 0 ; minibatchSize = 25 ; learningRatesPerMB = 0.5 ; momentumPerMB = 0.9 ;'
        ' maxEpochs = %d ]' % max_epochs,
        '  ' + READER % os.path.join(DATA, 'SimpleDataTrain_cntk_text.txt'),
        ']',
        'Test = [ action = "test" ; ' + READER % os.path.join(DATA, 'SimpleDataTest_cntk_text.txt') + ' ]',
        'Output = [ action = "write" ; outputPath = %s ; ' % (tmp_path / 'out') +
        READER % os.path.join(DATA, 'SimpleDataTest_cntk_text.txt') + ' ]',
        '']))
    return config


def test_ndl_network_with_macros_trains_and_its_loss_falls(tmp_path):
    simple2d_config('Data')
    config = ndl_training_config(tmp_path)
    rc, log = run(['configFile=%s' % config], tmp_path)
    assert rc == 0, log[-3000:]
    losses = [float(v) for v in re.findall(r'Finished Epoch\[ *\d+ of 3\]: \[Training\] CE = ([\d.]+)', log)]
    assert len(losses) == 3, log[-3000:]
    assert losses[-1] < losses[0] and losses[0] < 0.69  # below chance after the first epoch
    errors = re.search(r'Final Results: Minibatch\[1-\d+\]: .*Err = ([\d.]+) \* 603', log)
    assert errors and float(errors.group(1)) < 0.1, log[-2000:]
    out = np.loadtxt(tmp_path / 'out.out')
    hidden = np.loadtxt(tmp_path / 'out.hidden')
    assert out.shape == (603, 2) and hidden.shape == (603, 25)
    assert np.all(np.abs(hidden) < 1)  # tanh of the macro's inner node L1.FF


def ndl_error(tmp_path, lines):
    config = tmp_path / 'bad.cntk'
    config.write_text('\n'.join(['command = W', 'W = [', '  action = "write"', '  outputPath = out',
                                 '  run = net', '  NDLNetworkBuilder = [ ]', '  net = ['] +
                                ['    ' + line for line in lines] + ['  ]', ']', '']))
    rc, log = run(['configFile=%s' % config], tmp_path)
    assert rc != 0
    return log


def test_ndl_errors_name_the_line(tmp_path):
    log = ndl_error(tmp_path, ['x = Input(2, tag=feature)', 'h = Sigmoidd(x)', 'OutputNodes = (h)'])
    assert "bad.cntk(9," in log and "undefined function or macro 'Sigmoidd'" in log, log
    log = ndl_error(tmp_path, ['x = Input(2, tag=feature)', 'h = Sigmoid(y)', 'OutputNodes = (h)'])
    assert "bad.cntk(9," in log and "undefined name 'y'" in log, log
    log = ndl_error(tmp_path, ['x = Input(2, tag=feature)', 'h = Plus(x)', 'OutputNodes = (h)'])
    assert "bad.cntk(9," in log and 'Plus takes 2 positional parameters, got 1' in log, log
    log = ndl_error(tmp_path, ['x = Input(2)', 'h = Sigmoid(x)', 'OutputNodes = (h)'])
    assert 'no feature nodes' in log, log
    log = ndl_error(tmp_path, ['x = Input(2, tag=feature)', 'h = Sigmoid(x.y)', 'OutputNodes = (h)'])
    assert "bad.cntk(9," in log and "'x' is not a macro instance" in log, log
    # An error found while the network is built names the NDL line it was written from.
    log = ndl_error(tmp_path, ['x = Input(2, tag=feature)', 'h = Sigmoid("text")', 'OutputNodes = (h)'])
    assert "bad.cntk(9," in log, log
    # A CNTK NDL function not implemented here says so.
    log = ndl_error(tmp_path, ['x = Input(2, tag=feature)', 'h = LookupTable(x)', 'OutputNodes = (h)'])
    assert "NDL function 'LookupTable' is not implemented yet" in log and 'bad.cntk(9' in log, log
