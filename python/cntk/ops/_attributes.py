"""Function.attributes as CNTK's Python API shows them.

The engine keeps an op's attributes in its own form (NumPy-order per-axis lists as given,
static axes by NumPy index). CNTK's PrimitiveFunction completed some of them when it was
built (per-axis convolution settings expanded to the kernel's rank, kernelShape and
outputShape filled in) and its Python layer showed axes as ('ordered', 'static', index)
tuples with CNTK's column-major index. This module gives that view; it changes nothing
in the function.
"""
import functools

from .. import _cntk


@functools.lru_cache(maxsize=None)
def _declared_default(op, key):
    # The op catalogue's schema is the one place an attribute's default is written.
    return _cntk.op_schema(op)['attributes'][key]['default']


def _axis_view(axis, rank):
    if axis.is_static_axis:
        i = axis.static_axis_index()
        return ('ordered', 'static', rank - 1 - i if i >= 0 else -i - 1)
    return ('ordered' if axis.is_ordered else 'unordered', 'dynamic', axis.name)


def _expanded(values, rank):
    # CNTK repeats the last entry of its column-major list: NumPy order repeats the first.
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    return [values[0]] * (rank - len(values)) + values if values and len(values) < rank else values


def _convolution_view(fn, attrs):
    kernel, operand = fn.inputs[0], fn.inputs[1]
    rank = len(operand.shape)
    out = dict(attrs)
    for key in ('autoPadding', 'sharing'):
        if key in out:
            out[key] = _expanded(out[key], rank)
    for key in ('strides', 'dilation'):
        if key in out:
            out[key] = tuple(_expanded(out[key], rank))
    for key in ('lowerPad', 'upperPad'):
        out[key] = tuple(_expanded(out.get(key, [0]), rank))
    out['outputShape'] = tuple(out['outputShape']) if out.get('outputShape') else (0,)
    out['kernelShape'] = tuple(kernel.shape[-rank:]) if rank else ()
    out.setdefault('sequential', _declared_default('Convolution', 'sequential'))
    # CNTK's primitive has no reductionRank attribute: it shows only a non-default one.
    if out.get('reductionRank') == _declared_default('Convolution', 'reductionRank'):
        del out['reductionRank']
    return out


def _slice_view(fn, attrs):
    rank = len(fn.inputs[0].shape)
    out = dict(attrs)
    if 'axis' in out:
        out['axis'] = _axis_view(out['axis'], rank)
    if 'axisVec' in out:
        out['axisVec'] = [_axis_view(a, rank) for a in out['axisVec']]
    return out


_VIEWS = {'Convolution': _convolution_view, 'Slice': _slice_view}


def cntk_attributes(fn, attrs):
    """The attributes `attrs` of the primitive function `fn`, shown as CNTK showed them."""
    view = _VIEWS.get(fn.op_name)
    if view is None:
        return attrs
    try:
        return view(fn, attrs)
    except (AttributeError, IndexError, TypeError, ValueError):
        return attrs  # inputs whose shapes are not known yet: the attributes as they are
