"""The additive attention model of Bahdanau et al., "Neural machine translation by
jointly learning to align and translate" (CNTK 2.7's cntk.layers.models.attention).

AttentionModel(...) returns a function (h_enc, h_dec) -> h_att: for each step of the
decoder sequence h_dec it scores every item of the encoder sequence h_enc (which runs
over another sequence axis) with v . tanh(W_enc h_enc[i] + W_dec h_dec), takes the
softmax of the scores over the encoder items of that sequence only, and returns the
weighted sum of the encoder states. It is usually called inside the step function of
the decoder's recurrence, with h_dec the decoder's previous state.

Two ways to bring the encoder sequence to each decoder step, as in CNTK 2.7:
- the default (attention_span and attention_axis both None): the whole encoder
  sequence, unpacked into a static axis as long as the longest sequence of the
  minibatch, with its validity mask;
- the windowed form CNTK kept for old models (both given; deprecated since 2.3): the
  last `attention_span` encoder items (the first ones with go_backwards) as a static
  axis `attention_axis` (PastValueWindow), padded items masked out of the softmax.
"""
import warnings

from ...default_options import default_options, default_override_or, get_default_override
from ...initializer import glorot_uniform
from ...ops import (tanh, softmax, reduce_sum, element_times, element_select, reshape, plus, minus,
                    alias)
from ...ops import sequence as _seq
from ...ops.functions import Function
from ..blocks import Stabilizer
from ..layers import Dense, Label
from ..sequence import PastValueWindow

# What a padded window item adds to its score in the windowed form (CNTK's value):
# exp(-50) is negligible next to the valid items.
_WINDOW_PAD_PENALTY = 50.0
# The score of a padding item in the default form: its weight is exactly 0.
_MINUS_INFINITY = -1e30


def AttentionModel(attention_dim, attention_span=None, attention_axis=None,
                   init=default_override_or(glorot_uniform()),
                   go_backwards=default_override_or(False),
                   enable_self_stabilization=default_override_or(True), name=''):
    """An attention layer: a function (h_enc, h_dec) -> h_att, the encoder states
    h_enc (a sequence) weighted by their relevance to the decoder state h_dec (over
    its own sequence axis), one attended vector per decoder step.

    `attention_dim` is the size of the projections that score the encoder items. The
    projections have no bias; with `enable_self_stabilization` each gets a Stabilizer
    in front, and the result one more. `attention_span` and `attention_axis` select
    CNTK's deprecated windowed form (see the module documentation); `go_backwards`
    only matters there (the window then holds the first items)."""
    init = get_default_override(AttentionModel, init=init)
    go_backwards = get_default_override(AttentionModel, go_backwards=go_backwards)
    enable_self_stabilization = get_default_override(AttentionModel,
                                                     enable_self_stabilization=enable_self_stabilization)
    windowed = attention_span is not None
    if not windowed and attention_axis is not None:
        raise ValueError("AttentionModel: attention_axis=%r needs an attention_span too" % (attention_axis,))
    if windowed:
        if isinstance(attention_span, bool) or not isinstance(attention_span, int):
            raise TypeError("AttentionModel: attention_span must be an int, not %s" % type(attention_span).__name__)
        if attention_span <= 0:
            raise ValueError("AttentionModel: attention_span must be positive, got %d" % attention_span)
        if attention_axis is None:
            raise ValueError("AttentionModel: attention_span=%d needs an attention_axis too" % attention_span)

    def stabilized_projection(dim):
        return Stabilizer(enable_self_stabilization=enable_self_stabilization) >> \
            Dense(dim, init=init, input_rank=1)
    with default_options(bias=False):
        project_enc = stabilized_projection(attention_dim)   # keeps the encoder-items axis
        project_dec = stabilized_projection(attention_dim)
        project_score = stabilized_projection(1)
    final_stabilizer = Stabilizer(enable_self_stabilization=enable_self_stabilization)

    def scores_of(enc_proj, h_dec):
        """v . tanh(W_enc h_enc[i] + W_dec h_dec) for each encoder item i: shape (items..., 1)."""
        return project_score(tanh(plus(project_dec(h_dec), enc_proj)))

    if windowed:
        warnings.warn("AttentionModel: attention_span and attention_axis are deprecated (as in CNTK since 2.3); "
                      "leave them out to attend over the whole encoder sequence", DeprecationWarning, stacklevel=2)

        @Function
        def windowed_attention(h_enc, h_dec):
            window, valid = PastValueWindow(attention_span, axis=attention_axis,
                                            go_backwards=go_backwards)(h_enc).outputs
            enc_proj = _seq.broadcast_as(project_enc(window), h_dec)
            valid = _seq.broadcast_as(valid, h_dec)
            scores = plus(scores_of(enc_proj, h_dec), element_times(minus(valid, 1), _WINDOW_PAD_PENALTY))
            weights = Label('attention_weights')(softmax(scores, axis=attention_axis))
            attended = reduce_sum(element_times(_seq.broadcast_as(window, h_dec), weights), axis=attention_axis)
            return final_stabilizer(attended)
        attention = windowed_attention
    else:
        @Function
        def attention(h_enc, h_dec):
            # the encoder sequence as a static leading axis (free: the longest length)
            unpacked, valid = _seq.unpack(h_enc, padding_value=0).outputs
            enc_proj = _seq.broadcast_as(project_enc(unpacked), h_dec)
            valid = _seq.broadcast_as(reshape(valid, (1,), 1), h_dec)
            scores = element_select(valid, scores_of(enc_proj, h_dec), _MINUS_INFINITY)
            weights = Label('attention_weights')(softmax(scores, axis=0))
            attended = reduce_sum(element_times(weights, _seq.broadcast_as(unpacked, weights)), axis=0)
            return final_stabilizer(reshape(attended, (), 0, 1))

    return alias(attention, name=name) if name else attention


__all__ = ['AttentionModel']
