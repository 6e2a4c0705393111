"""The one bridge from Python op functions to the native op catalogue."""
from .. import _cntk
from ..internal import sanitize_inputs


def prim(op_name, inputs, attributes=None, name=''):
    """Creates the primitive `op_name` over `inputs` and returns it as a composite Function.

    Inputs may be Variables, Functions (their output is used) or data (becomes a Constant).
    """
    variables = sanitize_inputs(*inputs)
    f = _cntk.primitive(op_name, variables, attributes or {}, name or '')
    return _cntk.composite(f, name or '')
