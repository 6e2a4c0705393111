"""Evaluation metrics: one value per sample, shape (1,)."""
from ..ops import argmax, not_equal, reduce_sum, element_times, equal, reduce_max

__all__ = ['classification_error']


def classification_error(output_vector, target_vector, axis=-1, topN=1, name=''):
    """1 where the highest-scoring class of `output_vector` is not the target's, else 0."""
    if topN != 1:
        raise NotImplementedError("classification_error: topN > 1 is not implemented yet")
    # The target's score at the output's argmax: 1 when right (one-hot target).
    hit = reduce_sum(element_times(target_vector, equal(output_vector, reduce_max(output_vector, axis=axis))), axis=axis)
    from ..ops import less
    return less(hit, 0.5, name=name)
