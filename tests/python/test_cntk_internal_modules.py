"""The modules CNTK shipped beside its documented API, as CNTK code uses them:
cntk.cntk_py (the native module), cntk.internal's sanitize/utils helpers, cntk.random as
a package, and the global switches."""
import importlib

import numpy as np
import pytest

import cntk as C


def test_cntk_py_is_an_importable_module_exposing_the_extension():
    mod = importlib.import_module('cntk.cntk_py')
    assert C.cntk_py is mod
    from cntk.cntk_py import reset_random_seed, set_fixed_random_seed, force_deterministic_algorithms  # noqa: F401
    from cntk.cntk_py import always_allow_setting_default_device  # noqa: F401
    # The same objects as the extension's, not wrappers.
    assert mod.Value is C._cntk.Value
    assert mod.NDArrayView is C._cntk.NDArrayView
    assert mod.reset_random_seed is C._cntk.reset_random_seed
    assert mod.DeviceKind_CPU == C._cntk.DeviceKind_CPU


def test_top_level_cntk_py_alias():
    import _cntk_py
    assert _cntk_py.set_fixed_random_seed is C._cntk.set_fixed_random_seed


def test_data_type_constants_match_the_engine():
    cp = C.cntk_py
    assert (cp.DataType_Unknown, cp.DataType_Float, cp.DataType_Double, cp.DataType_Float16) == (0, 1, 2, 4)
    x = C.input_variable(2, dtype=np.float64)
    assert x.get_data_type() == cp.DataType_Double


def test_reset_random_seed_makes_new_initializers_repeat():
    C.cntk_py.reset_random_seed(7)
    a = C.parameter((3, 4), init=C.glorot_uniform()).value
    C.cntk_py.reset_random_seed(7)
    b = C.parameter((3, 4), init=C.glorot_uniform()).value
    np.testing.assert_array_equal(a, b)
    assert not C.cntk_py.is_random_seed_fixed()


def test_dictionary_is_a_dict_that_reads_checkpoints(tmp_path):
    d = C.cntk_py.Dictionary()
    d['traceLevel'] = 2
    assert d['traceLevel'] == 2
    path = str(tmp_path / 'd.bin')
    d.save(path)
    assert C.cntk_py.Dictionary.load(path) == {'traceLevel': 2}


def test_sanitize_dtypes():
    from cntk.internal import sanitize_dtype_cntk, sanitize_dtype_numpy, sanitize_precision
    assert sanitize_dtype_cntk(np.float32) == C.cntk_py.DataType_Float
    assert sanitize_dtype_cntk('float64') == C.cntk_py.DataType_Double
    assert sanitize_dtype_cntk(None) == C.cntk_py.DataType_Unknown
    assert sanitize_dtype_cntk(C.cntk_py.DataType_Float16) == C.cntk_py.DataType_Float16
    assert sanitize_dtype_numpy(int) == np.float32      # integers compute in float32
    assert sanitize_dtype_numpy(float) == np.float64    # Python's float is double
    assert sanitize_precision('double') == np.float64
    with pytest.raises(ValueError):
        sanitize_dtype_numpy('complex')
    with pytest.raises(ValueError):
        sanitize_precision('int32')


def test_sanitize_input_and_dynamic_axes():
    from cntk.internal import sanitize_input, sanitize_dynamic_axes
    c = sanitize_input([1, 2, 3])
    assert c.is_constant and c.shape == (3,)
    x = C.input_variable(1)
    assert sanitize_input(x) is x
    with pytest.raises(ValueError):
        sanitize_input([])
    axes = sanitize_dynamic_axes([C.Axis.default_batch_axis(), C.Axis.default_dynamic_axis()])
    assert axes[0] == C.Axis.default_dynamic_axis()
    with pytest.raises(TypeError):
        sanitize_dynamic_axes([1])


def test_internal_utils_eval_forward_and_backward():
    from cntk.internal.utils import eval as cntk_eval, get_data_type, _ones_like
    x = C.input_variable(2, needs_gradient=True)
    f = x * x
    data = np.array([[1, 2]], np.float32)
    fwd, bwd = cntk_eval(f, {x: data}, precision='float32', backward_pass=True)
    np.testing.assert_allclose(list(fwd.values())[0], [[1, 4]])
    np.testing.assert_allclose(bwd[x], [[2, 4]])
    assert get_data_type(x, np.zeros(2, np.float64)) == np.float32  # variables decide first
    assert get_data_type(np.zeros(2, np.float64), 1.0) == np.float64
    assert _ones_like([np.zeros((2, 3))], 'float32')[0].dtype == np.float32


def test_value_as_sequence_or_array():
    from cntk.internal import _value_as_sequence_or_array
    x = C.sequence.input_variable(2)
    seqs = [np.ones((2, 2), np.float32), np.ones((3, 2), np.float32)]
    v = C.Value.create(x, seqs, None)
    out = _value_as_sequence_or_array(v, x)
    assert [s.shape for s in out] == [(2, 2), (3, 2)]


def test_random_is_a_package():
    import cntk.random
    assert cntk.random.__path__  # a package, so cntk/random/tests can live in it
    assert callable(cntk.random.uniform)


def test_default_options_names_at_top_level():
    from cntk.default_options import get_default_override
    assert C.get_default_override is get_default_override
    C.set_global_option('align_axis', 1)
    try:
        assert C.get_global_option('align_axis', 0) == 1
    finally:
        C.set_global_option('align_axis', 0)  # a process-wide switch (it changes indexing): restore it
    assert isinstance(C.default_override_or(3), C.default_override_or)
