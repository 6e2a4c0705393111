"""Matrix products."""
from .. import _cntk
from ._prim import prim

__all__ = ['times', 'times_transpose', 'TIMES_NO_INFERRED_INPUT_RANK',
           'TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK']

#: `infer_input_rank_to_map` values with a special meaning (CNTK's).
TIMES_NO_INFERRED_INPUT_RANK = -1
TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK = -2


def times(left, right, output_rank=1, infer_input_rank_to_map=TIMES_NO_INFERRED_INPUT_RANK, name=''):
    """Matrix product: contracts the trailing axes of `left` with the leading axes of
    `right`, keeping `output_rank` trailing axes of `right` (NumPy order).

    With ``infer_input_rank_to_map=TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK``
    the products are also summed over the sequence axis: ``sequence.reduce_sum(times(left, right))``.
    """
    if infer_input_rank_to_map == TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK:
        from .sequence import reduce_sum
        return reduce_sum(times(left, right, output_rank), name=name)
    return prim('Times', [left, right], {'outputRank': int(output_rank),
                                         'inferInputRankToMap': int(infer_input_rank_to_map)}, name)


def times_transpose(left, right, name=''):
    """left @ right^T, for a right operand of rank 1 or 2. A vector right operand
    counts as one row, so the result ends in an axis of size 1 (as in CNTK)."""
    from ..internal import sanitize_inputs
    from . import reshape, transpose
    left, r = sanitize_inputs(left, right)
    if len(r.shape) == 1:
        return times(left, reshape(r, (-1, 1)), name=name)
    if len(r.shape) != 2:
        raise ValueError("times_transpose: the right operand must have rank 1 or 2, not %s" % (r.shape,))
    return times(left, transpose(r, [1, 0]), name=name)
