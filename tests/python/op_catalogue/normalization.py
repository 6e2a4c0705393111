"""Normalization. Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from op_harness import f64_input
from op_catalogue.common import Built, case, covered, NONE, RULE, ZERO


# ------------------------------------------------------------------ normalization

covered('BatchNormalization', (RULE, RULE, RULE, NONE, NONE, NONE),
        forward='test_ops_norm::test_batch_normalization_training_and_running_statistics',
        gradients='test_ops_norm::test_batch_normalization_gradients_with_batch_statistics')
covered('LocalResponseNormalization', (RULE,), forward='test_ops_norm::test_local_response_normalization',
        gradients='test_ops_norm::test_local_response_normalization')


@case('Crop', (RULE, ZERO))
def crop_manual(rng):
    x, ref = f64_input((1, 4, 5)), f64_input((1, 2, 3))
    d = rng.standard_normal((2, 1, 4, 5))
    return Built(C.crop_manual(x, ref, 2, 1), {x: d, ref: np.zeros((2, 1, 2, 3))}, d[:, :, 1:3, 2:5])
