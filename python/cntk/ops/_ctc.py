"""CTC training as CNTK spells it: labels_to_graph and forward_backward."""
import numbers

from ._prim import prim

__all__ = ['labels_to_graph', 'forward_backward']


def labels_to_graph(labels, name=''):
    """The graph of label sequences that forward_backward scores. `labels` hold one
    one-hot row per frame: 2 on the first frame of a token, 1 on the frames after it."""
    return prim('LabelsToGraph', [labels], {}, name)


def forward_backward(graph, features, blankTokenId, delayConstraint=-1, name=''):
    """The CTC criterion: -log p(labels | features), summed over the sequences, where
    `features` are unnormalized class scores per frame (softmax is applied inside)
    and `blankTokenId` is the class of the CTC blank.

    `delayConstraint` D (-1: none) limits how late an alignment may emit a token
    relative to the frames the labels mark (their 2s): with f_k the frame of the
    k-th token's 2 (and the sequence length after the last token), the alignment
    must have left token k by frame f_{k+1} + D and the blank before it by
    f_{k+1} + D - 1. Smaller values give shorter output delays at decoding time."""
    if not isinstance(blankTokenId, numbers.Integral) or isinstance(blankTokenId, bool):
        raise TypeError("forward_backward: blankTokenId must be an integer, not %r" % (blankTokenId,))
    if not isinstance(delayConstraint, numbers.Integral) or isinstance(delayConstraint, bool):
        raise TypeError("forward_backward: delayConstraint must be an integer, not %r" % (delayConstraint,))
    if delayConstraint < -1:
        raise ValueError("forward_backward: delayConstraint must be -1 (no constraint) or >= 0, not %d"
                         % delayConstraint)
    return prim('ForwardBackward', [graph, features],
                {'blankTokenId': int(blankTokenId), 'delayConstraint': int(delayConstraint)}, name)
