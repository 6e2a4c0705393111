"""Reductions. Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from op_harness import f64_input
from seq_harness import random_sequences
from op_catalogue.common import add, Built, case, Case, F64, LENGTHS, RULE, seq_input


# ------------------------------------------------------------------ reductions

def _reduce(fn, ref, axis):
    def build(rng):
        x = f64_input((3, 4))
        d = rng.standard_normal((2, 3, 4))
        return Built(fn(x, axis=axis), {x: d}, ref(d, axis=axis + 1, keepdims=True))
    return build


def _np_log_sum_exp(d, axis, keepdims):
    m = d.max(axis=axis, keepdims=True)
    return np.log(np.exp(d - m).sum(axis=axis, keepdims=keepdims)) + (m if keepdims else m.squeeze(axis))


for _fn, _ref, _axis in [(C.reduce_sum, np.sum, 1), (C.reduce_mean, np.mean, 0), (C.reduce_max, np.max, 1),
                         (C.reduce_min, np.min, 0), (C.reduce_prod, np.prod, 1),
                         (C.reduce_log_sum_exp, _np_log_sum_exp, 1)]:
    add(Case('ReduceElements', (RULE,), _reduce(_fn, _ref, _axis), label=_fn.__name__))


@case('ReduceElements', (RULE,))
def argmax(rng):
    # Integer-valued: the gradient check sees zeros on both sides.
    x = f64_input((3, 4))
    d = rng.standard_normal((2, 3, 4))
    return Built(C.argmax(x, axis=1), {x: d}, np.argmax(d, axis=2)[..., None].astype(F64))


@case('ReduceElements', (RULE,))
def sequence_reduce_sum(rng):
    x = seq_input(2)
    d = random_sequences(rng, LENGTHS, (2,))
    return Built(C.sequence.reduce_sum(x), {x: d}, [s.sum(axis=0) for s in d])
