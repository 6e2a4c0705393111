"""Matrix products."""
from .. import _cntk
from ._prim import prim

__all__ = ['times', 'times_transpose']


def times(left, right, output_rank=1, infer_input_rank_to_map=-1, name=''):
    """Matrix product: contracts the trailing axes of `left` with the leading axes of
    `right`, keeping `output_rank` trailing axes of `right` (NumPy order)."""
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
