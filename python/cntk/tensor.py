"""Operator overloads shared by Variables and Functions (CNTK's TensorOpsMixin)."""
import builtins
import numbers


def _skip_dynamic_axes(x, arg):
    """With the global option align_axis set to 1 (Keras' CNTK backend sets it), an
    index counts the dynamic axes first, as a NumPy array with its batch axis would:
    `z[:, :8]` slices static axis 0 of a batch of vectors. Those leading entries must
    take their whole axis (CNTK's Python API shifted them onto static axes instead,
    which no Keras layer relies on)."""
    from .default_options import get_global_option, get_default_override, default_override_or
    dynamic_axes = getattr(x, 'dynamic_axes', None)
    if get_global_option('align_axis', 0) != 1 or not dynamic_axes:
        return arg
    n = get_default_override(None, axis_offset=default_override_or(len(dynamic_axes)))
    for a in arg[:n]:
        if a is Ellipsis:
            return arg
        if not (isinstance(a, builtins.slice) and a == builtins.slice(None)):
            raise IndexError("with align_axis=1, the first %d index entries stand for the dynamic axes "
                             "%s and must be ':', not %r" % (n, [ax.name for ax in dynamic_axes], a))
    return arg[n:]


class TensorOpsMixin(object):
    """`+ - * / @`, unary minus, `abs`, comparisons and `[...]` slicing build graph ops."""

    def __add__(self, other):
        from . import ops
        return ops.plus(self, other)

    def __radd__(self, other):
        from . import ops
        return ops.plus(other, self)

    def __sub__(self, other):
        from . import ops
        return ops.minus(self, other)

    def __rsub__(self, other):
        from . import ops
        return ops.minus(other, self)

    def __mul__(self, other):
        from . import ops
        return ops.element_times(self, other)

    def __rmul__(self, other):
        from . import ops
        return ops.element_times(other, self)

    def __truediv__(self, other):
        from . import ops
        return ops.element_divide(self, other)

    def __rtruediv__(self, other):
        from . import ops
        return ops.element_divide(other, self)

    __div__ = __truediv__
    __rdiv__ = __rtruediv__

    def __matmul__(self, other):
        from . import ops
        return ops.times(self, other)

    def __rmatmul__(self, other):
        from . import ops
        return ops.times(other, self)

    def __pow__(self, other):
        from . import ops
        return ops.pow(self, other)

    def __rpow__(self, other):
        from . import ops
        return ops.pow(other, self)

    def __neg__(self):
        from . import ops
        return ops.negate(self)

    def __pos__(self):
        return self

    def __abs__(self):
        from . import ops
        return ops.abs(self)

    def __lt__(self, other):
        from . import ops
        return ops.less(self, other)

    def __le__(self, other):
        from . import ops
        return ops.less_equal(self, other)

    def __gt__(self, other):
        from . import ops
        return ops.greater(self, other)

    def __ge__(self, other):
        from . import ops
        return ops.greater_equal(self, other)

    def __getitem__(self, arg):
        """Indexing over static axes, as CNTK: an int keeps its axis with size 1 (NumPy
        would drop it); slices take steps, negative ones too; a list of ints picks those
        positions along an axis (spliced together); Ellipsis; None adds an axis of size 1."""
        from . import ops
        outputs = getattr(self, 'outputs', None)
        if outputs is not None and len(outputs) > 1:
            # A function with several outputs is indexed by output, as in CNTK.
            try:
                return outputs[arg]
            except (IndexError, TypeError) as e:
                raise KeyError("a function with %d outputs takes one output index, not %r (%s)"
                               % (len(outputs), arg, e))
        if not isinstance(arg, tuple):
            arg = (arg,)
        arg = _skip_dynamic_axes(self, arg)
        shape = self.shape
        if sum(1 for a in arg if a is Ellipsis) > 1:
            raise IndexError("only one Ellipsis is allowed in an index")
        n_real = sum(1 for a in arg if a is not None and a is not Ellipsis)
        if n_real > len(shape):
            raise IndexError("too many indices (%d) for shape %s" % (n_real, shape))
        expanded = []
        for a in arg:
            if a is Ellipsis:
                expanded.extend([slice(None)] * (len(shape) - n_real))
            else:
                expanded.append(a)

        def position(i, dim, axis):
            if isinstance(i, bool) or not isinstance(i, numbers.Integral):
                raise IndexError("cannot index with %r" % (i,))
            i = int(i)
            if dim >= 0:
                if not -dim <= i < dim:
                    raise IndexError("index %d is out of bounds for axis %d of size %d" % (i, axis, dim))
                i = i + dim if i < 0 else i
            return i

        def pick(r, i, axis):
            # CNTK's end index 0 means "to the end", which serves i = -1 on a free axis.
            return ops.slice(r, axis, i, i + 1 if i != -1 else 0)

        r = self
        new_axes = []
        out_axis = 0
        axis = 0
        for a in expanded:
            if a is None:
                new_axes.append(out_axis)
                out_axis += 1
                continue
            dim = shape[axis]
            if isinstance(a, builtins.slice):
                if a != builtins.slice(None):
                    if dim >= 0:
                        start, stop, step = a.indices(dim)
                        count = len(range(start, stop, step))
                        if count == 0:
                            raise IndexError("the slice %r selects nothing on axis %d of size %d" % (a, axis, dim))
                        if step > 0:
                            r = ops.slice(r, axis, start, stop, step)
                        else:
                            last = start + (count - 1) * step
                            r = ops.slice(r, axis, last, start + 1, step)
                    else:
                        step = 1 if a.step is None else a.step
                        if step < 0:
                            raise IndexError("a negative step needs a known dimension (axis %d)" % axis)
                        r = ops.slice(r, axis, a.start or 0, a.stop or 0, step)
            elif isinstance(a, (list, tuple)):
                if not a:
                    raise IndexError("an empty list selects nothing")
                parts = [pick(r, position(i, dim, axis), axis) for i in a]
                r = parts[0] if len(parts) == 1 else ops.splice(*parts, axis=axis)
            else:
                r = pick(r, position(a, dim, axis), axis)
            axis += 1
            out_axis += 1
        for pos in new_axes:
            # An empty range at `pos` reshaped into (1,): a new axis at that position.
            r = ops.reshape(r, (1,), pos, pos)
        return r


class ArrayMixin(object):
    def asarray(self):
        """The value as a NumPy array."""
        return self._as_numpy()
