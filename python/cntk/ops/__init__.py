"""cntk.ops: the graph-building functions of CNTK 2.7.

Each function checks its arguments, then creates one primitive of the native op
catalogue (or a small composite of them, as CNTK does). Op families live in the
private modules imported below; this module holds the graph-structure functions.
"""
import numpy as np

from .. import _cntk
from ..axis import Axis
from ..internal import dtype_code, sanitize_shape, sanitize_inputs, as_variable
from ..variables import Parameter, Constant, Variable, _make_input
from .functions import Function, CloneMethod, load_model, UserFunction
from ._prim import prim

InferredDimension = _cntk.InferredDimension
FreeDimension = _cntk.FreeDimension


# ----------------------------------------------------------- variables

def input_variable(shape, dtype=np.float32, needs_gradient=False, is_sparse=False,
                   dynamic_axes=Axis.default_input_variable_dynamic_axes(), name=''):
    """An input variable with a batch axis (by default): data is fed for it at each call."""
    return _make_input(shape, dtype, needs_gradient, is_sparse, list(dynamic_axes), name)


def input(shape, dtype=np.float32, needs_gradient=False, is_sparse=False,
          dynamic_axes=Axis.default_input_variable_dynamic_axes(), name=''):
    """Deprecated name of input_variable."""
    return input_variable(shape, dtype, needs_gradient, is_sparse, dynamic_axes, name)


def output_variable(shape, dtype, dynamic_axes, needs_gradient=True, name=''):
    """An output variable (for user functions' infer_outputs)."""
    raise NotImplementedError("output_variable is only meaningful for UserFunction, which is not supported yet")


def placeholder(shape=None, dynamic_axes=None, name=''):
    """A placeholder: a stand-in variable to be bound with replace_placeholders or by calling the function."""
    shape = (_cntk.UnknownDimension,) if shape is None else sanitize_shape(shape)
    if dynamic_axes is None:
        dynamic_axes = Axis.unknown_dynamic_axes()
    return _cntk.placeholder(shape, list(dynamic_axes), name)


def parameter(shape=None, init=None, dtype=None, device=None, name=''):
    """A learnable parameter (see Parameter)."""
    return Parameter(shape, init, dtype, device, name)


def constant(value=None, shape=None, dtype=None, device=None, name=''):
    """A constant (see Constant)."""
    return Constant(value, shape, dtype, device, name)


# --------------------------------------------------- graph structure

def combine(*operands, **kwargs):
    """One Function whose outputs are the outputs of all operands (Functions or
    Variables, given as arguments or as one list): `combine([loss, metric])`."""
    name = kwargs.pop('name', '')
    if kwargs:
        raise TypeError("combine: unexpected arguments %s" % ", ".join(kwargs))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    if not operands:
        raise ValueError("combine: needs at least one Function or Variable")
    outs = []
    for o in operands:
        if isinstance(o, _cntk.Function):
            outs.extend(o.outputs)
        elif isinstance(o, _cntk.Variable):
            outs.append(o)
        else:
            raise TypeError("combine: operands must be Variables or Functions, not %s" % type(o).__name__)
    return _cntk.combine(outs, name)


def as_composite(root_function, name=''):
    """The graph below `root_function` as a composite Function."""
    if not isinstance(root_function, _cntk.Function):
        raise TypeError("as_composite needs a Function, not %s" % type(root_function).__name__)
    return _cntk.composite(root_function, name)


def as_block(composite, block_arguments_map, block_op_name, block_instance_name=''):
    """Wraps `composite` as a block op named `block_op_name`.

    `block_arguments_map` pairs each placeholder of the composite with the variable that feeds it.
    """
    if not isinstance(composite, _cntk.Function):
        raise TypeError("as_block needs a Function to encapsulate, not %s" % type(composite).__name__)
    if isinstance(block_arguments_map, dict):
        block_arguments_map = list(block_arguments_map.items())
    pairs = []
    for item in block_arguments_map:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise TypeError("as_block: block_arguments_map must hold (placeholder, variable) pairs")
        ph, v = item
        pairs.append((as_variable(ph), as_variable(v)))
    block = _cntk.block(composite, pairs, block_op_name, block_instance_name)
    return _cntk.composite(block, block_instance_name)


def alias(x, name=''):
    """A new function whose output is `x`'s, under a name of its own: a distinct node
    that can be substituted or looked up without touching `x`'s other uses."""
    return prim('NoOp', [x], {}, name)


def custom_proxy_op(custom_op, output_shape, output_data_type, *operands, **kw_name):
    """A stand-in op for a custom operation that another runtime computes (ONNX export);
    OpenCNTK cannot compute it."""
    raise NotImplementedError("custom_proxy_op: custom proxy operations are not supported")


def associative_multi_arg(f):
    """Turns a binary op into one that takes any number of operands, folding them in a balanced tree."""
    def multi(*operands, **kwargs):
        name = kwargs.pop('name', '')
        if kwargs:
            raise TypeError("unexpected arguments %s" % list(kwargs))
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = operands[0]
        operands = list(operands)
        if not operands:
            raise ValueError("%s needs at least one operand" % f.__name__)
        if len(operands) == 1:
            return alias(operands[0], name)  # a Function, as for several operands
        while len(operands) > 2:
            operands = [f(operands[i], operands[i + 1]) if i + 1 < len(operands) else operands[i]
                        for i in range(0, len(operands), 2)]
        return f(operands[0], operands[1], name=name)
    multi.__name__ = f.__name__
    multi.__doc__ = f.__doc__
    return multi


from ._elementwise import *  # noqa: E402,F401,F403
from ._linalg import *  # noqa: E402,F401,F403
from ._reduce import *  # noqa: E402,F401,F403
from ._movement import *  # noqa: E402,F401,F403
from ._nn import *  # noqa: E402,F401,F403
from ._random import *  # noqa: E402,F401,F403
from . import sequence  # noqa: E402,F401


@associative_multi_arg
def _sum(left, right, name=''):
    return plus(left, right, name=name)


def sum(*operands, **kwargs):
    """Elementwise sum of any number of operands."""
    return _sum(*operands, **kwargs)


def mean(*operands, **kwargs):
    """Elementwise mean of any number of operands."""
    name = kwargs.pop('name', '')
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return element_times(_sum(*operands), 1.0 / len(operands), name=name)
