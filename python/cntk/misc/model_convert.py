"""Model files to ONNX: any model OpenCNTK loads (CNTK v2 files, CNTK v1 .dnn files, ONNX
files) written as an ONNX model. `python -m cntk convert MODEL OUT.onnx [--opset N]` runs it."""
import os


def convert_model_file(model, out, opset=None):
    """Loads the model file ``model`` (an ONNX file where its name ends in ``.onnx``, else a
    CNTK v2 or v1 model file) and writes it to ``out`` as ONNX (``opset``: 17 unless given).
    Returns the loaded Function."""
    from .. import ModelFormat
    from ..ops.functions import load_model
    path = os.fspath(model)
    fmt = ModelFormat.ONNX if path.lower().endswith('.onnx') else ModelFormat.CNTKv2
    f = load_model(path, format=fmt)
    f.save(os.fspath(out), format=ModelFormat.ONNX, opset=opset)
    return f
