"""Function: the computing node of a graph, and CNTK's Python API on it."""
import enum
import inspect
import sys

import numpy as np

from .. import _cntk
from ..core import _from_value, _to_value, _value_dense
from ..tensor import TensorOpsMixin
from ..variables import Record, Variable, _Type  # noqa: F401  Record and Variable are reachable here, as in CNTK

Function = _cntk.Function
_PRIMITIVE, _COMPOSITE, _BLOCK = 0, 1, 2


@enum.unique
class CloneMethod(enum.Enum):
    """How `Function.clone` treats parameters: new copies, the same ones, or constants."""
    share = 'share'
    """Parameters are shared between the function being cloned and the clone."""
    clone = 'clone'
    """The clone gets new parameters initialized with the current values."""
    freeze = 'freeze'
    """Parameters are cloned as constants (e.g. for a fixed feature extractor)."""


_CLONE_CODE = {CloneMethod.clone: 0, CloneMethod.share: 1, CloneMethod.freeze: 2}


@enum.unique
class ModelFormat(enum.Enum):
    """File formats for `Function.save` / `load_model`."""
    CNTKv2 = 'CNTKv2'
    ONNX = 'ONNX'


def _composite(f):
    return f if f._kind == _COMPOSITE else _cntk.composite(f)


def _as_output(v, what='a variable'):
    """Functions stand for their single output; anything else must be a Variable."""
    if isinstance(v, _cntk.Function):
        return v.output
    if isinstance(v, _cntk.Variable):
        return v
    raise TypeError("expected %s (a Variable or a Function), got %s" % (what, type(v).__name__))


# ------------------------------------------------------------ properties

def _arguments(self):
    """The input variables (not parameters or constants) the function needs data for,
    with unbound placeholders, in the order they feed the graph."""
    return tuple(self._arguments())


def _outputs(self):
    return tuple(self._outputs())


def _output(self):
    outs = self._outputs()
    if len(outs) != 1:
        raise ValueError("function '%s' has %d outputs; use .outputs" % (self._op_name, len(outs)))
    return outs[0]


# CNTK keeps random seeds and offsets as unsigned 64-bit numbers; the engine's
# attributes hold signed ones with the same bits.
_UNSIGNED_ATTRIBUTES = ('rngSeed', 'rngOffset')


def _attributes(self):
    from ._attributes import cntk_attributes
    fn = self._root_function() if self._kind == _COMPOSITE else self
    attrs = fn._attributes
    for k in _UNSIGNED_ATTRIBUTES:
        if isinstance(attrs.get(k), int) and attrs[k] < 0:
            attrs[k] += 1 << 64
    return cntk_attributes(fn, attrs)


_native_set_attribute = _cntk.Function.set_attribute


def _set_attribute(self, name, value):
    """Changes an op attribute (e.g. 'dropoutRate' of dropout, 'rngSeed' of a random op)."""
    target = self._root_function() if self._kind == _COMPOSITE else self
    if name in _UNSIGNED_ATTRIBUTES and isinstance(value, int) and (1 << 63) <= value < (1 << 64):
        value -= 1 << 64
    _native_set_attribute(target, name, value)


class _CustomAttributes(dict):
    """A dict view of a function's custom attributes: assignments are stored with the function."""

    def __init__(self, function):
        super(_CustomAttributes, self).__init__(function._get_custom_attributes())
        self._function = function

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError("custom attribute names must be strings")
        self._function._set_custom_attribute(key, value)
        super(_CustomAttributes, self).__setitem__(key, value)


def _custom_target(self):
    return self._root_function() if self._kind == _COMPOSITE else self


def _custom_attributes_get(self):
    """User key/value pairs stored with the function (composites use their root's)."""
    return _CustomAttributes(_custom_target(self))


def _custom_attributes_set(self, values):
    values = values or {}
    if not isinstance(values, dict):
        raise TypeError("custom_attributes must be set from a dict")
    target = _custom_target(self)
    target._reset_custom_attributes()
    for k, v in values.items():
        if not isinstance(k, str):
            raise TypeError("custom attribute names must be strings")
        target._set_custom_attribute(k, v)


def _name_set(self, name):
    if not isinstance(name, str):
        raise TypeError("a function name must be a string, not %s" % type(name).__name__)
    self._name = name


def _type(self):
    """The type of the function's single output."""
    return self.output._type


_placeholders_under_construction = set()


def _signature(self):
    """The arguments, without placeholders of an enclosing @Function still under construction."""
    return tuple(a for a in self.arguments if a not in _placeholders_under_construction)


def _argument_map(self, *args, **kwargs):
    """Pairs the function's signature with positional or named values, as Python
    binds arguments (every parameter is required)."""
    params = self.signature
    if len(args) + len(kwargs) != len(params):
        raise TypeError("CNTK Function expected %d arguments, got %d" % (len(params), len(args) + len(kwargs)))
    result = dict(zip(params, args))
    by_name = {p.name: p for p in params}
    for k, v in kwargs.items():
        if k not in by_name:
            raise TypeError("CNTK Function has no argument named '%s'" % k)
        if by_name[k] in result:
            raise TypeError("CNTK Function got argument '%s' twice" % k)
        result[by_name[k]] = v
    return result


def _replace_args_type_check(arg_map):
    """Checks that each substitute fits the type of the argument it replaces."""
    for i, (param, arg) in enumerate(arg_map.items()):
        pname = "argument %s" % param.name if param.name else "positional argument %d" % i
        if isinstance(arg, _cntk.Function):
            if len(arg.outputs) != 1:
                raise TypeError(pname + " was passed a Function with %d outputs" % len(arg.outputs))
            arg = arg.output
        if not isinstance(arg, _cntk.Variable):
            raise TypeError(pname + " was passed an object that is not a Variable or Function")
        ptype, atype = param._type, arg._type
        if param.is_placeholder or not ptype.shape_is_known:
            continue
        if not atype.shape_is_known:
            raise TypeError(pname + " has a known shape, and cannot be passed a Variable of unknown shape")
        ps, as_ = ptype.shape, atype.shape
        if len(as_) < len(ps) or as_[len(as_) - len(ps):] != ps or \
                (atype.dynamic_axes and atype.dynamic_axes != ptype.dynamic_axes) or \
                atype.dtype != ptype.dtype or atype.is_sparse != ptype.is_sparse:
            raise TypeError("%s's type %s is incompatible with the type %s of the passed Variable"
                            % (pname, ptype, atype))


def _call(self, *args, **kwargs):
    """`f(x, y)`: with Variables or Functions, a clone of `f` (parameters shared) with
    its arguments bound to them; with data, evaluates `f` (a tuple for several outputs)."""
    arg_map = _argument_map(self, *args, **kwargs)
    for a in self.arguments:  # placeholders of an enclosing @Function stay as they are
        if a not in arg_map:
            arg_map[a] = a
    symbolic = any(isinstance(v, (_cntk.Function, _cntk.Variable)) for v in arg_map.values())
    if symbolic:
        from ..internal import as_variable
        arg_map = {k: (v if isinstance(v, (_cntk.Function, _cntk.Variable)) else as_variable(v, k.dtype))
                   for k, v in arg_map.items()}
        _replace_args_type_check(arg_map)
        return _clone(self, CloneMethod.share, arg_map)
    outputs = self.outputs
    _, output_map = _forward(self, arg_map, outputs)
    if len(outputs) > 1:
        return tuple(output_map[o] for o in outputs)
    return output_map[outputs[0]]


def _rshift(self, other):
    """Forward composition: `f >> g` is `g(f)`; a tuple of functions applies each to the input."""
    inputs = self.outputs
    if isinstance(other, tuple):
        from . import combine
        return combine([g(inputs[i if len(inputs) > 1 else 0]) for i, g in enumerate(other)])
    if len(inputs) > 1:
        return other(*inputs)
    return other(self)


def _lshift(self, other):
    """Backward composition: `f << g` is `f(g)`."""
    return self(other)


def _clone(self, method, substitutions=None):
    """A copy of the graph whose parameters are cloned, shared or frozen (`method`,
    a CloneMethod or its name) and whose variables in `substitutions` (a dict from
    variables of this graph to their replacements) are replaced. Inputs and
    placeholders that are not substituted get fresh copies, as in CNTK."""
    method = CloneMethod(method.value if isinstance(method, CloneMethod) else method)
    substitutions = substitutions or {}
    if not isinstance(substitutions, dict):
        raise TypeError("clone: substitutions must be a dict from variables to variables")
    subs = []
    for k, v in substitutions.items():
        if k is None or v is None:
            # CNTK raises AttributeError here (its tests rely on it); other wrong types are TypeErrors.
            raise AttributeError("clone: cannot replace %r with %r; neither may be None" % (k, v))
        subs.append((_as_output(k, 'a variable to substitute'), _as_output(v, 'a substitute')))
    return self._clone(_CLONE_CODE[method], subs)


def _replace_placeholders(self, substitutions):
    """Binds placeholders to variables in place (shapes are inferred again); returns this function."""
    substitutions = substitutions or {}
    if not isinstance(substitutions, dict):
        raise TypeError("replace_placeholders: substitutions must be a dict from placeholders to variables")
    subs = []
    for k, v in substitutions.items():
        k = _as_output(k, 'a placeholder')
        if not k.is_placeholder:
            raise ValueError("replace_placeholders: %r is not a placeholder" % (k,))
        if v is None:
            raise TypeError("replace_placeholders: the replacement for %r is None" % (k,))
        subs.append((k, _as_output(v, 'a replacement')))
    self._replace_placeholders(subs)
    return self


def _replace_placeholder(self, substitution):
    """Binds the function's only placeholder (ValueError if it has none or several)."""
    phs = self.placeholders
    if len(phs) != 1:
        raise ValueError("replace_placeholder: the function has %d placeholders, not one" % len(phs))
    return _replace_placeholders(self, {phs[0]: substitution})


def _depth_first_search(root, visitor, depth=0):
    """Functions and leaf variables of the graph for which `visitor` is true, in
    depth-first order. Blocks are entered `depth` levels deep (-1: all levels)."""
    if depth < 0:
        depth = sys.maxsize
    stack = [(root.root_function, depth)]
    found, visited = [], set()
    while stack:
        node, d = stack.pop(0)
        if node.uid in visited:
            continue
        visited.add(node.uid)
        if isinstance(node, _cntk.Variable):
            if node.is_output:
                stack.insert(0, (node.owner.root_function, d))
                continue
            if visitor(node):
                found.append(node)
            continue
        if node.is_block and d > 0:
            mapping = node.block_arguments_mapping
            visited.update(ph.uid for ph, _ in mapping)
            stack = [(outer, d - 1) for _, outer in mapping] + stack
            stack.append((node.block_root.root_function, d - 1))
            if visitor(node):
                found.append(node)
            continue
        stack = [(i, d) for i in node.root_function.inputs] + stack
        if visitor(node):
            found.append(node)
    return found


def _find_all_with_name(self, name, depth=0):
    """All functions and variables of the graph named `name` (depth: how many block levels to enter, -1 all)."""
    if not isinstance(name, str):
        raise ValueError("the name must be a string, not %s" % type(name).__name__)
    # The graph's nodes themselves, primitive functions included, as in CNTK.
    return _depth_first_search(self, lambda n: n.name == name, depth)


def _find_by_name(self, name, depth=0):
    """The function or variable named `name`, or None; ValueError if several have it."""
    found = _find_all_with_name(self, name, depth)
    if len(found) > 1:
        raise ValueError("found %d nodes named '%s'; use find_all_with_name" % (len(found), name))
    return found[0] if found else None


def _getattr(self, name):
    # Names of the graph first (e.g. model.W), then the single output's attributes.
    if name.startswith('_') or name in ('outputs', 'output', 'this', '__array__'):
        raise AttributeError("neither Function nor its output variable has '%s'" % name)
    udf = _user_object(self)
    if udf is not None and (name in udf.__dict__ or hasattr(type(udf), name)):
        return getattr(udf, name)
    if not hasattr(_cntk.Variable, name):
        root = self.block_root if self._kind == _BLOCK else self
        try:
            item = _find_by_name(root, name, 1)
        except ValueError:
            item = None
        if item is not None:
            return item
    outs = _cntk.Function._outputs(self)
    if len(outs) != 1:
        raise AttributeError("Function has no attribute '%s' and it cannot be looked up in its outputs "
                             "because it has %d" % (name, len(outs)))
    return getattr(outs[0], name)


def _str(self):
    """`name: Op(arg: Type, ...) -> Type`, as CNTK prints functions."""
    op_name = self._op_name
    if self._kind == _COMPOSITE:
        root = self.root_function
        if root._op_name == 'Combine' or not all(i.uid == ri.uid for i, ri in zip(self.inputs, root.inputs)):
            op_name = 'Composite'

    def spec(v, is_output=False):
        prefix = v.name + ': ' if not is_output and v.name else ''
        return prefix + str(v._type)
    outs = self.outputs
    out_sig = 'Tuple[' + ', '.join(spec(o, True) for o in outs) + ']' if len(outs) != 1 else spec(outs[0], True)
    prefix = self.name + ': ' if self.name else ''
    return prefix + op_name + '(' + ', '.join(spec(a) for a in self.signature) + ') -> ' + out_sig


def _repr(self):
    kind = {_PRIMITIVE: 'Primitive', _COMPOSITE: 'Composite', _BLOCK: 'Block'}[self._kind]
    return "%s(%s%s)" % (kind, self._op_name, ", '%s'" % self._name if self._name else '')


# ------------------------------------------------------------- computing

def _sanitize_arguments(self, arguments):
    """User arguments -> [(variable, native Value)]: a dict keyed by variables or their
    names, a list/tuple with one entry per argument, or one value for a single argument."""
    if arguments is None:
        arguments = {}
    if isinstance(arguments, dict) and all(type(k) is _cntk.Variable for k in arguments):
        # The common case: keyed by variables; the argument list is not needed.
        items = list(arguments.items())
        for k, _ in items:
            if k.is_placeholder:
                raise ValueError("%r is an unbound placeholder: bind it with replace_placeholders or "
                                 "update_signature before computing" % (k,))
        return [(k, _to_value(k, v)) for k, v in items]
    args = self.arguments
    if isinstance(arguments, dict):
        items = []
        for k, v in arguments.items():
            if isinstance(k, str):
                match = [a for a in args if a.name == k]
                if len(match) != 1:
                    raise ValueError("%s argument named '%s'; the arguments are: %s"
                                     % ("no" if not match else "more than one", k,
                                        ", ".join(repr(a) for a in args)))
                k = match[0]
            elif isinstance(k, _cntk.Function):
                k = k.output
            elif not isinstance(k, _cntk.Variable):
                raise TypeError("argument keys must be Variables or names, not %s" % type(k).__name__)
            items.append((k, v))
    else:
        # As in CNTK, data without argument names is only taken by a function of one argument.
        if len(args) != 1:
            raise ValueError("data was given without naming its argument, but the function has %d arguments (%s); "
                             "pass a dict from arguments to data" % (len(args), ", ".join(repr(a) for a in args)))
        items = [(args[0], arguments)]
    for k, _ in items:
        if k.is_placeholder:
            raise ValueError("%r is an unbound placeholder: bind it with replace_placeholders or "
                             "update_signature before computing" % (k,))
    return [(k, _to_value(k, v)) for k, v in items]


def _sanitize_outputs(self, outputs):
    if outputs is None:
        return list(self.outputs)
    if isinstance(outputs, (_cntk.Variable, _cntk.Function)):
        outputs = [outputs]
    result = []
    for o in outputs:
        if isinstance(o, _cntk.Function):
            result.extend(o.outputs)
        elif isinstance(o, _cntk.Variable):
            result.append(o)
        else:
            raise TypeError("outputs must be Variables or Functions, not %s" % type(o).__name__)
    return result


def _single_or_dict(d):
    return next(iter(d.values())) if len(d) == 1 else d


def _eval(self, arguments=None, outputs=None, device=None, as_numpy=True):
    """Computes the outputs (default: all). One output gives its value; several give
    a dict from output variable to value."""
    _, output_map = _forward(self, arguments, outputs, device=device, as_numpy=as_numpy)
    return _single_or_dict(output_map)


class _ComputedValue(_cntk.Value):
    """A Value a computation returned as it is (as_numpy=False). As in CNTK, it is valid
    until the same function computes again: reading it after that is a RuntimeError
    (copy it with deep_clone or asarray to keep it)."""

    def _check_valid(self):
        if getattr(self, '_erased', False):
            raise RuntimeError("this Value was the result of an earlier computation of its function, which has "
                               "computed again since; keep a copy (deep_clone or asarray) to use it later")

    def asarray(self):
        self._check_valid()
        return _cntk.Value.asarray(self)

    def as_sequences(self, variable=None):
        self._check_valid()
        return _cntk.Value.as_sequences(self, variable)

    @property
    def data(self):
        self._check_valid()
        return self._data

    @property
    def is_valid(self):
        return not getattr(self, '_erased', False) and self._is_valid


def _handed_out(self, values):
    """Marks the Values an earlier computation of this function returned as gone, and
    remembers `values` (output -> Value or array) as the ones now handed out."""
    for v in self.__dict__.get('_computed_values', ()):
        v._erased = True
    kept = []
    for o, v in values.items():
        if type(v) is _cntk.Value:
            v = _ComputedValue(v._data, v._mask)
            values[o] = v
            kept.append(v)
    self._computed_values = kept
    return values


def _forward(self, arguments, outputs=None, keep_for_backward=None, device=None, as_numpy=True):
    """Computes `outputs` (default: all outputs); returns (state, {output: value}).
    With `keep_for_backward` (a set of outputs) the call runs in training mode and the
    state can be passed to `backward`; without it the state is None."""
    outs = _sanitize_outputs(self, outputs)
    if not keep_for_backward:  # inference: no outputs to add, nothing to filter
        values, state = _cntk.forward(self, _sanitize_arguments(self, arguments), outs, False)
        return state, _handed_out(self, {o: _from_value(o, v, as_numpy) for o, v in zip(outs, values)})
    keep = _sanitize_outputs(self, keep_for_backward)
    wanted = list(outs) + [k for k in keep if k not in outs]
    values, state = _cntk.forward(self, _sanitize_arguments(self, arguments), wanted, bool(keep))
    return state, _handed_out(self, {o: _from_value(o, v, as_numpy) for o, v in zip(wanted, values) if o in outs})


def _backward(self, state, root_gradients, variables, as_numpy=True):
    """Gradients of the roots (`root_gradients`: {output: gradient data}) with respect to `variables`."""
    if state is None:
        raise ValueError("backward: no state to backpropagate through; call forward with keep_for_backward "
                         "set to the outputs in root_gradients")
    if not isinstance(root_gradients, dict) and root_gradients is not None and len(self.outputs) == 1:
        root_gradients = {self.output: root_gradients}  # as CNTK: plain data is the single output's
    if not isinstance(root_gradients, dict) or not root_gradients:
        raise TypeError("backward: root_gradients must be a non-empty dict from outputs to gradient data "
                        "(or the gradient data of a function's single output)")
    roots = []
    for k, v in root_gradients.items():
        k = _as_output(k, 'an output')
        roots.append((k, _to_value(k, v)))
    if isinstance(variables, (_cntk.Variable, _cntk.Function)):
        variables = [variables]
    wrt = [_as_output(w) for w in variables]
    grads = _cntk.backward(state, roots, wrt)
    return {w: _from_value(w, g, as_numpy) for w, g in zip(wrt, grads)}


def _grad(self, at, wrt=None, outputs=None, device=None, as_numpy=True, grad_root=None):
    """The gradient of the single output (or of `grad_root`), summed over its elements,
    with respect to `wrt` (default: the arguments that need gradients). One variable
    gives its gradient, several a dict. With `outputs`, returns (gradients, output values)."""
    if grad_root is None:
        if len(self.outputs) != 1:
            raise ValueError("grad: the function has %d outputs; give grad_root" % len(self.outputs))
        root = self.output
    else:
        root = _as_output(grad_root, 'grad_root')
    if wrt is None:
        wrt = [a for a in self.arguments if a.needs_gradient]
        if not wrt:
            raise ValueError("grad: none of the arguments of %s needs a gradient; pass wrt or create inputs "
                             "with needs_gradient=True" % (self,))
    elif isinstance(wrt, (_cntk.Variable, _cntk.Function)):
        wrt = [wrt]
    wrt_list = []
    for w in wrt:
        w = _as_output(w, 'a variable to differentiate with respect to')
        if w not in wrt_list:
            wrt_list.append(w)
    outs = _sanitize_outputs(self, outputs) if outputs is not None else []
    want = [root] + [o for o in outs if o != root]
    values, state = _cntk.forward(self, _sanitize_arguments(self, at), want, True)
    root_value = values[0]
    seed = _cntk.NDArrayView.full(root_value._dtype, root_value._shape, 1.0)
    if root_value._mask is not None:  # padding past a sequence's end contributes nothing
        ones = np.ones(root_value._shape, dtype=root_value.dtype)
        ones[root_value._mask.asarray() == 0] = 0
        seed = _cntk.NDArrayView.from_numpy(ones)
    ones = _cntk.Value(seed, root_value._mask)
    grads = _cntk.backward(state, [(root, ones)], wrt_list)
    handed = {w: _from_value(w, g, as_numpy) for w, g in zip(wrt_list, grads)}
    if outputs is not None:
        handed.update({('output', o): _from_value(o, v, as_numpy) for o, v in zip(want, values) if o in outs})
    handed = _handed_out(self, handed)
    result = _single_or_dict({w: handed[w] for w in wrt_list})
    if outputs is not None:
        return result, _single_or_dict({o: handed[('output', o)] for o in want if o in outs})
    return result


# ------------------------------------------------------------- signature

def _to_input(arg_type, name):
    from ..layers.typing import _to_input as typed_input
    if isinstance(arg_type, (int, np.integer)):
        arg_type = (int(arg_type),)
    arg_type = _Type._sanitize(arg_type)
    if not isinstance(arg_type, (tuple, _Type, _cntk.Variable)):
        raise TypeError("update_signature expects an int, a tuple of ints or a type such as Tensor[3], not %r"
                        % (arg_type,))
    return typed_input(arg_type, name)


def _update_signature(self, *arg_types, **kwarg_types):
    """Replaces the placeholder arguments, in place, by inputs of the given types: ints or
    tuples (shapes), types such as `Tensor[3]`, or None to leave an argument alone."""
    arg_map = _argument_map(self, *arg_types, **kwarg_types)
    arg_map = {p: _to_input(t, p.name) for p, t in arg_map.items() if t is not None}
    _replace_args_type_check(arg_map)
    _replace_placeholders(self, arg_map)


def _declare_args(self, *arg_types):
    """Older form of update_signature: one shape or Variable per placeholder."""
    phs = self.placeholders
    if len(arg_types) != len(phs):
        raise TypeError("declare_args expected %d arguments, got %d" % (len(phs), len(arg_types)))
    args = [a if isinstance(a, _cntk.Variable) else _to_input(a, p.name) for p, a in zip(phs, arg_types)]
    arg_map = dict(zip(phs, args))
    _replace_args_type_check(arg_map)
    _replace_placeholders(self, arg_map)


def _function_factory(*args, **kwargs):
    """`Function(f)` / `@Function`: builds a graph by calling the Python function `f`
    once, on input variables for parameters annotated with types (Tensor[3], ...)
    and on placeholders for the others."""
    if not args or not callable(args[0]) or isinstance(args[0], (_cntk.Function, _cntk.Variable)):
        raise TypeError("Function() takes a Python function to turn into a graph")
    return _to_function(args[0], make_block=kwargs.get('make_block', False), op_name=kwargs.get('op_name', None),
                        name=kwargs.get('name', None))


def _python_params(f):
    sig = inspect.signature(f)
    names = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError("CNTK Function '%s' cannot have *args or **kwargs parameters" % f.__name__)
        names.append(p.name)
    return names, dict(getattr(f, '__annotations__', {}) or {})


def _to_function(f, make_block=False, op_name=None, name=None):
    from . import placeholder, combine, alias, as_block
    f_name = getattr(f, '__name__', 'function')
    arg_names, annotations = _python_params(f)

    def make_arg(arg_name):
        t = _Type._sanitize(annotations.get(arg_name, None))
        if isinstance(t, _Type):
            from ..layers.typing import _to_input as typed_input
            return typed_input(t, arg_name)
        return placeholder(name=arg_name)

    args = [make_arg(n) for n in arg_names]

    def invoke(fun_args):
        from ..default_options import default_options
        try:
            for a in args:
                _placeholders_under_construction.add(a)
            # As in CNTK, a Function's body may not create parameters ('pure'): they would
            # be created anew each time the Python function is turned into a graph.
            with default_options(pure=True):
                out = f(*fun_args)
        finally:
            for a in args:
                _placeholders_under_construction.discard(a)
        if out is None:
            raise TypeError("CNTK Function '%s' must return a value" % f_name)
        if isinstance(out, tuple):
            items = [combine([o]) if isinstance(o, _cntk.Variable) else o for o in out]
            seen = []
            for i, o in enumerate(items):
                if not isinstance(o, _cntk.Function):
                    raise TypeError("CNTK Function '%s' returned %s, not a Variable or Function"
                                    % (f_name, type(o).__name__))
                if any(o == s for s in seen):
                    items[i] = alias(o)
                seen.append(o)
            return combine(items)
        if isinstance(out, _cntk.Variable):
            return combine([out])
        if not isinstance(out, _cntk.Function):
            raise TypeError("CNTK Function '%s' returned %s, not a Variable or Function" % (f_name, type(out).__name__))
        return out

    def force_order(fun_args):
        # Route the arguments through one 'Tuple' block so that they appear in parameter order.
        inner = [placeholder(name=a.name) for a in fun_args]
        return as_block(combine(inner), list(zip(inner, fun_args)), 'Tuple').outputs

    if make_block:
        inner = [placeholder(name=a.name) for a in args]
        out = invoke(inner)
        out = as_block(out, list(zip(inner, args)), op_name or f_name, name or '')
    else:
        out = invoke(args)
        out_names = [a.name for a in out.signature]
        if set(out_names) == set(arg_names) and out_names != arg_names:
            out = invoke(force_order(args))

    sig = out.signature
    if len(sig) != len(args):
        missing = [a for a in sig if a not in args]
        if missing:
            raise TypeError("CNTK Function '%s' has %d missing arguments (%s), which is currently not supported"
                            % (f_name, len(missing), ", ".join(a.name for a in missing)))
        unused = [a for a in args if a not in sig]
        raise TypeError("CNTK Function '%s' has %d unused arguments (%s), which is currently not supported"
                        % (f_name, len(unused), ", ".join(a.name for a in unused)))
    if name and not make_block and not out.name:
        out.name = name
    return out


_from_python = _to_function  # the name the layers library calls


def BlockFunction(op_name, name):
    """Decorator: the Python function becomes a block function with op name `op_name`
    and instance name `name` (it appears as one op in the graph)."""
    def decorator(f):
        return _to_function(f, make_block=True, op_name=op_name, name=name)
    return decorator


def _unsupported(what, issue):
    def f(*args, **kwargs):
        raise NotImplementedError("%s is not implemented yet (%s)" % (what, issue))
    f.__name__ = what.split('.')[-1]
    return f


def _check_format(format, what):
    if isinstance(format, str):
        try:
            format = ModelFormat(format)
        except ValueError:
            raise ValueError("%s: unknown model format %r (use ModelFormat.CNTKv2 or ModelFormat.ONNX)" % (what, format))
    if not isinstance(format, ModelFormat):
        raise TypeError("%s: format must be a cntk.ModelFormat, not %s" % (what, type(format).__name__))
    return format


def load_model(model, device=None, format=ModelFormat.CNTKv2):
    """Loads a model saved in CNTK's v2 format by :meth:`Function.save` (OpenCNTK's or CNTK 2.x's),
    or with ``format=ModelFormat.ONNX`` an ONNX model (any exporter's; external data is read from
    the model's folder).

    ``model`` is a file path, or the bytes of a model (``bytes``, ``bytearray`` or ``memoryview``).
    Every computation runs on the CPU, so ``device`` only has to be a CPU device or None.
    A truncated, corrupted or foreign file raises IOError naming the file; a model using an op
    OpenCNTK does not implement yet raises NotImplementedError naming the op."""
    onnx = _check_format(format, 'load_model') == ModelFormat.ONNX
    if isinstance(model, (bytes, bytearray, memoryview)):
        if onnx:
            return _cntk.load_onnx_from_bytes(bytes(model))
        return _cntk.load_model_from_bytes(bytes(model))
    if not isinstance(model, (str, bytes)) and not hasattr(model, '__fspath__'):
        raise TypeError("load_model: model must be a file path or bytes, not %s" % type(model).__name__)
    import os
    path = os.fspath(model)
    if not os.path.exists(path):
        raise IOError("load_model: the model file '%s' does not exist" % path)
    if onnx:
        return _cntk.load_onnx(path)
    return _cntk.load_model(path)


def _save(self, filename, format=ModelFormat.CNTKv2, use_external_files_to_store_parameters=False,
          opset=None):
    """Saves this function's graph to ``filename``: in CNTK's v2 format (a CNTK 2.x ``Function.load``
    reads it), or with ``format=ModelFormat.ONNX`` as an ONNX model (``opset``: the ONNX opset,
    17 unless given; ``use_external_files_to_store_parameters``: parameters in files of their
    own beside the model, as ONNX's external data). The file is written to a temporary name
    first and renamed into place."""
    format = _check_format(format, 'Function.save')
    import os
    if format == ModelFormat.ONNX:
        _cntk.save_onnx(_composite(self), os.fspath(filename),
                        _cntk.onnx_default_opset if opset is None else int(opset),
                        bool(use_external_files_to_store_parameters))
        return
    if opset is not None:
        raise ValueError("Function.save: opset applies to ModelFormat.ONNX only")
    if use_external_files_to_store_parameters:
        raise NotImplementedError("Function.save: storing parameters in external files applies to "
                                  "ModelFormat.ONNX only (CNTK's v2 format keeps them in the model file)")
    _cntk.save_model(_composite(self), os.fspath(filename))


def _restore(self, filename):
    """Restores the values of this function's parameters and constants (in place) from a model
    file saved from the same graph, matched by uid, or else by their order in the graph."""
    _cntk.restore_function_values(self, str(filename))


_NATIVE_UDF_MESSAGE = ("native user functions (C++ plugin libraries loaded by op id) are not supported by OpenCNTK; "
                       "write the op in Python as a subclass of cntk.ops.functions.UserFunction instead")


def register_native_user_function(op_id, module_name, factory_method_name):
    """Registers a native (C++ plugin) user function library: not supported, raises NotImplementedError."""
    raise NotImplementedError("register_native_user_function('%s'): %s" % (op_id, _NATIVE_UDF_MESSAGE))


def native_user_function(op_id, operands, attributes=None, user_function_instance_name=''):
    """Creates a native (C++ plugin) user function: not supported, raises NotImplementedError."""
    raise NotImplementedError("native_user_function('%s'): %s" % (op_id, _NATIVE_UDF_MESSAGE))


_runtime_error_types = {}


def _as_runtime_error(e):
    """`e` as CNTK reports errors raised in a user function's methods: a RuntimeError.
    It keeps its own type as well (a KeyError stays a KeyError), where Python allows it."""
    if isinstance(e, RuntimeError):
        return e
    base = type(e)
    try:
        cls = _runtime_error_types.get(base)
        if cls is None:
            cls = type(base.__name__, (base, RuntimeError), {'__module__': base.__module__})
            _runtime_error_types[base] = cls
        err = cls(*e.args)
    except TypeError:  # a type that cannot be combined with RuntimeError, or built from its args
        err = RuntimeError("%s: %s" % (base.__name__, e))
    return err.with_traceback(e.__traceback__)


def _reported_as_runtime_error(method):
    import functools

    @functools.wraps(method)
    def call(self, *args):
        try:
            return method(self, *args)
        except Exception as e:
            err = _as_runtime_error(e)
            if err is e:
                raise
            raise err from e
    return call


class UserFunction(object):
    """Base class of ops written in Python.

    A subclass calls ``super().__init__(inputs, as_numpy=True, attributes=None, name='')``
    from its constructor and defines:

    - ``infer_outputs(self)``: a list of ``cntk.output_variable(shape, dtype, dynamic_axes)``;
    - ``forward(self, arguments, device=None, outputs_to_retain=None)`` returning
      ``(state, output)``. ``arguments`` is the value of the single input, or a list with one
      value per input: NumPy arrays (a list of arrays for sequences) when ``as_numpy``,
      Values otherwise. With several outputs the signature is
      ``forward(self, arguments, outputs, device=None, outputs_to_retain=None)``: it fills
      the dict ``outputs`` (keyed by ``self.outputs``) and returns the state;
    - ``backward(self, state, root_gradients)`` returning the gradient for the single input,
      or, with several inputs, ``backward(self, state, root_gradients, variables)`` filling the
      dict ``variables`` (keyed by the inputs that need a gradient). ``root_gradients`` is
      the gradient of the single output, or a dict keyed by the outputs;
    - optionally ``clone(self, cloned_inputs)``, ``serialize``/``deserialize`` and ``op_name``.

    Creating an instance (``MyOp(x)``) returns a composite Function rooted at the new
    op, to be composed, evaluated, differentiated, trained and cloned like any other.
    Attributes the instance sets (counters, settings) are readable through that Function.
    Without an own ``clone``, cloning copies the instance (shallowly) onto the new inputs.
    """

    def __new__(cls, *args, **kwargs):
        self = object.__new__(cls)
        self.__init__(*args, **kwargs)
        if '_udf_inputs' not in self.__dict__:
            raise TypeError("%s.__init__ must call UserFunction.__init__(self, inputs, ...)" % cls.__name__)
        return self._make_function(self._udf_inputs)

    def __init__(self, inputs, as_numpy=True, attributes=None, name=''):
        if isinstance(inputs, (_cntk.Variable, _cntk.Function)):
            inputs = [inputs]
        if not isinstance(inputs, (list, tuple)):
            raise TypeError("UserFunction: inputs must be a list of Variables or Functions, not %s"
                            % type(inputs).__name__)
        self._udf_inputs = [_as_output(i, 'an input of a user function') for i in inputs]
        self._udf_outputs = None
        if attributes is not None and not isinstance(attributes, dict):
            raise TypeError("UserFunction: attributes must be a dict, not %s" % type(attributes).__name__)
        self._udf_attributes = dict(attributes or {})
        if not isinstance(name, str):
            raise TypeError("UserFunction: name must be a string, not %s" % type(name).__name__)
        self._udf_name = name
        self.as_numpy = as_numpy

    def _make_function(self, inputs):
        root = _cntk.user_function(self, list(inputs), self._udf_attributes, self._udf_name)
        return _cntk.composite(root)

    # What the methods see of the graph node.
    @property
    def inputs(self):
        """The input variables, in the order given at construction."""
        return list(self._udf_inputs)

    @property
    def outputs(self):
        """The output variables (available in forward and backward)."""
        if self._udf_outputs is None:
            raise AttributeError("%s.outputs is only available in forward and backward; use the Function "
                                 "returned by the constructor otherwise" % type(self).__name__)
        return list(self._udf_outputs)

    @property
    def output(self):
        outs = self.outputs
        if len(outs) != 1:
            raise ValueError("%s has %d outputs; use .outputs" % (self.op_name, len(outs)))
        return outs[0]

    @property
    def name(self):
        return self._udf_name

    @name.setter
    def name(self, value):
        self._udf_name = value

    @property
    def attributes(self):
        return dict(self._udf_attributes)

    @property
    def op_name(self):
        """The op name the function reports: '<module>.<class>' unless a subclass overrides it."""
        return type(self)._op_name()

    @classmethod
    def _op_name(cls):
        return cls.__module__ + '.' + cls.__name__

    def infer_outputs(self):
        """The output variables of the op: a list of `cntk.output_variable(shape, dtype, dynamic_axes)`."""
        raise NotImplementedError("%s.infer_outputs must be implemented" % type(self).__name__)

    def forward(self, arguments, device=None, outputs_to_retain=None):
        raise NotImplementedError("%s.forward must be implemented" % type(self).__name__)

    def backward(self, state, root_gradients, variables=None):
        raise NotImplementedError("%s.backward must be implemented to compute gradients" % type(self).__name__)

    def clone(self, cloned_inputs):
        """A new instance over `cloned_inputs` (by default a shallow copy of this one)."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other._udf_outputs = None
        return other._make_function(cloned_inputs)

    def serialize(self):
        """The state to keep in a saved model (a dict)."""
        return {}

    @staticmethod
    def deserialize(inputs, name, state):
        raise NotImplementedError("UserFunction.deserialize must be implemented by a subclass")

    # Called by the engine.
    def _cntk_serialize(self):
        """What a model file keeps of this function (CNTK's layout): where its class lives,
        its op name and the state `serialize` returns."""
        return {'class': type(self).__name__, 'module': type(self).__module__, 'op_name': self.op_name,
                'state': self.serialize(), 'version': _UDF_SERIALIZATION_VERSION}

    @_reported_as_runtime_error
    def _cntk_infer_outputs(self, inputs):
        self._udf_inputs = list(inputs)
        cls = type(self).__name__
        outs = self.infer_outputs()
        if not isinstance(outs, (list, tuple)):
            raise TypeError("%s.infer_outputs must return a list of output variables (cntk.output_variable(...)), "
                            "not %s" % (cls, type(outs).__name__))
        if not outs:
            raise ValueError("%s.infer_outputs returned no output variables" % cls)
        for k, o in enumerate(outs):
            if not isinstance(o, _cntk.Variable):
                raise TypeError("%s.infer_outputs must return a list of output variables (cntk.output_variable(...)),"
                                " but item %d is %s" % (cls, k, type(o).__name__))
        return list(outs)

    def _cntk_data(self, var, value):
        """What forward and backward see: the Value itself, or as NumPy data: one array,
        or a list of arrays when sequences of different lengths make it ragged (as CNTK)."""
        if not self.as_numpy:
            return value
        if len(var.dynamic_axes) == 2 and value._mask is not None:
            return _from_value(var, value, True)
        return _value_dense(value)

    @_reported_as_runtime_error
    def _cntk_forward(self, inputs, outputs, values, training):
        from ..core import _NativeValue
        self._udf_inputs = list(inputs)
        self._udf_outputs = list(outputs)
        cls = type(self).__name__
        try:
            args = [self._cntk_data(v, val) for v, val in zip(inputs, values)]
            args = args[0] if len(args) == 1 else args
            device = _cntk.DeviceDescriptor.cpu()
            retain = list(outputs) if training else []
            if len(outputs) == 1:
                result = self.forward(args, device, retain)
                if not isinstance(result, tuple) or len(result) != 2:
                    raise TypeError("%s.forward must return a pair (state, output), not %s"
                                    % (cls, type(result).__name__))
                state, data = result
                datas = [data]
            else:
                out_map = {o: None for o in outputs}
                state = self.forward(args, out_map, device, retain)
                datas = [out_map.get(o) for o in outputs]
            values_out = []
            for o, d in zip(outputs, datas):
                if d is None:
                    raise ValueError("%s.forward did not compute every output (%r is missing)" % (cls, o))
                values_out.append(d if isinstance(d, _NativeValue) else _to_value(o, d))
            return state, values_out
        finally:
            self._udf_outputs = None

    @_reported_as_runtime_error
    def _cntk_backward(self, inputs, outputs, state, roots, wanted):
        from ..core import _NativeValue
        self._udf_inputs = list(inputs)
        self._udf_outputs = list(outputs)
        cls = type(self).__name__
        try:
            given = {o: self._cntk_data(o, r) for o, r in zip(outputs, roots) if r is not None}
            root_gradients = next(iter(given.values())) if len(given) == 1 else given
            if len(inputs) > 1:
                variables = {v: None for v, w in zip(inputs, wanted) if w}
                self.backward(state, root_gradients, variables)
                grads = [variables.get(v) if w else None for v, w in zip(inputs, wanted)]
            else:
                g = self.backward(state, root_gradients)
                grads = [g if wanted and wanted[0] else None]
            result = []
            for v, g in zip(inputs, grads):
                if g is None:
                    result.append(None)
                elif isinstance(g, _NativeValue):
                    result.append(g)
                else:
                    try:
                        result.append(_to_value(v, g))
                    except (TypeError, ValueError) as e:
                        raise type(e)("%s.backward: the gradient for %r: %s" % (cls, v, e))
            return result
        finally:
            self._udf_outputs = None

    def _cntk_clone(self, inputs):
        f = self.clone(list(inputs))
        if isinstance(f, UserFunction):
            raise TypeError("%s.clone must return the Function its constructor returns" % type(self).__name__)
        if not isinstance(f, _cntk.Function):
            raise TypeError("%s.clone must return a Function, not %s" % (type(self).__name__, type(f).__name__))
        return f


_UDF_SERIALIZATION_VERSION = 1
_udf_deserialize_callbacks = {}


def _register_udf_deserialize_callback(op_name, callback):
    """Loading a model calls `callback(inputs, name, state)` instead of the class's static
    `deserialize` for the user functions with this op name (one callback per op name)."""
    if op_name in _udf_deserialize_callbacks:
        raise ValueError("a deserialize callback for the user function op '%s' is already registered" % op_name)
    _udf_deserialize_callbacks[op_name] = callback


def _deserialize_user_function(inputs, name, description):
    """Rebuilds a user function of a model file (the engine calls this while loading)."""
    import importlib
    op_name = description.get('op_name')
    module, cls = description.get('module'), description.get('class')
    factory = _udf_deserialize_callbacks.get(op_name)
    if factory is None:
        try:
            klass = getattr(importlib.import_module(module), cls)
        except (ImportError, AttributeError) as e:
            raise ValueError("cannot rebuild the user function '%s.%s' (op '%s'): %s; register a callback with "
                             "Function.register_udf_deserialize_callback" % (module, cls, op_name, e))
        factory = getattr(klass, 'deserialize', None)
        if factory is None:
            raise ValueError("cannot rebuild the user function '%s.%s': it has no static deserialize method and no "
                             "callback is registered for the op '%s'" % (module, cls, op_name))
    f = factory(list(inputs), name, description.get('state'))
    if isinstance(f, UserFunction):
        f = f._make_function(f._udf_inputs)
    if not isinstance(f, _cntk.Function):
        raise TypeError("the deserializer of user function op '%s' returned %s, not a Function"
                        % (op_name, type(f).__name__))
    return f


_cntk._set_user_function_deserializer(_deserialize_user_function)


def _function_serialize(self):
    """A user function's description as model files keep it: {'class', 'module',
    'op_name', 'state', 'version'} ('state' is what its `serialize` returns)."""
    udf = _user_object(self)
    if udf is None:
        raise NotImplementedError("serialize describes user-defined functions; save a model with Function.save")
    return udf._cntk_serialize()


def _setattr(self, name, value):
    # Attributes a user function's instance has are set on it, so that the Function a
    # UserFunction constructor returns reads and writes the same state (CNTK's Function
    # is that instance).
    udf = None if name.startswith('_') else _user_object(self)
    if udf is not None and name in udf.__dict__:
        setattr(udf, name, value)
    else:
        object.__setattr__(self, name, value)


def _user_object(f):
    """The UserFunction instance behind a user-defined function (or its composite), else None."""
    root = f._root_function() if f._kind == _COMPOSITE else f
    return root._user_object


def _function_eq(self, other):
    """Two handles are equal when they stand for the same node (a composite and its root included)."""
    return isinstance(other, _cntk.Function) and self._root_function().same(other._root_function())


_props = {
    'arguments': property(_arguments),
    'inputs': property(lambda self: list(self._inputs())),
    'outputs': property(_outputs),
    'output': property(_output),
    'parameters': property(lambda self: list(self._parameters())),
    'constants': property(lambda self: list(self._constants())),
    'placeholders': property(lambda self: list(self._placeholders())),
    'root_function': property(lambda self: self._root_function()),
    'is_composite': property(lambda self: self._kind == _COMPOSITE),
    'is_primitive': property(lambda self: self._kind != _COMPOSITE),
    'is_block': property(lambda self: self._kind == _BLOCK),
    'block_root': property(lambda self: self._block_root()),
    'block_arguments_mapping': property(lambda self: [(k, v) for k, v in self._block_arguments_mapping()]),
    'attributes': property(_attributes),
    'custom_attributes': property(_custom_attributes_get, _custom_attributes_set),
    'name': property(lambda self: self._name, _name_set),
    'op_name': property(lambda self: self._op_name),
    'uid': property(lambda self: self._uid),
    'type': property(_type),
    'signature': property(_signature),
    'shape': property(lambda self: self.output.shape),
    'dtype': property(lambda self: self.output.dtype),
    'dynamic_axes': property(lambda self: self.output.dynamic_axes),
    'is_sparse': property(lambda self: self.output.is_sparse),
}
for _k, _v in _props.items():
    setattr(Function, _k, _v)

for _k, _v in vars(TensorOpsMixin).items():
    if _k.startswith('__') and _k not in ('__module__', '__dict__', '__weakref__', '__doc__', '__qualname__'):
        setattr(Function, _k, _v)

Function.set_attribute = _set_attribute
Function.argument_map = _argument_map
Function.__call__ = _call
Function.__rshift__ = _rshift
Function.__lshift__ = _lshift
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
Function.__eq__ = _function_eq
Function.__ne__ = lambda self, other: not _function_eq(self, other)
Function.__hash__ = lambda self: hash(self._root_function()._uid)
Function.__str__ = _str
Function.__repr__ = _repr
Function.__array_priority__ = 100
Function.save = _save
Function.restore = _restore
Function.load = staticmethod(lambda model, device=None, format=ModelFormat.CNTKv2: load_model(model, device, format))
Function.train = _unsupported('Function.train', 'training issue')
Function.test = _unsupported('Function.test', 'training issue')


def _print_node_timing(self):
    """Prints the per-node forward/backward totals collected since
    cntk.debugging.set_node_timing(True) for the nodes of this function."""
    from ..debugging.debug import _print_node_timing as print_timing
    print_timing([self])


Function.print_node_timing = _print_node_timing
Function.register_udf_deserialize_callback = staticmethod(_register_udf_deserialize_callback)
Function.serialize = _function_serialize
Function.__setattr__ = _setattr


def _with_signature(*args, **kwargs):
    """Decorator: `@Function.with_signature(Tensor[3])` is `@Function` over `@Signature(Tensor[3])`."""
    def decorator(f):
        from ..layers.typing import Signature
        return _to_function(Signature(*args, **kwargs)(f))
    return decorator


Function.with_signature = staticmethod(_with_signature)
