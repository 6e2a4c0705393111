"""CNTK's internal utilities that CNTK code and CNTK's tests import from
cntk.internal.utils: the data type of mixed arguments, a one-call forward/backward
(`eval`), ones like a batch, conversion of Python values for CNTK dictionaries."""
import numpy as np

from .. import _cntk
from .sanitize import sanitize_precision, DT_FLOAT, DT_DOUBLE, DT_FLOAT16

_NP_OF = {DT_DOUBLE: np.float64, DT_FLOAT: np.float32, DT_FLOAT16: np.float16}


def get_data_type(*args):
    """The widest float type among the arguments: Variables, Functions (their single
    output), Values and NDArrayViews decide first; otherwise NumPy arrays and numbers
    (anything else counts as float32). Placeholders are ignored. None if nothing decides."""
    engine, numpy = set(), set()
    for arg in args:
        if isinstance(arg, _cntk.Variable) and arg.is_placeholder:
            continue
        if isinstance(arg, (_cntk.Variable, _cntk.Value, _cntk.NDArrayView)):
            engine.add(_NP_OF.get(arg.get_data_type()))
        elif isinstance(arg, _cntk.Function):
            outs = arg.outputs
            if len(outs) > 1:
                raise ValueError('expected single output, but got %i' % len(outs))
            engine.add(_NP_OF.get(outs[0].get_data_type()))
        elif isinstance(arg, (np.ndarray, np.inexact)):
            if arg.dtype not in (np.float32, np.float64, np.float16):
                raise ValueError('NumPy type "%s" is not supported' % arg.dtype)
            numpy.add(arg.dtype.type)
        else:
            np.asarray(arg, dtype=np.float32)
            numpy.add(np.float32)
    for found in (engine, numpy):
        if found:
            for t in (np.float64, np.float32, np.float16):
                if t in found:
                    return t
    return None


def _ones_like(batch, precision):
    """A batch (list of sequences) of the same shapes with every value 1."""
    return [np.ones_like(sample, dtype=sanitize_precision(precision)) for sample in batch]


def eval(op, arguments=None, precision=None, device=None, backward_pass=False, expected_backward=None):
    """Forward (and with backward_pass, backward from ones) of `op` over `arguments`:
    (forward outputs, backward outputs or None), each a dict keyed by variable."""
    if backward_pass:
        state, forward_output = op.forward(arguments, op.outputs, op.outputs, device=device)
        if expected_backward is None:
            expected_backward = arguments
        root_gradients = {v: _ones_like(o, precision) for v, o in forward_output.items()}
        return forward_output, op.backward(state, root_gradients, expected_backward)
    state, forward_output = op.forward(arguments, op.outputs, None, device=device)
    return forward_output, None


def _plain_dict_value(py_value):
    """A Python value as a CNTK dictionary holds it: dicts and lists converted element
    by element, NumPy arrays as NDArrayViews, everything else as it is."""
    if isinstance(py_value, dict):
        return {k: _plain_dict_value(v) for k, v in py_value.items()}
    if isinstance(py_value, list):
        return [_plain_dict_value(v) for v in py_value]
    if isinstance(py_value, np.ndarray):
        from ..core import NDArrayView
        return NDArrayView.from_dense(py_value)
    return py_value


def _to_cntk_dict_value(py_value):
    """A Python value as a DictionaryValue (CNTK's wrapper of one dictionary entry)."""
    from .._dictionary import DictionaryValue
    return DictionaryValue(_plain_dict_value(py_value))


def _py_dict_to_cntk_dict(py_dict):
    from .._dictionary import Dictionary
    return Dictionary({k: _plain_dict_value(v) for k, v in py_dict.items()})
