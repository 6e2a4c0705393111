"""Linear algebra. Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from op_harness import f64_input
from op_catalogue.common import Built, case, F64, RULE


# ------------------------------------------------------------------ linear algebra

@case('Times', (RULE, RULE))
def times(rng):
    x = f64_input((2, 3))
    w = C.parameter((3, 4), init=rng.standard_normal((3, 4)), dtype=F64)
    d = rng.standard_normal((2, 2, 3))
    return Built(C.times(x, w), {x: d}, d @ w.value)


@case('Times', (RULE, RULE))
def times_output_rank_2(rng):
    # A (3, 2) x (2, 4, 2) product with output_rank 2: the left operand's last axis
    # against the right's first.
    x = f64_input(3)
    w = C.parameter((3, 4, 2), init=rng.standard_normal((3, 4, 2)), dtype=F64)
    d = rng.standard_normal((2, 3))
    return Built(C.times(x, w, output_rank=2), {x: d}, np.einsum('bi,ijk->bjk', d, w.value))
