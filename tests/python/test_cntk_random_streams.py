"""CNTK's random streams: for a given seed, initializers and random ops must give the
values CNTK 2.7 gave. CNTK draws on the CPU from std::mt19937_64 (fixed bit for bit by
the C++ standard) and turns the draws into numbers as Boost.Random does; this file
re-implements that in plain Python, independently of the engine, and compares."""
import math

import numpy as np
import pytest

import cntk as C

MASK64 = (1 << 64) - 1


class MT19937_64:
    """The 64-bit Mersenne Twister of the C++ standard."""

    def __init__(self, seed):
        self.mt = [seed & MASK64]
        for i in range(1, 312):
            prev = self.mt[-1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64)
        self.index = 312

    def _twist(self):
        mt = self.mt
        for i in range(312):
            y = (mt[i] & 0xFFFFFFFF80000000) | (mt[(i + 1) % 312] & 0x7FFFFFFF)
            mt[i] = mt[(i + 156) % 312] ^ (y >> 1) ^ (0xB5026F5AA96619E9 if y & 1 else 0)
        self.index = 0

    def __call__(self):
        if self.index >= 312:
            self._twist()
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y


def uniform(g, low, high):
    while True:
        v = float(g()) / 2.0 ** 64 * (high - low) + low
        if v < high:
            return v


def _ziggurat_tables():
    # 128 layers of equal area v under exp(-x^2/2); x[1] = r closes them at the top.
    f = lambda x: math.exp(-x * x / 2)

    def layers(r):
        v = r * f(r) + math.sqrt(math.pi / 2) * math.erfc(r / math.sqrt(2))
        xs = [v / f(r), r]
        for _ in range(126):
            y = f(xs[-1]) + v / xs[-1]
            if y >= 1:
                return xs, 1.0
            xs.append(math.sqrt(-2 * math.log(y)))
        return xs, f(xs[-1]) + v / xs[-1] - 1

    lo, hi = 3.0, 4.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if layers(mid)[1] > 0 else (lo, mid)  # > 0: r too small
    xs = layers(lo)[0] + [0.0]
    return xs, [0.0] + [f(x) for x in xs[1:-1]] + [1.0]


ZX, ZY = _ziggurat_tables()


def standard_normal(g):
    while True:
        bits = g()
        layer = bits & 0xFF
        sign = 1.0 if layer & 1 else -1.0
        layer >>= 1
        x = float((bits & ~(1 << 11)) >> 8) / 2.0 ** 56 * ZX[layer]
        if x < ZX[layer + 1]:
            return sign * x
        if layer == 0:
            while True:
                t = -math.log(1 - uniform(g, 0, 1)) / ZX[1]
                e = -math.log(1 - uniform(g, 0, 1))
                if 2 * e > t * t:
                    return sign * (t + ZX[1])
        y = ZY[layer] + uniform(g, 0, 1) * (ZY[layer + 1] - ZY[layer])
        if y < math.exp(-x * x / 2):
            return sign * x


def test_the_reference_generator_is_the_standard_one():
    # The C++ standard: the 10000th output of a default-constructed mt19937_64.
    g = MT19937_64(5489)
    for _ in range(9999):
        g()
    assert g() == 9981545732273789042


def test_the_reference_ziggurat_tables():
    assert ZX[1] == pytest.approx(3.4426198558966521, rel=1e-12)
    assert ZX[0] == pytest.approx(3.7130862467403633, rel=1e-12)
    assert ZX[127] == pytest.approx(0.27232086470466385, rel=1e-10)


def _reference(shape, dtype, draw):
    return np.array([draw() for _ in range(int(np.prod(shape)))]).reshape(shape).astype(dtype)


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_glorot_uniform_values(dtype):
    # A Dense weight (in 5, out 3): range sqrt(6 / 8), filled in row-major order.
    got = C.parameter((5, 3), init=C.glorot_uniform(seed=98052), dtype=dtype).value
    r = float(dtype(math.sqrt(6.0 / 8)))  # the range at the parameter's precision
    g = MT19937_64(98052)
    np.testing.assert_allclose(got, _reference((5, 3), dtype, lambda: uniform(g, -r, r)), rtol=1e-6)
    assert got[0, 0] == pytest.approx(0.7478731, abs=1e-6)


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_normal_initializer_values(dtype):
    got = C.parameter((4, 6), init=C.glorot_normal(scale=2, seed=7), dtype=dtype).value
    std = float(2 * dtype(math.sqrt(2.0 / 10)))
    g = MT19937_64(7)
    np.testing.assert_allclose(got, _reference((4, 6), dtype, lambda: standard_normal(g) * std), rtol=1e-6)


def test_truncated_normal_values():
    got = C.parameter((50,), init=C.truncated_normal(0.5, seed=3), dtype=np.float64).value
    g = MT19937_64(3)

    def draw():
        while True:
            v = standard_normal(g) * 0.5
            if -1 <= v <= 1:
                return v
    np.testing.assert_allclose(got, _reference((50,), np.float64, draw), rtol=1e-12)


def test_random_sample_values():
    # Each draw is uniform over the total weight and picks the first class whose running
    # sum reaches it; the generator continues from one evaluation to the next.
    w = np.arange(1, 21, dtype=np.float64)
    f = C.random_sample(w, 7, True, seed=11)
    got = [np.argmax(f.eval(), axis=-1) for _ in range(2)]
    sums = np.cumsum(w)
    g = MT19937_64(11)
    want = [[int(np.searchsorted(sums, uniform(g, 0, sums[-1]), side='left')) for _ in range(7)] for _ in range(2)]
    np.testing.assert_array_equal(np.array(got).reshape(2, 7), want)


def test_random_normal_op_values():
    got = C.random.normal((3, 3), mean=1, scale=2, seed=5, dtype=np.float64).eval()
    g = MT19937_64(5)
    np.testing.assert_allclose(got, _reference((3, 3), np.float64, lambda: standard_normal(g) * 2 + 1), rtol=1e-12)


def test_noise_injection_values():
    # The learner takes the next automatic seed; each update draws from a fresh
    # generator with that seed, then the next one.
    C.reset_random_seed(21)
    w = C.parameter((2, 3), init=0.0, dtype=np.float64)
    learner = C.sgd([w], C.learning_parameter_schedule(0.1), gaussian_noise_injection_std_dev=0.25)
    for seed in (21, 22):
        before = w.value.copy()
        learner.update({w: np.zeros((2, 3))}, 1)
        g = MT19937_64(seed)
        np.testing.assert_allclose(w.value - before, _reference((2, 3), np.float64, lambda: standard_normal(g) * 0.25),
                                   rtol=1e-9, atol=1e-15)
