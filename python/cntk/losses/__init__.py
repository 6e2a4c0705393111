"""Loss functions: one value per sample, shape (1,)."""
import numpy as np

from ..axis import Axis
from ..ops import reduce_sum, reduce_log_sum_exp, element_times, minus, negate, log, plus, square

__all__ = ['cross_entropy_with_softmax', 'squared_error', 'binary_cross_entropy', 'weighted_binary_cross_entropy']


def cross_entropy_with_softmax(output_vector, target_vector, axis=-1, name=''):
    """-sum(target * log_softmax(output)) along `axis`: log-sum-exp(output) - target . output."""
    lse = reduce_log_sum_exp(output_vector, axis=axis)
    dot = reduce_sum(element_times(target_vector, output_vector), axis=axis)
    return minus(lse, dot, name=name)


def squared_error(output, target, name=''):
    """Sum of squared differences over all static axes."""
    return reduce_sum(square(minus(output, target)), axis=Axis.all_static_axes(), name=name)


def binary_cross_entropy(output, target, name=''):
    """-(t log(y) + (1 - t) log(1 - y)), summed over the static axes."""
    pos = element_times(target, log(output))
    neg = element_times(minus(1, target), log(minus(1, output)))
    return negate(reduce_sum(plus(pos, neg), axis=Axis.all_static_axes()), name=name)


def weighted_binary_cross_entropy(output, target, weight, name=''):
    """binary_cross_entropy with a per-element weight."""
    pos = element_times(target, log(output))
    neg = element_times(minus(1, target), log(minus(1, output)))
    return negate(reduce_sum(element_times(weight, plus(pos, neg)), axis=Axis.all_static_axes()), name=name)
