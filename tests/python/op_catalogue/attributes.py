"""Attribute and axis variants of ops cased elsewhere. Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from op_harness import f64_input
from seq_harness import random_sequences
from op_catalogue.common import away_from, Built, case, F64, RULE, seq_input, uniform, ZERO
from op_catalogue.nn import _softmax


# ------------------------------------------------------------------ attributes and axes

@case('ELU', (RULE,))
def elu_alpha(rng):
    x = f64_input(5)
    d = away_from(rng.standard_normal((2, 5)), [0.0])
    return Built(C.elu(x, alpha=0.7), {x: d}, np.where(d > 0, d, 0.7 * (np.exp(d) - 1)))


@case('LeakyReLU', (RULE,))
def leaky_relu_alpha(rng):
    x = f64_input(5)
    d = away_from(rng.standard_normal((2, 5)), [0.0])
    return Built(C.leaky_relu(x, alpha=0.2), {x: d}, np.where(d > 0, d, 0.2 * d))


@case('HardSigmoid', (RULE,))
def hard_sigmoid_alpha_beta(rng):
    x = f64_input(6)
    d = away_from(uniform(rng, -3, 3, (2, 6)), [-0.5 / 0.4, 0.5 / 0.4])
    return Built(C.hard_sigmoid(x, alpha=0.4, beta=0.5), {x: d}, np.clip(0.4 * d + 0.5, 0, 1))


@case('SELU', (RULE,))
def selu_scale_alpha(rng):
    x = f64_input(5)
    d = away_from(rng.standard_normal((2, 5)), [0.0])
    return Built(C.selu(x, scale=1.5, alpha=2.0), {x: d}, 1.5 * np.where(d > 0, d, 2.0 * (np.exp(d) - 1)))


@case('Clip', (RULE, ZERO, ZERO))
def clip_broadcast_bounds(rng):
    x = f64_input((2, 3))
    lo, hi = f64_input((3,), batch=False), f64_input((2, 1), batch=False)
    dx = rng.standard_normal((2, 2, 3)) * 2
    dlo, dhi = np.array([-1., -0.5, 0.]), np.array([[0.5], [1.5]])
    dx = away_from(away_from(dx, [-1., -0.5, 0.]), [0.5, 1.5])
    return Built(C.clip(x, lo, hi), {x: dx, lo: dlo, hi: dhi}, np.clip(dx, dlo, dhi))


@case('ReduceElements', (RULE,))
def reduce_sum_two_axes(rng):
    x = f64_input((2, 3, 4))
    d = rng.standard_normal((2, 2, 3, 4))
    return Built(C.reduce_sum(x, axis=(0, 2)), {x: d}, d.sum(axis=(1, 3), keepdims=True))


@case('ReduceElements', (RULE,))
def reduce_mean_all_axes(rng):
    x = f64_input((2, 3))
    d = rng.standard_normal((4, 2, 3))
    return Built(C.reduce_mean(x, axis=C.Axis.all_axes()), {x: d}, d.mean())


@case('ReduceElements', (RULE,))
def reduce_max_without_keepdims(rng):
    x = f64_input((3, 4))
    d = rng.standard_normal((2, 3, 4))
    return Built(C.reduce_max(x, axis=0, keepdims=False), {x: d}, d.max(axis=1))


@case('Slice', (RULE,))
def slice_negative(rng):
    x = f64_input((5, 3))
    d = rng.standard_normal((2, 5, 3))
    return Built(C.slice(x, 0, -3, -1), {x: d}, d[:, -3:-1])


@case('Squeeze', (RULE,))
def squeeze_one_axis(rng):
    x = f64_input((1, 3, 1))
    d = rng.standard_normal((2, 1, 3, 1))
    return Built(C.squeeze(x, axes=[2]), {x: d}, d.reshape(2, 1, 3))


@case('TopK', (RULE,))
def top_k_axis(rng):
    x = f64_input((5, 3))
    d = rng.standard_normal((2, 5, 3))
    values = C.top_k(x, 2, axis=0).outputs[0]
    return Built(C.combine([values]), {x: d}, -np.sort(-d, axis=1)[:, :2], wrt={0: x})


@case('Softmax', (RULE,))
def softmax_axis(rng):
    x = f64_input((2, 3, 4))
    d = rng.standard_normal((2, 2, 3, 4))
    return Built(C.softmax(x, axis=1), {x: d}, _softmax(d, 2))


@case('Times', (RULE, RULE))
def times_infer_input_rank_to_map(rng):
    # A (3,) x (2, 4) parameter per sample row: map rank 1 keeps the first axis of x.
    x = f64_input((2, 3))
    w = C.parameter((3, 4), init=rng.standard_normal((3, 4)), dtype=F64)
    d = rng.standard_normal((2, 2, 3))
    return Built(C.times(x, w, infer_input_rank_to_map=1), {x: d}, d @ w.value)


@case('SequenceSlice', (RULE,))
def sequence_slice_last(rng):
    x = seq_input(2)
    d = random_sequences(rng, [4, 2, 3], (2,))
    return Built(C.sequence.slice(x, -2, 0), {x: d}, [s[-2:] for s in d])


@case('Pow', (RULE, RULE))
def pow_negative_base_integer_exponent(rng):
    a, b = f64_input(4), f64_input(4)
    da = np.array([[-1.5, -0.7, 2.0, -2.0], [-0.5, 1.5, -1.2, 0.8]])
    db = np.array([[2., 3., 2., -1.], [3., 2., 2., 3.]])
    # The exponent's derivative a^b ln(a) has no value for a <= 0: CNTK's rule gives 0 there.
    safe = np.where(da > 0, da, 1.0)
    return Built(C.pow(a, b), {a: da, b: db}, np.power(da, db),
                 grad_ref={1: lambda w: np.where(da > 0, w * np.power(safe, db) * np.log(safe), 0.0)})
