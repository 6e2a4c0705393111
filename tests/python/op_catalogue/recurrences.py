"""Recurrences and user functions. Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from seq_harness import random_sequences
from op_catalogue.common import Built, case, covered, F64, LENGTHS, RULE, seq_input


# ------------------------------------------------------------------ recurrences and user functions

covered('OptimizedRNNStack', (RULE, RULE), forward='test_optimized_rnnstack::test_forward_matches_numpy_model',
        gradients='test_optimized_rnnstack::test_gradients_float64')
covered('UserFunction', (RULE,), forward='test_user_function::test_user_sigmoid_forward',
        gradients='test_user_function::test_user_function_gradcheck_float64')


@case('PastValue', (RULE, RULE))
def past_value(rng):
    x = seq_input(2)
    init = C.parameter((), init=0.5, dtype=F64)
    d = random_sequences(rng, LENGTHS, (2,))
    want = [np.concatenate([np.full((1, 2), 0.5), s[:-1]]) for s in d]
    return Built(C.sequence.past_value(x, init), {x: d}, want)


@case('FutureValue', (RULE, RULE))
def future_value(rng):
    x = seq_input(2)
    init = C.parameter((), init=-0.25, dtype=F64)
    d = random_sequences(rng, LENGTHS, (2,))
    want = [np.concatenate([s[2:], np.full((min(2, len(s)), 2), -0.25)]) for s in d]
    return Built(C.sequence.future_value(x, init, time_step=2), {x: d}, want)


@case('PastValue', (RULE, RULE))
def recurrence_layer(rng):
    # A delay inside a loop: h_t = tanh(x_t + 0.5 h_{t-1}).
    x = seq_input(2)
    init = C.parameter((2,), init=np.array([0.3, -0.2]), dtype=F64)
    fn = C.layers.Recurrence(lambda h, v: C.tanh(v + 0.5 * h), initial_state=init)(x)
    d = random_sequences(rng, LENGTHS, (2,))
    want = []
    for s in d:
        h, out = np.array([0.3, -0.2]), []
        for v in s:
            h = np.tanh(v + 0.5 * h)
            out.append(h)
        want.append(np.array(out))
    return Built(fn, {x: d}, want, wrt={0: x})
