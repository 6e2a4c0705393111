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
from .functions import Function, CloneMethod, load_model, UserFunction, ModelFormat, BlockFunction  # noqa: F401
from .functions import register_native_user_function, native_user_function  # noqa: F401  (CNTK's names here)
from ._prim import prim

InferredDimension = _cntk.InferredDimension
FreeDimension = _cntk.FreeDimension


# ----------------------------------------------------------- variables

def input_variable(shape, dtype=None, needs_gradient=False, is_sparse=False,
                   dynamic_axes=None, name=''):
    """An input variable with a batch axis (by default): data is fed for it at each call.

    `dynamic_axes` None is CNTK's default, the batch axis alone. The default is made per
    call: an Axis kept in the signature would live until the interpreter's teardown and be
    reported as a leak."""
    if dynamic_axes is None:
        dynamic_axes = [Axis.default_batch_axis()]
    # As in CNTK, default_options(dtype=...) also types the inputs made without one.
    from ..default_options import get_default_override, default_override_or
    dtype = dtype if dtype is not None else get_default_override(None, dtype=default_override_or(np.float32))
    return _make_input(shape, dtype, needs_gradient, is_sparse, list(dynamic_axes), name)


def input(shape, dtype=np.float32, needs_gradient=False, is_sparse=False,
          dynamic_axes=None, name=''):
    """Deprecated name of input_variable."""
    return input_variable(shape, dtype, needs_gradient, is_sparse, dynamic_axes, name)


def output_variable(shape, dtype, dynamic_axes, needs_gradient=True, name=''):
    """An output variable that no function owns yet: what a UserFunction's infer_outputs
    returns to declare the type (shape, dtype, dynamic axes) of each of its outputs."""
    shape = sanitize_shape(shape)
    if isinstance(dynamic_axes, _cntk.Axis):
        dynamic_axes = [dynamic_axes]
    dynamic_axes = list(dynamic_axes or [])
    for a in dynamic_axes:
        if not isinstance(a, _cntk.Axis) or not a.is_dynamic_axis:
            raise TypeError("output_variable: dynamic_axes must be dynamic Axis objects, got %r" % (a,))
    if len(dynamic_axes) > 2:
        raise ValueError("output_variable: at most two dynamic axes (batch and sequence), got %d" % len(dynamic_axes))
    if not isinstance(name, str):
        raise TypeError("output_variable: name must be a string, not %s" % type(name).__name__)
    return _cntk.output_variable(shape, dtype_code(dtype), dynamic_axes, bool(needs_gradient), name)


def placeholder(shape=None, dynamic_axes=None, name=''):
    """A placeholder: a stand-in variable to be bound with replace_placeholders or by calling the function."""
    if isinstance(shape, str) and not name:
        # placeholder('name'): CNTK 2.7 accepted a string in the shape's place (and gave a
        # placeholder of unknown shape); it is taken as the name here.
        shape, name = None, shape
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


class _CustomProxyOp(UserFunction):
    """The node custom_proxy_op creates: typed, with no kernel."""

    def __init__(self, custom_op, output_shape, output_data_type, operands, name):
        super(_CustomProxyOp, self).__init__(list(operands), name=name)
        self.custom_op = custom_op
        self.output_shape = output_shape
        self.output_data_type = output_data_type

    @property
    def op_name(self):
        return self.custom_op

    def infer_outputs(self):
        axes = max((list(i.dynamic_axes) for i in self.inputs), key=len, default=[])
        return [output_variable(self.output_shape, self.output_data_type, axes)]

    def forward(self, arguments, device=None, outputs_to_retain=None):
        raise NotImplementedError("custom_proxy_op: '%s' is a custom operation without a kernel in OpenCNTK; "
                                  "the proxy only marks it in the graph (for export to ONNX) and cannot be "
                                  "evaluated" % self.custom_op)

    def backward(self, state, root_gradients, variables=None):
        raise NotImplementedError("custom_proxy_op: '%s' has no gradient in OpenCNTK" % self.custom_op)

    def clone(self, cloned_inputs):
        return _CustomProxyOp(self.custom_op, self.output_shape, self.output_data_type, cloned_inputs, self.name)

    def serialize(self):
        return {'custom_op': self.custom_op, 'output_shape': list(self.output_shape),
                'output_data_type': np.dtype(self.output_data_type).name}

    @staticmethod
    def deserialize(inputs, name, state):
        return _CustomProxyOp(state['custom_op'], tuple(state['output_shape']), np.dtype(state['output_data_type']),
                              inputs, name)


def custom_proxy_op(custom_op, output_shape, output_data_type, *operands, **kw_name):
    """A stand-in for a custom operation `custom_op` that another runtime computes (it
    marks the op for ONNX export): a node whose op name is `custom_op` and whose output
    has `output_shape` and `output_data_type` (and the operands' dynamic axes).
    OpenCNTK has no kernel for it: evaluating it raises NotImplementedError."""
    name = kw_name.pop('name', '')
    if kw_name:
        raise TypeError("custom_proxy_op: unexpected arguments %s" % ", ".join(kw_name))
    if not isinstance(custom_op, str) or not custom_op:
        raise TypeError("custom_proxy_op: custom_op must be a non-empty string naming the operation")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    ops = [as_variable(o) for o in operands]
    return _CustomProxyOp(custom_op, sanitize_shape(output_shape), output_data_type, ops, name)


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
    multi.__wrapped__ = f  # inspect.signature reports f's (left, right, name), as layers read it
    return multi


from ._elementwise import *  # noqa: E402,F401,F403
from ._linalg import *  # noqa: E402,F401,F403
from ._reduce import *  # noqa: E402,F401,F403
from ._movement import *  # noqa: E402,F401,F403
from ._nn import *  # noqa: E402,F401,F403
from ._random import *  # noqa: E402,F401,F403
from ._norm import *  # noqa: E402,F401,F403
from ._sequence_axes import *  # noqa: E402,F401,F403
from ._ctc import *  # noqa: E402,F401,F403
from ._conv import *  # noqa: E402,F401,F403
from ._rnn_stack import *  # noqa: E402,F401,F403
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
