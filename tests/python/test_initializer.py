"""cntk.initializer: distributions, CNTK's fan-in/fan-out rules, seeds, ranks, bilinear kernels."""
import numpy as np
import pytest

import cntk as C
from cntk.initializer import SentinelValueForInferParamInitRank as INFER

BIG = (400, 500)  # fan_in 400, fan_out 500 under the default ranks


def _values(init, shape=BIG, dtype=np.float64):
    return C.parameter(shape, init=init, dtype=dtype).value


def test_defaults_match_cntk():
    g = C.glorot_uniform()
    assert g['type'] == 'glorot_uniform' and g['scale'] == 1.0
    assert g['outputRank'] == INFER and g['filterRank'] == INFER and g['randomSeed'] == -1
    assert C.uniform(0.5)['scale'] == 0.5
    assert C.truncated_normal(0.1)['scale'] == 0.1
    assert C.bilinear(3, 3) == {'type': 'bilinear', 'kernelWidth': 3, 'kernelHeight': 3}


def _check_uniform(v, limit):
    assert v.min() >= -limit and v.max() <= limit
    assert v.max() > 0.995 * limit and v.min() < -0.995 * limit
    np.testing.assert_allclose(v.std(), limit / np.sqrt(3), rtol=0.02)
    assert abs(v.mean()) < 0.01 * limit


def _check_normal(v, std):
    np.testing.assert_allclose(v.std(), std, rtol=0.02)
    assert abs(v.mean()) < 0.01 * std
    # About 4.6% of a normal sample lies beyond two standard deviations.
    assert 0.035 < np.mean(np.abs(v) > 2 * std) < 0.057


def test_uniform():
    _check_uniform(_values(C.uniform(0.3, seed=1)), 0.3)


def test_normal():
    _check_normal(_values(C.normal(0.3, seed=2)), 0.3)


def test_xavier_is_uniform_as_cntk_implements_it():
    # CNTK documents a Gaussian with standard deviation scale * sqrt(3 / fan_in), but its
    # implementation draws uniformly in +-scale * sqrt(3 / fan_in); we follow the implementation.
    _check_uniform(_values(C.xavier(seed=3)), np.sqrt(3.0 / 400))
    _check_uniform(_values(C.xavier(scale=2, seed=3)), 2 * np.sqrt(3.0 / 400))


def test_glorot_uniform():
    _check_uniform(_values(C.glorot_uniform(seed=4)), np.sqrt(6.0 / 900))
    _check_uniform(_values(C.glorot_uniform(scale=0.5, seed=4)), 0.5 * np.sqrt(6.0 / 900))


def test_glorot_normal():
    _check_normal(_values(C.glorot_normal(seed=5)), np.sqrt(2.0 / 900))


def test_he_uniform():
    _check_uniform(_values(C.he_uniform(seed=6)), np.sqrt(6.0 / 400))


def test_he_normal():
    _check_normal(_values(C.he_normal(seed=7)), np.sqrt(2.0 / 400))


def test_truncated_normal():
    v = _values(C.truncated_normal(0.2, seed=8))
    assert np.abs(v).max() <= 0.4
    assert np.abs(v).max() > 0.39
    # The standard deviation of a normal truncated at two deviations is 0.8796 of the original.
    np.testing.assert_allclose(v.std(), 0.2 * 0.87962566, rtol=0.02)
    v32 = _values(C.truncated_normal(0.2, seed=8), dtype=np.float32)
    assert np.abs(v32).max() <= np.float32(0.4)


# Fan rules. With the same seed an initializer draws the same standard stream and
# scales it, so its values are exactly uniform(1) (or normal(1)) times its range.
FANS = [
    # shape, output_rank, filter_rank, fan_in, fan_out
    ((30, 40), None, None, 30, 40),                 # Dense weight (in, out)
    ((50,), None, None, 1, 50),                     # a bias
    ((50,), 0, None, 50, 1),
    ((10, 20, 30), 2, None, 10, 600),               # Dense with a 2-axis output
    ((10, 20, 30), 0, 0, 6000, 1),
    ((8, 16, 3, 3), -1, 2, 16 * 9, 8 * 9),          # convolution kernel (out, in, h, w)
    ((8, 16, 3, 3), 1, 2, 8 * 9, 16 * 9),           # positive output rank: outputs precede the field
    ((4, 2, 5, 3, 3), -2, 2, 5 * 9, 8 * 9),
]


@pytest.mark.parametrize('shape,orank,frank,fan_in,fan_out', FANS)
def test_fan_in_fan_out(shape, orank, frank, fan_in, fan_out):
    ranks = {}
    if orank is not None:
        ranks['output_rank'] = orank
    if frank is not None:
        ranks['filter_rank'] = frank
    unit_u = _values(C.uniform(1.0, seed=11), shape)
    unit_n = _values(C.normal(1.0, seed=11), shape)
    cases = [(C.glorot_uniform, unit_u, np.sqrt(6.0 / (fan_in + fan_out))),
             (C.he_uniform, unit_u, np.sqrt(6.0 / fan_in)),
             (C.glorot_normal, unit_n, np.sqrt(2.0 / (fan_in + fan_out))),
             (C.he_normal, unit_n, np.sqrt(2.0 / fan_in)),
             (C.xavier, unit_u, np.sqrt(3.0 / fan_in))]
    for init, unit, scale in cases:
        got = _values(init(seed=11, **ranks), shape)
        np.testing.assert_allclose(got, unit * scale, rtol=1e-12, atol=1e-15, err_msg=init.__name__)
        with_rank = C.initializer_with_rank(init(seed=11), output_rank=orank, filter_rank=frank)
        np.testing.assert_allclose(_values(with_rank, shape), got, rtol=0, err_msg=init.__name__)


def test_scalar_parameter_with_default_ranks():
    v = C.parameter((), init=C.glorot_uniform(seed=1)).value
    assert v.shape == () and abs(float(v)) <= np.sqrt(3.0)


def test_ranks_exceeding_the_shape_raise():
    with pytest.raises(ValueError, match='rank'):
        C.parameter((3, 4), init=C.glorot_uniform(output_rank=2, filter_rank=1))
    with pytest.raises(ValueError, match='rank'):
        C.parameter((3, 4), init=C.he_normal(output_rank=-3))


# ---------------------------------------------------------------- seeds

def test_seed_reproduces_values():
    for init in (lambda: C.uniform(1, seed=42), lambda: C.normal(1, seed=42), lambda: C.glorot_uniform(seed=42),
                 lambda: C.truncated_normal(0.5, seed=42), lambda: C.he_normal(seed=42)):
        a, b = _values(init(), (20, 30)), _values(init(), (20, 30))
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(_values(C.glorot_uniform(seed=1), (20, 30)), _values(C.glorot_uniform(seed=2), (20, 30)))


def test_seed_gives_the_same_values_in_float32_and_float64():
    # The same draws; float32 parameters round the range and each value to float32.
    a = _values(C.glorot_normal(seed=9), (20, 30), np.float64)
    b = _values(C.glorot_normal(seed=9), (20, 30), np.float32)
    np.testing.assert_allclose(a.astype(np.float32), b, rtol=1e-6, atol=1e-7)


def test_automatic_seeds_differ_per_parameter():
    init = C.glorot_uniform()  # e.g. a default argument shared by many layers
    a, b = C.parameter((20, 30), init=init), C.parameter((20, 30), init=init)
    assert not np.array_equal(a.value, b.value)
    assert init['randomSeed'] == -1


def test_fixed_random_seed_reproduces_automatic_seeds():
    def make():
        C.set_fixed_random_seed(1234)
        return [C.parameter((5, 6), init=C.glorot_uniform()).value for _ in range(2)]
    a, b = make(), make()
    np.testing.assert_array_equal(a[0], b[0])
    # CNTK's rule: while a seed is fixed, every automatic seed is that seed.
    np.testing.assert_array_equal(a[0], a[1])
    np.testing.assert_array_equal(a[0], C.parameter((5, 6), init=C.glorot_uniform(seed=1234)).value)


def test_reset_random_seed_counts_automatic_seeds_up():
    C.reset_random_seed(7)
    a = C.parameter((5, 6), init=C.glorot_uniform()).value
    b = C.parameter((5, 6), init=C.glorot_uniform()).value
    np.testing.assert_array_equal(a, C.parameter((5, 6), init=C.glorot_uniform(seed=7)).value)
    np.testing.assert_array_equal(b, C.parameter((5, 6), init=C.glorot_uniform(seed=8)).value)
    assert C.dropout(C.input_variable(3), 0.5).root_function.attributes['rngSeed'] == 9


def test_deferred_initialization_uses_the_seed():
    def make():
        x = C.input_variable(7)
        w = C.parameter((C.InferredDimension, 3), init=C.glorot_uniform(seed=77))
        C.times(x, w)
        return w
    w1, w2 = make(), make()
    assert w1.shape == (7, 3)
    np.testing.assert_array_equal(w1.value, w2.value)
    np.testing.assert_array_equal(w1.value, _values(C.glorot_uniform(seed=77), (7, 3), np.float32))


# ---------------------------------------------------------------- initializer_with_rank

def test_initializer_with_rank():
    g = C.initializer_with_rank(C.glorot_uniform(seed=1), output_rank=-1, filter_rank=2)
    assert g['outputRank'] == -1 and g['filterRank'] == 2 and g['randomSeed'] == 1
    # Unset ranks stay inferred; ranks that were given are kept, may be restated, but not changed.
    h = C.initializer_with_rank(C.he_normal(output_rank=2), filter_rank=1)
    assert h['outputRank'] == 2 and h['filterRank'] == 1
    assert C.initializer_with_rank(C.he_normal())['outputRank'] == INFER
    same = C.initializer_with_rank(C.he_normal(output_rank=2), output_rank=2)
    assert same['outputRank'] == 2
    with pytest.raises(ValueError, match='initializer_with_rank'):
        C.initializer_with_rank(C.he_normal(output_rank=2), output_rank=1)
    with pytest.raises(ValueError, match='initializer_with_rank'):
        C.initializer_with_rank(C.glorot_normal(filter_rank=1), output_rank=1, filter_rank=2)
    # Uniform and bilinear initializers have no ranks.
    u = C.uniform(1, seed=3)
    assert C.initializer_with_rank(u, output_rank=2, filter_rank=1) == u
    with pytest.raises(TypeError, match='initializer_with_rank'):
        C.initializer_with_rank(np.zeros(3), output_rank=1)


# ---------------------------------------------------------------- bilinear

def test_bilinear_3x3():
    v = C.parameter((2, 2, 3, 3), init=C.bilinear(3, 3)).value
    k = np.array([[0.25, 0.5, 0.25], [0.5, 1., 0.5], [0.25, 0.5, 0.25]])
    np.testing.assert_allclose(v[0, 0], k)
    np.testing.assert_allclose(v[1, 1], k)
    np.testing.assert_array_equal(v[0, 1], 0)
    np.testing.assert_array_equal(v[1, 0], 0)


def test_bilinear_4x4():
    v = C.parameter((3, 3, 4, 4), init=C.bilinear(4, 4)).value
    w = np.array([0.25, 0.75, 0.75, 0.25])  # factor 2, center 1.5
    for c in range(3):
        np.testing.assert_allclose(v[c, c], np.outer(w, w))
    assert np.count_nonzero(v) == 3 * 16


def test_bilinear_bad_shapes():
    with pytest.raises(ValueError, match='bilinear'):
        C.parameter((2, 2, 3, 3), init=C.bilinear(3, 2))
    with pytest.raises(ValueError, match='bilinear'):
        C.parameter((2, 3, 3, 3), init=C.bilinear(3, 3))
    with pytest.raises(ValueError, match='bilinear'):
        C.parameter((2, 2, 4, 4), init=C.bilinear(3, 3))


# ---------------------------------------------------------------- bad arguments

def test_bad_scales():
    with pytest.raises(ValueError, match='scale'):
        C.uniform(0)
    with pytest.raises(ValueError, match='scale'):
        C.glorot_uniform(scale=-1)
    with pytest.raises(ValueError, match='scale'):
        C.truncated_normal(0.0)
    with pytest.raises(TypeError, match='scale'):
        C.normal('wide')
