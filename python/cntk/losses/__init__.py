"""Loss functions: one value per sample.

Criteria that CNTK computes as a sum over the whole minibatch (binary cross
entropy, LambdaRank) give one value per sample here, shape (1,), whose sum over
the minibatch is CNTK's value; the Trainer sums and averages them.
"""
import numbers

import numpy as np

from .. import _cntk
from ..axis import Axis
from ..internal import sanitize_axis, sanitize_inputs, as_variable, np_dtype
from ..ops import (reduce_sum, reduce_log_sum_exp, element_times, element_divide, minus, plus, square, sqrt,
                   exp, times, floor, round, equal, reshape)
from ..ops._prim import prim
from ..variables import Constant

__all__ = ['cross_entropy_with_softmax', 'squared_error', 'binary_cross_entropy', 'weighted_binary_cross_entropy',
           'cosine_distance', 'cosine_distance_with_negative_samples', 'lambda_rank', 'nce_loss',
           'lattice_sequence_with_softmax', 'hierarchical_softmax_layer', 'fmeasure']

SentinelValueForAutoSelectRandomSeed = -1


def _shape_of(x):
    return tuple(as_variable(x).shape)


def _axis_arg(axis, op):
    try:
        return sanitize_axis(axis)
    except TypeError as e:
        raise TypeError("%s: %s" % (op, e))


def _known(shape):
    return all(d >= 0 for d in shape)


def cross_entropy_with_softmax(output_vector, target_vector, axis=-1, name=''):
    """Cross entropy between `target_vector` and softmax(`output_vector`) along `axis`:
    log_sum_exp(o) - sum(t * o), computed stably (one value per sample; the axis is kept with size 1).

    The gradient with respect to the output is softmax(o) - t.
    """
    o, t = sanitize_inputs(output_vector, target_vector)
    ax = _axis_arg(axis, 'cross_entropy_with_softmax')
    if ax.is_static_axis:
        return prim('CrossEntropyWithSoftmax', [o, t], {'axis': ax}, name)
    # All static axes (or a dynamic axis): the same formula as a composite.
    return minus(reduce_log_sum_exp(o, axis=ax), reduce_sum(element_times(t, o), axis=ax), name=name)


def squared_error(output, target, name=''):
    """Sum of the squared differences over all static axes: one scalar per sample
    (CNTK's C++ sum over all static axes drops them)."""
    o, t = sanitize_inputs(output, target)
    return reduce_sum(square(minus(o, t)), axis=Axis.all_static_axes(), keepdims=False, name=name)


def binary_cross_entropy(output, target, name=''):
    """-sum(t * log(o) + (1 - t) * log(1 - o)) over the static axes, shape (1,) per sample.

    `output` is a probability (typically a sigmoid), `target` a 0/1 label. A term
    whose coefficient is 0 contributes nothing, so a saturated output (exactly 0
    or 1) with the matching label gives a finite loss, as in CNTK.
    """
    o, t = sanitize_inputs(output, target)
    return prim('Logistic', [o, t], {}, name)


def weighted_binary_cross_entropy(output, target, weight, name=''):
    """binary_cross_entropy with each element's term multiplied by `weight`.

    CNTK scales its minibatch total by (number of samples / sum of the weights)
    but back-propagates the unscaled weighted gradient; here the value is the
    plain weighted sum, so value and gradient agree (and the gradient is CNTK's).
    """
    o, t, w = sanitize_inputs(output, target, weight)
    return prim('Logistic', [o, t, w], {}, name)


def cosine_distance(x, y, name=''):
    """The cosine of the angle between `x` and `y` over all their static axes: a scalar per sample."""
    x, y = sanitize_inputs(x, y)
    sx, sy = tuple(x.shape), tuple(y.shape)
    if _known(sx) and _known(sy) and sx != sy:
        raise ValueError("cosine_distance: x and y must have the same shape, got %s and %s" % (sx, sy))
    axes = Axis.all_static_axes()
    dot = reduce_sum(element_times(x, y), axis=axes, keepdims=False)
    norms = sqrt(element_times(reduce_sum(square(x), axis=axes, keepdims=False),
                               reduce_sum(square(y), axis=axes, keepdims=False)))
    return element_divide(dot, norms, name=name)


def cosine_distance_with_negative_samples(x, y, shift, num_negative_samples, name=''):
    """Per sample j, the cosine similarity of x_j and y_j followed by those of x_j and the
    `num_negative_samples` samples of y found `shift`, `shift` + 1, ... samples after j
    (cyclically over the minibatch): shape (1 + num_negative_samples,)."""
    import numbers
    from ..ops._prim import prim
    for what, v in (('shift', shift), ('num_negative_samples', num_negative_samples)):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1:
            raise ValueError("cosine_distance_with_negative_samples: %s must be a positive integer, not %r" % (what, v))
    return prim('CosDistanceWithNegativeSamples', [x, y],
                {'shiftWindow': int(shift), 'numberOfNegativeSamples': int(num_negative_samples)}, name)


def lattice_sequence_with_softmax(label, prediction, loglikelihood, lattice, symListPath, phonePath, stateListPath,
                                  transProbPath, latticeConfigPath="LatticeNode.config", hSmoothingWeight=0.95,
                                  frameDropThresh=1e-10, doReferenceAlign=False, seqGammarUsesMBR=False,
                                  seqGammarAMF=14.0, seqGammarLMF=14.0, seqGammarBMMIFactor=0.0, seqGammarWordPen=0.0,
                                  name=''):
    """Lattice-based sequence training criterion (MMI, boosted MMI or sMBR), CNTK's
    LatticeSequenceWithSoftmax.

    Args:
        label: one-hot senone labels, a sequence (the reference alignment).
        prediction: unnormalized senone scores (the network output), same layout as ``label``.
        loglikelihood: the scaled log-likelihoods the lattices are scored with, same layout (often
          ``prediction`` itself); no gradient flows into it.
        lattice: per utterance its serialized lattice, as :func:`cntk.io.LatticeDeserializer` streams it:
          a float32 sequence of shape (1,) on a sequence axis of its own, in the order of the labels.
        symListPath, phonePath, stateListPath, transProbPath: CNTK's symbol list, HMM tying, senone list
          and transition probability files (see ``src/ops/lattice_model.h``).
        latticeConfigPath: a file whose first four lines, when it exists, replace the four paths.
        hSmoothingWeight: weight h of the sequence criterion; 1 - h goes to frame cross entropy.
        frameDropThresh: frames whose lattice posterior of the labelled senone is below it get no gradient.
        doReferenceAlign: not supported (as in CNTK 2.7).
        seqGammarUsesMBR: sMBR (expected frame accuracy) instead of MMI.
        seqGammarAMF, seqGammarLMF, seqGammarWordPen: acoustic scale (divides all scores), LM weight and
          word penalty of the lattice scores.
        seqGammarBMMIFactor: boosted MMI: each edge's score is lowered by this times its correct frames.

    Returns:
        a scalar: summed over the utterances, sum_t loglikelihood(label_t, t) / amf minus the log of the
        lattice's total score (MMI) or minus the expected number of correct frames (sMBR), as CNTK
        computes it. The gradient to ``prediction`` is ``(1 - h) softmax(prediction) + h gamma - label``
        (gamma: the lattice's senone posteriors, or for sMBR the expected accuracy differences), which
        for ``loglikelihood = log_softmax(prediction)``, ``h = 1`` and ``amf = 1`` is the gradient of
        minus the value (the sign of CNTK's GPU implementation).
    """
    import numbers
    from ..ops._prim import prim
    op = 'lattice_sequence_with_softmax'
    for what, v in (('symListPath', symListPath), ('phonePath', phonePath), ('stateListPath', stateListPath),
                    ('transProbPath', transProbPath), ('latticeConfigPath', latticeConfigPath)):
        if not isinstance(v, str):
            raise TypeError("%s: %s must be a str, not %s" % (op, what, type(v).__name__))
    for what, v in (('symListPath', symListPath), ('phonePath', phonePath), ('stateListPath', stateListPath),
                    ('transProbPath', transProbPath)):
        if not v:
            raise ValueError("%s: %s must be given (symListPath, phonePath, stateListPath and transProbPath "
                             "are all required)" % (op, what))
    numbers_ = {}
    for what, v in (('hSmoothingWeight', hSmoothingWeight), ('frameDropThresh', frameDropThresh),
                    ('seqGammarAMF', seqGammarAMF), ('seqGammarLMF', seqGammarLMF),
                    ('seqGammarBMMIFactor', seqGammarBMMIFactor), ('seqGammarWordPen', seqGammarWordPen)):
        if not isinstance(v, numbers.Real) or isinstance(v, bool):
            raise TypeError("%s: %s must be a number, not %r" % (op, what, v))
        numbers_[what] = float(v)
    for what, v in (('doReferenceAlign', doReferenceAlign), ('seqGammarUsesMBR', seqGammarUsesMBR)):
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError("%s: %s must be a bool, not %r" % (op, what, v))
    if doReferenceAlign:
        raise NotImplementedError("%s: doReferenceAlign (sequence training against a reference alignment) is not "
                                  "supported, as in CNTK 2.7" % op)
    if numbers_['seqGammarAMF'] <= 0:
        raise ValueError("%s: seqGammarAMF must be positive, not %r" % (op, seqGammarAMF))
    attrs = {'SymListPath': symListPath, 'PhonePath': phonePath, 'StateListPath': stateListPath,
             'TransProbPath': transProbPath, 'LatticeConfigPath': latticeConfigPath,
             'HSmoothingWeight': numbers_['hSmoothingWeight'], 'FrameDropThresh': numbers_['frameDropThresh'],
             'DoReferenceAlign': bool(doReferenceAlign), 'SeqGammarUsesMBR': bool(seqGammarUsesMBR),
             'SeqGammarAMF': numbers_['seqGammarAMF'], 'SeqGammarLMF': numbers_['seqGammarLMF'],
             'SeqGammarBMMIFactor': numbers_['seqGammarBMMIFactor'], 'SeqGammarWordPen': numbers_['seqGammarWordPen']}
    return prim('LatticeSequenceWithSoftmax', [label, prediction, loglikelihood, lattice], attrs, name)


def lambda_rank(output, gain, group, name=''):
    """LambdaRank: 100 * (1 - mean NDCG over the groups of the minibatch), times the
    number of samples, as one scalar for the whole minibatch (no dynamic axes), as CNTK's.

    Samples of a group are consecutive (a change of `group` starts a new group) and
    sorted by decreasing `gain`. The gradient with respect to `output` is the
    LambdaRank gradient, not the derivative of the value.
    """
    o, g, q = sanitize_inputs(output, gain, group)
    return prim('LambdaRank', [o, g, q], {}, name)


def _value_of(x, what):
    if isinstance(x, _cntk.Function):
        x = x.output
    if isinstance(x, _cntk.Variable):
        if not (x.is_constant or x.is_parameter):
            raise TypeError("nce_loss: %s must be a constant vector, not %s" % (what, x))
        return np.asarray(x.value, dtype=np.float64)
    return np.asarray(x, dtype=np.float64)


def nce_loss(weights, biases, inputs, labels, noise_distribution, num_samples=32, allow_duplicates=True,
             seed=SentinelValueForAutoSelectRandomSeed, name=''):
    """Noise contrastive estimation loss (C. Dyer's formulation), one value per sample.

    Each evaluation draws `num_samples` classes from `noise_distribution`, shared by
    the whole minibatch; the true class is the positive example and the drawn ones
    the negatives. `weights` has shape (classes, input dimension), `biases`
    (classes, 1), `labels` is one-hot over the classes.
    """
    # The graph and its constants are built in C++ (cntk::ops::nce_loss).
    q = _value_of(noise_distribution, 'noise_distribution')
    if not isinstance(num_samples, numbers.Integral) or isinstance(num_samples, bool):
        raise ValueError("nce_loss: num_samples must be a positive integer, not %r" % (num_samples,))
    w, b, x, lab = sanitize_inputs(weights, biases, inputs, labels)
    auto_seed = seed is None or seed == SentinelValueForAutoSelectRandomSeed
    return _cntk.nce_loss(w, b, x, lab, np.ascontiguousarray(q, dtype=np.float64), int(num_samples),
                          bool(allow_duplicates), -1 if auto_seed else int(seed), name)


def _softmax(x):
    """exp(x - log_sum_exp(x)) along the last axis (exact and differentiable)."""
    return exp(minus(x, reduce_log_sum_exp(x, axis=-1)))


def _one_hot(index, num_classes, dtype):
    """One-hot vectors of `index` (shape (1,)) over `num_classes`: equal(index, 0..n-1)."""
    return equal(index, Constant(np.arange(num_classes, dtype=dtype)))


def hierarchical_softmax_layer(input_var, label_index, label_dim, label_classes=None):
    """A two-level hierarchical softmax.

    Args:
        input_var: the input, shape (dim,)
        label_index: the index of the label, shape (1,)
        label_dim: the number of labels
        label_classes: the number of label classes (default: ceil(sqrt(label_dim)))

    Returns:
        (output_prob, class_probs, all_probs): the probability of the given label
        (shape (1, 1), as CNTK's), the probabilities of the classes (label_classes,), and for
        each class the probabilities of its labels.
    """
    from ..ops import parameter
    from ..initializer import glorot_normal
    x = as_variable(input_var)
    idx = as_variable(label_index)
    if len(x.shape) != 1:
        raise ValueError("hierarchical_softmax_layer: input_var must be a vector, got shape %s" % (tuple(x.shape),))
    if not isinstance(label_dim, numbers.Integral) or label_dim < 1:
        raise ValueError("hierarchical_softmax_layer: label_dim must be a positive integer, not %r" % (label_dim,))
    if label_classes is not None and (not isinstance(label_classes, numbers.Integral) or label_classes < 1):
        raise ValueError("hierarchical_softmax_layer: label_classes must be a positive integer, not %r"
                         % (label_classes,))
    dtype = np_dtype(x._dtype)
    input_dim = x.shape[0]
    if not label_classes:
        label_classes = int(np.ceil(np.sqrt(float(label_dim))))
    per_class = int(np.ceil(label_dim / float(label_classes)))

    target_class = floor(element_divide(plus(idx, 0.5), float(per_class)))
    target_in_class = round(minus(idx, element_times(target_class, float(per_class))))

    w1 = parameter(shape=(input_dim, label_classes), init=glorot_normal(), dtype=dtype, name='hsoftmax_w1')
    b1 = parameter(shape=(label_classes,), init=glorot_normal(), dtype=dtype, name='hsoftmax_b1')
    w2s = parameter(shape=(label_classes, input_dim, per_class), init=glorot_normal(), dtype=dtype,
                    name='hsoftmax_w2s')
    b2s = parameter(shape=(label_classes, per_class), init=glorot_normal(), dtype=dtype, name='hsoftmax_b2s')

    class_probs = _softmax(plus(b1, times(x, w1)))

    class_one_hot = _one_hot(target_class, label_classes, dtype)
    w2 = times(class_one_hot, w2s, output_rank=2)
    b2 = times(class_one_hot, b2s)
    probs_in_class = _softmax(plus(b2, times(x, w2)))

    prob_in_class = reduce_sum(element_times(_one_hot(target_in_class, per_class, dtype), probs_in_class), axis=-1)
    class_prob = reduce_sum(element_times(class_one_hot, class_probs), axis=-1)
    # CNTK picks both probabilities with times_transpose of a (1, n) one-hot: shape (1, 1)
    output_prob = reshape(element_times(prob_in_class, class_prob), (1, 1))

    all_probs = []
    for i in range(label_classes):
        ci = Constant(np.eye(label_classes, dtype=dtype)[i])
        w2a = times(ci, w2s, output_rank=2)
        b2a = times(ci, b2s)
        probs_a = _softmax(plus(b2a, times(x, w2a)))
        class_prob_a = reduce_sum(element_times(ci, class_probs), axis=-1)
        all_probs.append(element_times(probs_a, class_prob_a))

    return output_prob, class_probs, all_probs


def fmeasure(output, target, beta=1):
    """1 - F-measure of `output` against `target`:
    1 - (1 + beta^2) * precision * recall / (beta^2 * precision + recall).

    For rank-3 inputs (class, height, width) the sums run over the spatial axes,
    giving one value per class; otherwise over all static axes.
    """
    o, t = sanitize_inputs(output, target)
    if len(o.shape) != len(t.shape):
        raise ValueError("fmeasure: output and target must have the same rank, got shapes %s and %s"
                         % (tuple(o.shape), tuple(t.shape)))
    axis = (1, 2) if len(o.shape) == 3 else None
    correct = reduce_sum(element_times(o, t), axis=axis)
    precision = element_divide(correct, reduce_sum(o, axis=axis))
    recall = element_divide(correct, reduce_sum(t, axis=axis))
    b2 = float(beta) ** 2
    f = element_divide(element_times(element_times(precision, recall), 1.0 + b2),
                       plus(element_times(precision, b2), recall))
    return minus(1.0, f)
