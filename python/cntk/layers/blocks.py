"""Basic blocks shared by the layers: identity, Stabilizer, forward declarations,
and the helpers that turn a Python function into a layer (a block Function)."""
import inspect

import numpy as np

from .. import _cntk
from ..default_options import default_override_or, get_default_override
from ..initializer import initializer_with_rank, _is_initializer
from ..ops import (InferredDimension, combine, placeholder, as_block, log_add_exp, element_times,
                   element_divide, alias)
from ..ops.functions import Function, _from_python
from ..ops.functions import BlockFunction  # noqa: F401  (CNTK kept this older spelling here)
from ..variables import Parameter, Constant

_INFERRED = (InferredDimension,)


class UntestedBranchError(NotImplementedError):
    """A layer option combination that is not supported."""

    def __init__(self, name):
        super(UntestedBranchError, self).__init__("untested or unsupported layer option: %s" % name)


def identity(keep):
    """The identity function: returns its argument (usable as an activation)."""
    if isinstance(keep, (_cntk.Variable, _cntk.Function)):
        return combine([keep])
    return keep


def _arity(f):
    if isinstance(f, _cntk.Function):
        return len(f.arguments)
    try:
        params = inspect.signature(f).parameters.values()
        return len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                    and p.default is p.empty])
    except (TypeError, ValueError):
        return 1


def _apply(f, args):
    """Calls a layer (Function or Python callable) on graph arguments."""
    out = f(*args)
    return out


def layer(op_name, f, name=''):
    """Turns `f` (a Python function over variables) into a block Function named `op_name`:
    a layer whose inputs are placeholders, bound when the layer is called."""
    return _from_python(f, make_block=True, op_name=op_name, name=name)


def _initializer_for(init, output_rank=None, filter_rank=None):
    """An initializer spec from what a layer was given: an initializer, or a scalar/array value."""
    if _is_initializer(init):
        return initializer_with_rank(init, output_rank=output_rank, filter_rank=filter_rank)
    return init


class ForwardDeclaration(object):
    """A placeholder to be resolved later (for graphs that refer to themselves)."""

    def __new__(cls, name='forward_declaration'):
        ph = placeholder(name=name)
        return ph


def Stabilizer(steepness=4, enable_self_stabilization=default_override_or(True), name=''):
    """Self-stabilization: scales the input by a learned positive scalar, softplus(steepness * p) / steepness,
    initialized so that the scale starts at 1."""
    enable_self_stabilization = get_default_override(Stabilizer, enable_self_stabilization=enable_self_stabilization)
    if not enable_self_stabilization:
        return layer('Stabilizer', lambda x: identity(x), name)
    # softplus(steepness * p) / steepness == 1  <=>  p = log(exp(steepness) - 1) / steepness
    init = float(np.log(np.exp(steepness) - 1) / steepness)
    dtype = get_default_override(Stabilizer, dtype=default_override_or(np.float32))
    param = Parameter((), init=init, dtype=dtype, name='alpha')

    def stabilize(x):
        beta = element_divide(log_add_exp(0, element_times(param, float(steepness))), float(steepness))
        return element_times(beta, x)
    return layer('Stabilizer', stabilize, name)


__all__ = ['UntestedBranchError', 'identity', 'Stabilizer', 'ForwardDeclaration', 'LSTM', 'GRU', 'RNNStep', 'RNNUnit']

from .recurrent_blocks import LSTM, GRU, RNNStep, RNNUnit  # noqa: E402  (they build on the blocks above)
