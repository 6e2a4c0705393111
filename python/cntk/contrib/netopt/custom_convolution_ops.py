"""Binarizing operators with straight-through gradient estimates.

Sign and multi-bit binarization have zero gradient almost everywhere, so
training uses the *straight-through estimator*: the gradient passes unchanged
where the input is small enough to be representable (``|x| <= 1`` for the sign,
``|x| <= bits`` for ``k`` bits) and is zero elsewhere.

Multi-bit binarization approximates ``x`` greedily by ``sum_i m_i * s_i`` with
sign tensors ``s_i`` in {-1, +1}: each step takes the sign of what is left to
approximate (the residual) and the mean magnitude of that residual as its scale
``m_i``. A ``bit_map`` shaped like the input gives each element its own number
of steps (bits). :class:`Multibit` uses one scale per sample (activations),
:class:`MultibitKernel` one per output filter (convolution weights, axis 0).

Use the factory functions (:func:`CustomSign`, :func:`CustomMultibit`, ...),
which wrap the operators with :func:`cntk.user_function`.
"""

import numpy as np

import cntk as C
from cntk.ops.functions import UserFunction


def _sign(x):
    """Sign with 0 mapped to -1, so that every value is one bit."""
    return np.where(x > 0, 1.0, -1.0).astype(x.dtype)


def _output_like(function):
    argument = function.inputs[0]
    return [C.output_variable(argument.shape, argument.dtype, argument.dynamic_axes)]


def _multibit(x, bit_map, per_kernel, sample_axes):
    """Greedy multi-bit approximation of ``x`` (see the module documentation).

    ``sample_axes`` leading axes of ``x`` are batch/sequence axes; scales are
    computed per sample, and per output filter too with ``per_kernel``.
    """
    x = np.asarray(x, dtype=np.float64)
    bits = np.broadcast_to(bit_map, x.shape)
    # Axes a scale is averaged over: all static axes, except the filter axis.
    first_static = sample_axes + (1 if per_kernel else 0)
    axes = tuple(range(first_static, x.ndim))
    residual, approximation = x.copy(), np.zeros_like(x)
    for level in range(int(np.max(bit_map)) if np.size(bit_map) else 0):
        active = bits > level
        count = np.maximum(active.sum(axis=axes, keepdims=True), 1)
        scale = (np.abs(residual) * active).sum(axis=axes, keepdims=True) / count
        step = np.where(active, _sign(residual), 0.0) * scale
        approximation += step
        residual -= step
    return approximation


class _StraightThrough(UserFunction):
    """Base of the binarizing operators: ``forward`` is the quantizer, the
    gradient is passed where ``|x| <= bound``."""

    def __init__(self, arg, name):
        super(_StraightThrough, self).__init__([arg], name=name)

    def _bound(self):
        return 1.0

    def _quantize(self, x, sample_axes):
        raise NotImplementedError

    def _sample_axes(self):
        return len(self.inputs[0].dynamic_axes)

    def forward(self, argument, device=None, outputs_to_retain=None):
        x = np.asarray(argument)
        return x, self._quantize(x, self._sample_axes()).astype(x.dtype)

    def backward(self, state, root_gradients):
        passes = np.abs(state) <= self._bound()
        return (np.asarray(root_gradients) * passes).astype(state.dtype)

    def infer_outputs(self):
        return _output_like(self)


class SignWithEstimation(_StraightThrough):
    """``sign(x)`` (0 counts as negative) with the straight-through gradient."""

    def __init__(self, arg, name='SignWithEstimation'):
        super(SignWithEstimation, self).__init__(arg, name)

    def _quantize(self, x, sample_axes):
        return _sign(x)

    def clone(self, cloned_inputs):
        return SignWithEstimation(cloned_inputs[0], self.name)

    @staticmethod
    def deserialize(inputs, name, state):
        return SignWithEstimation(inputs[0], name)


class pySign(SignWithEstimation):
    """The same operator as :class:`SignWithEstimation` (CNTK 2.7 had a NumPy
    and a graph-based implementation; here both are NumPy)."""

    def __init__(self, arg, name='pySign'):
        super(pySign, self).__init__(arg, name)

    def clone(self, cloned_inputs):
        return pySign(cloned_inputs[0], self.name)

    @staticmethod
    def deserialize(inputs, name, state):
        return pySign(inputs[0], name)


class Multibit(_StraightThrough):
    """Multi-bit binarization with one scale per bit for the whole sample.

    Args:
        arg: the input.
        bit_map (np.ndarray): bits per element, shaped like ``arg``.
    """

    _PER_KERNEL = False

    def __init__(self, arg, bit_map, name='Multibit'):
        super(Multibit, self).__init__(arg, name)
        self.bit_map = np.asarray(bit_map, dtype=np.int32)

    def _bound(self):
        # More bits represent larger magnitudes.
        return self.bit_map

    def _quantize(self, x, sample_axes):
        return _multibit(x, self.bit_map, self._PER_KERNEL, sample_axes)

    def serialize(self):
        return {'bit_map': np.asarray(self.bit_map, dtype=np.float32)}

    @classmethod
    def _rebuild(cls, arg, bit_map, name):
        return cls(arg, bit_map, name)

    @classmethod
    def deserialize(cls, inputs, name, state):
        return cls(inputs[0], np.asarray(state['bit_map'], dtype=np.int32), name)

    def clone(self, cloned_inputs):
        return type(self)(cloned_inputs[0], self.bit_map, self.name)


class MultibitKernel(Multibit):
    """Multi-bit binarization with one scale per bit and per output filter
    (axis 0); meant for convolution weights."""

    _PER_KERNEL = True

    def __init__(self, arg, bit_map, name='MultibitKernel'):
        super(MultibitKernel, self).__init__(arg, bit_map, name)


def _bit_map_for(input, bit_map, mean_bits):
    """Bits per element: drawn around ``mean_bits`` (at least one) when given,
    else ``bit_map`` (a number for every element, or an array)."""
    shape = tuple(input.shape)
    if mean_bits:
        drawn = np.round(np.random.normal(mean_bits, 1, shape))
        return np.maximum(drawn, 1).astype(np.int32)
    bit_map = np.asarray(bit_map, dtype=np.int32)
    if bit_map.ndim == 0:
        bit_map = np.full(shape, int(bit_map), dtype=np.int32)
    if bit_map.shape != shape:
        raise ValueError('bit_map of shape {0} does not match the input shape {1}'
                         .format(bit_map.shape, shape))
    return bit_map


def CustomSign(input):
    """Binarize ``input`` to {-1, +1} (straight-through gradient)."""
    return C.user_function(SignWithEstimation(input))


def CustomPySign(input):
    """Same as :func:`CustomSign`."""
    return C.user_function(pySign(input))


def CustomMultibit(input, bit_map, mean_bits=None):
    """Multi-bit binarization of ``input`` with ``bit_map`` bits per element
    (or, with ``mean_bits``, random bit counts around that mean)."""
    return C.user_function(Multibit(input, _bit_map_for(input, bit_map, mean_bits)))


def CustomMultibitKernel(input, bit_map, mean_bits=None):
    """Multi-bit binarization of convolution weights, scaled per filter."""
    return C.user_function(MultibitKernel(input, _bit_map_for(input, bit_map, mean_bits)))
