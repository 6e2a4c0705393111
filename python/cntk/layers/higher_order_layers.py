"""Layers built from other layers: Sequential, For, SequentialClique, ResNetBlock."""
import inspect
import types

from .. import _cntk
from ..ops import as_composite, combine, plus, placeholder
from ..ops.functions import _from_python
from .blocks import _arity, identity, layer


def _compose(functions):
    """f1 >> f2 >> ...: a Function applying each to the previous result. A tuple
    applies each of its members to the same input and returns all their outputs."""
    def apply(f, args):
        if isinstance(f, tuple):
            outs = []
            for g in f:
                r = apply(g, args)
                outs.extend(r.outputs if isinstance(r, _cntk.Function) else [r])
            return combine(outs)
        return f(*args)

    first = functions[0]
    n = _arity(first[0] if isinstance(first, tuple) else first) or 1
    args = [placeholder(name='x%d' % i if n > 1 else 'x') for i in range(n)]
    out = args
    for f in functions:
        r = apply(f, out)
        if isinstance(r, _cntk.Function):
            out = list(r.outputs)
        elif isinstance(r, (list, tuple)):
            out = list(r)
        else:
            out = [r]
    # Rooted at the last layer, as CNTK's composition (no Combine on top), unless that
    # layer's function has more outputs than the one passed on (a recurrence's h of (h, c)).
    if len(out) == 1 and out[0].is_output and len(out[0].owner.outputs) == 1:
        return as_composite(out[0].owner)
    return combine(out)


def _flatten(layers):
    if isinstance(layers, list):
        return [Sequential(l) if isinstance(l, list) else l for l in layers]
    return [layers]


def Sequential(layers, name=''):
    """Applies layers one after another: Sequential([F, G, H])(x) == H(G(F(x))).
    Nested lists are flattened; a tuple applies its layers side by side to the same input."""
    if not isinstance(layers, list):
        return layers
    layers = _flatten(layers)
    if not layers:
        return layer('Sequential', lambda x: identity(x), name)
    f = _compose(layers)
    if name:  # a named Combine over the result, not a rename of the last layer
        f = combine(list(f.outputs), name=name)
    return f


def For(what_range, constructor, name=''):
    """Sequential([constructor(i) for i in what_range]); `constructor` may also take no argument."""
    # As CNTK: the constructor must be a Python function or lambda (not a layer or other callable).
    if not isinstance(constructor, types.FunctionType):
        raise ValueError("For: constructor must be a Python function/lambda that makes a layer, not %s"
                         % type(constructor).__name__)
    params = inspect.signature(constructor).parameters
    takes_arg = len(params) > 0
    layers = [constructor(i) if takes_arg else constructor() for i in what_range]
    return Sequential(layers, name=name)


def SequentialClique(functions, name=''):
    """Applies functions in sequence where each one's input is the sum of the
    original input and all outputs before it; returns the last output."""
    functions = list(functions)
    if not functions:
        raise ValueError("SequentialClique: needs at least one function")

    def clique(x):
        total = x
        out = x
        for i, f in enumerate(functions):
            out = f(total)
            if i + 1 < len(functions):
                total = plus(total, out)
        return out
    f = _from_python(clique)
    if name:
        f.name = name
    return f


def ResNetBlock(f, name=''):
    """A residual connection: x + f(x)."""
    def resnet(x):
        return plus(f(x), x)
    f2 = _from_python(resnet)
    if name:
        f2.name = name
    return f2


__all__ = ['Sequential', 'For', 'SequentialClique', 'ResNetBlock']
