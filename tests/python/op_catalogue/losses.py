"""Losses and metrics. Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from op_harness import f64_input
from seq_harness import random_sequences
from op_catalogue.common import Built, case, covered, F64, LENGTHS, NONE, RULE, seq_input, uniform, ZERO
from op_catalogue.nn import _softmax


# ------------------------------------------------------------------ losses and metrics

@case('CrossEntropyWithSoftmax', (RULE, RULE))
def cross_entropy_with_softmax(rng):
    z, t = f64_input(4), f64_input(4)
    dz = rng.standard_normal((3, 4))
    dt = _softmax(rng.standard_normal((3, 4)), 1)
    return Built(C.cross_entropy_with_softmax(z, t), {z: dz, t: dt},
                 -np.sum(dt * np.log(_softmax(dz, 1)), axis=1, keepdims=True))


@case('ClassificationError', (ZERO, RULE))
def classification_error(rng):
    # CNTK's top-1 error is 1 - target . hardmax(output): linear in the target, whose
    # gradient is -hardmax(output); the output gets none.
    z, t = f64_input(4), f64_input(4)
    dz = rng.standard_normal((3, 4))
    dt = np.eye(4)[[1, np.argmax(dz[1]), 3]]
    return Built(C.classification_error(z, t), {z: dz, t: dt},
                 (np.argmax(dz, 1) != np.argmax(dt, 1)).astype(F64)[:, None])


@case('ClassificationError', (ZERO, RULE, NONE))
def classification_error_top_2(rng):
    # Top-N (N > 1) is piecewise constant in both; the gradient check sees zeros.
    z, t = f64_input(4), f64_input(4)
    dz = rng.standard_normal((3, 4))
    dt = np.eye(4)[[0, 1, 3]]
    top2 = np.argsort(-dz, axis=1)[:, :2]
    miss = [float(np.argmax(dt[i]) not in top2[i]) for i in range(3)]
    return Built(C.classification_error(z, t, topN=2), {z: dz, t: dt}, np.array(miss)[:, None])


@case('Logistic', (RULE, RULE))
def binary_cross_entropy(rng):
    p, t = f64_input(3), f64_input(3)
    dp, dt = uniform(rng, 0.1, 0.9, (2, 3)), uniform(rng, 0, 1, (2, 3))
    return Built(C.binary_cross_entropy(p, t), {p: dp, t: dt},
                 -np.sum(dt * np.log(dp) + (1 - dt) * np.log(1 - dp), axis=1, keepdims=True))


@case('Logistic', (RULE, RULE, RULE))
def weighted_binary_cross_entropy(rng):
    p, t, w = f64_input(3), f64_input(3), f64_input(3)
    dp, dt, dw = uniform(rng, 0.1, 0.9, (2, 3)), uniform(rng, 0, 1, (2, 3)), uniform(rng, 0.5, 2, (2, 3))
    return Built(C.weighted_binary_cross_entropy(p, t, w), {p: dp, t: dt, w: dw},
                 -np.sum(dw * (dt * np.log(dp) + (1 - dt) * np.log(1 - dp)), axis=1, keepdims=True))


covered('CosDistanceWithNegativeSamples', (RULE, RULE),
        forward='test_losses_sequence::test_cosine_distance_with_negative_samples_forward_and_gradient',
        gradients='test_losses_sequence::test_cosine_distance_with_negative_samples_forward_and_gradient')
covered('EditDistanceError', (NONE, NONE), forward='test_losses_sequence::test_edit_distance_error_unit_penalties')
def _ctc_zeros(rng):
    x = seq_input(3)
    y = C.sequence.input_variable(3, dtype=F64, sequence_axis=x.dynamic_axes[1])
    xd = random_sequences(rng, [4, 3], (3,))
    yd = [np.eye(3)[[0, 2, 1, 2]], np.eye(3)[[1, 2, 2]]]
    return Built(C.forward_backward(C.labels_to_graph(y), x, 2), {x: xd, y: yd}, None, wrt={0: y})


def _ranking_zeros(make):
    def build(rng):
        s, gain, group = f64_input(1), f64_input(1), f64_input(1)
        args = {s: rng.standard_normal((4, 1)), gain: np.array([[3.], [1.], [2.], [0.]]),
                group: np.array([[1.], [1.], [2.], [2.]])}
        return Built(make(s, gain, group), args, None)
    return build


def _nce_zeros(rng):
    x, y = f64_input(3), f64_input(6)
    w = C.parameter((6, 3), init=rng.standard_normal((6, 3)), dtype=F64)
    b = C.parameter((6, 1), init=0.1, dtype=F64)
    f = C.nce_loss(w, b, x, y, np.arange(6.) + 1, num_samples=3, seed=1)
    return Built(f, {x: rng.standard_normal((2, 3)), y: np.eye(6)[[1, 4]]}, None)


covered('ForwardBackward', (ZERO, RULE),
        forward='test_losses_sequence::test_forward_backward_matches_brute_force_and_gradient',
        gradients='test_losses_sequence::test_forward_backward_matches_brute_force_and_gradient', zeros=_ctc_zeros)
# LambdaRank's gradient is by definition the lambdas, not the derivative of its value:
# the test compares it with a NumPy implementation of the lambdas.
covered('LambdaRank', (RULE, ZERO, ZERO), forward='test_losses::test_lambda_rank_value_and_gradient_against_reference',
        gradients='test_losses::test_lambda_rank_value_and_gradient_against_reference',
        zeros=_ranking_zeros(C.lambda_rank))
covered('NDCG', (ZERO, ZERO, ZERO), forward='test_metrics::test_ndcg_at_1_against_reference',
        zeros=_ranking_zeros(C.ndcg_at_1))
covered('NCE', (RULE, RULE, RULE, ZERO, NONE, NONE, NONE), forward='test_losses::test_nce_loss_is_unbiased',
        gradients='test_losses::test_nce_loss_gradient', zeros=_nce_zeros)
covered('LatticeSequenceWithSoftmax', (ZERO, RULE, ZERO, NONE),
        forward='test_lattice::test_mmi_value_and_gradient_match_path_enumeration',
        gradients=['test_lattice::test_gradient_is_minus_the_value_derivative_for_log_softmax_loglikelihoods',
                   'test_lattice::test_no_gradient_flows_to_loglikelihood_and_training_raises_the_criterion'])


@case('LabelsToGraph', (ZERO,))
def labels_to_graph(rng):
    # Its value is the labels themselves; ForwardBackward reads them as a graph.
    x = seq_input(3)
    d = [np.eye(3)[rng.randint(0, 3, n)] for n in LENGTHS]
    return Built(C.labels_to_graph(x), {x: d}, d)
