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
    and `blankTokenId` is the class of the CTC blank."""
    if not isinstance(blankTokenId, numbers.Integral) or isinstance(blankTokenId, bool):
        raise TypeError("forward_backward: blankTokenId must be an integer, not %r" % (blankTokenId,))
    if not isinstance(delayConstraint, numbers.Integral) or isinstance(delayConstraint, bool):
        raise TypeError("forward_backward: delayConstraint must be an integer, not %r" % (delayConstraint,))
    if delayConstraint != -1:
        raise NotImplementedError("forward_backward: delayConstraint (alignment delay limits) is not supported; "
                                  "use -1")
    return prim('ForwardBackward', [graph, features],
                {'blankTokenId': int(blankTokenId), 'delayConstraint': int(delayConstraint)}, name)
