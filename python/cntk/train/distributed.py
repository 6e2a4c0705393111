"""Distributed training over MPI: data-parallel SGD (exact, or 1-bit SGD and its other bit
widths), and block momentum (BMUF).

Start the same script once per worker with ``mpiexec -n N python train.py``; every worker
builds its Trainer with a distributed learner wrapping its local learner, reads its own part
of the data (``training_session`` and ``Function.train`` do that by worker rank) and calls
:meth:`Communicator.finalize` at the end. Started without mpiexec, a script is a world of one
worker. The engine (src/distributed) does the communication; this module gives it CNTK 2.7's
names.
"""
import sys

from .. import _cntk

__all__ = ['WorkerDescriptor', 'Communicator', 'DistributedLearner', 'data_parallel_distributed_learner',
           'block_momentum_distributed_learner', 'mpi_communicator']

#: A worker of the job: ``global_rank`` (its MPI rank), ``host_id`` (its host's name), ``is_main()``.
WorkerDescriptor = _cntk.WorkerDescriptor

#: The workers' communicator: ``workers()``, ``current_worker()``, ``barrier()``, ``is_main()``,
#: and the static ``rank()``, ``num_workers()`` and ``finalize()`` (call it once all
#: communication is over; no communication is possible after it).
Communicator = _cntk.Communicator

#: A learner that combines the workers' work: ``communicator()``,
#: ``total_number_of_samples_seen`` (over all workers), ``set_as_metric_aggregator()`` (with
#: several distributed learners in one Trainer, the one whose loss and metric sums the Trainer
#: reports).
DistributedLearner = _cntk.DistributedLearner


def _check_learner(learner, what):
    if isinstance(learner, _cntk.DistributedLearner):
        raise ValueError("%s: the learner is already distributed; pass the local learner" % what)
    native = getattr(learner, '_native', learner)  # a UserLearner
    if not isinstance(native, _cntk.Learner):
        raise TypeError("%s: learner must be a learner from cntk.learners, not %s" % (what, type(learner).__name__))
    return native


def _count(value, name, what):
    if isinstance(value, bool) or int(value) != value or value < 0:
        raise ValueError("%s: %s must be a non-negative integer, not %r" % (what, name, value))
    return int(value)


def data_parallel_distributed_learner(learner, distributed_after=0, num_quantization_bits=32,
                                      use_async_buffered_parameter_update=False):
    """A data-parallel distributed learner: the gradients are summed over all workers before
    every update of the local learner, so that every worker applies the same update.

    Args:
        learner: the local learner (e.g. :func:`~cntk.learners.sgd`).
        distributed_after (int): samples (over all workers) trained locally before the workers'
         gradients are combined.
        num_quantization_bits (int): bits per gradient value on the wire: 32 sums exactly; 1
         (1-bit SGD), 2, 4, 8 or 16 quantize each column of a gradient with error feedback
         (what quantization loses is added to the next minibatch's gradient).
        use_async_buffered_parameter_update (bool): must be False (CNTK 2.7 did not support it).

    Returns:
        :class:`DistributedLearner`
    """
    what = 'data_parallel_distributed_learner'
    native = _check_learner(learner, what)
    bits = _count(num_quantization_bits, 'num_quantization_bits', what)
    if bits < 32:
        comm = _cntk.quantized_mpi_communicator(True, True, bits)
    else:
        comm = _cntk.mpi_communicator()
    return _keep(_cntk.data_parallel_distributed_learner(comm, native, _count(distributed_after, 'distributed_after',
                                                                                what),
                                                         bool(use_async_buffered_parameter_update)), learner)


def block_momentum_distributed_learner(learner, block_size, block_momentum_as_time_constant=None,
                                       use_nestrov_momentum=True, reset_sgd_momentum_after_aggregation=True,
                                       block_learning_rate=1.0, distributed_after=0):
    """A block-momentum (BMUF) distributed learner (K. Chen and Q. Huo, ICASSP 2016): each worker
    trains locally for ``block_size / workers`` samples, then the changes of the workers' models
    are summed, filtered with a block-level momentum and applied to the model of the previous
    block, on every worker alike.

    Args:
        learner: the local learner.
        block_size (int): samples (over all workers) between model aggregations.
        block_momentum_as_time_constant (float): the block momentum as a time constant in
         samples; None: a block momentum of ``1 - 1 / workers``.
        use_nestrov_momentum (bool): apply the block momentum Nesterov-style.
        reset_sgd_momentum_after_aggregation (bool): reset the local learner's momentum after
         each aggregation.
        block_learning_rate (float): the gain on the summed block change.
        distributed_after (int): samples trained locally before block momentum starts.

    Returns:
        :class:`DistributedLearner`
    """
    what = 'block_momentum_distributed_learner'
    native = _check_learner(learner, what)
    tc = -1.0 if block_momentum_as_time_constant is None else float(block_momentum_as_time_constant)
    if block_momentum_as_time_constant is not None and tc < 0:
        raise ValueError("%s: block_momentum_as_time_constant must not be negative" % what)
    return _keep(_cntk.block_momentum_distributed_learner(
        _cntk.mpi_communicator(), native, _count(distributed_after, 'distributed_after', what),
        _count(block_size, 'block_size', what), tc, bool(use_nestrov_momentum),
        bool(reset_sgd_momentum_after_aggregation), float(block_learning_rate)), learner)


def mpi_communicator():
    """The communicator of all workers (exact, 32-bit aggregation)."""
    return _cntk.mpi_communicator()


def _keep(distributed, local):
    distributed._local = local  # a UserLearner's Python side must outlive the native learner
    return distributed


# A worker that dies of an exception ends the whole job at once, naming itself, instead of
# leaving the other workers waiting for it in their next exchange.
def _install_abort_on_error():
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        if _cntk.number_of_workers() > 1:
            _cntk._abort_job(1, "cntk.train.distributed: worker %d of %d failed with %s; ending the job"
                             % (_cntk.worker_global_rank(), _cntk.number_of_workers(), kind.__name__))

    sys.excepthook = hook


_install_abort_on_error()
