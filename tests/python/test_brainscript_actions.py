"""The `cntk` command's model actions: cv (cross-validation over the saved epoch models) and
edit (a BrainScript network saved as a model; MEL scripts), bnstat."""
import os
import re

import numpy as np
import pytest

from test_brainscript_cli import EXPECTED, criteria, parameters, run
from test_brainscript_ndl import DATA, READER, ndl_training_config, simple2d_config


def per_model_results(log):
    """model path -> {criterion: average} from cv's log, in the order the models were evaluated."""
    out = {}
    for m in re.finditer(r'Model (\S+) --> \n(?:.*\n)*?.*Final Results: Minibatch\[1-\d+\]: (.*)', log):
        out[m.group(1)] = criteria(m.group(2))
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
    # An unknown MEL function, and a missing node, say so with the script's line.
    mel.write_text('m1 = LoadModel("%s")\nFrobnicate(w, "w.txt")\n' % original)
    rc, log = run(['command=E', 'E=[action=edit;editPath=%s]' % mel], tmp_path)
    assert rc != 0 and "rename.mel(2): unknown MEL function 'Frobnicate'" in log, log
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


# x, y: inputs of 3; W: a 2x3 parameter (NumPy shape (3, 2)); z = W * x (x @ W in NumPy);
# roots s = Sigmoid(z) and d = Minus(x, y).
MEL_NETWORK = ("BrainScriptNetworkBuilder = [ x = Input (3) ; y = Input (3) ;"
               " W = Parameter (2, 3, init = 'uniform', initValueScale = 20) ; z = W * x ;"
               " s = Sigmoid (z) ; d = Minus (x, y) ; outputNodes = (s : d) ]")


def mel_model(tmp_path):
    """a.dnn (MEL_NETWORK) and a function running a MEL script (its text) over it."""
    config = tmp_path / 'mel.cntk'
    config.write_text('\n'.join([
        'command = Make:Edit', 'scale = 0.5',
        'Make = [ action = "edit" ; outputModelPath = %s ; %s ]' % (tmp_path / 'a.dnn', MEL_NETWORK),
        'Edit = [ action = "edit" ; editPath = %s ]' % (tmp_path / 'script.mel'), '']))
    rc, log = run(['configFile=%s' % config, 'command=Make'], tmp_path)
    assert rc == 0, log[-3000:]

    def edit(*lines):
        (tmp_path / 'script.mel').write_text('\n'.join(lines) + '\n')
        return run(['configFile=%s' % config, 'command=Edit'], tmp_path)
    return str(tmp_path / 'a.dnn'), edit


def refused(edit, model, statement):
    """The log of a MEL script that loads `model` and then runs `statement`, which fails."""
    rc, log = edit('m = LoadModel("%s")' % model, statement)
    assert rc != 0, log[-2000:]
    return log


def by_name(variables):
    return {(v.owner.name if v.is_output else v.name): v for v in variables}


def node_groups(path):
    """group -> the node names (without the uid part) a v1 model file records in it."""
    data = open(path, 'rb').read()
    out = {}
    for group in ('Feature', 'Label', 'Criterion', 'Eval', 'Output'):
        marker = ('B%sNodes' % group).encode('utf-16-le') + b'\0\0'
        at = data.rindex(marker) + len(marker)
        count = int.from_bytes(data[at:at + 8], 'little')
        at += 8
        names = []
        for _ in range(count):
            end = at
            while data[end:end + 2] != b'\0\0':
                end += 2
            names.append(data[at:end].decode('utf-16-le').split('__v2libname__')[-1])
            at = end + 2
        out[group.lower()] = names
    return out


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_mel_copy_subtree_and_set_inputs(tmp_path):
    import cntk as C
    model, edit = mel_model(tmp_path)
    rc, log = edit('m = LoadModel("%s")' % model,
                   'CopySubTree(z, m, c_)',          # c_z = c_W * c_x: a new input, a copy of W
                   'SetProperty(c_z, output, true)',  # the copy joins the model as a root
                   'SetInputs(d, y, x)',              # d = y - x
                   'SetNodeInputs(z, W, y)',          # CNTK's order: Times(W, y), so s = Sigmoid(y W)
                   'SaveModel(m, "%s")' % (tmp_path / 'b.dnn'))
    assert rc == 0, log[-3000:]
    before, after = C.load_model(model), C.load_model(str(tmp_path / 'b.dnn'))
    w = [p for p in before.parameters if p.name == 'W'][0].value
    params = {p.name: p.value for p in after.parameters}
    assert set(params) == {'W', 'c_W'}
    np.testing.assert_array_equal(params['c_W'], w)
    assert np.abs(w).max() > 0.01  # drawn, not zero
    args = by_name(after.arguments)
    assert set(args) == {'x', 'y', 'c_x'}
    rs = np.random.RandomState(2)
    x, y, cx = (rs.uniform(-2, 2, size=(5, 3)).astype(np.float32) for _ in range(3))
    outs = by_name(after.outputs)
    assert set(outs) == {'s', 'd', 'c_z'}
    got = after.eval({args['x']: x, args['y']: y, args['c_x']: cx}, outputs=list(outs.values()))
    got = {o.owner.name: got[o] for o in outs.values()}
    np.testing.assert_allclose(got['d'].reshape(5, 3), y - x, rtol=1e-6)
    np.testing.assert_allclose(got['s'].reshape(5, 2), sigmoid(y @ w), rtol=1e-5)
    np.testing.assert_allclose(got['c_z'].reshape(5, 2), cx @ w, rtol=1e-5, atol=1e-6)
    # The copy is a new parameter: the original keeps its value in the original model.
    np.testing.assert_array_equal([p for p in after.parameters if p.name == 'W'][0].value, w)
    # SetNodeInputs needs one node and as many inputs as it takes.
    log = refused(edit, model, 'SetInputs(d, y)')
    assert "script.mel(2): SetNodeInputs: 'd' (Minus) takes 2 inputs, 1 given" in log
    assert "script.mel(2): CopySubTree: no node named 'nothere'" in refused(edit, model, 'CopySubTree(nothere, m, c_)')
    assert "script.mel(2): MEL statement '(x)' names no function" in refused(edit, model, '(x)')


def test_mel_set_property_roles(tmp_path):
    import cntk as C
    model, edit = mel_model(tmp_path)
    groups = node_groups(model)
    assert sorted(groups['feature']) == ['x', 'y'] and sorted(groups['output']) == ['d', 's'], groups
    rc, log = edit('m = LoadModel("%s")' % model,
                   'SetProperty(y, feature, false)', 'SetProperty(y, label, true)',
                   'SetProperty(z, criterion, true)',  # an inner node: it becomes a root too
                   'SetProperty(s, eval, true)',       # CNTK's legacy name of evaluation
                   'SetProperty(d, output, false)',    # leaves the group, stays in the model
                   'SaveModel(m, "%s")' % (tmp_path / 'roles.dnn'))
    assert rc == 0, log[-3000:]
    groups = node_groups(tmp_path / 'roles.dnn')
    assert groups == {'feature': ['x'], 'label': ['y'], 'criterion': ['z'], 'eval': ['s'], 'output': ['s']}, groups
    after = C.load_model(str(tmp_path / 'roles.dnn'))
    outs = by_name(after.outputs)
    assert {'z', 's', 'd'} <= set(outs), list(outs)
    w = [p for p in after.parameters if p.name == 'W'][0].value
    z = C.combine([outs['z']])
    x = np.random.RandomState(3).uniform(-2, 2, size=(4, 3)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(z.eval({z.arguments[0]: x})).reshape(4, 2), x @ w, rtol=1e-5, atol=1e-6)
    # The groups stay with a loaded file (read back, renamed with the nodes) ...
    rc, log = edit('m = LoadModel("%s")' % (tmp_path / 'roles.dnn'), 'Rename(z, loss)',
                   'SaveModel(m, "%s")' % (tmp_path / 'renamed.dnn'))
    assert rc == 0, log[-3000:]
    assert node_groups(tmp_path / 'renamed.dnn')['criterion'] == ['loss']
    assert node_groups(tmp_path / 'renamed.dnn')['label'] == ['y']
    # ... and a node of the wrong kind is refused.
    log = refused(edit, model, 'SetProperty(z, feature, true)')
    assert "script.mel(2): SetProperty: 'z' cannot be a feature node: it is not an input" in log
    log = refused(edit, model, 'SetProperty(W, output, true)')
    assert "SetProperty: 'W' cannot be an output node: it is not a computed node" in log


SNIPPETS = """
# sections of NDL, as CNTK's snippet files hold them
tanhLayer = [
    features = Input(2, tag=feature)
    W = Parameter(3, 2, init=fixedValue, value=$scale$)
    h = Times(W, features)
    out = Tanh(h)
    OutputNodes = (out)
]
other = [
    features = Input(2, tag=feature)
    out = Sigmoid(features)
    OutputNodes = (out)
]
"""


def test_mel_load_ndl_snippet(tmp_path):
    import cntk as C
    model, edit = mel_model(tmp_path)
    (tmp_path / 'snippets.ndl').write_text(SNIPPETS)
    (tmp_path / 'bare.ndl').write_text('x = Input(2, tag=feature)\nr = Exp(x)\nOutputNodes = (r)\n')
    rc, log = edit('LoadNDLSnippet(snip, "%s", tanhLayer)' % (tmp_path / 'snippets.ndl'),
                   'SetProperty(h, output, true)',
                   'SaveModel(snip, "%s")' % (tmp_path / 'snip.dnn'),
                   'LoadNDLSnippet(bare, "%s")' % (tmp_path / 'bare.ndl'),
                   # the first model loaded stays the default until SetDefaultModel (CNTK's code;
                   # its messages say the newest is)
                   'SaveDefaultModel("%s")' % (tmp_path / 'first.dnn'),
                   'SetDefaultModel(bare)',
                   'SaveDefaultModel("%s")' % (tmp_path / 'bare.dnn'))
    assert rc == 0, log[-3000:]
    x = np.random.RandomState(4).uniform(-2, 2, size=(6, 2)).astype(np.float32)
    snip = C.load_model(str(tmp_path / 'snip.dnn'))
    outs = by_name(snip.outputs)
    assert set(outs) == {'out', 'h'}
    got = snip.eval({snip.arguments[0]: x}, outputs=[outs['out'], outs['h']])
    h = np.repeat((0.5 * x.sum(axis=1))[:, None], 3, axis=1)  # W = 0.5 everywhere ($scale$ of the config)
    np.testing.assert_allclose(np.asarray(got[outs['h']]).reshape(6, 3), h, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got[outs['out']]).reshape(6, 3), np.tanh(h), rtol=1e-5)
    assert node_groups(tmp_path / 'snip.dnn')['output'] == ['out', 'h']
    assert node_groups(tmp_path / 'first.dnn')['output'] == ['out', 'h']
    bare = C.load_model(str(tmp_path / 'bare.dnn'))
    np.testing.assert_allclose(np.asarray(bare.eval({bare.arguments[0]: x})).reshape(6, 2), np.exp(x), rtol=1e-5)
    rc, log = edit('LoadNDLSnippet(snip, "%s", missing)' % (tmp_path / 'snippets.ndl'))
    assert rc != 0 and "script.mel(1): LoadNDLSnippet: the NDL file '%s' has no section 'missing'" % (tmp_path / 'snippets.ndl') in log, log


def test_mel_names_as_cntk_reads_them_copy_inputs_and_subtree_properties(tmp_path):
    import cntk as C
    model, edit = mel_model(tmp_path)
    # MEL's names in any case, and as a prefix of at least half the name, tried in CNTK's order
    # ('LoadMod' is LoadModel); CopyInputs is CopyNodeInputs' second spelling.
    rc, log = edit('m = LOADMOD("%s")' % model,
                   'copy(d, e)',                    # e = Minus(x, y), a copy
                   'SetInputs(e, y, x)',            # e = y - x
                   'CopyInputs(e, d)',              # d reads what e reads: d = y - x
                   'SetPropertyForSub(s, computeGrad, false)',  # W (below s) is learned no more
                   'SaveMod(m, "%s")' % (tmp_path / 'b.dnn'))
    assert rc == 0, log[-3000:]
    before, after = C.load_model(model), C.load_model(str(tmp_path / 'b.dnn'))
    w = [p for p in before.parameters if p.name == 'W'][0].value
    assert after.parameters == () or list(after.parameters) == []
    assert [c.name for c in after.constants] == ['W']
    np.testing.assert_array_equal(after.constants[0].value, w)
    args, outs = by_name(after.arguments), by_name(after.outputs)
    rs = np.random.RandomState(5)
    x, y = (rs.uniform(-2, 2, size=(4, 3)).astype(np.float32) for _ in range(2))
    got = after.eval({args['x']: x, args['y']: y}, outputs=[outs['d'], outs['s']])
    np.testing.assert_allclose(np.asarray(got[outs['d']]).reshape(4, 3), y - x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got[outs['s']]).reshape(4, 2), sigmoid(x @ w), rtol=1e-5)
    # ReviseParameter: W takes its values from CNTK's text matrix (2 rows, 3 columns: W's
    # BrainScript shape [2 x 3]); z, not a parameter, is passed over with a warning.
    m = np.arange(6, dtype=np.float32).reshape(2, 3) / 10 - 0.2
    (tmp_path / 'w.txt').write_text('\n'.join(' '.join(str(v) for v in row) for row in m) + '\n')
    rc, log = edit('m = LoadModel("%s")' % model, 'ReviseParameter(W, "%s")' % (tmp_path / 'w.txt'),
                   'ReviseParameter(z, "%s")' % (tmp_path / 'w.txt'),
                   'SetProperty(W, freezeParameters, true)',  # W is learned no more
                   'SaveModel(m, "%s")' % (tmp_path / 'r.dnn'))
    assert rc == 0, log[-3000:]
    assert 'Revise node W using parameter file' in log and 'change the parameter of node (z)' in log
    revised = C.load_model(str(tmp_path / 'r.dnn'))
    assert [c.name for c in revised.constants] == ['W'] and not list(revised.parameters)
    np.testing.assert_allclose(revised.constants[0].value, m.T, rtol=1e-6)
    (tmp_path / 'bad.txt').write_text('1 2\n3 4\n')
    rc, log = edit('m = LoadModel("%s")' % model, 'ReviseParameter(W, "%s")' % (tmp_path / 'bad.txt'))
    assert rc != 0 and "script.mel(2): ReviseParameter: 'W' cannot be read from" in log and '[2 x 2]' in log, log
    log = refused(edit, model, 'SetProperty(s, freezeParameters, true)')
    assert 'SetProperty: s (' in log and 'cannot be frozen' in log
    # A prefix shorter than half the name, or of no function, is unknown.
    assert "script.mel(2): unknown MEL function 'Sav'" in refused(edit, model, 'Sav(m, "x.dnn")')
    log = refused(edit, model, 'SetPropertyForSubTree(s, feature, true)')
    assert "SetPropertyForSubTree: the property 'feature' is not one of" in log
    assert "script.mel(2): CopyNodeInputs: no node named 'nothere'" in refused(edit, model, 'CopyInputs(d, nothere)')


def test_mel_copy_values_between_models_and_create_model(tmp_path):
    import cntk as C
    model, edit = mel_model(tmp_path)
    config = tmp_path / 'other.cntk'
    config.write_text('command = Make\nMake = [ action = "edit" ; outputModelPath = %s ; %s ]\n'
                      % (tmp_path / 'other.dnn', MEL_NETWORK.replace('initValueScale = 20', 'initValueScale = 40')))
    rc, log = run(['configFile=%s' % config], tmp_path)
    assert rc == 0, log[-3000:]
    w_other = [p for p in C.load_model(str(tmp_path / 'other.dnn')).parameters if p.name == 'W'][0].value
    # copy=value: the default model's W takes the value of m2's W (another model); the network
    # is unchanged otherwise. `m = CreateModel()` names an empty model.
    rc, log = edit('m1 = LoadModel("%s")' % model, 'm2 = LoadModel("%s")' % (tmp_path / 'other.dnn'),
                   'empty = CreateModel()', 'SetDefaultModel(m1)',
                   'Copy(m2.W, W, copy=value)', 'SaveModel(m1, "%s")' % (tmp_path / 'b.dnn'))
    assert rc == 0, log[-3000:]
    w_model = [p for p in C.load_model(model).parameters if p.name == 'W'][0].value
    after = C.load_model(str(tmp_path / 'b.dnn'))
    assert not np.allclose(w_model, w_other)
    np.testing.assert_array_equal([p for p in after.parameters if p.name == 'W'][0].value, w_other)
    assert len(after.parameters) == 1 and set(by_name(after.outputs)) == {'s', 'd'}
    rc, log = edit('m1 = LoadModel("%s")' % model, 'Copy(W, W2, copy=value)', 'Copy(s, s2, copy=value)')
    assert rc != 0 and "script.mel(3): Copy with copy=value of a computed node ('s')" in log, log
    rc, log = edit('m = CreateModel()', 'SaveDefaultModel("%s")' % (tmp_path / 'e.dnn'))
    assert rc != 0 and "script.mel(2): the model 'm' has no nodes yet" in log, log
    rc, log = edit('m1 = LoadModel("%s")' % model, 'Copy(W, W2, copy=some)')
    assert rc != 0 and "Copy: copy=some is not one of all, value" in log, log


def dumped_nodes(text):
    """name -> operation of the nodes in a DumpNodeInfo text."""
    return dict(re.findall(r'^\s*(?:__v2libuid__\w+__v2libname__)?(\w+)=(\w+)', text, re.M))


def test_mel_dump_and_dump_node(tmp_path):
    model, edit = mel_model(tmp_path)
    rc, log = edit('m = LoadModel("%s")' % model,
                   'Dump(m, "%s")' % (tmp_path / 'meta.txt'),
                   'Dump(m, "%s", includeData=true)' % (tmp_path / 'full.txt'),
                   'DumpNode(W, "%s", includeData=true)' % (tmp_path / 'w.txt'),
                   'DumpNode(m.*, "%s")' % (tmp_path / 'all.txt'))
    assert rc == 0, log[-3000:]
    full, meta, w = ((tmp_path / n).read_text() for n in ('full.txt', 'meta.txt', 'w.txt'))
    values = parameters(full)['W']
    assert len(values) == 6 and parameters(w) == {'W': values}
    # Without includeData, CNTK's Dump writes each node's line and no values.
    assert 'W=LearnableParameter [2,3]' in meta and '####' not in meta and '####' in full
    assert dumped_nodes(w) == {'W': 'LearnableParameter'}
    assert dumped_nodes(meta) == {'W': 'LearnableParameter', 'x': 'InputValue', 'y': 'InputValue', 'z': 'Times',
                                  's': 'Sigmoid', 'd': 'Minus'}, meta
    assert (tmp_path / 'all.txt').read_text() == meta


def test_dump_node_action_options(tmp_path):
    model, edit = mel_model(tmp_path)
    full = (tmp_path / 'full.txt')
    rc, log = run(['command=D', 'D=[action=dumpNode;modelPath=%s;outputFile=%s]' % (model, full)], tmp_path)
    assert rc == 0, log[-3000:]
    values = parameters(full.read_text())['W']
    rc, log = run(['command=D', 'D=[action=dumpNode;modelPath=%s;nodeName=W]' % model], tmp_path)
    assert rc == 0, log[-3000:]
    one = open(model + '.W.txt').read()  # CNTK's default file: modelPath.nodeName.txt
    assert parameters(one) == {'W': values} and 'Sigmoid' not in one
    rc, log = run(['command=D', 'D=[action=dumpNode;modelPath=%s;nodeNameRegex=[sd];printValues=false;'
                   'outputFile=%s]' % (model, tmp_path / 're.txt')], tmp_path)
    assert rc == 0, log[-3000:]
    text = (tmp_path / 're.txt').read_text()
    assert dumped_nodes(text) == {'s': 'Sigmoid', 'd': 'Minus'}
    rc, log = run(['command=D', 'D=[action=dumpNode;modelPath=%s;nodeName=W;printMetadata=false;'
                   'outputFile=%s]' % (model, tmp_path / 'v.txt')], tmp_path)
    assert rc == 0, log[-3000:]
    assert [float(v) for v in (tmp_path / 'v.txt').read_text().split()] == values
    rc, log = run(['command=D', 'D=[action=dumpNode;modelPath=%s;nodeName=nothere;outputFile=%s]'
                   % (model, tmp_path / 'all.txt')], tmp_path)
    assert rc == 0 and "node name 'nothere' does not exist in the network. dumping all nodes instead." in log
    assert parameters((tmp_path / 'all.txt').read_text()) == {'W': values}
    rc, log = run(['command=D', 'D=[action=dumpNode;modelPath=%s;printValues=false;printMetadata=false]' % model],
                  tmp_path)
    assert rc != 0 and 'printValues and printMetadata are both false' in log, log


def test_mel_in_line_ndl(tmp_path):
    import cntk as C
    model, _ = mel_model(tmp_path)
    (tmp_path / 'macros.ndl').write_text('Layer(inp, k) {\n  h = Tanh(inp)\n  o = Scale(k, h)\n}\n')
    config = tmp_path / 'inline.cntk'
    config.write_text('command = Edit\nEdit = [ action = "edit" ; editPath = %s ; ndlMacros = %s ]\n'
                      % (tmp_path / 'inline.mel', tmp_path / 'macros.ndl'))

    def edit(*lines):
        (tmp_path / 'inline.mel').write_text('\n'.join(lines) + '\n')
        return run(['configFile=%s' % config], tmp_path)
    # Constants, NDL functions over the model's nodes, and a macro of ndlMacros whose nodes are
    # named by the statement (L.h, L.o); the new nodes join the model through SetNodeInput.
    rc, log = edit('m = LoadModel("%s")' % model,
                   'k = 3',
                   'c = Constant(k)',
                   'L = Layer(z, c)',              # L.o = 3 * tanh(z)
                   'SetNodeInput(s, 0, L.o)',      # s = Sigmoid(3 tanh(x W))
                   'e = Exp(d)',
                   'SetProperty(e, output, true)',  # e = exp(x - y), a new root
                   'n = [',
                   '  features = Input(2, tag=feature)',
                   '  out = Exp(features)',
                   '  OutputNodes = (out)',
                   ']',
                   'SaveModel(m, "%s")' % (tmp_path / 'b.dnn'),
                   'SaveModel(n, "%s")' % (tmp_path / 'n.dnn'))
    assert rc == 0, log[-3000:]
    before, after = C.load_model(model), C.load_model(str(tmp_path / 'b.dnn'))
    w = [p for p in before.parameters if p.name == 'W'][0].value
    args, outs = by_name(after.arguments), by_name(after.outputs)
    assert set(outs) == {'s', 'd', 'e'}
    rs = np.random.RandomState(7)
    x, y = (rs.uniform(-1, 1, size=(4, 3)).astype(np.float32) for _ in range(2))
    got = after.eval({args['x']: x, args['y']: y}, outputs=[outs['s'], outs['e']])
    np.testing.assert_allclose(np.asarray(got[outs['s']]).reshape(4, 2), sigmoid(3 * np.tanh(x @ w)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got[outs['e']]).reshape(4, 3), np.exp(x - y), rtol=1e-5)
    assert {f.name for f in after.find_all_with_name('L.o')} == {'L.o'}
    n = C.load_model(str(tmp_path / 'n.dnn'))
    np.testing.assert_allclose(np.asarray(n.eval({n.arguments[0]: x[:, :2]})).reshape(4, 2), np.exp(x[:, :2]),
                               rtol=1e-5)
    # A name neither the statement's NDL nor the model has, and in-line NDL before any model.
    log = refused(edit, model, 'q = Exp(nothere)')
    assert "inline.mel(2," in log and "undefined name 'nothere'" in log
    rc, log = edit('q = Exp(x)')
    assert rc != 0 and 'inline.mel(1): in-line NDL (\'q = Exp(x)\') needs a default model' in log, log
