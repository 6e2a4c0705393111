"""Operator overloads shared by Variables and Functions (CNTK's TensorOpsMixin)."""
import numpy as np


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
        """NumPy-style slicing over static axes: ints, slices (with steps), Ellipsis, None."""
        from . import ops
        if not isinstance(arg, tuple):
            arg = (arg,)
        shape = self.shape
        # Expand Ellipsis.
        n_real = sum(1 for a in arg if a is not None and a is not Ellipsis)
        if sum(1 for a in arg if a is Ellipsis) > 1:
            raise IndexError("only one Ellipsis is allowed in an index")
        expanded = []
        for a in arg:
            if a is Ellipsis:
                expanded.extend([slice(None)] * (len(shape) - n_real))
            else:
                expanded.append(a)
        if n_real > len(shape):
            raise IndexError("too many indices (%d) for shape %s" % (n_real, shape))
        r = self
        axis = 0
        drop = []
        new_axes = []
        out_axis = 0
        for a in expanded:
            if a is None:
                new_axes.append(out_axis)
                out_axis += 1
                continue
            if isinstance(a, (int, np.integer)):
                dim = shape[axis]
                i = int(a)
                if i < 0:
                    i += dim
                if not 0 <= i < dim:
                    raise IndexError("index %d is out of bounds for axis %d of size %d" % (a, axis, dim))
                r = ops.slice(r, axis, i, i + 1)
                drop.append(axis)
            elif isinstance(a, slice):
                if a != slice(None):
                    start, stop, step = a.indices(shape[axis])
                    if step <= 0:
                        raise IndexError("slices need a positive step")
                    r = ops.slice(r, axis, start, stop, step)
                out_axis += 1
            else:
                raise IndexError("cannot index with %r" % (a,))
            axis += 1
        # CNTK keeps sliced-by-int axes with size 1; NumPy drops them. CNTK's behaviour is kept.
        for pos in new_axes:
            r = ops.expand_dims(r, pos)
        return r


class ArrayMixin(object):
    def asarray(self):
        """The value as a NumPy array."""
        return self._as_numpy()
