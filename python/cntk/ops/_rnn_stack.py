"""optimized_rnnstack: CNTK's cuDNN-backed stack of LSTM, GRU or plain RNN layers, a
catalogue primitive (src/ops/rnn_stack.cpp) with all weights in one parameter in
cuDNN's packed layout (src/kernels/cpu/rnn_stack.h describes it)."""
import numbers

import numpy as np

from ._prim import prim

__all__ = ['optimized_rnnstack']

_RECURRENT_OPS = ('lstm', 'gru', 'rnnReLU', 'rnnTanh')
# CNTK 2.7's docstring names the plain cells 'relu' and 'tanh' while its code accepts only
# 'rnnReLU' and 'rnnTanh'; both spellings are accepted here, and the op (and so the model
# file) holds CNTK's own names.
_DOCUMENTED_NAMES = {'relu': 'rnnReLU', 'tanh': 'rnnTanh'}


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("optimized_rnnstack: %s must be an integer, not %r" % (what, value))
    if value <= 0:
        raise ValueError("optimized_rnnstack: %s must be positive, got %d" % (what, value))
    return int(value)


def optimized_rnnstack(operand, weights, hidden_size, num_layers, bidirectional=False, recurrent_op='lstm',
                       name='', return_full_state=False):
    '''
    A stack of recurrent layers computed as one op, as CNTK's cuDNN implementation
    computes it (here on the CPU). Each layer runs an LSTM, GRU or plain RNN over the
    operand's sequence axis, from zero initial states; a bidirectional layer also runs
    one from each sequence's end to its start and concatenates the two.

    Args:
        operand: input sequence of vectors (rank 1).
        weights: the parameter holding every weight and bias; its shape
         (``C.InferredDimension``, anything) is inferred as (count / hidden_size, hidden_size).
        hidden_size (int): hidden units of each layer (per direction).
        num_layers (int): number of stacked layers.
        bidirectional (bool, default False): whether each layer also runs backwards in time;
         the output then has 2 * hidden_size values per step.
        recurrent_op (str, default 'lstm'): one of 'lstm', 'gru', 'rnnReLU' (or 'relu'),
         'rnnTanh' (or 'tanh'). 'gru' is cuDNN's GRU, whose reset gate scales the
         recurrent candidate term after its product.
        name (str, optional): the name of the Function instance in the network
        return_full_state (bool, default False): an OpenCNTK addition (CNTK 2.7 lacks
         it), after CNTK's arguments. When True the Function has further outputs: the
         final hidden states h, then for 'lstm' the final cell states c, each of shape
         (num_layers * D, hidden_size) per sequence (a batch axis, no sequence axis),
         where D is 2 when bidirectional, else 1; row l * D + d holds layer l's
         direction d (0 forward, 1 backward). The forward direction's final state is
         the one after the sequence's last item, the backward direction's the one after
         its first item; an empty sequence's are zero. These outputs are differentiable.

    Returns:
        :class:`~cntk.ops.functions.Function`: one output, or with
        ``return_full_state`` the outputs (y, h) or, for 'lstm', (y, h, c)
    '''
    if not isinstance(recurrent_op, str):
        raise TypeError("optimized_rnnstack: recurrent_op must be a string, not %r" % (recurrent_op,))
    recurrent_op = _DOCUMENTED_NAMES.get(recurrent_op, recurrent_op)
    if recurrent_op not in _RECURRENT_OPS:
        raise ValueError('optimized_rnnstack: unsupported recurrent_op value "%s"; supported values are %s'
                         % (recurrent_op, ', '.join(repr(r) for r in _RECURRENT_OPS)))
    attrs = {'hiddenSize': _positive_int(hidden_size, 'hidden_size'),
             'numLayers': _positive_int(num_layers, 'num_layers'),
             'bidirectional': bool(bidirectional),
             'recurrentOp': recurrent_op}
    if not isinstance(return_full_state, (bool, np.bool_)):
        raise TypeError("optimized_rnnstack: return_full_state must be a bool, not %r" % (return_full_state,))
    if return_full_state:
        # Stored only when set, so that models without it stay readable by CNTK 2.7.
        attrs['returnFullState'] = True
    return prim('OptimizedRNNStack', [operand, weights], attrs, name)
