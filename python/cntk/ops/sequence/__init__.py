"""cntk.ops.sequence: variables with a sequence axis and the ops over it.

The ops that select, reduce and reshape sequences are in _seqops.py.
"""
import numpy as np

from ...axis import Axis
from ...variables import _make_input


def input_variable(shape, dtype=np.float32, needs_gradient=False, is_sparse=False,
                   sequence_axis=Axis.default_dynamic_axis(), name=''):
    """An input variable with a batch axis and a sequence axis."""
    return _make_input(shape, dtype, needs_gradient, is_sparse, [Axis.default_batch_axis(), sequence_axis], name)


def input(shape, dtype=np.float32, needs_gradient=False, is_sparse=False,
          sequence_axis=Axis.default_dynamic_axis(), name=''):
    """Deprecated name of input_variable."""
    return input_variable(shape, dtype, needs_gradient, is_sparse, sequence_axis, name)


def _not_yet(name):
    def f(*args, **kwargs):
        raise NotImplementedError("cntk.sequence.%s is not implemented yet (sequences and recurrence)" % name)
    f.__name__ = name
    return f


for _n in ['future_value', 'past_value', 'delay']:
    globals()[_n] = _not_yet(_n)


from ._seqops import *  # noqa: E402,F401,F403
