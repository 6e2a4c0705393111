"""Evaluation metrics: one value per sample."""
import numbers

import numpy as np

from ..axis import Axis
from ..internal import sanitize_axis, sanitize_inputs, np_dtype
from ..ops import reduce_max, reduce_sum, reduce_mean, equal, not_equal, greater_equal
from ..ops._prim import prim
from ..variables import Constant

__all__ = ['classification_error', 'ndcg_at_1', 'edit_distance_error']


def classification_error(output_vector, target_vector, axis=-1, topN=1, name=''):
    """1 for a sample whose target class is not among the `topN` highest outputs, else 0.

    Along the last axis (the default): with topN=1, 1 - target[argmax(output)]
    (the first maximum wins ties); with topN > 1, the target's class (its largest
    entry) must be among the topN best outputs, ties between outputs ranked by
    position, the earlier class first. The result keeps the axis with size 1:
    shape (1,) for vectors.

    Along another axis (topN=1 only): a row counts as wrong unless the output's
    maxima are exactly the target's ones, and the errors are averaged over the
    static axes into one scalar per sample, as in CNTK.

    With topN=1 along the last axis the target gets CNTK's gradient, -1 at the
    output's argmax (the error is 1 - target . hardmax(output)); the output gets none.
    """
    if isinstance(topN, bool) or not isinstance(topN, numbers.Integral) or topN < 1:
        raise ValueError("classification_error: topN must be a positive integer, not %r" % (topN,))
    o, t = sanitize_inputs(output_vector, target_vector)
    ax = sanitize_axis(axis)
    if ax.is_static_axis and ax.static_index == -1:
        inputs = [o, t]
        if topN > 1:
            inputs.append(Constant(np.asarray(float(topN), dtype=np_dtype(o._dtype))))
        return prim('ClassificationError', inputs, {}, name)
    if topN != 1:
        raise ValueError("classification_error: topN > 1 is supported only along the last axis (axis=-1)")
    predicted = equal(o, reduce_max(o, axis=ax))
    wrong = reduce_sum(not_equal(t, predicted), axis=ax)
    # CNTK's C++ mean over all static axes drops them: one scalar per sample.
    return reduce_mean(greater_equal(wrong, 1.0), axis=Axis.all_static_axes(), keepdims=False, name=name)


def ndcg_at_1(output, gain, group, name=''):
    """100 * the mean NDCG@1 over the groups of the minibatch, times the number of
    samples, as one scalar for the whole minibatch (no dynamic axes), as CNTK's.

    Samples of a group are consecutive and sorted by decreasing `gain`; NDCG@1 of
    a group is the gain of its best-scored sample over its largest gain.
    Evaluation only (no gradient).
    """
    o, g, q = sanitize_inputs(output, gain, group)
    return prim('NDCG', [o, g, q], {}, name)


def edit_distance_error(input_a, input_b, subPen=1, delPen=1, insPen=1, squashInputs=False, tokensToIgnore=[],
                        name=''):
    """Edit distance error between the label sequences of `input_a` and `input_b` (the argmax
    of each step). Repeats are merged when `squashInputs`; labels in `tokensToIgnore` are
    dropped. The edits (insertions, deletions, substitutions) of the cheapest alignment under
    the given penalties, times frames / labels of input_b (as CNTK): averaged over frames, the
    error rate per reference label."""
    for what, v in (('subPen', subPen), ('delPen', delPen), ('insPen', insPen)):
        if not isinstance(v, numbers.Real) or isinstance(v, bool):
            raise TypeError("edit_distance_error: %s must be a number, not %r" % (what, v))
    tokens = list(tokensToIgnore or [])
    if not all(isinstance(t, numbers.Integral) and not isinstance(t, bool) and t >= 0 for t in tokens):
        raise ValueError("edit_distance_error: tokensToIgnore must be non-negative label indices, not %r"
                         % (tokensToIgnore,))
    a, b = sanitize_inputs(input_a, input_b)
    return prim('EditDistanceError', [a, b],
                {'subPen': float(subPen), 'delPen': float(delPen), 'insPen': float(insPen),
                 'squashInputs': bool(squashInputs), 'tokensToIgnore': [int(t) for t in tokens]}, name)
