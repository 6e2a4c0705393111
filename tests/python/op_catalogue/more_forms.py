"""More forms of ops cased elsewhere. Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from op_harness import f64_input
from seq_harness import random_sequences
from op_catalogue.common import Built, case, F64, LENGTHS, RULE, seq_input, ZERO


# ------------------------------------------------------------------ more forms

@case('ReduceElements', (RULE,))
def reduce_prod_one_axis(rng):
    x = f64_input((3, 2))
    d = rng.standard_normal((2, 3, 2))
    return Built(C.reduce_prod(x, axis=0), {x: d}, d.prod(axis=1, keepdims=True))


@case('GatherPacked', (RULE, ZERO))
def sequence_gather_to_an_empty_sequence(rng):
    x, c = seq_input(2), seq_input(1)
    d = random_sequences(rng, [3, 2], (2,))
    cond = [np.array([[0.], [1.], [1.]]), np.array([[0.], [0.]])]
    return Built(C.sequence.gather(x, c), {x: d, c: cond}, [d[0][1:], np.zeros((0, 2))], wrt={1: c})


@case('Splice', (RULE,), variadic=True)
def splice_of_sequences(rng):
    a, b = seq_input(2), seq_input(3)
    da = random_sequences(rng, LENGTHS, (2,))
    db = random_sequences(rng, LENGTHS, (3,))
    return Built(C.splice(a, b), {a: da, b: db}, [np.concatenate([p, q], 1) for p, q in zip(da, db)])


@case('Times', (RULE, RULE))
def times_of_sequences(rng):
    x = seq_input(3)
    w = C.parameter((3, 2), init=rng.standard_normal((3, 2)), dtype=F64)
    d = random_sequences(rng, LENGTHS, (3,))
    return Built(C.times(x, w), {x: d}, [s @ w.value for s in d])


@case('Hardmax', (ZERO,))
def hardmax_ties_take_the_first(rng):
    x = f64_input(4)
    d = np.array([[1., 3., 3., 0.], [2., 2., 2., 2.]])
    return Built(C.hardmax(x), {x: d}, np.array([[0., 1, 0, 0], [1., 0, 0, 0]]))


@case('FutureValue', (RULE, RULE))
def future_value_from_a_state_batch(rng):
    x, s0 = seq_input(2), f64_input(2)
    d = random_sequences(rng, LENGTHS, (2,))
    d0 = rng.standard_normal((3, 2))
    want = [np.concatenate([s[1:], v[None]]) for s, v in zip(d, d0)]
    return Built(C.sequence.future_value(x, s0), {x: d, s0: d0}, want)


@case('Pooling', (RULE,))
def average_pooling_padded(rng):
    # Auto padding: the average leaves the padding out.
    x = f64_input((1, 3, 3))
    d = rng.standard_normal((1, 1, 3, 3))
    want = np.zeros((1, 1, 3, 3))
    for i, j in np.ndindex(3, 3):
        want[0, 0, i, j] = d[0, 0, max(0, i - 1):i + 2, max(0, j - 1):j + 2].mean()
    return Built(C.pooling(x, C.AVG_POOLING, (3, 3), auto_padding=[False, True, True]), {x: d}, want)


@case('Pooling', (RULE,))
def max_pooling_padded(rng):
    x = f64_input((1, 3, 3))
    d = rng.standard_normal((1, 1, 3, 3))
    want = np.zeros((1, 1, 3, 3))
    for i, j in np.ndindex(3, 3):
        want[0, 0, i, j] = d[0, 0, max(0, i - 1):i + 2, max(0, j - 1):j + 2].max()
    return Built(C.pooling(x, C.MAX_POOLING, (3, 3), auto_padding=[False, True, True]), {x: d}, want)


@case('Convolution', (RULE, RULE))
def convolution_padding_and_strides(rng):
    x = f64_input((1, 5, 5))
    w = C.parameter((1, 1, 3, 3), init=rng.standard_normal((1, 1, 3, 3)), dtype=F64)
    d = rng.standard_normal((1, 1, 5, 5))
    # Auto padding of 1 on each side of the spatial axes, stride 2: windows at 0, 2, 4.
    p = np.pad(d[0, 0], 1)
    want = np.array([[np.sum(p[i:i + 3, j:j + 3] * w.value[0, 0]) for j in (0, 2, 4)] for i in (0, 2, 4)])
    f = C.convolution(w, x, strides=(1, 2, 2), auto_padding=[False, True, True])
    return Built(f, {x: d}, want[None, None])


@case('Convolution', (RULE, RULE))
def convolution_groups(rng):
    x = f64_input((4, 3, 3))
    w = C.parameter((2, 2, 2, 2), init=rng.standard_normal((2, 2, 2, 2)), dtype=F64)
    d = rng.standard_normal((1, 4, 3, 3))
    want = np.zeros((1, 2, 2, 2))
    for g in range(2):
        for i, j in np.ndindex(2, 2):
            want[0, g, i, j] = np.sum(d[0, 2 * g:2 * g + 2, i:i + 2, j:j + 2] * w.value[g])
    return Built(C.convolution(w, x, groups=2, auto_padding=[False]), {x: d}, want)


@case('Convolution', (RULE, RULE))
def convolution_dilation(rng):
    x = f64_input((1, 5, 5))
    w = C.parameter((1, 1, 2, 2), init=rng.standard_normal((1, 1, 2, 2)), dtype=F64)
    d = rng.standard_normal((1, 1, 5, 5))
    want = np.zeros((1, 1, 3, 3))
    for i, j in np.ndindex(3, 3):
        want[0, 0, i, j] = np.sum(d[0, 0, i:i + 3:2, j:j + 3:2] * w.value[0, 0])
    return Built(C.convolution(w, x, dilation=(1, 2, 2), auto_padding=[False]), {x: d}, want)


@case('LogPlus', (RULE, RULE))
def log_add_exp_of_large_values(rng):
    a, b = f64_input(3), f64_input(3)
    da = np.array([[800., -800., 0.]])
    db = np.array([[799., -801., 1000.]])
    return Built(C.log_add_exp(a, b), {a: da, b: db}, np.logaddexp(da, db), eps=1e-4)


@case('CrossEntropyWithSoftmax', (RULE, RULE))
def cross_entropy_with_softmax_axis(rng):
    z, tt = f64_input((3, 2)), f64_input((3, 2))
    dz = rng.standard_normal((2, 3, 2))
    dt = np.eye(3)[[[0, 2], [1, 1]]].transpose(0, 2, 1)
    sm = np.exp(dz) / np.exp(dz).sum(1, keepdims=True)
    return Built(C.cross_entropy_with_softmax(z, tt, axis=0), {z: dz, tt: dt},
                 -np.sum(dt * np.log(sm), axis=1, keepdims=True))
