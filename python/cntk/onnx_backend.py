"""
ONNX's backend interface (``onnx.backend.base.Backend``) over OpenCNTK's ONNX reader.

``prepare(model)`` reads the model with the C++ reader (the same one ``Function.load(...,
format=ModelFormat.ONNX)`` uses) and returns a representation whose ``run(inputs)`` feeds the
graph inputs in the model's order and returns every graph output, with the element type the
model declares for it (the engine computes integers and booleans as float32; they are rounded
back here).
"""

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from . import cntk_py as _cntk_py  # noqa: F401  (loads the extension)
from .ops.functions import load_model, ModelFormat

__all__ = ['CNTKBackend', 'CNTKBackendRep', 'prepare', 'run_model', 'run_node', 'supports_device']


def _np_type(elem_type):
    return helper.tensor_dtype_to_np_dtype(elem_type)


def _to_declared(x, elem_type):
    """The engine's float result as the ONNX element type the model declares."""
    x = np.asarray(x)
    if elem_type in (TensorProto.UNDEFINED, TensorProto.STRING):
        return x
    dt = _np_type(elem_type)
    if dt == np.bool_:
        return x != 0
    if np.issubdtype(dt, np.integer):
        return np.rint(x).astype(dt)
    return x.astype(dt)


class CNTKBackendRep(BackendRep):
    """A loaded model: ``run`` evaluates it on the inputs in the model's graph-input order."""

    def __init__(self, function, input_names, output_types):
        self.function = function
        by_name = {a.name: a for a in function.arguments}
        missing = [n for n in input_names if n not in by_name]
        # Inputs no node reads are not arguments of the function; they are accepted and ignored.
        self.inputs = [by_name.get(n) for n in input_names]
        self.output_types = output_types
        del missing

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            inputs = [inputs[a.name] for a in self.inputs if a is not None]
        elif not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        feed = {}
        for arg, x in zip(self.inputs, inputs):
            if arg is None:
                continue
            feed[arg] = np.ascontiguousarray(np.asarray(x), dtype=arg.dtype)
        outs = self.function.outputs
        res = self.function.eval(feed, outputs=list(outs), as_numpy=True) if feed else \
            self.function.eval(outputs=list(outs), as_numpy=True)
        if not isinstance(res, dict):
            res = {outs[0]: res}
        return [_to_declared(res[o], t) for o, t in zip(outs, self.output_types)]


class CNTKBackend(Backend):
    """ONNX's backend interface over OpenCNTK's ONNX reader (CPU)."""

    @classmethod
    def prepare(cls, model, device='CPU', **kwargs):
        if not cls.supports_device(device):
            raise RuntimeError("cntk.onnx_backend: device %r is not supported (CPU only)" % (device,))
        if isinstance(model, (str, bytes)):
            model = onnx.load_model_from_string(model) if isinstance(model, bytes) else onnx.load(model)
        init = {t.name for t in model.graph.initializer}
        input_names = [vi.name for vi in model.graph.input if vi.name not in init]
        output_types = [vi.type.tensor_type.elem_type for vi in model.graph.output]
        function = load_model(model.SerializeToString(), format=ModelFormat.ONNX)
        return CNTKBackendRep(function, input_names, output_types)

    @classmethod
    def run_model(cls, model, inputs, device='CPU', **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device='CPU', outputs_info=None, **kwargs):
        """A one-node model of ``node`` (inputs typed by the arrays given; outputs by
        ``outputs_info``, a list of (element type, shape), else float)."""
        inputs = [np.asarray(x) for x in inputs]
        ins = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
               for name, x in zip(node.input, inputs) if name]
        if outputs_info is None:
            outputs_info = [(TensorProto.FLOAT, None)] * len(node.output)
        outs = [helper.make_tensor_value_info(name, t, s) for name, (t, s) in zip(node.output, outputs_info) if name]
        graph = helper.make_graph([node], 'run_node_' + node.op_type, ins, outs)
        model = helper.make_model(graph)
        return cls.run_model(model, [x for name, x in zip(node.input, inputs) if name], device)

    @classmethod
    def supports_device(cls, device):
        return Device(device).type == DeviceType.CPU


prepare = CNTKBackend.prepare
run_model = CNTKBackend.run_model
run_node = CNTKBackend.run_node
supports_device = CNTKBackend.supports_device
