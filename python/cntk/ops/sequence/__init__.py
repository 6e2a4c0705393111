"""cntk.ops.sequence: variables with a sequence axis and the ops over it.

The ops that select, reduce and reshape sequences are in _seqops.py.
"""
import numpy as np

from ...axis import Axis
from ...variables import _make_input


def input_variable(shape, dtype=None, needs_gradient=False, is_sparse=False,
                   sequence_axis=None, name=''):
    """An input variable with a batch axis and a sequence axis (`sequence_axis` None:
    `Axis.default_dynamic_axis()`, made per call as in `cntk.input_variable`)."""
    if sequence_axis is None:
        sequence_axis = Axis.default_dynamic_axis()
    # As in CNTK, default_options(dtype=...) also types the inputs made without one.
    from ...default_options import get_default_override, default_override_or
    dtype = dtype if dtype is not None else get_default_override(None, dtype=default_override_or(np.float32))
    return _make_input(shape, dtype, needs_gradient, is_sparse, [Axis.default_batch_axis(), sequence_axis], name)


def input(shape, dtype=np.float32, needs_gradient=False, is_sparse=False,
          sequence_axis=None, name=''):
    """Deprecated name of input_variable."""
    return input_variable(shape, dtype, needs_gradient, is_sparse, sequence_axis, name)


# ---- delays: past_value, future_value, delay ------------------------------------

def _delay_args(op, x, initial_state, time_step):
    import numbers
    if isinstance(time_step, bool) or not isinstance(time_step, numbers.Integral):
        raise TypeError("%s: time_step must be an integer, not %s" % (op, type(time_step).__name__))
    if time_step < 0:
        raise ValueError("%s: time_step must not be negative, got %d" % (op, time_step))
    if initial_state is None:
        initial_state = 0  # a constant of x's type (prim gives constants the type of the variables)
    return x, initial_state, int(time_step)


def past_value(x, initial_state=None, time_step=1, name=''):
    """The sequence `x` delayed by `time_step` steps: item t of the output is item
    t - time_step of `x`, and the first `time_step` items of each sequence are
    `initial_state` (default 0; a scalar, a tensor broadcast to the item shape, or a
    per-sequence value with a batch axis but no sequence axis)."""
    from .._prim import prim
    x, initial_state, time_step = _delay_args('past_value', x, initial_state, time_step)
    return prim('PastValue', [x, initial_state], {'offset': time_step}, name)


def future_value(x, initial_state=None, time_step=1, name=''):
    """The sequence `x` advanced by `time_step` steps: item t of the output is item
    t + time_step of `x`, and the last `time_step` items of each sequence (which has
    its own length) are `initial_state` (default 0)."""
    from .._prim import prim
    x, initial_state, time_step = _delay_args('future_value', x, initial_state, time_step)
    return prim('FutureValue', [x, initial_state], {'offset': time_step}, name)


def delay(x, initial_state=None, time_step=1, name=''):
    """past_value for time_step > 0, future_value(-time_step) for time_step < 0, and
    `x` itself for 0."""
    import numbers
    if isinstance(time_step, bool) or not isinstance(time_step, numbers.Integral):
        raise TypeError("delay: time_step must be an integer, not %s" % type(time_step).__name__)
    if time_step > 0:
        return past_value(x, initial_state=initial_state, time_step=time_step, name=name)
    if time_step < 0:
        return future_value(x, initial_state=initial_state, time_step=-time_step, name=name)
    from .. import alias, combine
    from ...internal import sanitize_inputs
    x, = sanitize_inputs(x)
    return alias(x, name=name) if name else combine([x])


from ._seqops import *  # noqa: E402,F401,F403
