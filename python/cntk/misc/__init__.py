"""Model conversion helpers (CNTK's cntk.misc): `convert` substitutes the functions of a
graph that a filter selects (CNTK's form, `convert(root_func, filter, converter)`) or, given
a model file and an output path, writes the model as ONNX (`convert(model, out, opset=None)`);
`convert_optimized_rnnstack` rewrites optimized_rnnstack ops into Recurrence compositions
with the same weights."""
import os

from . import converter as _converter
from .model_convert import convert_model_file
from .optimized_rnnstack_converter import convert_optimized_rnnstack  # noqa: F401


def convert(root_func, filter=None, converter=None, opset=None):
    """CNTK's graph conversion where ``root_func`` is a Function; where it is a model file path,
    the model written as ONNX to the path ``filter`` (see :func:`convert_model_file`)."""
    if isinstance(root_func, (str, bytes)) or hasattr(root_func, '__fspath__'):
        if filter is None or converter is not None:
            raise TypeError("convert(model, out, opset=None): give the model file and the ONNX file to write")
        return convert_model_file(root_func, filter, opset)
    if opset is not None:
        raise TypeError("convert: opset applies only to model files")
    return _converter.convert(root_func, filter, converter)


convert.__wrapped__ = _converter.convert
