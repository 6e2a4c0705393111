"""Function: the computing node of a graph, and CNTK's Python API on it."""
import enum
import inspect

import numpy as np

from .. import _cntk
from ..core import _from_value, _to_value
from ..tensor import TensorOpsMixin
from ..variables import Record

Function = _cntk.Function
_PRIMITIVE, _COMPOSITE, _BLOCK = 0, 1, 2


class CloneMethod(enum.Enum):
    """How `Function.clone` treats parameters: new copies, the same ones, or constants."""
    clone = 'clone'
    share = 'share'
    freeze = 'freeze'


_CLONE_CODE = {CloneMethod.clone: 0, CloneMethod.share: 1, CloneMethod.freeze: 2}


class ModelFormat(enum.Enum):
    """File formats for `Function.save` / `load_model`."""
    CNTKv2 = 'CNTKv2'
    ONNX = 'ONNX'


def _composite(f):
    return f if f._kind == _COMPOSITE else _cntk.composite(f)


def _wrap(f):
    """Functions handed to users are composites, as in CNTK, except blocks and primitives reached by traversal."""
    return f


# ------------------------------------------------------------ properties

def _arguments(self):
    """The input variables (not parameters or constants) the function needs data for."""
    return tuple(self._arguments())


def _outputs(self):
    return tuple(self._outputs())


def _output(self):
    outs = self._outputs()
    if len(outs) != 1:
        raise ValueError("function '%s' has %d outputs; use .outputs" % (self._op_name, len(outs)))
    return outs[0]


def _root_function(self):
    return self._root_function()


def _is_composite(self):
    return self._kind == _COMPOSITE


def _is_primitive(self):
    return self._kind == _PRIMITIVE


def _is_block(self):
    return self._kind == _BLOCK


def _block_root(self):
    return self._block_root()


def _block_arguments_mapping(self):
    return [(k, v) for k, v in self._block_arguments_mapping()]


def _attributes(self):
    return self._root_function()._attributes if self._kind == _COMPOSITE else self._attributes


_native_set_attribute = Function.set_attribute  # replaced on the class below


def _set_attribute(self, name, value):
    _native_set_attribute(self._root_function(), name, value)


def _name_get(self):
    return self._name


def _name_set(self, name):
    self._name = name


def _type(self):
    """The type of the function: its output variable (or outputs)."""
    return self.output if len(self.outputs) == 1 else self.outputs


def _signature(self):
    """The arguments in call order."""
    return self.arguments


def _argument_map(self, *args, **kwargs):
    """Pairs the function's arguments with positional or named values."""
    params = list(self.arguments)
    if len(args) > len(params):
        raise TypeError("function takes %d arguments but %d were given" % (len(params), len(args)))
    result = dict(zip(params, args))
    by_name = {p.name: p for p in params}
    for k, v in kwargs.items():
        if k not in by_name:
            raise TypeError("function has no argument named '%s'" % k)
        if by_name[k] in result:
            raise TypeError("argument '%s' given twice" % k)
        result[by_name[k]] = v
    missing = [p for p in params if p not in result]
    if missing:
        raise TypeError("missing arguments: %s" % ", ".join(p.name or p.uid for p in missing))
    return result


def _call(self, *args, **kwargs):
    """Applies the function to variables (building graph) — CNTK's `f(x)`.

    Placeholders and arguments are replaced in a shared clone; with data instead of
    variables, evaluates (like `eval`).
    """
    arg_map = _argument_map(self, *args, **kwargs)
    graph_args = [v for v in arg_map.values() if isinstance(v, (_cntk.Variable, _cntk.Function))]
    if graph_args and len(graph_args) != len(arg_map):
        from ..internal import as_variable
        arg_map = {k: as_variable(v, k.dtype) for k, v in arg_map.items()}
    elif not graph_args:
        return self.eval(arg_map)
    subs = []
    for k, v in arg_map.items():
        if isinstance(v, _cntk.Function):
            v = v.output
        subs.append((k, v))
    return self._clone(_CLONE_CODE[CloneMethod.share], subs)


def _clone(self, method, substitutions=None):
    """A copy of the graph; parameters cloned, shared or frozen; `substitutions` maps variables to replacements."""
    if isinstance(method, str):
        method = CloneMethod(method)
    subs = []
    for k, v in (substitutions or {}).items():
        if isinstance(v, _cntk.Function):
            v = v.output
        if isinstance(k, _cntk.Function):
            k = k.output
        subs.append((k, v))
    return self._clone(_CLONE_CODE[method], subs)


def _replace_placeholders(self, substitutions):
    """Binds placeholders to variables in place; returns this function."""
    subs = []
    for k, v in substitutions.items():
        if isinstance(v, _cntk.Function):
            v = v.output
        subs.append((k, v))
    self._replace_placeholders(subs)
    return self


def _replace_placeholder(self, substitution):
    phs = self.placeholders
    if len(phs) != 1:
        raise ValueError("replace_placeholder: the function has %d placeholders, not one" % len(phs))
    return _replace_placeholders(self, {phs[0]: substitution})


def _find_all_with_name(self, name, depth=0):
    """All functions in the graph with this name (depth > 0 or < 0 also searches inside blocks)."""
    return list(self._find_all_with_name(name, depth != 0))


def _find_by_name(self, name, depth=0):
    """The one function with this name, or None; ValueError if several have it."""
    found = _find_all_with_name(self, name, depth)
    if len(found) > 1:
        raise ValueError("several functions are named '%s'" % name)
    return found[0] if found else None


def _getattr(self, name):
    # CNTK lets `f.name` reach a named output or a function in the graph.
    if name.startswith('_') or name in ('__array__',):
        raise AttributeError(name)
    for o in _cntk.Function._outputs(self):
        if o.name == name:
            return o
    found = _cntk.Function._find_all_with_name(self, name, False)
    if len(found) == 1:
        return _composite(found[0])
    raise AttributeError("'Function' object has no attribute '%s'" % name)


# ------------------------------------------------------------- computing

def _sanitize_arguments(self, arguments):
    args = self.arguments
    if arguments is None:
        arguments = {}
    if isinstance(arguments, dict):
        items = []
        for k, v in arguments.items():
            if isinstance(k, str):
                match = [a for a in args if a.name == k]
                if len(match) != 1:
                    raise ValueError("no unique argument named '%s'" % k)
                k = match[0]
            if isinstance(k, _cntk.Function):
                k = k.output
            items.append((k, v))
    elif isinstance(arguments, (list, tuple)) and len(args) > 1 and len(arguments) == len(args) \
            and not isinstance(arguments[0], (int, float)):
        items = list(zip(args, arguments))
    else:
        if len(args) != 1:
            raise ValueError("data given without naming the argument, but the function has %d arguments: %s"
                             % (len(args), ", ".join(str(a) for a in args)))
        items = [(args[0], arguments)]
    return [(k, _to_value(k, v)) for k, v in items]


def _sanitize_outputs(self, outputs):
    if outputs is None:
        return list(self.outputs)
    if isinstance(outputs, (_cntk.Variable, _cntk.Function)):
        outputs = [outputs]
    return [o.output if isinstance(o, _cntk.Function) else o for o in outputs]


def _eval(self, arguments=None, outputs=None, device=None, as_numpy=True):
    """Computes the outputs. One output gives its value; several give a dict by output variable."""
    outs = _sanitize_outputs(self, outputs)
    values, _ = _cntk.forward(self, _sanitize_arguments(self, arguments), outs, False)
    result = {o: _from_value(o, v, as_numpy) for o, v in zip(outs, values)}
    if len(result) == 1:
        return next(iter(result.values()))
    return result


def _forward(self, arguments, outputs=None, keep_for_backward=None, device=None, as_numpy=True):
    """Computes `outputs`; returns (state, {output: value}). With `keep_for_backward`
    the state can be passed to `backward` (and the call runs in training mode)."""
    outs = _sanitize_outputs(self, outputs)
    keep = set(_sanitize_outputs(self, keep_for_backward)) if keep_for_backward else set()
    for k in keep:
        if k not in outs:
            outs.append(k)
    values, state = _cntk.forward(self, _sanitize_arguments(self, arguments), outs, bool(keep))
    requested = _sanitize_outputs(self, outputs)
    return state, {o: _from_value(o, v, as_numpy) for o, v in zip(outs, values) if o in requested or not outputs}


def _backward(self, state, root_gradients, variables, as_numpy=True):
    """Gradients of the roots (seeded by `root_gradients`) with respect to `variables`."""
    if state is None:
        raise ValueError("backward: no state; call forward with keep_for_backward")
    roots = [(k.output if isinstance(k, _cntk.Function) else k, _to_value(k, v)) for k, v in root_gradients.items()]
    wrt = list(variables)
    grads = _cntk.backward(state, roots, wrt)
    return {w: _from_value(w, g, as_numpy) for w, g in zip(wrt, grads)}


def _grad(self, at, wrt=None, outputs=None, device=None, as_numpy=True, grad_root=None):
    """Gradient of the (single) output, summed over its elements, with respect to `wrt`
    (default: all arguments). One variable gives its gradient; several give a dict.
    With `outputs`, returns (gradients, output values)."""
    if len(self.outputs) != 1 and grad_root is None:
        raise ValueError("grad needs a function with one output, or grad_root")
    root = grad_root if grad_root is not None else self.output
    if isinstance(root, _cntk.Function):
        root = root.output
    if wrt is None:
        wrt = list(self.arguments)
    single = isinstance(wrt, (_cntk.Variable, _cntk.Function))
    if single:
        wrt = [wrt]
    wrt = [w.output if isinstance(w, _cntk.Function) else w for w in wrt]
    outs = _sanitize_outputs(self, outputs) if outputs is not None else []
    want = [root] + [o for o in outs if o != root]
    values, state = _cntk.forward(self, _sanitize_arguments(self, at), want, True)
    root_value = values[0]
    ones = _cntk.Value(_cntk.NDArrayView.full(root_value._dtype, root_value._shape, 1.0), root_value._mask)
    grads = _cntk.backward(state, [(root, ones)], wrt)
    result = {w: _from_value(w, g, as_numpy) for w, g in zip(wrt, grads)}
    if single or len(result) == 1:
        result = next(iter(result.values()))
    if outputs is not None:
        out_vals = {o: _from_value(o, v, as_numpy) for o, v in zip(want, values) if o in outs}
        return result, out_vals
    return result


# ------------------------------------------------------------- signature

def _update_signature(self, *arg_types, **kwarg_types):
    """Replaces placeholder arguments by input variables of the given types (Tensor[...], ...)."""
    from ..layers.typing import _to_input
    phs = [a for a in self.arguments if a.is_placeholder] or list(self.placeholders)
    if not phs:
        phs = list(self.placeholders)
    if len(arg_types) > len(phs):
        raise TypeError("update_signature: %d types for %d arguments" % (len(arg_types), len(phs)))
    subs = {}
    for ph, t in zip(phs, arg_types):
        subs[ph] = _to_input(t, ph.name)
    by_name = {p.name: p for p in phs}
    for k, t in kwarg_types.items():
        if k not in by_name:
            raise TypeError("update_signature: no argument named '%s'" % k)
        subs[by_name[k]] = _to_input(t, k)
    _replace_placeholders(self, subs)
    return self


def _declare_args(self, *arg_types):
    """Older name of update_signature."""
    return _update_signature(self, *arg_types)


def _function_factory(*args, **kwargs):
    """`Function(f)`: builds a graph by calling the Python function `f` on placeholders
    (or on typed inputs when its parameters are annotated)."""
    if not args or not callable(args[0]) or isinstance(args[0], _cntk.Function):
        raise TypeError("Function() takes a Python function to turn into a graph")
    f = args[0]
    make_block = kwargs.get('make_block', False)
    op_name = kwargs.get('op_name', None)
    name = kwargs.get('name', None)
    return _from_python(f, make_block=make_block, op_name=op_name, name=name)


def _from_python(f, make_block=False, op_name=None, name=None):
    from ..layers.typing import _to_input
    from . import placeholder, combine, as_block
    sig = inspect.signature(f)
    params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    annotations = getattr(f, '__annotations__', {})
    args = []
    for p in params:
        t = annotations.get(p.name, None)
        if t is not None and not make_block:
            args.append(_to_input(t, p.name))
        else:
            args.append(placeholder(name=p.name))
    out = f(*args)
    if isinstance(out, (tuple, list)):
        outs = [o.output if isinstance(o, _cntk.Function) else o for o in out]
        result = combine(outs)
    elif isinstance(out, _cntk.Variable):
        result = combine([out])
    else:
        result = out
    if make_block:
        phs = [a for a in args if a.is_placeholder]
        outer = [placeholder(name=a.name) for a in phs]
        result = as_block(result, list(zip(phs, outer)), op_name or f.__name__, name or '')
    if name and not make_block:
        result.name = name
    return result


def BlockFunction(op_name, name):
    """Decorator: the Python function becomes a block function named `op_name`."""
    def decorator(f):
        return _from_python(f, make_block=True, op_name=op_name, name=name)
    return decorator


def _unsupported(what, issue):
    def f(*args, **kwargs):
        raise NotImplementedError("%s is not implemented yet (%s)" % (what, issue))
    f.__name__ = what
    return f


def load_model(model, device=None, format=ModelFormat.CNTKv2):
    """Loads a saved model (CNTK v2 format or ONNX)."""
    raise NotImplementedError("load_model: model files are not implemented yet (model files issue)")


def register_native_user_function(op_id, module_name, factory_method_name):
    raise NotImplementedError("native user functions are not supported")


def native_user_function(op_id, operands, attributes=None, user_function_instance_name=''):
    raise NotImplementedError("native user functions are not supported")


class UserFunction(object):
    """Base of Python-defined ops (forward/backward written in Python)."""

    def __init__(self, inputs, as_numpy=True, attributes=None, name=''):
        raise NotImplementedError("UserFunction: Python-defined ops are not supported yet")

    def infer_outputs(self):
        raise NotImplementedError

    def clone(self, cloned_inputs):
        raise NotImplementedError

    @staticmethod
    def deserialize(inputs, name, state):
        raise NotImplementedError

    @property
    def op_name(self):
        return type(self).__name__

    def serialize(self):
        return {}


_props = {
    'arguments': property(_arguments),
    'inputs': property(lambda self: list(self._inputs())),
    'outputs': property(_outputs),
    'output': property(_output),
    'parameters': property(lambda self: list(self._parameters())),
    'constants': property(lambda self: list(self._constants())),
    'placeholders': property(lambda self: list(self._placeholders())),
    'root_function': property(_root_function),
    'is_composite': property(_is_composite),
    'is_primitive': property(_is_primitive),
    'is_block': property(_is_block),
    'block_root': property(_block_root),
    'block_arguments_mapping': property(_block_arguments_mapping),
    'attributes': property(_attributes),
    'name': property(_name_get, _name_set),
    'op_name': property(lambda self: self._op_name),
    'uid': property(lambda self: self._uid),
    'type': property(_type),
    'signature': property(_signature),
    'shape': property(lambda self: self.output.shape),
    'dtype': property(lambda self: self.output.dtype),
    'dynamic_axes': property(lambda self: self.output.dynamic_axes),
    'is_sparse': property(lambda self: self.output.is_sparse),
    'custom_attributes': property(lambda self: {}),
}
for _k, _v in _props.items():
    setattr(Function, _k, _v)

for _k, _v in vars(TensorOpsMixin).items():
    if _k.startswith('__') and _k not in ('__module__', '__dict__', '__weakref__', '__doc__', '__qualname__'):
        setattr(Function, _k, _v)

Function.set_attribute = _set_attribute
Function.argument_map = _argument_map
Function.__call__ = _call
Function.clone = _clone
Function.replace_placeholders = _replace_placeholders
Function.replace_placeholder = _replace_placeholder
Function.find_all_with_name = _find_all_with_name
Function.find_by_name = _find_by_name
Function.__getattr__ = _getattr
Function.eval = _eval
Function.forward = _forward
Function.backward = _backward
Function.grad = _grad
Function.update_signature = _update_signature
Function.declare_args = _declare_args
Function.__eq__ = lambda self, other: isinstance(other, _cntk.Function) and (
    self.same(other) or (self._kind == _COMPOSITE and other._kind == _COMPOSITE
                         and self._root_function().same(other._root_function())))
Function.__hash__ = lambda self: hash(self._root_function()._uid)
Function.__repr__ = lambda self: "Composite(%s)" % self._op_name if self._kind == _COMPOSITE else \
    "%s(%s)" % (self._op_name, self._name)
Function.__array_priority__ = 100
Function.save = _unsupported('Function.save', 'model files issue')
Function.restore = _unsupported('Function.restore', 'model files issue')
Function.load = staticmethod(lambda model, device=None, format=ModelFormat.CNTKv2: load_model(model, device, format))
Function.train = _unsupported('Function.train', 'training issue')
Function.test = _unsupported('Function.test', 'training issue')
Function.print_node_timing = _unsupported('Function.print_node_timing', 'profiler issue')
Function.register_udf_deserialize_callback = staticmethod(_unsupported('register_udf_deserialize_callback',
                                                                        'model files issue'))
Function.with_signature = staticmethod(
    lambda *args, **kwargs: (lambda f: _update_signature(f if isinstance(f, _cntk.Function) else _from_python(f),
                                                         *args, **kwargs)))
