"""Distributed training (MPI data-parallel, 1-bit SGD, block momentum): not implemented yet."""


def _not_yet(name):
    def f(*args, **kwargs):
        raise NotImplementedError("cntk.train.distributed.%s is not implemented yet (distributed training)" % name)
    f.__name__ = name
    return f


for _n in ['WorkerDescriptor', 'Communicator', 'DistributedLearner', 'data_parallel_distributed_learner',
           'block_momentum_distributed_learner', 'mpi_communicator']:
    globals()[_n] = _not_yet(_n)
