"""Jobs that tests/python/test_distributed.py runs under mpiexec (one process per worker), and in
a single process for the reference results. Each job writes its results into OUTDIR as .npy /
.json files named after the worker's rank.

    mpiexec -n N python distributed_jobs.py JOB OUTDIR [options]
"""
import argparse
import json
import os
import signal
import sys

import numpy as np

import cntk as C

HERE = os.path.dirname(os.path.abspath(__file__))


def _save(outdir, name, **arrays):
    np.savez(os.path.join(outdir, '%s_%d.npz' % (name, C.Communicator.rank())), **arrays)


# ------------------------------------------------------------------ data-parallel equivalence

def _mlp(seed):
    C.cntk_py.set_fixed_random_seed(seed)
    x = C.input_variable(20, np.float32)
    y = C.input_variable(5, np.float32)
    z = C.layers.Sequential([C.layers.Dense(32, activation=C.tanh), C.layers.Dense(5)])(x)
    return x, y, z, C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)


def _global_batch(step, size):
    rng = np.random.RandomState(1000 + step)
    xs = rng.randn(size, 20).astype(np.float32)
    labels = (np.abs(xs[:, :5]).argmax(axis=1) + (xs[:, 5] > 0)) % 5
    return xs, np.eye(5, dtype=np.float32)[labels]


def data_parallel(args):
    """`steps` steps of momentum SGD on global minibatches of `batch` samples, each worker taking
    its contiguous share of every global minibatch."""
    x, y, z, loss, err = _mlp(3)
    local = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.5), C.momentum_schedule(0.9))
    workers, rank = C.Communicator.num_workers(), C.Communicator.rank()
    learner = local if args.single else C.data_parallel_distributed_learner(
        local, num_quantization_bits=args.bits)
    trainer = C.Trainer(z, (loss, err), [learner])
    if args.profile:
        C.debugging.start_profiler(args.profile)
        C.debugging.enable_profiler()
    per = args.batch // workers
    losses = []
    # --early-exit: the last worker stops after half the steps and ends its program.
    steps = args.steps // 2 if args.early_exit and rank == workers - 1 else args.steps
    for step in range(steps):
        xs, ys = _global_batch(step, args.batch)
        if not args.single:
            xs, ys = xs[rank * per:(rank + 1) * per], ys[rank * per:(rank + 1) * per]
        trainer.train_minibatch({x: xs, y: ys})
        losses.append(trainer.previous_minibatch_loss_average)
    if args.profile:
        C.debugging.stop_profiler()
    params = {'p%d' % i: p.value for i, p in enumerate(z.parameters)}
    sent = 0 if args.single else learner.communicator()._counters().bytes_sent
    _save(args.outdir, 'dp', losses=np.array(losses), samples=trainer.total_number_of_samples_seen,
          bytes_sent=sent, **params)


# ------------------------------------------------------------------ quantized exchange

def quantized_exchange(args):
    """The gradient of reduce_sum(p * g) is g: with SGD at rate 1 per sample, each step moves p by
    minus the exchanged gradient, which the test compares with its NumPy model of CNTK's exchange."""
    rank = C.Communicator.rank()
    g = C.input_variable((args.cols, args.rows), np.float32, name='g')
    p = C.parameter((args.cols, args.rows), init=0.0)
    f = C.reduce_sum(p * g)
    learner = C.data_parallel_distributed_learner(C.sgd([p], C.learning_parameter_schedule_per_sample(1.0)),
                                                  num_quantization_bits=args.bits)
    trainer = C.Trainer(f, (f, None), [learner])
    deltas = []
    for step in range(args.steps):
        grad = np.random.RandomState(step * 10 + rank).randn(1, args.cols, args.rows).astype(np.float32)
        before = p.value.copy()
        trainer.train_minibatch({g: grad})
        deltas.append(before - p.value)
    _save(args.outdir, 'quant', deltas=np.array(deltas))


# ------------------------------------------------------------------ Fashion-MNIST accuracy

def fashion_mnist(args):
    sys.path.insert(0, os.path.join(HERE, '..', '..', 'examples', 'python'))
    import fashion_mnist_data
    import fashion_mnist_mlp
    C.cntk_py.set_fixed_random_seed(1)
    workers, rank = C.Communicator.num_workers(), C.Communicator.rank()
    x_train, y_train = fashion_mnist_data.load('train')
    x_test, y_test = fashion_mnist_data.load('test')
    x_train, x_test = x_train.reshape(-1, 784), x_test.reshape(-1, 784)
    y_1h = fashion_mnist_data.one_hot(y_train)
    features = C.input_variable(784, np.float32)
    labels = C.input_variable(10, np.float32)
    model = fashion_mnist_mlp.create_model()(features)
    loss = C.cross_entropy_with_softmax(model, labels)
    error = C.classification_error(model, labels)
    if args.learner == 'adam':
        local = C.adam(model.parameters, lr=C.learning_parameter_schedule(0.001), momentum=0.9,
                       variance_momentum=0.999, minibatch_size=C.learners.IGNORE)
    else:
        local = C.momentum_sgd(model.parameters, C.learning_parameter_schedule(args.lr), C.momentum_schedule(0.9))
    if args.mode == 'single':
        learner = local
    elif args.mode == 'bmuf':
        learner = C.block_momentum_distributed_learner(local, block_size=args.batch * workers * args.block_steps,
                                                       distributed_after=args.warm,
                                                       reset_sgd_momentum_after_aggregation=not args.keep_momentum)
    else:
        learner = C.data_parallel_distributed_learner(local, num_quantization_bits=args.bits,
                                                      distributed_after=args.warm)
    trainer = C.Trainer(model, (loss, error), [learner])
    n = len(x_train)
    # Data-parallel: each worker takes its share of each global minibatch of `batch` samples;
    # block momentum: each worker steps through its own half of the data with local minibatches.
    if args.mode == 'bmuf':
        per, step_size = args.batch, args.batch * workers
    else:
        per, step_size = args.batch // workers, args.batch
    # A warm start (CNTK's training_session): until `warm` samples, every worker trains on the
    # whole global minibatch alone, so that all start distributed training from the same model.
    steps = 0
    for epoch in range(args.epochs):
        order = np.random.RandomState(epoch).permutation(n)
        i = 0
        while i + args.batch <= n and (args.max_steps < 0 or steps < args.max_steps):
            if trainer.total_number_of_samples_seen < args.warm:
                idx, i = order[i:i + args.batch], i + args.batch
            else:
                idx, i = order[i + rank * per:i + (rank + 1) * per], i + step_size
            trainer.train_minibatch({features: x_train[idx], labels: y_1h[idx]})
            steps += 1
    if args.mode == 'bmuf':
        trainer.train_minibatch({})  # the end of the data: block momentum's last synchronization
    predictions = np.concatenate([np.argmax(model.eval({features: x_test[i:i + 1000]}), axis=1)
                                  for i in range(0, len(x_test), 1000)])
    accuracy = float(np.mean(predictions == y_test))
    counters = learner.communicator()._counters() if args.mode != 'single' else None
    sent = counters.bytes_sent if counters else 0
    overlapped = counters.overlapped_exchanges if counters else 0
    with open(os.path.join(args.outdir, 'fmnist_%s_%d.json' % (args.name or args.mode, rank)), 'w') as f:
        json.dump({'accuracy': accuracy, 'bytes_sent': sent, 'overlapped': overlapped, 'steps': steps,
                   'params': [float(np.sum(p.value)) for p in model.parameters]}, f)


# ------------------------------------------------------------------ faults and resume

def resume(args):
    """Data-parallel 1-bit training with momentum and dropout, checkpointed every `every` steps.
    --kill-at K: worker 1 kills itself (SIGKILL) at step K. --restore: starts from the checkpoint."""
    x, y, _, _, _ = _mlp(5)
    z = C.layers.Sequential([C.layers.Dense(16, activation=C.relu), C.layers.Dropout(0.3), C.layers.Dense(5)])(x)
    loss, err = C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)
    local = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.2), C.momentum_schedule(0.9))
    learner = C.data_parallel_distributed_learner(local, num_quantization_bits=1)
    trainer = C.Trainer(z, (loss, err), [learner])
    rank, workers = C.Communicator.rank(), C.Communicator.num_workers()
    ckpt = os.path.join(args.ckptdir, 'model')
    start = 0
    if args.restore:
        start = trainer.restore_from_checkpoint(ckpt)['next_step']
    per = args.batch // workers
    for step in range(start, args.steps):
        if step == args.kill_at and rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        if step == args.raise_at and rank == 1:
            raise RuntimeError("a failure in worker 1 at step %d" % step)
        xs, ys = _global_batch(step, args.batch)
        trainer.train_minibatch({x: xs[rank * per:(rank + 1) * per], y: ys[rank * per:(rank + 1) * per]})
        if (step + 1) % args.every == 0:
            trainer.save_checkpoint(ckpt, {'next_step': step + 1})
    _save(args.outdir, 'resume', **{'p%d' % i: p.value for i, p in enumerate(z.parameters)})


# ------------------------------------------------------------------ training_session partitions

def session(args):
    """training_session over a CTF file: each worker reads its own partition of every global
    minibatch; the test compares with one process reading the whole minibatches."""
    from cntk.io import MinibatchSource, CTFDeserializer, StreamDef, StreamDefs
    x, y, z, loss, err = _mlp(9)
    learner = C.sgd(z.parameters, C.learning_parameter_schedule(0.5))
    if not args.single:
        learner = C.data_parallel_distributed_learner(learner)
    trainer = C.Trainer(z, (loss, err), [learner])
    src = MinibatchSource(CTFDeserializer(args.ctf, StreamDefs(
        features=StreamDef(field='x', shape=20), labels=StreamDef(field='y', shape=5))), randomize=False,
        max_sweeps=2)
    C.training_session(trainer, src, args.batch, {x: src.streams.features, y: src.streams.labels}).train()
    _save(args.outdir, 'session', samples=trainer.total_number_of_samples_seen,
          minibatches=learner.total_number_of_minibatches_seen(),
          **{'p%d' % i: p.value for i, p in enumerate(z.parameters)})


# ------------------------------------------------------------------ block momentum: metrics over workers

def bmuf_metrics(args):
    """CNTK's bmuf_metrics_aggregation test on Linux: each worker trains on its own data and prints
    epoch summaries to its own log; with block momentum the summaries are averaged over workers."""
    x, y, z, loss, err = _mlp(11)
    rank = C.Communicator.rank()
    learner = C.block_momentum_distributed_learner(
        C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.0001), C.momentum_as_time_constant_schedule(1000)),
        block_size=1000, block_learning_rate=0.01, block_momentum_as_time_constant=1000)
    printer = C.logging.ProgressPrinter(freq=10, tag='Training', log_to_file=os.path.join(args.outdir, 'log'),
                                        rank=rank)
    trainer = C.Trainer(z, (loss, err), [learner], [printer])
    for i in range(args.steps):
        xs, ys = _global_batch(100 * rank + i, 10)
        trainer.train_minibatch({x: xs, y: ys})
        if i % 50 == 0:
            trainer.summarize_training_progress()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('job')
    ap.add_argument('outdir')
    ap.add_argument('--steps', type=int, default=50)
    ap.add_argument('--batch', type=int, default=64)
    ap.add_argument('--bits', type=int, default=32)
    ap.add_argument('--single', action='store_true')
    ap.add_argument('--rows', type=int, default=40)
    ap.add_argument('--cols', type=int, default=7)
    ap.add_argument('--mode', default='dp')
    ap.add_argument('--epochs', type=int, default=2)
    ap.add_argument('--ckptdir', default='.')
    ap.add_argument('--every', type=int, default=10)
    ap.add_argument('--kill-at', type=int, default=-1)
    ap.add_argument('--raise-at', type=int, default=-1)
    ap.add_argument('--restore', action='store_true')
    ap.add_argument('--ctf', default='')
    ap.add_argument('--learner', default='momentum')
    ap.add_argument('--lr', type=float, default=0.1)
    ap.add_argument('--warm', type=int, default=0)
    ap.add_argument('--block-steps', type=int, default=4)
    ap.add_argument('--max-steps', type=int, default=-1)
    ap.add_argument('--keep-momentum', action='store_true')
    ap.add_argument('--name', default='')
    ap.add_argument('--profile', default='')
    ap.add_argument('--early-exit', action='store_true')
    args = ap.parse_args()
    {'dp': data_parallel, 'quant': quantized_exchange, 'fmnist': fashion_mnist, 'resume': resume,
     'session': session, 'bmuf_metrics': bmuf_metrics}[args.job](args)
    C.Communicator.finalize()


if __name__ == '__main__':
    main()
