"""The `cntk` command's SGD block: update types and schedules against NumPy models of CNTK's
updates, resuming from checkpoints, parallel training, and the profiler keys."""
import os
import re

import numpy as np
import pytest

from test_brainscript_cli import mpiexec, run, worker_log

HERE = os.path.dirname(os.path.abspath(__file__))

# y = 3 x0 - 2 x1 + 0.5 + noise, 40 samples.
_rng = np.random.RandomState(7)
X = _rng.uniform(-1, 1, size=(40, 2))
Y = X @ np.array([3.0, -2.0]) + 0.5 + 0.01 * _rng.randn(40)


def write_data(path):
    path.write_text(''.join('|x %.17g %.17g |y %.17g\n' % (a, b, y) for (a, b), y in zip(X, Y)))


def config(sgd, randomize=False, extra=''):
    return '''command = T
modelPath = "m/model.dnn"
%s
T = [
  action = "train"
  BrainScriptNetworkBuilder = [
    x = Input (2) ; y = Input (1)
    W = ParameterTensor {(1:2), initValue = 0.1}
    b = ParameterTensor {1, initValue = 0}
    z = W * x + b
    se = SquareError (y, z)
    featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (se) ; outputNodes = (z)
  ]
  SGD = [ %s ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "data.txt" ; randomize = %s
             input = [ x = [ dim = 2 ; format = "dense" ] ; y = [ dim = 1 ; format = "dense" ] ] ]
]
''' % (extra, sgd, 'true' if randomize else 'false')


def train(tmp_path, sgd, args=(), **kw):
    write_data(tmp_path / 'data.txt')
    (tmp_path / 'sgd.cntk').write_text(config(sgd, **kw))
    rc, log = run(['configFile=sgd.cntk'] + list(args), tmp_path)
    return rc, log


def trained(path):
    import cntk as C
    model = C.load_model(str(path))
    params = {p.name: p.value for p in model.parameters}
    return params['W'].reshape(-1), params['b'].reshape(-1)


def gradients(w, b, x, y):
    """Gradients of sum((y - z)^2), summed over the minibatch, as the Trainer hands them over."""
    r = 2 * (x @ w + b - y)
    return x.T @ r, np.array([r.sum()])


def minibatches(epochs, mb):
    for epoch in range(epochs):
        for i in range(0, len(X), mb):
            yield epoch, X[i:i + mb], Y[i:i + mb]


def test_momentum_per_mb_changes_per_epoch(tmp_path):
    # CNTK's unit-gain momentum SGD: v = m v + (1 - m) lr g; w -= v, with the momentum of each epoch.
    rc, log = train(tmp_path, 'maxEpochs = 3 ; minibatchSize = 10 ; learningRatesPerSample = 0.01:0.005 ; '
                              'momentumPerMB = 0.9*2:0.5')
    assert rc == 0, log[-3000:]
    effective = re.findall(r'Starting Epoch \d: learning rate per sample = ([\d.]+)  effective momentum = ([\d.]+)', log)
    assert effective == [('0.010000', '0.900000'), ('0.005000', '0.900000'), ('0.005000', '0.500000')], effective
    w, b = np.full(2, 0.1), np.zeros(1)
    vw, vb = np.zeros(2), np.zeros(1)
    for epoch, x, y in minibatches(3, 10):
        lr, m = [0.01, 0.005, 0.005][epoch], [0.9, 0.9, 0.5][epoch]
        gw, gb = gradients(w, b, x, y)
        vw, vb = m * vw + (1 - m) * lr * gw, m * vb + (1 - m) * lr * gb
        w, b = w - vw, b - vb
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)


def test_momentum_as_time_constant_array(tmp_path):
    rc, log = train(tmp_path, 'maxEpochs = 2 ; minibatchSize = 10 ; learningRatesPerSample = 0.01 ; '
                              'momentumAsTimeConstant = 100:0')
    assert rc == 0, log[-3000:]
    constants = re.findall(r'momentum as time constant = ([\d.]+) samples', log)
    assert constants == ['100.0', '0.0'], constants
    w, b = np.full(2, 0.1), np.zeros(1)
    vw, vb = np.zeros(2), np.zeros(1)
    for epoch, x, y in minibatches(2, 10):
        m = np.exp(-10 / 100.0) if epoch == 0 else 0.0
        gw, gb = gradients(w, b, x, y)
        vw, vb = m * vw + (1 - m) * 0.01 * gw, m * vb + (1 - m) * 0.01 * gb
        w, b = w - vw, b - vb
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)


def test_adam_with_cntk_keys(tmp_path):
    # gradUpdateType = Adam with adam_meanMomentum / adam_varMomentum / adam_epsilon, per minibatch
    # as CNTK's BrainScript SGD applied them, and a per-sample learning rate.
    rc, log = train(tmp_path, 'maxEpochs = 2 ; minibatchSize = 10 ; learningRatesPerSample = 0.05 ; '
                              'gradUpdateType = Adam ; adam_meanMomentum = 0.8 ; adam_varMomentum = 0.99 ; '
                              'adam_epsilon = 1e-6')
    assert rc == 0, log[-3000:]
    b1, b2, eps, lr = 0.8, 0.99, 1e-6, 0.05
    w, b = np.full(2, 0.1), np.zeros(1)
    state = [(np.zeros(2), np.zeros(2)), (np.zeros(1), np.zeros(1))]
    for t, (_, x, y) in enumerate(minibatches(2, 10), start=1):
        grads = gradients(w, b, x, y)
        params = [w, b]
        for i, g in enumerate(grads):
            m, v = state[i]
            v = b2 * v + (1 - b2) * g * g
            m = b1 * m + (1 - b1) * g
            state[i] = (m, v)
            params[i] = params[i] - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
        w, b = params
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)
    assert abs(ours_w[0] - 0.1) > 0.05  # it trained


def test_resume_from_checkpoint_continues_as_one_run(tmp_path):
    """makeMode: a run whose last epoch's files are gone resumes from modelPath.N and its .ckp
    (learner state, reader position, sample count) and ends where an uninterrupted run ends."""
    sgd = ('maxEpochs = 3 ; minibatchSize = 8 ; learningRatesPerSample = 0.02 ; gradUpdateType = Adam ; '
           'keepCheckPointFiles = true')
    whole, resumed = tmp_path / 'whole', tmp_path / 'resumed'
    whole.mkdir(), resumed.mkdir()
    rc, log = train(whole, sgd, randomize=True)
    assert rc == 0, log[-3000:]
    rc, log = train(resumed, sgd, randomize=True)
    assert rc == 0, log[-3000:]
    models = resumed / 'm'
    for name in ('model.dnn.1', 'model.dnn.1.ckp', 'model.dnn.2', 'model.dnn.2.ckp', 'model.dnn', 'model.dnn.ckp'):
        assert (models / name).exists(), name
    os.remove(models / 'model.dnn')
    os.remove(models / 'model.dnn.ckp')
    rc, log = run(['configFile=sgd.cntk'], resumed)
    assert rc == 0, log[-3000:]
    assert "Starting from checkpoint. Loading network from 'm/model.dnn.2'." in log, log[-3000:]
    assert 'Starting Epoch 3' in log and 'Starting Epoch 2' not in log
    assert re.search(r'Finished Epoch\[ 3 of 3\]: .* totalSamplesSeen = 120;', log), log[-2000:]
    for a, b in zip(trained(whole / 'm' / 'model.dnn'), trained(models / 'model.dnn')):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)

    # Without the checkpoint file the model is resumed and the learner starts afresh, as in CNTK.
    os.remove(models / 'model.dnn')
    os.remove(models / 'model.dnn.ckp')
    os.remove(models / 'model.dnn.2.ckp')
    rc, log = run(['configFile=sgd.cntk'], resumed)
    assert rc == 0, log[-3000:]
    assert 'Warning: Checkpoint file is missing.' in log and 'Starting Epoch 3' in log


def test_checkpoint_files_are_kept_as_cntk_keeps_them(tmp_path):
    rc, log = train(tmp_path, 'maxEpochs = 3 ; minibatchSize = 10 ; learningRatesPerSample = 0.01')
    assert rc == 0, log[-3000:]
    names = sorted(os.listdir(tmp_path / 'm'))
    # every epoch's model stays; only the last epoch's checkpoint does
    assert names == ['model.dnn', 'model.dnn.1', 'model.dnn.2', 'model.dnn.ckp'], names


def test_profiler_keys_write_a_summary(tmp_path):
    rc, log = train(tmp_path, 'maxEpochs = 2 ; minibatchSize = 10 ; learningRatesPerSample = 0.01',
                    extra='profilerEnabled = true\nprofilerBufferSize = 1000000\nprofilerSyncGpu = false\n'
                          'profilerDirectory = "prof"')
    assert rc == 0, log[-3000:]
    files = os.listdir(tmp_path / 'prof')
    summaries = [f for f in files if re.search(r'_summary_0\.txt$', f)]
    details = [f for f in files if re.search(r'_detail_0\.json$', f)]
    assert len(summaries) == 1 and len(details) == 1, files
    summary = (tmp_path / 'prof' / summaries[0]).read_text()
    # the first epoch is not profiled (CNTK's rule): the second's 4 minibatches are
    m = re.search(r'^minibatch\s+(?:[\d.]+\s+){4}(\d+)\s', summary, re.M)
    assert m and int(m.group(1)) == 4, summary


def test_sgd_errors_name_the_key(tmp_path):
    rc, log = train(tmp_path, 'maxEpochs = 1 ; learningRatesPerSample = 0.01 ; gradUpdateType = Bogus')
    assert rc != 0 and "gradUpdateType must be None, AdaGrad, RmsProp, FSAdaGrad or Adam, not 'Bogus'" in log, log
    rc, log = train(tmp_path, 'maxEpochs = 1 ; learningRatesPerSample = 0.01 ; momentumPerMB = 0.9 ; '
                              'momentumAsTimeConstant = 10')
    assert rc != 0 and 'give one of momentumPerSample, momentumPerMB and momentumAsTimeConstant' in log, log
    rc, log = train(tmp_path, 'maxEpochs = 1 ; learningRatesPerSample = 0.01 ; '
                              'ParallelTrain = [ parallelizationMethod = DataParallelASGD ]',
                    extra='parallelTrain = true')
    assert rc != 0 and "parallelizationMethod 'DataParallelASGD' is not implemented yet" in log, log
    # A ParallelTrain block without the top-level switch is ignored, as CNTK did.
    rc, log = train(tmp_path, 'maxEpochs = 1 ; learningRatesPerSample = 0.01 ; '
                              'ParallelTrain = [ parallelizationMethod = ModelAveragingSGD ]')
    assert rc == 0 and 'parallelTrain option is not enabled. ParallelTrain config will be ignored.' in log, log


@pytest.mark.parametrize('distributed_reading', ['true', 'false'])
def test_data_parallel_training_under_mpiexec_equals_one_process(tmp_path, distributed_reading):
    """Two workers with DataParallelSGD (exact sums), reading their parts of each minibatch
    (distributedMBReading) or each keeping its share of the whole minibatch (CNTK's decimation),
    train on the same global minibatches as one process would: the model is the NumPy model's.
    syncPerfStats reports the exchange's traffic."""
    write_data(tmp_path / 'data.txt')
    (tmp_path / 'sgd.cntk').write_text(config(
        'maxEpochs = 2 ; minibatchSize = 10 ; learningRatesPerSample = 0.01 ; momentumPerMB = 0.9 ; '
        'ParallelTrain = [ parallelizationMethod = DataParallelSGD ; distributedMBReading = %s ; '
        'syncPerfStats = 2 ; DataParallelSGD = [ gradientBits = 32 ] ]' % distributed_reading,
        extra='parallelTrain = true'))
    p = mpiexec(['configFile=sgd.cntk'], tmp_path)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log[-4000:]
    assert 'numNodes = 2, numGradientBits = 32' in log
    traffic = [int(b) for b in re.findall(r'Gradient aggregation: (\d+) bytes', log)]
    assert traffic and all(b > 0 for b in traffic), log[-3000:]
    w, b = np.full(2, 0.1), np.zeros(1)
    vw, vb = np.zeros(2), np.zeros(1)
    for _, x, y in minibatches(2, 10):
        gw, gb = gradients(w, b, x, y)
        vw, vb = 0.9 * vw + 0.1 * 0.01 * gw, 0.9 * vb + 0.1 * 0.01 * gb
        w, b = w - vw, b - vb
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)


def test_block_momentum_under_mpiexec(tmp_path):
    """BlockMomentumSGD: each worker trains its share of every epoch, the models are merged every
    blockSize samples, and the epoch figures are summed over the workers."""
    write_data(tmp_path / 'data.txt')
    (tmp_path / 'sgd.cntk').write_text(config(
        'maxEpochs = 4 ; minibatchSize = 10 ; learningRatesPerSample = 0.02 ; momentumPerMB = 0 ; '
        'ParallelTrain = [ parallelizationMethod = BlockMomentumSGD ; '
        'BlockMomentumSGD = [ blockSize = 20 ; blockMomentumAsTimeConstant = 40 ] ]', extra='parallelTrain = true'))
    p = mpiexec(['configFile=sgd.cntk'], tmp_path, logs=tmp_path / 'logs')
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    per_rank = []
    for rank in (0, 1):
        log = worker_log(tmp_path / 'logs', rank)
        assert 'BlockMomentumSGD training (myRank = %d, numNodes = 2, blockSize = 20)' % rank in log, log[-3000:]
        finished = re.findall(r'Finished Epoch\[ \d of 4\]: \[Training\] se = ([\d.]+) \* (\d+);', log)
        assert [int(n) for _, n in finished] == [40] * 4, log[-3000:]
        per_rank.append([float(v) for v, _ in finished])
    losses = per_rank[0]
    assert per_rank[0] == per_rank[1] and losses[3] < losses[0] / 4, per_rank
    w, b = trained(tmp_path / 'm' / 'model.dnn')
    assert np.abs(w - [3.0, -2.0]).max() < 1.0, w


def test_data_parallel_resume_under_mpiexec(tmp_path):
    """Two workers resume from modelPath.N and its checkpoint (each worker's reader position) and
    end where the uninterrupted two-worker run ends."""
    sgd = ('maxEpochs = 3 ; minibatchSize = 8 ; learningRatesPerSample = 0.02 ; gradUpdateType = Adam ; '
           'keepCheckPointFiles = true ; ParallelTrain = [ parallelizationMethod = DataParallelSGD ; '
           'DataParallelSGD = [ gradientBits = 32 ] ]')

    def mpirun(work):
        p = mpiexec(['configFile=sgd.cntk'], work)
        assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
        return p.stdout + p.stderr

    runs = []
    for name in ('whole', 'resumed'):
        work = tmp_path / name
        work.mkdir()
        write_data(work / 'data.txt')
        (work / 'sgd.cntk').write_text(config(sgd, randomize=False, extra='parallelTrain = true'))
        mpirun(work)
        runs.append(work)
    models = runs[1] / 'm'
    os.remove(models / 'model.dnn')
    os.remove(models / 'model.dnn.ckp')
    log = mpirun(runs[1])
    assert log.count("Starting from checkpoint. Loading network from 'm/model.dnn.2'.") == 2, log[-3000:]
    assert 'Starting Epoch 2' not in log
    for a, b in zip(trained(runs[0] / 'm' / 'model.dnn'), trained(models / 'model.dnn')):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def test_model_averaging_under_mpiexec(tmp_path):
    """ModelAveragingSGD: each worker steps on its half of every 20 samples, then the models are
    averaged; with plain SGD that is one step of half the summed gradient (NumPy model)."""
    write_data(tmp_path / 'data.txt')
    (tmp_path / 'sgd.cntk').write_text(config(
        'maxEpochs = 3 ; minibatchSize = 10 ; learningRatesPerSample = 0.02 ; momentumPerMB = 0 ; '
        'ParallelTrain = [ parallelizationMethod = ModelAveragingSGD ; ModelAveragingSGD = [ blockSize = 20 ] ]',
        extra='parallelTrain = true'))
    p = mpiexec(['configFile=sgd.cntk'], tmp_path)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log[-4000:]
    assert log.count('ModelAveragingSGD training (myRank = ') == 6, log[-3000:]
    w, b = np.full(2, 0.1), np.zeros(1)
    for _ in range(3):
        for i in range(0, len(X), 20):
            steps = [gradients(w, b, X[i + k:i + 20:2], Y[i + k:i + 20:2]) for k in (0, 1)]
            w = w - 0.02 * (steps[0][0] + steps[1][0]) / 2
            b = b - 0.02 * (steps[0][1] + steps[1][1]) / 2
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)


def two_metrics(text):
    """The config with two evaluation nodes: mae = |z - y| and se2, a second SquareError."""
    return (text.replace('se = SquareError (y, z)', 'se = SquareError (y, z) ; mae = Abs (z - y) ; se2 = SquareError (y, z)')
            .replace('criterionNodes = (se)', 'criterionNodes = (se) ; evaluationNodes = (mae : se2)'))


def epoch_figures(log, epochs):
    """[(mae, count, se2, count)] of each epoch's Finished Epoch line."""
    found = re.findall(r'Finished Epoch\[ *\d+ of %d\]: \[Training\] se = [\d.]+ \* \d+; mae = ([\d.]+) \* (\d+); '
                       r'se2 = ([\d.]+) \* (\d+);' % epochs, log)
    return [(float(a), int(n), float(b), int(m)) for a, n, b, m in found]


def expected_epoch_figures(epochs, mb, lr, momentum):
    """Each epoch's average |z - y| and (z - y)^2, each minibatch measured before its update."""
    w, b = np.full(2, 0.1), np.zeros(1)
    vw, vb = np.zeros(2), np.zeros(1)
    sums = [[0.0, 0.0] for _ in range(epochs)]
    for epoch, x, y in minibatches(epochs, mb):
        r = x @ w + b - y
        sums[epoch][0] += np.abs(r).sum()
        sums[epoch][1] += (r * r).sum()
        gw, gb = gradients(w, b, x, y)
        vw, vb = momentum * vw + (1 - momentum) * lr * gw, momentum * vb + (1 - momentum) * lr * gb
        w, b = w - vw, b - vb
    return [(a / len(X), len(X), s / len(X), len(X)) for a, s in sums]


def test_several_evaluation_nodes_are_all_reported(tmp_path):
    write_data(tmp_path / 'data.txt')
    (tmp_path / 'sgd.cntk').write_text(two_metrics(config(
        'maxEpochs = 2 ; minibatchSize = 10 ; learningRatesPerSample = 0.01 ; momentumPerMB = 0.9 ; '
        'numMBsToShowResult = 2')))
    rc, log = run(['configFile=sgd.cntk'], tmp_path)
    assert rc == 0, log[-3000:]
    got = epoch_figures(log, 2)
    want = expected_epoch_figures(2, 10, 0.01, 0.9)
    assert len(got) == 2, log[-3000:]
    for g, e in zip(got, want):
        np.testing.assert_allclose([g[0], g[2]], [e[0], e[2]], rtol=1e-5)
        assert (g[1], g[3]) == (e[1], e[3])
    # The progress lines carry both too, each over its own minibatches.
    assert len(re.findall(r'Minibatch\[ *\d+- *\d+(?:, [\d.]+%)?\]: se = [\d.]+ \* 20; mae = [\d.]+ \* 20; se2 = [\d.]+ \* 20;',
                          log)) == 4, log[-3000:]


def test_several_evaluation_nodes_under_mpiexec(tmp_path):
    """Data-parallel workers report every evaluation node summed over the workers, as one
    process reports it."""
    write_data(tmp_path / 'data.txt')
    (tmp_path / 'sgd.cntk').write_text(two_metrics(config(
        'maxEpochs = 2 ; minibatchSize = 10 ; learningRatesPerSample = 0.01 ; momentumPerMB = 0.9 ; '
        'ParallelTrain = [ parallelizationMethod = DataParallelSGD ; DataParallelSGD = [ gradientBits = 32 ] ]',
        extra='parallelTrain = true')))
    p = mpiexec(['configFile=sgd.cntk'], tmp_path, logs=tmp_path / 'logs')
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    want = expected_epoch_figures(2, 10, 0.01, 0.9)
    for rank in (0, 1):
        log = worker_log(tmp_path / 'logs', rank)
        got = epoch_figures(log, 2)
        assert len(got) == 2, log[-3000:]
        for g, e in zip(got, want):
            np.testing.assert_allclose([g[0], g[2]], [e[0], e[2]], rtol=1e-4)
            assert (g[1], g[3]) == (e[1], e[3])


# ---- AutoAdjust: CNTK's learning-rate adjustment after each epoch (SGD.cpp's AdjustAfterEpoch)

def adjusted_training(max_epochs, lrs, epoch_size=20, mb=10, momentum=0.5, decrease=0.618, increase=1.382,
                      reduce_if=0.0, increase_if=np.inf, load_best=True, interval=1, continue_reduce=False,
                      cv=None, min_lr=1e-9, by_mae=False):
    """CNTK's rule in NumPy: epochs of `epoch_size` samples read in order (epoch k from sample
    k * epoch_size), unit-gain momentum SGD, and after every `interval` epochs past the given rates
    the mean criterion of those epochs (training, or on `cv`; the mean |z - y| with `by_mae`)
    compared with the previous interval's.
    Returns the final (w, b) and the events the log should show."""
    state = (np.full(2, 0.1), np.zeros(1), np.zeros(2), np.zeros(1))
    saved = {}  # epoch -> (parameters and momentum, rate, previous criterion): its checkpoint
    lr, prev, avg, reduced, total = lrs[0], np.inf, np.inf, False, 0
    events, epoch = [], 0
    while epoch < max_epochs:
        lr = lrs[epoch] if epoch < len(lrs) else lr
        if lr < min_lr:
            events.append(('complete', epoch + 1))
            break
        w, b, vw, vb = state
        crit, mae, start = 0.0, 0.0, epoch * epoch_size % len(X)
        for i in range(start, start + epoch_size, mb):
            x, y = X[i:i + mb], Y[i:i + mb]
            r = x @ w + b - y
            crit += (r * r).sum()
            mae += np.abs(r).sum()
            gw, gb = gradients(w, b, x, y)
            vw, vb = momentum * vw + (1 - momentum) * lr * gw, momentum * vb + (1 - momentum) * lr * gb
            w, b = w - vw, b - vb
        state = (w, b, vw, vb)
        total += epoch_size
        events.append(('epoch', epoch + 1, crit / epoch_size, total, lr))
        control = (mae if by_mae else crit) / epoch_size
        if cv is not None:
            r = cv[0] @ w + b - cv[1]
            control = (r * r).mean()
            events.append(('validate', epoch + 1, control))
        since = epoch % interval + 1
        avg = control if np.isinf(avg) or since == 1 else ((since - 1) * avg + control) / since
        rolled = False
        if epoch >= len(lrs) and since == interval:
            had = not np.isinf(prev)
            if np.isnan(avg) or (had and prev - avg < 0):
                if load_best:
                    state, lr, prev = saved[epoch - interval]
                    total = (epoch - interval + 1) * epoch_size
                    events.append(('rollback', epoch - interval + 1))
                    rolled = True
            poor = np.isnan(avg) or (had and prev - avg <= reduce_if * prev)
            if continue_reduce:
                if poor and reduced:
                    events.append(('final',))
                    break
                reduced |= poor
                if reduced:
                    lr *= decrease
                    events.append(('reduced', lr))
            elif poor:
                lr *= decrease
                events.append(('reduced', lr))
            elif had and prev - avg > increase_if * prev:
                lr *= increase
                events.append(('increased', lr))
        if not rolled and since == interval:
            prev = avg
        if rolled:
            epoch -= interval
        saved[epoch] = (state, lr, prev)
        epoch += 1
    return state[:2], events


def logged_events(log):
    """The events of a train log in the order adjusted_training lists them."""
    events = []
    for line in log.splitlines():
        m = re.search(r'Finished Epoch\[ *(\d+) of \d+\]: \[Training\] se = ([\d.]+) \* \d+; (?:\w+ = [\d.]+ \* \d+; )*'
                      r'totalSamplesSeen = (\d+); '
                      r'learningRatePerSample = ([\d.e+-]+);', line)
        if m:
            events.append(('epoch', int(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4))))
        m = re.search(r'Finished Epoch\[ *(\d+) of \d+\]: \[Validate\] se = ([\d.]+) \* \d+$', line)
        if m:
            events.append(('validate', int(m.group(1)), float(m.group(2))))
        m = re.search(r'Loading \(rolling back to\) previous model with best training-criterion value: '
                      r'.*model\.dnn\.(\d+)\.$', line)
        if m:
            events.append(('rollback', int(m.group(1))))
        m = re.search(r'learnRatePerSample (reduced|increased) to ([\d.e+-]+)$', line)
        if m:
            events.append((m.group(1), float(m.group(2))))
        m = re.search(r'Learn Rate Per Sample for Epoch\[(\d+)\] = [\d.e+-]+ is less than minLearningRatePerSample', line)
        if m:
            events.append(('complete', int(m.group(1))))
        if 'Finished training and saved final model' in line:
            events.append(('final',))
    return events


def assert_same_events(got, want):
    assert [e[0] for e in got] == [e[0] for e in want], (got, want)
    for g, e in zip(got, want):
        if e[0] == 'epoch':
            assert (g[1], g[3]) == (e[1], e[3]), (g, e)
            np.testing.assert_allclose(g[2], e[2], rtol=1e-4, atol=1e-7)
            np.testing.assert_allclose(g[4], e[4], rtol=1e-6)  # printed as a float
        elif e[0] == 'validate':
            assert g[1] == e[1], (g, e)
            np.testing.assert_allclose(g[2], e[2], rtol=1e-4, atol=1e-7)
        elif e[0] in ('reduced', 'increased'):
            np.testing.assert_allclose(g[1], e[1], rtol=1e-6)
        else:
            assert g == e, (g, e)


SGD_BASE = 'epochSize = 20 ; minibatchSize = 10 ; momentumPerMB = 0.5 ; '


def test_adjust_after_epoch_rolls_back_a_worse_epoch(tmp_path):
    """A rate so large that the criterion rises: the epoch is undone (its predecessor's model,
    momentum, reader position and sample count reloaded), the rate cut by learnRateDecreaseFactor,
    and the epoch trained again."""
    rc, log = train(tmp_path, SGD_BASE + 'maxEpochs = 5 ; learningRatesPerSample = 0.3 ; '
                    'AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ; loadBestModel = true ]')
    assert rc == 0, log[-3000:]
    (w, b), want = adjusted_training(5, [0.3])
    assert ('rollback', 1) in want and ('rollback', 3) in want  # the case this test is about
    assert_same_events(logged_events(log), want)
    assert 'SGD: revoke back to and update checkpoint file for epoch 1' in log
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)
    names = sorted(os.listdir(tmp_path / 'm'))
    assert names == ['model.dnn', 'model.dnn.1', 'model.dnn.2', 'model.dnn.3', 'model.dnn.4', 'model.dnn.ckp'], names


def test_adjust_after_epoch_on_the_cv_set_reduces_and_increases(tmp_path):
    """cvReader: every epoch is validated ("[Validate]" line) and, with UseCVSetControlLRIfCVExists
    (the default), the cross-validation criterion controls the rate; without loadBestModel a poor
    epoch is kept and only the rate changes."""
    cv = (X[::3], Y[::3])
    (tmp_path / 'cv.txt').write_text(''.join('|x %.17g %.17g |y %.17g\n' % (a, c, y) for (a, c), y in zip(*cv)))
    cv_reader = ('cvReader = [ readerType = "CNTKTextFormatReader" ; file = "cv.txt" ; randomize = false\n'
                 '  input = [ x = [ dim = 2 ; format = "dense" ] ; y = [ dim = 1 ; format = "dense" ] ] ]')
    rc, log = train(tmp_path, SGD_BASE + 'maxEpochs = 6 ; learningRatesPerSample = 0.1 ; '
                    'AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ; loadBestModel = false ; '
                    'reduceLearnRateIfImproveLessThan = 0.1 ; increaseLearnRateIfImproveMoreThan = 0.5 ; '
                    'learnRateIncreaseFactor = 1.382 ]', extra=cv_reader)
    assert rc == 0, log[-3000:]
    (w, b), want = adjusted_training(6, [0.1], cv=cv, load_best=False, reduce_if=0.1, increase_if=0.5)
    kinds = [e[0] for e in want]
    assert 'reduced' in kinds and 'increased' in kinds and 'rollback' not in kinds
    assert_same_events(logged_events(log), want)
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)


def test_adjust_after_epoch_continue_reduce_ends_training(tmp_path):
    """continueReduce: after the first poor epoch the rate is cut after every epoch, and the second
    poor one ends training with the model saved as modelPath."""
    rc, log = train(tmp_path, SGD_BASE + 'maxEpochs = 8 ; learningRatesPerSample = 0.1 ; '
                    'AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ; continueReduce = true ; loadBestModel = false ; '
                    'reduceLearnRateIfImproveLessThan = 0.3 ]')
    assert rc == 0, log[-3000:]
    (w, b), want = adjusted_training(8, [0.1], continue_reduce=True, load_best=False, reduce_if=0.3)
    assert want[-1] == ('final',) and want[-2][:2] == ('epoch', 6)
    assert_same_events(logged_events(log), want)
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)


def test_adjust_interval_rolls_back_two_epochs_until_the_minimum_rate(tmp_path):
    """learnRateAdjustInterval = 2: the mean of two epochs is compared; a rollback removes the
    newer epoch's files, and training ends once the rate falls below minLearningRatePerSample."""
    rc, log = train(tmp_path, SGD_BASE + 'maxEpochs = 6 ; learningRatesPerSample = 0.3 ; '
                    'minLearningRatePerSample = 0.01 ; '
                    'AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ; learnRateAdjustInterval = 2 ]')
    assert rc == 0, log[-3000:]
    (w, b), want = adjusted_training(6, [0.3], interval=2, min_lr=0.01)
    assert want[-1] == ('complete', 3) and ('rollback', 2) in want
    assert_same_events(logged_events(log), want)
    assert 'SGD: removing model and checkpoint files for epoch 3 after rollback to epoch 2' in log
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)
    names = sorted(os.listdir(tmp_path / 'm'))
    assert names == ['model.dnn', 'model.dnn.1', 'model.dnn.2', 'model.dnn.2.ckp'], names


def test_auto_adjust_keys_not_implemented_are_named(tmp_path):
    for block, message in [
            ('autoAdjustLR = Sometimes', "autoAdjustLR must be None, SearchBeforeEpoch or AdjustAfterEpoch, not 'Sometimes'")]:
        rc, log = train(tmp_path, 'maxEpochs = 1 ; learningRatesPerSample = 0.01 ; AutoAdjust = [ %s ]' % block)
        assert rc != 0 and message in log, log[-2000:]
    rc, log = train(tmp_path, 'maxEpochs = 1 ; AutoAdjust = [ autoAdjustLR = SearchBeforeEpoch ] ; '
                              'ParallelTrain = [ parallelizationMethod = DataParallelSGD ]', extra='parallelTrain = true')
    assert rc != 0 and 'autoAdjustLR = SearchBeforeEpoch under parallel training is not implemented yet' in log, log[-2000:]
    rc, log = train(tmp_path, 'maxEpochs = 1 ; learningRatesPerSample = 0.01 ; AutoAdjust = [ autoAdjustMinibatch = true ] ; '
                              'ParallelTrain = [ parallelizationMethod = DataParallelSGD ]', extra='parallelTrain = true')
    assert rc != 0 and 'autoAdjustMinibatch under parallel training is not implemented yet' in log, log[-2000:]


def test_adjust_after_epoch_by_the_evaluation_node(tmp_path):
    """UseEvalCriterionControlLR: the first evaluation node (here the mean |z - y|), not the
    criterion, decides."""
    write_data(tmp_path / 'data.txt')
    (tmp_path / 'sgd.cntk').write_text(two_metrics(config(
        SGD_BASE + 'maxEpochs = 6 ; learningRatesPerSample = 0.1 ; AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ; '
        'UseEvalCriterionControlLR = true ; loadBestModel = false ; reduceLearnRateIfImproveLessThan = 0.2 ]')))
    rc, log = run(['configFile=sgd.cntk'], tmp_path)
    assert rc == 0, log[-3000:]
    (w, b), want = adjusted_training(6, [0.1], by_mae=True, load_best=False, reduce_if=0.2)
    (_, _), by_se = adjusted_training(6, [0.1], load_best=False, reduce_if=0.2)
    assert [e for e in want if e[0] == 'reduced'] != [e for e in by_se if e[0] == 'reduced']  # the node matters
    assert_same_events(logged_events(log), want)
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)


def test_adjust_after_epoch_resumes_with_the_adjusted_rate(tmp_path):
    """makeMode: a resumed run takes the adjusted rate and the last check's criterion from the
    checkpoint, and ends as the uninterrupted run; without the checkpoint (and no rate given for
    the epoch) it stops with CNTK's requirement."""
    sgd = (SGD_BASE + 'maxEpochs = 5 ; learningRatesPerSample = 0.3 ; keepCheckPointFiles = true ; '
           'AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ]')
    rc, log = train(tmp_path, sgd)
    assert rc == 0, log[-3000:]
    (w, b), want = adjusted_training(5, [0.3])
    os.remove(tmp_path / 'm' / 'model.dnn')
    os.remove(tmp_path / 'm' / 'model.dnn.ckp')
    rc, log = run(['configFile=sgd.cntk'], tmp_path)
    assert rc == 0, log[-3000:]
    last_rate = [e for e in want if e[0] == 'epoch'][-1][4]
    assert_same_events(logged_events(log), [('epoch', 5, want[-1][2], 100, last_rate)])
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)
    os.remove(tmp_path / 'm' / 'model.dnn')
    os.remove(tmp_path / 'm' / 'model.dnn.4.ckp')
    rc, log = run(['configFile=sgd.cntk'], tmp_path)
    assert rc != 0 and 'needs the previous epoch\'s checkpoint file or a learning rate given for that epoch' in log, log[-2000:]


def searched_training(max_epochs, epoch_size=40, mb=10, momentum=0.5, search_samples=20, best_search_epochs=1,
                      recent=5, min_lr=1e-9):
    """CNTK's SearchBeforeEpoch in NumPy (SGD.cpp's SearchForBestLearnRate): before each epoch,
    trials from the epoch's start, each undone, train until more than `search_samples` samples
    are read; rate 0 only evaluates. Returns the final (w, b) and the events the log shows."""
    f32 = np.float32
    state = (np.full(2, 0.1), np.zeros(1), np.zeros(2), np.zeros(1))
    events, rates, prev = [], [-1.0] * recent, np.inf

    def run(state, lr, limit):
        w, b, vw, vb = state
        crit, n = 0.0, 0
        while n < epoch_size and n <= limit:
            x, y = X[n:n + mb], Y[n:n + mb]
            r = x @ w + b - y
            crit += (r * r).sum()
            n += len(x)
            if lr > 0.01 * min_lr:
                gw, gb = gradients(w, b, x, y)
                vw, vb = momentum * vw + (1 - momentum) * lr * gw, momentum * vb + (1 - momentum) * lr * gb
                w, b = w - vw, b - vb
        return (w, b, vw, vb), crit / n, n

    def trial(epoch, lr):
        _, crit, n = run(state, lr, search_samples)
        events.append(('trial', epoch + 1, crit, n, lr))
        return crit

    for epoch in range(max_epochs):
        largest = max(rates)
        rate = largest / float(f32(0.618)) / float(f32(0.618)) if largest > 0 else \
            float(f32(1) / f32(8) / f32(0.618)) / np.sqrt(mb)
        base = trial(epoch, 0)
        p = base if np.isinf(prev) else prev
        ratio = np.sqrt(min(search_samples, epoch_size) / epoch_size)
        base = max(ratio * p + (1 - ratio) * base, base)
        while True:
            rate *= 0.618
            crit = trial(epoch, rate)
            if not (np.isnan(crit) or (crit > base and rate > min_lr * float(f32(0.3)))):
                break
        best = rate
        if epoch < best_search_epochs:
            left, right, right_crit = 0.01 / mb, rate, crit
            left_crit = trial(epoch, left)
            while right > left * 1.2:
                if right_crit > left_crit:
                    right *= 0.618
                    right_crit = trial(epoch, right)
                else:
                    left /= 0.618
                    left_crit = trial(epoch, left)
            best = left if left_crit < right_crit else right
        events.append(('best', epoch + 1, best, base))
        rates[epoch % recent] = best
        state, crit, n = run(state, best, np.inf)
        events.append(('epoch', epoch + 1, crit, (epoch + 1) * epoch_size, best))
        prev = crit
    return state[:2], events


def searched_events(log):
    events = []
    for line in log.splitlines():
        m = re.search(r'Finished Mini-Epoch\[(\d+)\]: se = ([\d.]+) \* (\d+); learningRatePerSample = ([\d.e+-]+); '
                      r'minibatchSize = 10$', line)
        if m:
            events.append(('trial', int(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4))))
        m = re.search(r'SearchForBestLearnRate Epoch\[(\d+)\]: Best learningRatePerSample = ([\d.e+-]+), '
                      r'baseCriterion=([\d.e+-]+)$', line)
        if m:
            events.append(('best', int(m.group(1)), float(m.group(2)), float(m.group(3))))
        m = re.search(r'Finished Epoch\[ *(\d+) of \d+\]: \[Training\] se = ([\d.]+) \* \d+; totalSamplesSeen = (\d+); '
                      r'learningRatePerSample = ([\d.e+-]+);', line)
        if m:
            events.append(('epoch', int(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4))))
    return events


def test_search_before_epoch_finds_the_rate(tmp_path):
    """SearchBeforeEpoch without given rates: every epoch's rate is searched with trials of
    numMiniBatch4LRSearch minibatches (stopping once more samples than that were read), the first
    epoch's with the bracketing search too, the later ones starting above the last rate found."""
    rc, log = train(tmp_path, 'epochSize = 40 ; minibatchSize = 10 ; momentumPerMB = 0.5 ; maxEpochs = 3 ; '
                    'AutoAdjust = [ autoAdjustLR = SearchBeforeEpoch ; numMiniBatch4LRSearch = 2 ]')
    assert rc == 0, log[-3000:]
    (w, b), want = searched_training(3)
    got = searched_events(log)
    assert [e[:2] for e in got] == [e[:2] for e in want], (got, want)
    for g, e in zip(got, want):
        if e[0] in ('trial', 'epoch'):
            assert g[3] == e[3], (g, e)
            np.testing.assert_allclose(g[2], e[2], rtol=1e-4, atol=1e-7)
            np.testing.assert_allclose(g[4], e[4], rtol=1e-6)
        else:
            np.testing.assert_allclose(g[2:], e[2:], rtol=1e-6)
    assert sum(e[0] == 'trial' for e in want) > 8  # the search ran its course
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)


def test_auto_adjust_minibatch_searches_the_size(tmp_path):
    """autoAdjustMinibatch: epochs past the given minibatch sizes train with the largest size (from
    the given one up by sqrt(2), multiples of 64; later between half and twice the last choice)
    whose trial criterion stays within minibatchSearchCriterionErrorMargin percent of the first
    trial's; momentum per minibatch scales with the size."""
    rng = np.random.RandomState(3)
    xs = rng.uniform(-1, 1, size=(1280, 2))
    ys = xs @ np.array([3.0, -2.0]) + 0.5 + 0.01 * rng.randn(1280)
    (tmp_path / 'data.txt').write_text(''.join('|x %.17g %.17g |y %.17g\n' % (a, c, y) for (a, c), y in zip(xs, ys)))
    (tmp_path / 'sgd.cntk').write_text(config(
        'epochSize = 640 ; minibatchSize = 64 ; learningRatesPerSample = 0.002 ; momentumPerMB = 0.5 ; maxEpochs = 4 ; '
        'AutoAdjust = [ autoAdjustMinibatch = true ; numSamples4Search = 200 ; minibatchSearchCriterionErrorMargin = 30 ]'))
    rc, log = run(['configFile=sgd.cntk'], tmp_path)
    assert rc == 0, log[-3000:]

    f32, lr, epoch_size, limit = np.float32, 0.002, 640, 200
    per_sample = 0.5 ** (1 / 64)
    state, want, chosen = (np.full(2, 0.1), np.zeros(1), np.zeros(2), np.zeros(1)), [], 64

    def run_epoch(state, epoch, mb, limit):
        w, b, vw, vb = state
        crit, n, start = 0.0, 0, epoch * epoch_size % len(xs)
        while n < epoch_size and n <= limit:
            k = min(mb, epoch_size - n)
            x, y = xs[start + n:start + n + k], ys[start + n:start + n + k]
            r = x @ w + b - y
            crit += (r * r).sum()
            gw, gb = gradients(w, b, x, y)
            m = per_sample ** k
            vw, vb = m * vw + (1 - m) * lr * gw, m * vb + (1 - m) * lr * gb
            w, b = w - vw, b - vb
            n += k
        return (w, b, vw, vb), crit / n, n

    for epoch in range(4):
        mb = 64
        if epoch >= 1:
            smallest, largest = 64, 1048576
            if epoch < 2:
                chosen = 0
            if chosen:
                smallest, largest = max(smallest, chosen // 2), min(largest, chosen * 2)
            round64 = lambda v: max(64, 64 * int((f32(v) + f32(32)) / f32(64)))
            want.append(('range', epoch + 1, round64(smallest), round64(largest)))
            size, good, base = f32(smallest), 0, None
            while size <= largest:
                trial = round64(size)
                _, crit, n = run_epoch(state, epoch, trial, limit)
                want.append(('trial', epoch + 1, crit, n, trial))
                if good == 0:
                    base = crit
                elif crit > base * 1.3:
                    break
                good = trial
                size = f32(size * f32(np.sqrt(f32(2))))
            mb = good
            if mb != chosen:
                want.append(('adapted', mb))
            chosen = mb
        state, crit, n = run_epoch(state, epoch, mb, np.inf)
        want.append(('epoch', epoch + 1, crit, (epoch + 1) * epoch_size))

    got = []
    for line in log.splitlines():
        m = re.search(r'AdaptiveMinibatchSearch Epoch\[(\d+)\]: Evaluating minibatchSizes (\d+)\.\.(\d+)$', line)
        if m:
            got.append(('range',) + tuple(int(g) for g in m.groups()))
        m = re.search(r'Finished Mini-Epoch\[(\d+)\]: se = ([\d.]+) \* (\d+); learningRatePerSample = [\d.e+-]+; '
                      r'minibatchSize = (\d+)$', line)
        if m:
            got.append(('trial', int(m.group(1)), float(m.group(2)), int(m.group(3)), int(m.group(4))))
        m = re.search(r'Minibatch size adapted to (\d+)\.$', line)
        if m:
            got.append(('adapted', int(m.group(1))))
        m = re.search(r'Finished Epoch\[ *(\d+) of \d+\]: \[Training\] se = ([\d.]+) \* \d+; totalSamplesSeen = (\d+);', line)
        if m:
            got.append(('epoch', int(m.group(1)), float(m.group(2)), int(m.group(3))))
    assert [e[:2] for e in got] == [e[:2] for e in want], (got, want)
    for g, e in zip(got, want):
        if e[0] in ('trial', 'epoch'):
            np.testing.assert_allclose(g[2], e[2], rtol=1e-4, atol=1e-7)
            assert g[3:] == e[3:], (g, e)
        else:
            assert g == e, (g, e)
    assert {e[1] for e in want if e[0] == 'adapted'} - {64}, want  # some epoch took a larger size
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, state[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, state[1], rtol=1e-4, atol=1e-5)


def test_search_trials_report_the_evaluation_nodes(tmp_path):
    """The trials' lines carry every evaluation node as CNTK's did, from the unchanged model's
    evaluation (rate 0) and from the trained trials alike."""
    write_data(tmp_path / 'data.txt')
    (tmp_path / 'sgd.cntk').write_text(two_metrics(config(
        'epochSize = 40 ; minibatchSize = 10 ; momentumPerMB = 0.5 ; maxEpochs = 1 ; '
        'AutoAdjust = [ autoAdjustLR = SearchBeforeEpoch ; numMiniBatch4LRSearch = 2 ]')))
    rc, log = run(['configFile=sgd.cntk'], tmp_path)
    assert rc == 0, log[-3000:]
    trials = re.findall(r'Finished Mini-Epoch\[1\]: se = ([\d.]+) \* (\d+); mae = ([\d.]+) \* (\d+); '
                        r'se2 = ([\d.]+) \* (\d+); learningRatePerSample = ([\d.e+-]+);', log)
    _, want = searched_training(1)
    assert len(trials) == sum(e[0] == 'trial' for e in want) > 2, log[-3000:]
    for se, n, mae, n2, se2, n3, _ in trials:
        assert se == se2 and n == n2 == n3 == '30'
    r = X[:30] @ np.full(2, 0.1) - Y[:30]  # the unchanged model's trial
    np.testing.assert_allclose(float(trials[0][2]), np.abs(r).mean(), rtol=1e-5)


def test_adjust_after_epoch_under_mpiexec(tmp_path):
    """Two data-parallel workers take the same decisions as one process: rollbacks reload the
    checkpoint on every worker, and the model is the NumPy model's."""
    write_data(tmp_path / 'data.txt')
    (tmp_path / 'sgd.cntk').write_text(config(
        SGD_BASE + 'maxEpochs = 5 ; learningRatesPerSample = 0.3 ; AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ] ; '
        'ParallelTrain = [ parallelizationMethod = DataParallelSGD ; DataParallelSGD = [ gradientBits = 32 ] ]',
        extra='parallelTrain = true'))
    p = mpiexec(['configFile=sgd.cntk'], tmp_path, logs=tmp_path / 'logs')
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    (w, b), want = adjusted_training(5, [0.3])
    for rank in (0, 1):
        assert_same_events(logged_events(worker_log(tmp_path / 'logs', rank)), want)
    ours_w, ours_b = trained(tmp_path / 'm' / 'model.dnn')
    np.testing.assert_allclose(ours_w, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_b, b, rtol=1e-4, atol=1e-5)


def test_a_nan_criterion_ends_training_with_cntk_error(tmp_path):
    """Outside a learning-rate check a criterion that is not a number stops training (CNTK's
    RuntimeError); AdjustAfterEpoch instead undoes the epoch and cuts the rate."""
    rc, log = train(tmp_path, 'maxEpochs = 4 ; minibatchSize = 10 ; learningRatesPerSample = 1e10')
    assert rc != 0 and 'The training criterion is not a number (NAN).' in log, log[-2000:]
    assert 'Finished Epoch[ 2 of 4]' in log and 'Finished Epoch[ 3 of 4]' not in log
    rc, log = train(tmp_path, 'maxEpochs = 3 ; minibatchSize = 10 ; learningRatesPerSample = 1e10 ; '
                              'minLearningRatePerSample = 1e-3 ; AutoAdjust = [ autoAdjustLR = AdjustAfterEpoch ]')
    assert rc == 0, log[-2000:]
    assert 'Loading (rolling back to) previous model' in log and 'is less than minLearningRatePerSample' in log, log[-2000:]
