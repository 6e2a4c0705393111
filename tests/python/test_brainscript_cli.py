"""The `cntk` command on CNTK's own BrainScript configs (../shared/cntk-brainscript).

The command is the installed one (`pip install .` puts it on PATH) or, in a developer tree,
build/dev/cntk.
"""
import glob
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
MATERIAL = os.path.join(HERE, '..', '..', '..', 'shared', 'cntk-brainscript')
TUTORIAL = os.path.join(MATERIAL, 'Tutorials', 'HelloWorld-LogisticRegression')
EXPECTED = os.path.join(MATERIAL, 'Tests', 'UnitTests', 'BrainScriptTests', 'Data', 'ComputationNetwork')


def cntk_command():
    dev = os.path.join(HERE, '..', '..', 'build', 'dev', 'cntk')
    if os.path.exists(dev):
        return dev
    found = shutil.which('cntk')
    if found is None:
        pytest.skip('the cntk command is not built (make dev) or installed (pip install .)')
    return found


def run(args, cwd, timeout=600):
    p = subprocess.run([cntk_command()] + args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stderr


def mpiexec(args, cwd, workers=2, logs=None, timeout=300):
    """Runs the cntk command with `args` under mpiexec (skipped without Open MPI), as root where
    the tests run so and with more workers than cores; with `logs`, each worker's output goes to
    logs/1/rank.N/stderr. The completed process."""
    if shutil.which('mpiexec') is None:
        pytest.skip('mpiexec is not installed (Debian openmpi-bin)')
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_rmaps_base_oversubscribe='1', OMPI_MCA_btl_vader_single_copy_mechanism='none')
    command = ['mpiexec', '-n', str(workers)] + (['--output-filename', str(logs)] if logs else [])
    return subprocess.run(command + [cntk_command()] + args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def worker_log(logs, rank):
    """What worker `rank` wrote to stderr under mpiexec(..., logs=logs)."""
    found = glob.glob(os.path.join(str(logs), '*', 'rank.%d' % rank, 'stderr'))
    assert len(found) == 1, found
    with open(found[0]) as f:
        return f.read()


@pytest.fixture
def tutorial(tmp_path):
    if not os.path.isdir(TUTORIAL):
        pytest.skip('%s is absent' % TUTORIAL)
    for f in os.listdir(TUTORIAL):
        if f.endswith('.txt'):
            shutil.copy(os.path.join(TUTORIAL, f), tmp_path)
    return tmp_path


def parameters(dump_text):
    """name -> values of the LearnableParameters in a DumpNodeInfo text (ours or CNTK's)."""
    out = {}
    lines = dump_text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'(?:__v2libuid__\w+__v2libname__)?(\w+)=LearnableParameter', line.strip())
        if not m:
            continue
        values = []
        for row in lines[i + 1:]:
            if row.strip().startswith('#'):
                break
            values += [float(x) for x in row.split()]
        out[m.group(1)] = values
    return out


def criteria(text):
    """name -> average of CNTK's "name = average * count" figures in `text`; names ending in 's'
    print as percentages ("errs = 2.922% * 10984"), returned as fractions."""
    return {k: float(v) / (100 if pct else 1)
            for k, v, pct in re.findall(r'(\w+) = ([-\d.e+]+)(%?) \* \d+', text)}


def final_results(log):
    m = re.search(r'Final Results: Minibatch\[1-\d+\]: (.*)', log)
    assert m, log[-3000:]
    return criteria(m.group(1))


def test_logistic_regression_tutorial_runs_unmodified(tutorial):
    rc, log = run(['configFile=' + os.path.join(TUTORIAL, 'lr_bs.cntk')], tutorial)
    assert rc == 0, log[-3000:]
    for line in ('# Train command (train action)', 'Starting Epoch 1: learning rate per sample = 0.040000',
                 'Finished Epoch[50 of 50]: [Training] lr = ', "SGD: Saving checkpoint model 'Models/LR_reg.dnn'",
                 'COMPLETED.'):
        assert line in log, line
    assert re.search(r' Epoch\[ 1 of 50\]-Minibatch\[   1-  10\]: lr = [\d.]+ \* 250; err = [\d.]+ \* 250; ', log)
    # The trained parameters match those CNTK's run of this tutorial wrote, within 5%.
    ours = parameters((tutorial / 'Models' / 'LR_reg.dnn.__AllNodes__.txt').read_text())
    with open(os.path.join(EXPECTED, 'LR_reg.dnn_Expected.txt')) as f:
        cntk = parameters(f.read())
    assert set(ours) == set(cntk) == {'w', 'b'}
    for name in cntk:
        for a, b in zip(ours[name], cntk[name]):
            assert abs(a - b) <= 0.05 * abs(b), (name, ours[name], cntk[name])
    results = final_results(log)
    assert results['err'] < 0.02 and results['lr'] < 0.06, results
    # The write action: one probability per test sample.
    probs = [float(x) for x in (tutorial / 'LR.txt.p').read_text().split()]
    assert len(probs) == 500 and all(0 <= p <= 1 for p in probs)


def test_three_classes_tutorial_runs_unmodified(tutorial):
    rc, log = run(['configFile=' + os.path.join(TUTORIAL, '3Classes_bs.cntk')], tutorial)
    assert rc == 0, log[-3000:]
    results = final_results(log)
    assert results['errs'] < 0.12, results
    assert 'perplexity = ' in log
    assert len((tutorial / 'MC.txt.z').read_text().splitlines()) == 500


def test_command_line_overrides_a_block_and_makemode_skips(tutorial):
    cfg = os.path.join(TUTORIAL, 'lr_bs.cntk')
    rc, log = run(['configFile=' + cfg, 'command=Train', 'Train=[SGD=[maxEpochs=2]]', 'timestamping=true'], tutorial)
    assert rc == 0, log[-3000:]
    assert 'Finished Epoch[ 2 of 2]' in log and 'Epoch[ 3' not in log
    assert re.search(r'^\d\d/\d\d/\d{4} \d\d:\d\d:\d\d: __COMPLETED__$', log, re.M)
    rc, log = run(['configFile=' + cfg, 'command=Train', 'Train=[SGD=[maxEpochs=2]]'], tutorial)
    assert rc == 0 and 'Starting Epoch' not in log  # makeMode: the model exists


def test_errors_name_their_place(tmp_path):
    bad = tmp_path / 'bad.cntk'
    bad.write_text('command = T\nT = [\n  action = "train"\n  x = [ 1\n]\n')
    rc, log = run(['configFile=' + str(bad)], tmp_path)
    assert rc != 0
    assert 'bad.cntk(2,5): configuration error: ' in log and "\n  T = [\n      ^" in log, log
    unknown = tmp_path / 'unknown.cntk'
    unknown.write_text('command = T\nT = [ action = "fly" ]\n')
    rc, log = run(['configFile=' + str(unknown)], tmp_path)
    assert rc != 0 and "unknown action 'fly' in command 'T'" in log
    net = tmp_path / 'net.cntk'
    net.write_text('command = T\nmodelPath = "m.dnn"\nT = [ action = "train"\n'
                   '  BrainScriptNetworkBuilder = [ x = Input (2) ; y = x + nothing ]\n'
                   '  SGD = [ maxEpochs = 1 ; learningRatesPerSample = 0.1 ]\n]\n')
    rc, log = run(['configFile=' + str(net)], tmp_path)
    assert rc != 0 and "evaluation error: unknown identifier 'nothing'" in log, log


# ------------------------------------------------------------------------------------------
# CNTK's end-to-end test Simple2d/OneHidden: its run-test command line, with its testcases.yml
# patterns applied to the log and to baseline.cpu.txt as CNTK's TestDriver.py applies them.

SIMPLE2D = os.path.join(MATERIAL, 'Tests', 'EndToEndTests', 'Simple2d')


def read_test_cases(path):
    """testCases of a testcases.yml: name -> list of patterns (the file's small YAML subset)."""
    cases, name, in_cases = {}, None, False
    with open(path) as f:
        for raw in f:
            line = raw.rstrip('\n')
            if line.startswith('testCases:'):
                in_cases = True
            elif in_cases and re.match(r'^  \S.*:$', line):
                name = line.strip()[:-1]
                cases[name] = []
            elif in_cases and name and line.strip().startswith('- '):
                p = line.strip()[2:].strip()
                if p.startswith('"') and p.endswith('"'):
                    p = p[1:-1]
                cases[name].append(p)
    return cases


class Pattern:
    """A testcases.yml pattern: literal text with {{integer}} / {{float[,tolerance=x[%]]}} slots."""

    kinds = {'integer': r'\s*-?[0-9]+', 'float': r'\s*-?([0-9]*\.[0-9]+|[0-9]+)(e[+-]?[0-9]+)?'}

    def __init__(self, text):
        self.slots = []
        regex, pos = '.*?', 0
        for m in re.finditer(r'{{(integer|float)(,tolerance=([-0-9.e]*)(%?))?}}', text):
            regex += re.escape(text[pos:m.start()])
            tolerance = float(m.group(3)) if m.group(3) else 0.0
            if m.group(4):
                tolerance = -tolerance / 100.0  # relative
            self.slots.append((m.group(1), tolerance))
            regex += '(?P<G%d>%s)' % (len(self.slots) - 1, self.kinds[m.group(1)])
            pos = m.end()
        self.regex = re.compile(regex + re.escape(text[pos:]))
        self.text = text

    def match(self, line):
        return self.regex.match(line) is not None

    def compare(self, expected, actual):
        # Every slot is compared (TestDriver.py itself stops after the first one).
        em, am = self.regex.match(expected), self.regex.match(actual)
        for i, (kind, tolerance) in enumerate(self.slots):
            e, a = em.group('G%d' % i).strip(), am.group('G%d' % i).strip()
            if kind == 'integer' and int(e) != int(a):
                return False
            if kind == 'float':
                eps = tolerance if tolerance > 0 else abs(float(e) * tolerance)
                if abs(float(e) - float(a)) > eps:
                    return False
        return True


def check_test_case(name, patterns, baseline_lines, log_lines):
    patterns = [Pattern(p) for p in patterns]
    expected = [l for l in baseline_lines if all(p.match(l) for p in patterns)]
    actual = [l for l in log_lines if all(p.match(l) for p in patterns)]
    assert expected, name
    assert len(actual) == len(expected), (name, len(actual), len(expected), actual[:3])
    for e, a in zip(expected, actual):
        failed = [p.text for p in patterns if not p.compare(e, a)]
        assert not failed, '%s\nbaseline: %s\noutput:   %s\nfailed: %s' % (name, e, a, failed)


def test_simple2d_one_hidden_matches_cntk_baseline(tmp_path):
    test_dir = os.path.join(SIMPLE2D, 'OneHidden')
    if not os.path.isdir(test_dir):
        pytest.skip('%s is absent' % test_dir)
    data = os.path.join(SIMPLE2D, 'Data')
    # run-test: cntkrun OneHidden.cntk "Simple_Demo_Train=[SGD=[maxEpochs=3]]", as run-test-common expands it
    rc, log = run(['configFile=' + os.path.join(SIMPLE2D, 'OneHidden.cntk'), 'currentDirectory=' + data,
                   'RunDir=' + str(tmp_path), 'DataDir=' + data, 'ConfigDir=' + SIMPLE2D,
                   'OutputDir=' + str(tmp_path), 'DeviceId=-1', 'timestamping=true',
                   'Simple_Demo_Train=[SGD=[maxEpochs=3]]'], tmp_path)
    assert rc == 0, log[-3000:]
    with open(os.path.join(test_dir, 'baseline.cpu.txt')) as f:
        baseline = f.read().splitlines()
    cases = read_test_cases(os.path.join(test_dir, 'testcases.yml'))
    assert len(cases) == 5
    for name, patterns in cases.items():
        check_test_case(name, patterns, baseline, log.splitlines())
    # The write action's category format: one mapped label per test sample, then the node name.
    lines = (tmp_path / 'SimpleOutput.PosteriorProb').read_text().splitlines()
    assert len(lines) == 603 and all(re.fullmatch(r'[01]\t// PosteriorProb', l) for l in lines)


@pytest.mark.parametrize('update', ['AdaGrad', 'RmsProp', 'FSAdaGrad'])
def test_grad_update_types_train_three_classes(tutorial, update):
    cfg = os.path.join(TUTORIAL, '3Classes_bs.cntk')
    rc, log = run(['configFile=' + cfg, 'command=Train:Test', 'Train=[SGD=[gradUpdateType=%s]]' % update], tutorial)
    assert rc == 0, log[-3000:]
    assert final_results(log)['errs'] < 0.12, log[-2000:]


def test_stderr_redirect_and_double_precision(tutorial):
    cfg = os.path.join(TUTORIAL, 'lr_bs.cntk')
    rc, out = run(['configFile=' + cfg, 'command=Train', 'Train=[SGD=[maxEpochs=1]]', 'precision=double',
                   'stderr=logs/run'], tutorial)
    assert rc == 0
    log = (tutorial / 'logs' / 'run').read_text()
    assert 'Finished Epoch[ 1 of 1]' in log and 'COMPLETED.' in log and 'Finished Epoch' not in out
    rc, out = run(['configFile=' + cfg, 'command=Train', 'precision=half'], tutorial)
    assert rc != 0 and 'invalid precision "half"' in out


def test_recurrent_network_trains_whole_sweeps(tmp_path):
    """An LSTM over CTF sequences; with epochSize 0 every epoch is exactly one sweep."""
    import random
    rng = random.Random(1)
    lines, samples = [], 0
    for s in range(200):
        total = 0
        for _ in range(rng.randint(2, 6)):
            bit = rng.randint(0, 1)
            total += bit
            lines.append('%d |x %d |y %d %d' % (s, bit, 1 - total % 2, total % 2))
            samples += 1
    (tmp_path / 'train.txt').write_text('\n'.join(lines) + '\n')
    reader = ('reader = [ readerType = "CNTKTextFormatReader" ; file = "train.txt" ; input = [ '
              'x = [ dim = 1 ; format = "dense" ] ; y = [ dim = 2 ; format = "dense" ] ] ]')
    (tmp_path / 'seq.cntk').write_text('''command = T
modelPath = "m/model.dnn"
T = [
  action = "train"
  BrainScriptNetworkBuilder = [
    x = Input (1) ; y = Input (2)
    z = DenseLayer {2} (RecurrentLSTMLayer {8} (x))
    ce = CrossEntropyWithSoftmax (y, z) ; err = ClassificationError (y, z)
    featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (ce) ; evaluationNodes = (err) ; outputNodes = (z)
  ]
  SGD = [ maxEpochs = 3 ; minibatchSize = 64 ; learningRatesPerSample = 0.01 ]
  %s
]
''' % reader)
    rc, log = run(['configFile=seq.cntk'], tmp_path)
    assert rc == 0, log[-3000:]
    finished = re.findall(r'Finished Epoch\[ \d of 3\]: \[Training\] ce = [\d.]+ \* (\d+); err = [\d.]+ \* (\d+); '
                          r'totalSamplesSeen = (\d+)', log)
    assert [tuple(map(int, f)) for f in finished] == [(samples, samples, samples * (i + 1)) for i in range(3)], log[-2000:]


# ------------------------------------------------------------------------------------------
# Simple2d/MultiGpu: the same network trained with parallelTrain (DataParallelSGD, 1-bit
# gradients from epoch 2), its run-test command line checked against baseline.cpu.txt as above.

def simple2d_args(config, override, tmp_path):
    data = os.path.join(SIMPLE2D, 'Data')
    return ['configFile=' + os.path.join(SIMPLE2D, config), 'currentDirectory=' + data, 'RunDir=' + str(tmp_path),
            'DataDir=' + data, 'ConfigDir=' + SIMPLE2D, 'OutputDir=' + str(tmp_path), 'DeviceId=-1',
            'timestamping=true', override]


def test_simple2d_multigpu_matches_cntk_baseline(tmp_path):
    test_dir = os.path.join(SIMPLE2D, 'MultiGpu')
    if not os.path.isdir(test_dir):
        pytest.skip('%s is absent' % test_dir)
    # run-test: cntkrun Multigpu.cntk "Multigpu_Demo_Train=[SGD=[maxEpochs=3]]" (one process)
    rc, log = run(simple2d_args('Multigpu.cntk', 'Multigpu_Demo_Train=[SGD=[maxEpochs=3]]', tmp_path), tmp_path)
    assert rc == 0, log[-3000:]
    with open(os.path.join(test_dir, 'baseline.cpu.txt')) as f:
        baseline = f.read().splitlines()
    cases = read_test_cases(os.path.join(test_dir, 'testcases.yml'))
    assert len(cases) == 5
    for name, patterns in cases.items():
        check_test_case(name, patterns, baseline, log.splitlines())
    assert log.count('Starting minibatch loop, DataParallelSGD training (myRank = 0, numNodes = 1, '
                     'numGradientBits = 1), distributed reading is ENABLED.') == 2, log[-3000:]
    assert 'Initializing dataParallelSGD for 1-bit quantization.' in log


def test_simple2d_multigpu_under_mpiexec(tmp_path):
    """Two workers: both train (each on its part of every minibatch from epoch 2, with the
    figures summed over both), the loss falls, and both report the same test results. Randomized
    data is partitioned by chunks (CNTK's rule), so the file is read in chunks of 32 KB
    (CNTK's chunkSizeInBytes) to give both workers data; the profiler shows each one's work."""
    if not os.path.isdir(os.path.join(SIMPLE2D, 'MultiGpu')):
        pytest.skip('Simple2d is absent')
    logs = tmp_path / 'logs'
    p = mpiexec(simple2d_args('Multigpu.cntk', 'Multigpu_Demo_Train=[SGD=[maxEpochs=3];reader=[chunkSizeInBytes=32768]]',
                              tmp_path) + ['profilerEnabled=true', 'profilerDirectory=' + str(tmp_path / 'prof')],
                tmp_path, logs=logs, timeout=600)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    forward = []
    for rank in (0, 1):  # epochs 2 and 3 (800 minibatches) are profiled: each worker had data in most of them
        summary = glob.glob(str(tmp_path / 'prof' / ('*_summary_%d.txt' % rank)))
        assert len(summary) == 1, summary
        with open(summary[0]) as f:
            m = re.search(r'^forward\s+(?:[\d.]+\s+){4}(\d+)\s', f.read(), re.M)
        forward.append(int(m.group(1)))
    assert all(400 <= n <= 800 for n in forward), forward
    for rank in (0, 1):
        log = worker_log(logs, rank)
        assert ('DataParallelSGD training (myRank = %d, numNodes = 2, numGradientBits = 1), '
                'distributed reading is ENABLED.' % rank) in log, log[-3000:]
        losses = [float(x) for x in re.findall(r'Finished Epoch\[ \d of 3\]: \[Training\] '
                                                r'CrossEntropyWithSoftmax = ([\d.]+) \* 10000;', log)]
        assert len(losses) == 3 and losses[2] < losses[1] < losses[0] and losses[2] < 0.25, losses
        results = final_results(log)
        assert results['EvalClassificationError'] < 0.1, results
        assert re.search(r'Final Results: Minibatch\[1-\d+\]: .*\* 603;', log), log[-2000:]
        assert '__COMPLETED__' in log


WRITE_CONFIG = '''command = T:W
modelPath = "m.dnn"
T = [
  action = "train"
  BrainScriptNetworkBuilder = [
    x = Input {(2:2)} ; y = Input {1}
    w = ParameterTensor {1, initValue = 0}
    z = ReduceSum (x) .* w
    d = PastValue ((2:2), x)  # a sequence op: x keeps its sequence axis
    crit = SquareError (y, z)
    featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (crit) ; outputNodes = (z : d)
  ]
  SGD = [ maxEpochs = 1 ; minibatchSize = 16 ; learningRatesPerSample = 0 ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "data.txt" ; randomize = false
             input = [ x = [ dim = 4 ; format = "dense" ] ; y = [ dim = 1 ; format = "dense" ] ] ]
]
W = [
  action = "write" ; outputNodeNames = x ; outputPath = "out"
  format = [ %s ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "data.txt" ; randomize = false
             input = [ x = [ dim = 4 ; format = "dense" ] ; y = [ dim = 1 ; format = "dense" ] ] ]
]
'''


def write_with_format(tmp_path, fmt):
    # two sequences: 0 of three steps, 1 of two
    rows = [(0, [1, 0, 2, 0]), (0, [0, 3, 0, 0]), (0, [4, 5, 6, 7]), (1, [0, 0, 0, 1]), (1, [2, 0, 0, 0])]
    (tmp_path / 'data.txt').write_text(''.join('%d |x %s |y 0\n' % (s, ' '.join(map(str, v))) for s, v in rows))
    (tmp_path / 'w.cntk').write_text(WRITE_CONFIG % fmt)
    rc, log = run(['configFile=w.cntk'], tmp_path)
    return rc, log, (tmp_path / 'out.x').read_text() if rc == 0 else None


def test_write_format_transposed_sparse_and_separators(tmp_path):
    # CNTK's default: one line per step, the sequence epilogue "\n"; sequences within a minibatch
    # are apart by the sequence separator; precisionFormat applies to every value.
    rc, log, out = write_with_format(tmp_path, 'precisionFormat = ".1" ; sequenceSeparator = "--\\n" ; '
                                               'sequencePrologue = "%s:"')
    assert rc == 0, log[-3000:]
    assert out == ('x:1.0 0.0 2.0 0.0\n0.0 3.0 0.0 0.0\n4.0 5.0 6.0 7.0\n--\n'
                   'x:0.0 0.0 0.0 1.0\n2.0 0.0 0.0 0.0\n'), out
    # transpose = false: one line per element of the sample (its tensor index first), the steps across.
    rc, log, out = write_with_format(tmp_path, 'transpose = false ; precisionFormat = ".0"')
    assert rc == 0, log[-3000:]
    assert out.split('\n')[:4] == ['[0,0]\t1 0 4', '[1,0]\t0 3 5', '[0,1]\t2 0 6', '[1,1]\t0 0 7'], out
    # sparse: the non-zero values with their coordinates (and step); 1s print as their place only.
    rc, log, out = write_with_format(tmp_path, 'type = "sparse"')
    assert rc == 0, log[-3000:]
    first = out.split('\n')[:6]
    assert first[:2] == ['[0,0;0]', '2.000000[0,1;0]'], out
    # A precisionFormat that is not a printf width/precision is refused, not passed to printf.
    rc, log, out = write_with_format(tmp_path, 'precisionFormat = "s%s%n"')
    assert rc != 0 and "precisionFormat 's%s%n' is not a printf width/precision" in log, log[-2000:]


def test_frame_network_on_sequence_data_and_reshape_saved_as_v1(tmp_path):
    """A network without sequence operations reads sequence data frame by frame (CNTK's frame
    mode); its reshapes (ReduceSum over a tensor, FlattenDimensions) save as CNTK's v1 Reshape
    nodes and load back."""
    rows = [(0, [1, 0, 2, 0]), (0, [0, 3, 0, 0]), (0, [4, 5, 6, 7]), (1, [0, 0, 0, 1]), (1, [2, 0, 0, 0])]
    (tmp_path / 'data.txt').write_text(''.join('%d |x %s |y 0\n' % (s, ' '.join(map(str, v))) for s, v in rows))
    config = (WRITE_CONFIG % 'precisionFormat = ".1"').replace(
        '    d = PastValue ((2:2), x)  # a sequence op: x keeps its sequence axis\n',
        '    f = FlattenDimensions (x, 1, 2) .* ParameterTensor {4, initValue = 2}\n').replace(
        'outputNodes = (z : d)', 'outputNodes = (z : f)').replace('initValue = 0}', 'initValue = 1}')
    (tmp_path / 'w.cntk').write_text(config)
    rc, log = run(['configFile=w.cntk'], tmp_path)
    assert rc == 0, log[-3000:]
    x = np.array([v for _, v in rows], dtype=np.float32)
    want = float(np.mean(x.sum(axis=1) ** 2))  # (sum(x) * 1 - 0)^2 per frame, lr 0
    got = re.search(r'Finished Epoch\[ 1 of 1\]: \[Training\] crit = ([\d.]+) \* (\d+);', log)
    assert got and int(got.group(2)) == 5 and abs(float(got.group(1)) - want) < 1e-4, log[-2000:]
    import cntk as C
    model = C.load_model(str(tmp_path / 'm.dnn'))
    outs = {o.owner.name: o for o in model.outputs}
    arg = [a for a in model.arguments if a.name == 'x'][0]
    xs = x.reshape(5, 2, 2)  # BrainScript's (2:2) is NumPy's (2, 2) read fastest-last
    got = model.eval({arg: xs}, outputs=[outs['z'], outs['f']])
    np.testing.assert_allclose(np.asarray(got[outs['z']]).reshape(5), x.sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got[outs['f']]).reshape(5, 4), 2 * x, rtol=1e-6)


def test_stderr_log_per_worker_under_mpiexec(tmp_path):
    """stderr= under parallel training: the first worker writes the named file, the others
    the name with ".rankN"; with timestamping, CNTK's cluster form <stderr>_<commands>.logrankN."""
    from test_brainscript_sgd import config, write_data
    write_data(tmp_path / 'data.txt')
    (tmp_path / 'sgd.cntk').write_text(config(
        'maxEpochs = 1 ; minibatchSize = 10 ; learningRatesPerSample = 0.01 ; '
        'ParallelTrain = [ parallelizationMethod = DataParallelSGD ; DataParallelSGD = [ gradientBits = 32 ] ]',
        extra='parallelTrain = true'))
    for extra, names in ((['stderr=out/log'], ['log', 'log.rank1']),
                         (['stderr=out/ts', 'timestamping=true'], ['ts_T.logrank0', 'ts_T.logrank1'])):
        p = mpiexec(['configFile=sgd.cntk', 'makeMode=false'] + extra, tmp_path)
        assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
        for rank, name in enumerate(names):
            log = (tmp_path / 'out' / name).read_text()
            assert 'DataParallelSGD training (myRank = %d, numNodes = 2' % rank in log, log[-2000:]
