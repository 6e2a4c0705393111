"""cntk.random: distributions checked statistically, shapes, types, seeds and errors."""
import math

import numpy as np
import pytest

import cntk as C

N = (200, 500)  # 100,000 draws per check

# name, factory(shape, dtype, seed), mean, variance
DISTRIBUTIONS = [
    ('uniform', lambda s, t, seed: C.random.uniform(s, t, low=-1.0, high=3.0, seed=seed), 1.0, 16 / 12),
    ('normal', lambda s, t, seed: C.random.normal(s, t, mean=2.0, scale=0.5, seed=seed), 2.0, 0.25),
    ('gumbel', lambda s, t, seed: C.random.gumbel(s, t, loc=1.0, scale=2.0, seed=seed),
     1.0 + 2.0 * np.euler_gamma, math.pi ** 2 / 6 * 4),
    ('bernoulli', lambda s, t, seed: C.random.bernoulli(s, t, mean=0.3, seed=seed), 0.3, 0.21),
]


def _check_moments(x, mean, var):
    n = x.size
    # Sample mean within 5 standard errors; variance within 5%.
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / n), (x.mean(), mean)
    assert abs(x.var() / var - 1) < 0.05, (x.var(), var)


@pytest.mark.parametrize('name,make,mean,var', DISTRIBUTIONS, ids=[d[0] for d in DISTRIBUTIONS])
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_moments(name, make, mean, var, dtype):
    f = make(N, dtype, 17)
    assert f.shape == N
    assert f.output.dtype == dtype
    assert f.output.dynamic_axes == ()
    x = f.eval()
    assert x.shape == N and x.dtype == dtype
    _check_moments(x.astype(np.float64), mean, var)


def test_ranges():
    u = C.random.uniform((1000,), low=2.0, high=2.5, seed=1).eval()
    assert u.min() >= 2.0 and u.max() < 2.5
    b = C.random.bernoulli((1000,), seed=1).eval()
    assert set(np.unique(b)) == {0.0, 1.0}
    np.testing.assert_array_equal(C.random.bernoulli((100,), mean=0.0, seed=1).eval(), 0)
    np.testing.assert_array_equal(C.random.bernoulli((100,), mean=1.0, seed=1).eval(), 1)
    np.testing.assert_array_equal(C.random.normal((10,), scale=0.0, mean=3.0, seed=1).eval(), 3)


def test_defaults():
    u = C.random.uniform((2, 3))
    assert u.output.dtype == np.float32 and u.shape == (2, 3)
    attrs = u.root_function.attributes
    assert attrs['randomDistributionType'] == 'uniform'
    assert list(attrs['randomDistributionArgs']) == [0.0, 1.0]
    assert attrs['rngOffset'] == 0
    assert C.random.normal((2,)).root_function.attributes['randomDistributionArgs'] == [0.0, 1.0]
    assert C.random.gumbel((2,)).root_function.attributes['randomDistributionArgs'] == [0.0, 1.0]
    assert C.random.bernoulli((2,)).root_function.attributes['randomDistributionArgs'] == [0.5]
    assert C.random.uniform(3).shape == (3,)


def test_float16():
    u = C.random.uniform((4, 5), dtype=np.float16, seed=3)
    assert u.output.dtype == np.float16
    x = u.eval()
    assert x.dtype == np.float16 and x.shape == (4, 5)
    assert 0 <= x.min() and x.max() <= 1


def test_determinism():
    a = C.random.normal((3, 4), seed=98052).eval()
    np.testing.assert_array_equal(a, C.random.normal((3, 4), seed=98052).eval())
    assert not np.array_equal(a, C.random.normal((3, 4), seed=98053).eval())
    # Each evaluation draws anew.
    f = C.random.uniform((3, 4), seed=5)
    assert not np.array_equal(f.eval(), f.eval())
    # Without a seed, set_fixed_random_seed makes new graphs reproducible.
    C.set_fixed_random_seed(42)
    g1 = C.random.gumbel((5,)).eval()
    C.set_fixed_random_seed(42)
    g2 = C.random.gumbel((5,)).eval()
    np.testing.assert_array_equal(g1, g2)
    # While the seed is fixed every op gets that seed (CNTK's rule); after a reset the
    # automatic seeds count up, so different ops get different seeds.
    np.testing.assert_array_equal(C.random.uniform((5,)).eval(), C.random.uniform((5,)).eval())
    C.reset_random_seed(42)
    assert not np.array_equal(C.random.uniform((5,)).eval(), C.random.uniform((5,)).eval())


LIKE = [
    ('uniform_like', lambda x: C.random.uniform_like(x, low=0.0, high=2.0, seed=3), 1.0, 4 / 12),
    ('normal_like', lambda x: C.random.normal_like(x, mean=-1.0, scale=2.0, seed=3), -1.0, 4.0),
    ('gumbel_like', lambda x: C.random.gumbel_like(x, loc=0.0, scale=1.0, seed=3), np.euler_gamma,
     math.pi ** 2 / 6),
    ('bernoulli_like', lambda x: C.random.bernoulli_like(x, mean=0.8, seed=3), 0.8, 0.16),
]


@pytest.mark.parametrize('name,make,mean,var', LIKE, ids=[d[0] for d in LIKE])
def test_like_variants(name, make, mean, var):
    x = C.input_variable((500,), dtype=np.float64)
    f = make(x)
    assert f.output.dtype == np.float64
    assert f.output.dynamic_axes == x.dynamic_axes
    assert f.shape == (500,)
    d = np.zeros((200, 500))
    y = f.eval({x: d})
    assert y.shape == (200, 500)
    _check_moments(y, mean, var)
    # No gradient flows through a random draw.
    g = C.reduce_sum(f * x).grad({x: np.ones((2, 500))}, wrt=[x])
    assert g.shape == (2, 500)


def test_like_parameter_and_sequences():
    p = C.parameter((2, 3, 4))
    z = C.random.normal_like(p, seed=98052).eval()
    assert z.shape == (2, 3, 4) and z.dtype == np.float32
    ph = C.placeholder()
    bp = C.random.bernoulli_like(ph, seed=98052)
    s = C.sequence.input_variable(1)
    bx = bp.replace_placeholders({ph: s})
    out = bx.eval({s: np.zeros((1, 3, 1), np.float32)})
    assert len(out) == 1 and out[0].shape == (3, 1)
    assert set(np.unique(out[0])) <= {0.0, 1.0}


def test_bad_arguments():
    with pytest.raises(ValueError, match='uniform'):
        C.random.uniform((2,), low=1.0, high=1.0)
    with pytest.raises(ValueError, match='normal'):
        C.random.normal((2,), scale=-1.0)
    with pytest.raises(ValueError, match='gumbel_like'):
        C.random.gumbel_like(C.input_variable(2), scale=-0.5)
    with pytest.raises(ValueError, match='bernoulli'):
        C.random.bernoulli((2,), mean=1.5)
    with pytest.raises(ValueError, match='uniform'):
        C.random.uniform((2, C.FreeDimension))
    with pytest.raises(TypeError):
        C.random.normal((2,), dtype=np.int32)
    with pytest.raises(TypeError, match='normal'):
        C.random.normal((2,), seed='x')
    with pytest.raises(ValueError, match='RandomDistribution'):
        C.ops._prim.prim('RandomDistribution', [], {'randomDistributionType': 'poisson',
                                                   'randomDistributionArgs': [1.0], 'newShape': [2]})


def test_random_sample_seed_attributes_take_unsigned_64_bit_values():
    # As in CNTK: built over weights with dynamic axes too, and seeds are unsigned 64-bit.
    node = C.random_sample(C.input_variable(1), 1, True, seed=123)
    root = node.root_function
    assert root.attributes['rngSeed'] == 123
    root.set_attribute('rngSeed', 11530328594546889191)
    assert root.attributes['rngSeed'] == 11530328594546889191
    node.set_attribute('rngSeed', 2**31)
    assert root.attributes['rngSeed'] == 2**31
    with pytest.raises(NotImplementedError):
        node.eval({node.arguments[0]: np.ones((2, 1), np.float32)})
