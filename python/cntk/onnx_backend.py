"""
ONNX's backend interface (``onnx.backend.base.Backend``) over OpenCNTK's ONNX reader.

``prepare(model)`` reads the model with the C++ reader (the same one ``Function.load(...,
format=ModelFormat.ONNX)`` uses) and returns a representation whose ``run(inputs)`` feeds the
graph inputs in the model's order and returns every graph output, with the element type the
model declares for it (the engine computes integers and booleans as float32; they are rounded
back here).

The reader needs some inputs' values while it reads (a shape, an axis, a count ``k``). Where a
model feeds such a value as a graph input and cannot be read with it as an argument, the
model is read at ``run`` time with such inputs bound to the values given (integer, boolean and
scalar inputs; failing that, vectors too; failing that, every input: an op whose output's shape
depends on its input's values, such as Unique), once per distinct set of those values.
"""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
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

    def __init__(self, model, function=None, error=None):
        self.model = model
        init = {t.name for t in model.graph.initializer}
        self.input_infos = [vi for vi in model.graph.input if vi.name not in init]
        self.output_types = [vi.type.tensor_type.elem_type for vi in model.graph.output]
        self.function = function
        self._error = error
        self._bound = {}

    def _specialized(self, values):
        """The model read with its parameter-like inputs bound to ``values``: first the integer,
        boolean and scalar ones, then also the vectors (scales, roi), then all of them; the
        function and the inputs left to feed."""
        error = self._error
        for level in (1, 2, 3):
            bound = [_bindable(vi, x, level) for vi, x in zip(self.input_infos, values)]
            if not any(bound):
                continue
            key = (level,) + tuple((vi.name, x.dtype.str, x.shape, x.tobytes())
                                   for vi, x, b in zip(self.input_infos, values, bound) if b)
            if key not in self._bound:
                m = onnx.ModelProto()
                m.CopyFrom(self.model)
                names = {vi.name for vi, b in zip(self.input_infos, bound) if b}
                kept = [vi for vi in m.graph.input if vi.name not in names]
                del m.graph.input[:]
                m.graph.input.extend(kept)
                for vi, x, b in zip(self.input_infos, values, bound):
                    if b:
                        m.graph.initializer.append(
                            numpy_helper.from_array(x.astype(_np_type(vi.type.tensor_type.elem_type)), vi.name))
                try:
                    self._bound[key] = load_model(m.SerializeToString(), format=ModelFormat.ONNX)
                except ValueError as e:
                    self._bound[key] = e
            if isinstance(self._bound[key], Exception):
                error = self._bound[key]  # the reader's complaint with the values known
            else:
                keep = [not b for b in bound]
                return self._bound[key], [x for x, k in zip(values, keep) if k], \
                    [vi for vi, k in zip(self.input_infos, keep) if k]
        raise error

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            inputs = [inputs[vi.name] for vi in self.input_infos]
        elif not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        values = [np.asarray(x) for x in inputs]
        function, infos = self.function, self.input_infos
        if function is None:
            function, values, infos = self._specialized(values)
        by_name = {a.name: a for a in function.arguments}
        # Inputs no node reads are not arguments of the function; they are accepted and ignored.
        feed = {by_name[vi.name]: np.array(x, dtype=by_name[vi.name].dtype, order="C")
                for vi, x in zip(infos, values) if vi.name in by_name}
        outs = function.outputs
        res = function.eval(feed, outputs=list(outs), as_numpy=True) if feed else \
            function.eval(outputs=list(outs), as_numpy=True)
        if not isinstance(res, dict):
            res = {outs[0]: res}
        return [_to_declared(res[o], t) for o, t in zip(outs, self.output_types)]


def _bindable(vi, x, level):
    """Whether an input may carry a value the reader needs while reading: integer, boolean or
    scalar inputs (shapes, axes, counts, depths); at level 2 also vectors (scales, roi); at
    level 3 any input (values that decide an output's shape)."""
    t = vi.type.tensor_type.elem_type
    if level >= 3 or t == TensorProto.BOOL or np.issubdtype(_np_type(t), np.integer) or x.ndim == 0:
        return True
    return level >= 2 and x.ndim == 1


class CNTKBackend(Backend):
    """ONNX's backend interface over OpenCNTK's ONNX reader (CPU)."""

    @classmethod
    def prepare(cls, model, device='CPU', **kwargs):
        if not cls.supports_device(device):
            raise RuntimeError("cntk.onnx_backend: device %r is not supported (CPU only)" % (device,))
        if isinstance(model, (str, bytes)):
            model = onnx.load_model_from_string(model) if isinstance(model, bytes) else onnx.load(model)
        try:
            return CNTKBackendRep(model, load_model(model.SerializeToString(), format=ModelFormat.ONNX))
        except ValueError as e:
            # Read again at run time with the integer inputs bound (see the module's doc).
            return CNTKBackendRep(model, error=e)

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
