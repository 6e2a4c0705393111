"""The `cntk` command's model actions: cv (cross-validation over the saved epoch models) and
edit (a BrainScript network saved as a model; MEL scripts)."""
import os
import re

import numpy as np
import pytest

from test_brainscript_cli import EXPECTED, parameters, run
from test_brainscript_ndl import DATA, READER, ndl_training_config, simple2d_config


def per_model_results(log):
    """model path -> {criterion: average} from cv's log, in the order the models were evaluated."""
    out = {}
    for m in re.finditer(r'Model (\S+) --> \n(?:.*\n)*?.*Final Results: Minibatch\[1-\d+\]: (.*)', log):
        out[m.group(1)] = {k: float(v) for k, v in re.findall(r'(\w+) = ([-\d.e+]+) \* \d+', m.group(2))}
    return out


def test_cv_evaluates_each_epoch_model_and_names_the_best(tmp_path):
    simple2d_config('Data')
    config = ndl_training_config(tmp_path, max_epochs=3)
    rc, log = run(['configFile=%s' % config, 'command=Train:Test'], tmp_path)
    assert rc == 0, log[-3000:]
    tested = {k: float(v) for k, v in re.findall(r'(\w+) = ([-\d.e+]+) \* 603',
                                                re.search(r'Final Results: (.*)', log).group(1))}
    model = str(tmp_path / 'Models' / 'ndl.dnn')
    # A network builder in sight changes nothing: cv evaluates the saved models (as CNTK's did).
    cv = ('CV=[action=cv;crossValidationInterval=1:1:5;evalNodeNames=CE:Err;minibatchSize=100;'
          'NDLNetworkBuilder=[networkDescription=%s];' % (tmp_path / 'net.ndl') +
          READER % os.path.join(DATA, 'SimpleDataTest_cntk_text.txt') + ']')
    rc, log = run(['configFile=%s' % config, 'command=CV', cv], tmp_path)
    assert rc == 0, log[-3000:]
    # Epochs 1 and 2 left modelPath.1 and .2; the last epoch's model is modelPath itself, which
    # stands in once for the first missing one.
    for n in (3, 4, 5):
        assert 'Model %s.%d does not exist.' % (model, n) in log
    results = per_model_results(log)
    assert list(results) == [model + '.1', model + '.2', model], log[-3000:]
    for name in ('CE', 'Err'):
        assert abs(results[model][name] - tested[name]) < 1e-6
    for k, name in enumerate(['CE', 'Err']):
        best = min(results, key=lambda m: results[m][name])
        m = re.search(r'Based on Err\[%d\]: Best model = (\S+) with min err ([-\d.e+]+)' % k, log)
        assert m, log[-2000:]
        assert m.group(1) == best or results[m.group(1)][name] == results[best][name]
        assert abs(float(m.group(2)) - results[best][name]) < 1e-7


def test_cv_without_models_fails_clearly(tmp_path):
    config = tmp_path / 'cv.cntk'
    config.write_text('command = CV\nmodelPath = %s\nCV = [ action = cv ; crossValidationInterval = 1:1:2 ]\n'
                      % (tmp_path / 'none.dnn'))
    rc, log = run(['configFile=%s' % config], tmp_path)
    assert rc != 0 and 'no model was evaluated' in log, log


def dump(model, tmp_path):
    out = tmp_path / 'dump.txt'
    rc, log = run(['command=D', 'D=[action=dumpNode;modelPath=%s;outputFile=%s]' % (model, out)], tmp_path)
    assert rc == 0, log[-3000:]
    return parameters(out.read_text())


def test_mel_script_renames_nodes_and_saves_the_model(tmp_path):
    original = os.path.join(EXPECTED, 'LR_reg.dnn')
    if not os.path.exists(original):
        pytest.skip('%s is absent' % original)
    mel = tmp_path / 'rename.mel'
    mel.write_text('\n'.join([
        '# a comment; the model path comes from the config',
        'm1 = LoadModel("$source$", format=cntk)',
        'SetDefaultModel(m1)',
        'Rename(w, weights); Rename(m1.b, bias)',
        'SaveModel(m1, "%s", format=cntk)' % (tmp_path / 'renamed.dnn'), '']))
    rc, log = run(['command=E', 'source=%s' % original, 'E=[action=edit;editPath=%s]' % mel], tmp_path)
    assert rc == 0, log[-3000:]
    before, after = dump(original, tmp_path), dump(tmp_path / 'renamed.dnn', tmp_path)
    assert set(before) == {'w', 'b'} and set(after) == {'weights', 'bias'}
    assert after['weights'] == before['w'] and after['bias'] == before['b']
    # SetProperty: a parameter no longer learned becomes a constant of the same value and name.
    mel.write_text('\n'.join([
        'm2 = LoadModel("%s")' % (tmp_path / 'renamed.dnn'),
        'SetProperty(m2.weights, computeGradient, false)',
        'Dump(m2, "%s")' % (tmp_path / 'm2.txt'),
        'SaveDefaultModel("%s")' % (tmp_path / 'frozen.dnn'), '']))
    rc, log = run(['command=E', 'E=[action=edit;editPath=%s]' % mel], tmp_path)
    assert rc == 0, log[-3000:]
    import cntk as C
    frozen = C.load_model(str(tmp_path / 'frozen.dnn'))
    assert [p.name for p in frozen.parameters] == ['bias']
    weights = [c for c in frozen.constants if c.name == 'weights']
    assert len(weights) == 1 and np.allclose(weights[0].value.ravel(), before['w'])
    assert 'weights=' in (tmp_path / 'm2.txt').read_text()
    # A MEL function not implemented here, and a missing node, say so with the script's line.
    mel.write_text('m1 = LoadModel("%s")\nCopySubTree(w, w2)\n' % original)
    rc, log = run(['command=E', 'E=[action=edit;editPath=%s]' % mel], tmp_path)
    assert rc != 0 and "rename.mel(2): the MEL function 'CopySubTree' is not implemented yet" in log, log
    mel.write_text('m1 = LoadModel("%s")\nRename(nothere, x)\n' % original)
    rc, log = run(['command=E', 'E=[action=edit;editPath=%s]' % mel], tmp_path)
    assert rc != 0 and "rename.mel(2): Rename: no node named 'nothere'" in log, log


def test_mel_set_node_input_rewires_a_node(tmp_path):
    config = tmp_path / 'edit.cntk'
    config.write_text('\n'.join([
        'command = Make:Edit',
        'Make = [ action = "edit" ; outputModelPath = %s' % (tmp_path / 'a.dnn'),
        '  BrainScriptNetworkBuilder = [ x = Input (3) ; a = Tanh (x) ; s = Sigmoid (a) ; t = Exp (x) ;'
        ' outputNodes = (s : t) ]',
        ']',
        'Edit = [ action = "edit" ; editPath = %s ]' % (tmp_path / 'rewire.mel'), '']))
    # The output `t` leaves the outputs; `a`, no longer read once `s` reads `x`, is gone.
    (tmp_path / 'rewire.mel').write_text('m = LoadModel("%s")\nSetNodeInput(s, 0, x)\nRemove(t, a)\nSaveModel(m, "%s")\n'
                                          % (tmp_path / 'a.dnn', tmp_path / 'b.dnn'))
    rc, log = run(['configFile=%s' % config], tmp_path)
    assert rc == 0, log[-3000:]
    import cntk as C
    x = np.random.RandomState(1).uniform(-3, 3, size=(4, 3)).astype(np.float32)
    before, after = C.load_model(str(tmp_path / 'a.dnn')), C.load_model(str(tmp_path / 'b.dnn'))
    assert len(before.outputs) == 2 and len(after.outputs) == 1
    s = [o for o in before.outputs if o.owner.name == 's'][0]
    np.testing.assert_allclose(before.eval({before.arguments[0]: x})[s], 1 / (1 + np.exp(-np.tanh(x))), rtol=1e-5)
    np.testing.assert_allclose(after.eval({after.arguments[0]: x}), 1 / (1 + np.exp(-x)), rtol=1e-5)
    # Copy, then wire the copy in above the original, as CNTK's MEL adds a layer:
    # s = Sigmoid(a2), a2 = Tanh(a), a = Tanh(x).
    (tmp_path / 'rewire.mel').write_text('\n'.join([
        'm = LoadModel("%s")' % (tmp_path / 'a.dnn'), 'Copy(a, a2)', 'SetNodeInput(s, 0, a2)',
        'SetNodeInput(a2, 0, a)', 'Remove(t)', 'SaveModel(m, "%s")' % (tmp_path / 'c.dnn'), '']))
    rc, log = run(['configFile=%s' % config, 'command=Edit'], tmp_path)
    assert rc == 0, log[-3000:]
    layered = C.load_model(str(tmp_path / 'c.dnn'))
    np.testing.assert_allclose(layered.eval({layered.arguments[0]: x}), 1 / (1 + np.exp(-np.tanh(np.tanh(x)))),
                               rtol=1e-5)
    (tmp_path / 'rewire.mel').write_text('m = LoadModel("%s")\nRemove(a)\n' % (tmp_path / 'a.dnn'))
    rc, log = run(['configFile=%s' % config, 'command=Edit'], tmp_path)
    assert rc != 0 and "rewire.mel(2): Remove: 'a' is still an input of another node" in log, log


def test_edit_saves_a_brainscript_network(tmp_path):
    out = tmp_path / 'edited.dnn'
    config = tmp_path / 'edit.cntk'
    config.write_text('\n'.join([
        'command = E',
        'E = [ action = "edit" ; outputModelPath = %s' % out,
        '  BrainScriptNetworkBuilder = [',
        '    x = Input (2)',
        "    w = Parameter (3, 2, init = 'fixedValue', value = 0.25)",
        '    z = w * x',
        '    outputNodes = (z)',
        '  ]', ']', '']))
    rc, log = run(['configFile=%s' % config], tmp_path)
    assert rc == 0, log[-3000:]
    assert "Model with " in log and "saved as '%s'" % out in log
    assert dump(out, tmp_path)['w'] == [0.25] * 6
    rc, log = run(['configFile=%s' % config], tmp_path)  # makeMode: the model exists
    assert rc == 0 and "'%s' exists, skipping." % out in log, log


BN_NETWORK = """BrainScriptNetworkBuilder = [
    features = Input (2) ; labels = Input (2)
    n = BatchNormalizationLayer {normalizationTimeConstant = 100} (features)
    z = DenseLayer {2} (n)
    ce = CrossEntropyWithSoftmax (labels, z)
    featureNodes = (features) ; labelNodes = (labels) ; criterionNodes = (ce) ; outputNodes = (z)
]"""


def test_bnstat_reestimates_the_running_statistics(tmp_path):
    simple2d_config('Data')
    train_file = os.path.join(DATA, 'SimpleDataTrain_cntk_text.txt')
    reader = READER % train_file
    config = tmp_path / 'bn.cntk'
    config.write_text('\n'.join([
        'command = Train:Stat', 'modelPath = %s' % (tmp_path / 'bn.dnn'),
        'Train = [ action = train', BN_NETWORK,
        '  SGD = [ epochSize = 1000 ; minibatchSize = 50 ; learningRatesPerSample = 0.01 ; maxEpochs = 1 ]',
        '  ' + reader, ']',
        'Stat = [ action = bnstat ; itersPerNode = 4 ; minibatchSize = 100',
        '  ' + reader.replace('] ] ]', '] ] ; randomize = false ]'), ']', '']))
    rc, log = run(['configFile=%s' % config], tmp_path)
    assert rc == 0, log[-3000:]
    assert 'Estimating Statistics --> ' in log
    # The statistics of the first 4 minibatches of 100 samples: their mean, and the average of
    # their unbiased variances.
    x = np.array([[float(v) for v in line.split('|features')[1].split()]
                  for line in open(train_file).readlines()[:400]])
    mean = x.mean(axis=0)
    var = np.mean([x[i:i + 100].var(axis=0, ddof=1) for i in range(0, 400, 100)], axis=0)
    import cntk as C
    model = C.load_model(str(tmp_path / 'bn.dnn.PBN'))
    stats = [c.value for c in model.constants if c.shape == (2,)]
    assert any(np.allclose(s, mean, atol=1e-5) for s in stats), (stats, mean)
    assert any(np.allclose(s, var, atol=1e-5) for s in stats), (stats, var)
    before = [c.value for c in C.load_model(str(tmp_path / 'bn.dnn')).constants if c.shape == (2,)]
    assert not any(np.allclose(s, mean, atol=1e-5) for s in before)
