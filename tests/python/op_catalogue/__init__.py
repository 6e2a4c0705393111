"""The case table of the op conformance test (test_op_catalogue.py), one module per op family.
common.py holds its vocabulary (Case, Built, Covered, the gradient kinds) and CASES, which the
family modules fill as they are imported."""
from op_catalogue.common import CASES, NONE, RULE, ZERO, Built, Case, Covered  # noqa: F401
from op_catalogue import (  # noqa: F401  (importing each fills CASES)
    elementwise, linalg, reductions, movement, nn, random_ops, losses, normalization, convolution, recurrences,
    sequences, attributes, more_forms)
from op_catalogue.sequences import find_op  # noqa: F401
