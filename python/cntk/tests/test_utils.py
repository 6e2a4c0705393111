"""Helpers that CNTK's notebooks and tests import from cntk.tests.test_utils: device
selection from the TEST_DEVICE environment variable, the float/double precision
fixture, tolerances and dense/CSR conversions."""
import os

import numpy as np
import scipy.sparse

import cntk as C

# np.allclose's default absolute tolerance (1e-8) is too tight for results such as sigmoid's.
TOLERANCE_ABSOLUTE = 1E-06

PRECISION_TO_TYPE = {'float': np.float32, 'double': np.float64}

AA = np.asarray

try:
    import pytest
except ImportError:  # notebooks import this module without pytest installed
    pytest = None

if pytest is not None:
    @pytest.fixture(params=["float", "double"])
    def precision(request):
        """Runs a test once per precision name ('float', 'double')."""
        return request.param


def _to_dense(val, is_sequence=False):
    """The dense NumPy form of a sparse Value `val` (with a sequence axis if `is_sequence`)."""
    if is_sequence:
        x = C.sequence.input_variable(val.shape[2:], is_sparse=True)
    else:
        x = C.input_variable(val.shape[1:], is_sparse=True)
    identity = C.constant(value=np.eye(val.shape[-1], dtype=np.float32))
    return C.times(x, identity).eval({x: val}, device=val.device)


def _to_csr(data):
    """`data` as a float32 CSR matrix whose columns are its last axis."""
    arr = np.asarray(data, dtype=np.float32)
    return scipy.sparse.csr_matrix(arr.reshape((-1, arr.shape[-1])), dtype=np.float32)


def set_device_from_pytest_env():
    """Selects the default device from the TEST_DEVICE environment variable ('cpu' or
    'gpu'); notebooks call it first. Without a GPU in this build, 'gpu' stays on the CPU."""
    device = os.environ.get('TEST_DEVICE')
    if device is None:
        return
    if device == 'cpu':
        C.device.try_set_default_device(C.device.cpu())
        return
    try:
        gpu = C.device.gpu(0)
    except ValueError:
        C.device.try_set_default_device(C.device.cpu())
    else:
        C.device.try_set_default_device(gpu)
