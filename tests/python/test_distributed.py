"""Distributed training over MPI (cntk.train.distributed, src/distributed).

Multi-worker cases run tests/python/distributed_jobs.py under Open MPI's mpiexec (as root and with
more ranks than cores where needed, as CI's 2-core machines require) and compare with the same job
in one process, or with a NumPy model of CNTK's quantized exchange."""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import cntk as C

HERE = os.path.dirname(os.path.abspath(__file__))
JOBS = os.path.join(HERE, 'distributed_jobs.py')
REPO_PYTHON = os.path.abspath(os.path.join(HERE, '..', '..', 'python'))

needs_mpiexec = pytest.mark.skipif(shutil.which('mpiexec') is None,
                                   reason="mpiexec is not installed (Debian openmpi-bin)")


def _env():
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_rmaps_base_oversubscribe='1', OMPI_MCA_btl_vader_single_copy_mechanism='none')
    # The workers import the same cntk as this test process.
    import cntk
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(cntk.__file__)))
    env['PYTHONPATH'] = os.pathsep.join([pkg_parent, env.get('PYTHONPATH', '')])
    return env


def mpirun(n, job, outdir, *args, timeout=300, check=True):
    cmd = ['mpiexec', '-n', str(n), sys.executable, JOBS, job, str(outdir)] + [str(a) for a in args]
    start = time.time()
    p = subprocess.run(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    out = p.stdout.decode(errors='replace')
    if check and p.returncode != 0:
        raise AssertionError("mpiexec %s failed (%d):\n%s" % (job, p.returncode, out[-4000:]))
    return p.returncode, out, time.time() - start


def run_single(job, outdir, *args):
    p = subprocess.run([sys.executable, JOBS, job, str(outdir)] + [str(a) for a in args], env=_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    assert p.returncode == 0, p.stdout.decode(errors='replace')[-4000:]


def load(outdir, name, rank):
    return np.load(os.path.join(str(outdir), '%s_%d.npz' % (name, rank)))


# ------------------------------------------------------------------ one process: a world of one

def test_single_process_world_of_one_worker():
    assert C.Communicator.rank() == 0
    assert C.Communicator.num_workers() == 1
    comm = C.mpi_communicator()
    workers = comm.workers()
    assert len(workers) == 1 and workers[0].global_rank == 0 and workers[0].host_id
    assert comm.current_worker() == workers[0] and comm.current_worker().is_main() and comm.is_main()
    comm.barrier()
    C.Communicator.finalize()  # nothing to end without mpiexec: the world goes on working
    assert C.distributed.mpi_communicator().workers()[0].global_rank == 0


def test_names_and_argument_checks():
    from cntk.train import distributed
    for name in distributed.__all__:
        assert getattr(C, name) is getattr(distributed, name)
    p = C.parameter((2, 3), init=1.0)
    local = C.sgd([p], C.learning_parameter_schedule(0.1))
    with pytest.raises(ValueError, match='power of two'):
        C.data_parallel_distributed_learner(local, num_quantization_bits=3)
    with pytest.raises(NotImplementedError, match='asynchronous'):
        C.data_parallel_distributed_learner(local, use_async_buffered_parameter_update=True)
    dist = C.data_parallel_distributed_learner(local)
    with pytest.raises(ValueError, match='already distributed'):
        C.block_momentum_distributed_learner(dist, block_size=10)
    with pytest.raises(TypeError):
        C.data_parallel_distributed_learner("sgd")
    x = C.input_variable(3)
    q = C.parameter((3, 1), init=1.0)
    z = C.times(x, q) + C.reduce_sum(p)
    with pytest.raises(ValueError, match='non-distributed'):
        C.Trainer(z, (z, None), [C.data_parallel_distributed_learner(C.sgd([p], 0.1)), C.sgd([q], 0.1)])


@pytest.mark.parametrize('bits', [32, 1])
def test_single_process_distributed_learner_equals_local_learner(bits):
    """In a world of one the exchange changes nothing (CNTK: no quantization without peers)."""
    results = []
    for make in (lambda l: l, lambda l: C.data_parallel_distributed_learner(l, num_quantization_bits=bits),
                 lambda l: C.block_momentum_distributed_learner(l, block_size=64,
                                                                reset_sgd_momentum_after_aggregation=False)):
        C.cntk_py.set_fixed_random_seed(7)
        x = C.input_variable(4)
        y = C.input_variable(2)
        z = C.layers.Dense(2)(x)
        local = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9))
        trainer = C.Trainer(z, (C.squared_error(z, y), None), [make(local)])
        rng = np.random.RandomState(0)
        for _ in range(10):
            trainer.train_minibatch({x: rng.randn(8, 4).astype(np.float32), y: rng.randn(8, 2).astype(np.float32)})
        assert trainer.total_number_of_samples_seen == 80
        results.append([p.value.copy() for p in z.parameters])
    for a, b in zip(results[0], results[1]):
        np.testing.assert_array_equal(a, b)
    # Block momentum of one worker: w = prev - (prev - w), exact up to rounding.
    for a, b in zip(results[0], results[2]):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_single_process_distributed_evaluation():
    x = C.input_variable(2)
    e = C.reduce_sum(x)
    ev = C.eval.Evaluator(e)
    assert ev.test_minibatch({x: np.array([[1, 2], [3, 4]], np.float32)}, distributed=True) == 5.0


# ------------------------------------------------------------------ data-parallel equals one process

@needs_mpiexec
@pytest.mark.parametrize('workers', [2, 4])
def test_data_parallel_32bit_equals_single_process(tmp_path, workers):
    run_single('dp', tmp_path, '--single', '--steps', 50, '--batch', 64)
    ref = load(tmp_path, 'dp', 0)
    os.remove(os.path.join(str(tmp_path), 'dp_0.npz'))
    mpirun(workers, 'dp', tmp_path, '--steps', 50, '--batch', 64, '--bits', 32)
    first = load(tmp_path, 'dp', 0)
    names = [k for k in ref.files if k.startswith('p')]
    for r in range(workers):
        got = load(tmp_path, 'dp', r)
        assert int(got['samples']) == 50 * 64  # counted over all workers
        for k in names:
            np.testing.assert_array_equal(got[k], first[k])  # the same bits on every worker
            np.testing.assert_allclose(got[k], ref[k], rtol=0, atol=1e-6)
        # The Trainer reports the loss over all workers' samples.
        np.testing.assert_allclose(got['losses'], ref['losses'], rtol=1e-5)
    assert abs(float(first['p0'].sum()) - float(ref['p0'].sum())) < 1e-3 and not np.allclose(ref['p0'], 0)


@needs_mpiexec
def test_training_session_partitions_the_data_by_worker(tmp_path):
    xs, ys = _global_batch_for_file(96)
    ctf = tmp_path / 'data.ctf'
    with open(str(ctf), 'w') as f:
        for a, b in zip(xs, ys):
            f.write('|x %s |y %s\n' % (' '.join('%.6f' % v for v in a), ' '.join('%g' % v for v in b)))
    run_single('session', tmp_path, '--single', '--batch', 16, '--ctf', ctf)
    ref = load(tmp_path, 'session', 0)
    os.remove(os.path.join(str(tmp_path), 'session_0.npz'))
    mpirun(2, 'session', tmp_path, '--batch', 16, '--ctf', ctf)
    for r in range(2):
        got = load(tmp_path, 'session', r)
        assert int(got['samples']) == int(ref['samples']) == 192  # two sweeps, counted over the workers
        assert int(got['minibatches']) == int(ref['minibatches'])
        for k in [k for k in ref.files if k.startswith('p')]:
            np.testing.assert_allclose(got[k], ref[k], rtol=0, atol=1e-6)


def _global_batch_for_file(n):
    rng = np.random.RandomState(5)
    xs = rng.randn(n, 20).astype(np.float32)
    return xs, np.eye(5, dtype=np.float32)[np.abs(xs[:, :5]).argmax(axis=1)]


@needs_mpiexec
def test_block_momentum_summaries_are_averaged_over_workers(tmp_path):
    """CNTK's bmuf_metrics_aggregation_test (skipped on Linux there for want of mpiexec -l): every
    worker reports the same loss and metric in its epoch summaries."""
    import re
    mpirun(2, 'bmuf_metrics', tmp_path, '--steps', 101)
    summaries = []
    for r in range(2):
        with open(os.path.join(str(tmp_path), 'logrank%d' % r)) as f:
            text = f.read()
        summaries.append(re.findall(r'Finished Epoch\[(\d+)(?: of \d+)?\]: \[Training\] loss = ([\d.]+) \* (\d+), '
                                    r'metric = ([\d.]+)%', text))
    assert len(summaries[0]) == 3, summaries
    assert summaries[0] == summaries[1]


@needs_mpiexec
def test_the_profiler_writes_one_summary_per_worker(tmp_path):
    prof = tmp_path / 'prof'
    mpirun(2, 'dp', tmp_path, '--steps', 3, '--batch', 8, '--profile', prof)
    names = sorted(os.listdir(str(prof)))
    for r in range(2):
        assert len([n for n in names if n.endswith('_summary_%d.txt' % r)]) == 1, names


# ------------------------------------------------------------------ 1-bit SGD: the exchange itself

def _quantize_columns(m, bits):
    """NumPy model of CNTK's column quantizer (zero threshold for 1 bit; +-4 sigma grid otherwise):
    quantizes each row of `m` (a column in CNTK's layout) in float32; returns the reconstruction."""
    f = np.float32
    out = np.empty_like(m)
    for c, x in enumerate(m):
        if bits == 1:
            neg, pos = x[x < 0], x[x >= 0]
            mean0 = f(neg.sum(dtype=f) / f(max(len(neg), 1)))
            mean1 = f(pos.sum(dtype=f) / f(max(len(pos), 1)))
            center = f(f(0.5) * (mean0 + mean1))
            radius = f(2) * (mean1 - center)
            lo, hi = center - radius, center + radius
            levels = 2
        else:
            sd = np.sqrt(f((x * x).sum(dtype=f)) / f(len(x)))
            lo, hi = -f(4) * sd, f(4) * sd
            levels = 2 ** bits - 1
        u = (hi - lo) / f(levels) if hi - lo >= 1e-36 else f(0)
        if bits == 1:
            q = (x >= 0).astype(f)
        else:
            qf = f(levels) / (hi - lo) if hi - lo >= 1e-36 else f(0)
            q = np.where(x <= lo, 0, np.where(x >= hi, 2 ** bits - 1, np.floor((x - lo) * qf))).astype(f)
        out[c] = (q + f(0.5)) * u + lo
    return out


def _reference_exchange(grads, steps, workers, bits):
    """What every worker receives at each step: CNTK's stripe exchange with error feedback."""
    cols = grads[0][0].shape[0]
    per, extra = divmod(cols, workers)
    stripes = [(per * r + min(extra, r), per + (r < extra)) for r in range(workers)]
    res = [np.zeros_like(grads[0][0]) for _ in range(workers)]
    stripe_res = [np.zeros((n, grads[0][0].shape[1]), np.float32) for _, n in stripes]
    out = []
    for s in range(steps):
        q = []
        for r in range(workers):
            v = grads[r][s] + res[r]
            q.append(_quantize_columns(v, bits))
            res[r] = v - q[r]
        total = np.empty_like(grads[0][0])
        for j, (a, n) in enumerate(stripes):
            acc = q[j][a:a + n].copy()
            for r in range(workers):
                if r != j:
                    acc = acc + q[r][a:a + n]
            w = acc + stripe_res[j]
            total[a:a + n] = _quantize_columns(w, bits)
            stripe_res[j] = w - total[a:a + n]
        out.append(total)
    return np.array(out)


@needs_mpiexec
@pytest.mark.parametrize('bits', [1, 2])
def test_quantized_exchange_matches_numpy_model(tmp_path, bits):
    workers, steps, rows, cols = 2, 4, 40, 7
    mpirun(workers, 'quant', tmp_path, '--bits', bits, '--steps', steps, '--rows', rows, '--cols', cols)
    grads = [[np.random.RandomState(s * 10 + r).randn(cols, rows).astype(np.float32) for s in range(steps)]
             for r in range(workers)]
    expected = _reference_exchange(grads, steps, workers, bits)
    for r in range(workers):
        got = load(tmp_path, 'quant', r)['deltas']
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    # What arrives is quantized: each column of the sum takes at most 2 ** bits values.
    got = load(tmp_path, 'quant', 0)['deltas']
    assert max(len(np.unique(column)) for column in got[0]) <= 2 ** bits
    assert not np.allclose(got[0], grads[0][0] + grads[1][0], atol=1e-3)


# ------------------------------------------------------------------ Fashion-MNIST: accuracy and traffic

def _fmnist_available():
    sys.path.insert(0, os.path.join(HERE, '..', '..', 'examples', 'python'))
    import fashion_mnist_data
    return fashion_mnist_data.available()


@needs_mpiexec
@pytest.mark.slow
def test_fashion_mnist_1bit_and_block_momentum_accuracy(tmp_path):
    """The 784-512-512-10 MLP (dropout 0.2), momentum SGD, 2 epochs of minibatches of 128: 1-bit SGD
    (after a warm start of 30,000 samples, as CNTK advised for 1-bit SGD) and block momentum
    (blocks of 16 local steps) on 2 workers reach the test accuracy of one process within 1 point.
    Measured: one process 82.55%, 1-bit 82.55%, block momentum 82.26%; at a learning rate of 0.1
    both fell 2 to 3 points short after 2 epochs."""
    if not _fmnist_available():
        pytest.skip("Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)")
    common = ['--epochs', 2, '--batch', 128, '--lr', 0.03]
    run_single('fmnist', tmp_path, '--mode', 'single', *common)
    mpirun(2, 'fmnist', tmp_path, '--mode', 'dp', '--bits', 1, '--warm', 30000, '--name', 'onebit', *common,
           timeout=900)
    mpirun(2, 'fmnist', tmp_path, '--mode', 'bmuf', '--block-steps', 16, '--keep-momentum', *common, timeout=900)
    # Traffic per step, without warm start.
    mpirun(2, 'fmnist', tmp_path, '--mode', 'dp', '--bits', 32, '--max-steps', 5, '--name', 'bytes32', *common)
    mpirun(2, 'fmnist', tmp_path, '--mode', 'dp', '--bits', 1, '--max-steps', 5, '--name', 'bytes1', *common)

    def result(name, rank=0):
        with open(os.path.join(str(tmp_path), 'fmnist_%s_%d.json' % (name, rank))) as f:
            return json.load(f)

    single = result('single')['accuracy']
    for name in ('onebit', 'bmuf'):
        r0, r1 = result(name, 0), result(name, 1)
        assert r0['params'] == r1['params'], name  # every worker ends with the same model
        assert r0['accuracy'] >= single - 0.01, (name, r0['accuracy'], single)
    # Bytes each worker sent per step: 1-bit at most 1/25 of 32-bit (measured: 99,636 against 2,678,848).
    per_step = {b: result(b)['bytes_sent'] / result(b)['steps'] for b in ('bytes32', 'bytes1')}
    assert per_step['bytes1'] * 25 <= per_step['bytes32'], per_step
    # The gradients travel in two buckets here (the last two weights and a bias, then the rest):
    # every step starts the first bucket's exchange while backward still computes the first
    # layer's gradient.
    for b in ('bytes32', 'bytes1'):
        assert result(b)['overlapped'] == result(b)['steps'], (b, result(b))


# ------------------------------------------------------------------ faults, checkpoints, resume

@needs_mpiexec
def test_sigkill_of_a_worker_ends_the_job_and_resume_is_bit_identical(tmp_path):
    common = ['--steps', 30, '--every', 10, '--batch', 32]
    full, ckpt = tmp_path / 'full', tmp_path / 'ckpt'
    for d in (full, ckpt):
        d.mkdir()
    mpirun(2, 'resume', full, '--ckptdir', full, *common)

    rc, out, seconds = mpirun(2, 'resume', ckpt, '--ckptdir', ckpt, '--kill-at', 25, *common, check=False)
    assert rc != 0 and seconds < 60
    assert 'rank 1' in out and 'signal 9' in out, out[-2000:]
    assert not os.path.exists(os.path.join(str(ckpt), 'resume_0.npz'))

    mpirun(2, 'resume', ckpt, '--ckptdir', ckpt, '--restore', *common)
    for r in range(2):
        a, b = load(full, 'resume', r), load(ckpt, 'resume', r)
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])


@needs_mpiexec
def test_an_exception_in_a_worker_ends_the_job_naming_it(tmp_path):
    rc, out, seconds = mpirun(2, 'resume', tmp_path, '--ckptdir', tmp_path, '--raise-at', 3, '--steps', 10,
                              check=False)
    assert rc != 0 and seconds < 60
    assert 'worker 1 of 2 failed with RuntimeError' in out, out[-2000:]
    assert 'a failure in worker 1 at step 3' in out


@needs_mpiexec
def test_a_worker_ending_early_ends_the_job_naming_it(tmp_path):
    """A worker whose program ends (here after half the steps) while the others still exchange:
    they raise, naming it, instead of waiting for it forever."""
    rc, out, seconds = mpirun(2, 'dp', tmp_path, '--steps', 10, '--batch', 16, '--early-exit', check=False)
    assert rc != 0 and seconds < 60
    assert 'worker 1 of 2 ended its program (or called finalize) while worker 0 waited for it' in out, out[-2000:]


# ------------------------------------------------------------------ two hosts (network namespaces)

NETNS_AGENT = """#!/bin/sh
# Open MPI's remote-shell agent for the test's hosts: network namespaces of this machine.
host=$1
shift
exec ip netns exec "$CNTK_TEST_NETNS_PREFIX$host" /bin/sh -c "$*"
"""


def _sh(*cmd):
    return subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT).returncode == 0


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ''


def _link_bytes(name):
    with open('/sys/class/net/%s/statistics/tx_bytes' % name) as tx, \
            open('/sys/class/net/%s/statistics/rx_bytes' % name) as rx:
        return int(tx.read()) + int(rx.read())


@needs_mpiexec
def test_two_hosts_over_tcp_from_a_hostfile(tmp_path):
    """Two hosts made of network namespaces joined by veth pairs and a bridge; Open MPI starts one
    worker in each through a hostfile (its remote-shell agent enters the namespace, as ssh would
    log in) and the workers talk over TCP, as on a cluster."""
    if shutil.which('ip') is None or os.geteuid() != 0:
        pytest.skip("needs root and iproute2 to make network namespaces")
    tag = 'cn%d' % (os.getpid() % 100000)
    net = '10.%d.%d' % (100 + os.getpid() % 100, os.getpid() // 100 % 250)
    hosts = ['h1', 'h2']
    bridge = tag + 'br'
    if not _sh('ip', 'netns', 'add', tag + 'h1'):
        pytest.skip("network namespaces are not available here")
    try:
        assert _sh('ip', 'netns', 'add', tag + 'h2')
        assert _sh('ip', 'link', 'add', bridge, 'type', 'bridge')
        assert _sh('ip', 'addr', 'add', net + '.1/24', 'dev', bridge)
        assert _sh('ip', 'link', 'set', bridge, 'up')
        for i, h in enumerate(hosts, 1):
            ns, veth = tag + h, tag + 'v%d' % i
            assert _sh('ip', 'link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns)
            assert _sh('ip', 'link', 'set', veth, 'master', bridge, 'up')
            assert _sh('ip', 'netns', 'exec', ns, 'ip', 'addr', 'add', '%s.%d/24' % (net, 10 + i), 'dev', 'eth0')
            assert _sh('ip', 'netns', 'exec', ns, 'ip', 'link', 'set', 'eth0', 'up')
            assert _sh('ip', 'netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up')
        # Both ports forwarding and both ends up before any traffic (a fresh bridge port may not be;
        # on a loaded machine that can take a while).
        deadline = time.time() + 60
        ready = lambda: all(_read('/sys/class/net/%sv%d/brport/state' % (tag, i)) == '3' and
                            _read('/sys/class/net/%sv%d/operstate' % (tag, i)) == 'up' for i in (1, 2))
        while not ready() and time.time() < deadline:
            time.sleep(0.2)
        assert ready(), 'the bridge ports of %s are not forwarding after 60 s' % tag
        agent = tmp_path / 'netns-rsh'
        agent.write_text(NETNS_AGENT)
        agent.chmod(0o755)
        hostfile = tmp_path / 'hosts'
        hostfile.write_text(''.join('%s slots=1\n' % h for h in hosts))
        out = tmp_path / 'out'
        out.mkdir()
        before = _link_bytes(tag + 'v1')
        env = _env()
        env['CNTK_TEST_NETNS_PREFIX'] = tag
        cmd = ['mpiexec', '--hostfile', str(hostfile), '-n', '2', '--mca', 'plm_rsh_agent', str(agent),
               '--mca', 'oob_tcp_if_include', net + '.0/24', '--mca', 'btl', 'tcp,self',
               '--mca', 'btl_tcp_if_include', net + '.0/24',
               sys.executable, JOBS, 'dp', str(out), '--steps', 20, '--batch', 64]
        p = subprocess.run([str(c) for c in cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=300)
        assert p.returncode == 0, p.stdout.decode(errors='replace')[-4000:]
        r0, r1 = load(out, 'dp', 0), load(out, 'dp', 1)
        for k in [k for k in r0.files if k.startswith('p')]:
            np.testing.assert_array_equal(r0[k], r1[k])
        # The gradients crossed host 1's link.
        assert _link_bytes(tag + 'v1') - before >= int(r0['bytes_sent'])
        run_single('dp', tmp_path, '--single', '--steps', 20, '--batch', 64)
        ref = load(tmp_path, 'dp', 0)
        np.testing.assert_allclose(r0['p0'], ref['p0'], rtol=0, atol=1e-6)
    finally:
        for h in hosts:
            _sh('ip', 'netns', 'del', tag + h)
        _sh('ip', 'link', 'del', bridge)
