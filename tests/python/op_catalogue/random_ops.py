"""Random sampling ops (moment and frequency checks). Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from op_harness import f64_input
from op_catalogue.common import add, Built, case, Case, F64, ZERO


# ------------------------------------------------------------------ random

def _moments(mean, var, lo=None, hi=None, tol=0.05):
    def check(got):
        got = np.asarray(got)
        assert abs(got.mean() - mean) < tol * max(1.0, np.sqrt(var)), got.mean()
        assert abs(got.var() - var) < 2 * tol * max(1.0, var), got.var()
        if lo is not None:
            assert got.min() >= lo and got.max() <= hi
    return check


def _random(make, check):
    def build(rng):
        x = f64_input((100, 100), batch=False)
        fn = make(x)
        return Built(fn, {x: np.zeros((100, 100))}, check)
    return build


for _label, _make, _check in [
        ('uniform', lambda x: C.random.uniform((100, 100), dtype=F64, low=-1, high=3, seed=3),
         _moments(1, 16 / 12., -1, 3)),
        ('normal', lambda x: C.random.normal((100, 100), dtype=F64, mean=1, scale=2, seed=3), _moments(1, 4)),
        ('gumbel', lambda x: C.random.gumbel((100, 100), dtype=F64, loc=0, scale=1, seed=3),
         _moments(np.euler_gamma, np.pi ** 2 / 6)),
        ('bernoulli', lambda x: C.random.bernoulli((100, 100), dtype=F64, mean=0.3, seed=3), _moments(0.3, 0.21, 0, 1)),
        ('normal_like', lambda x: C.random.normal_like(x, mean=-1, scale=0.5, seed=3), _moments(-1, 0.25))]:
    # The *_like forms take the input whose shape they follow; the others have none.
    add(Case('RandomDistribution', (ZERO,) if _label.endswith('_like') else (), _random(_make, _check), label=_label))


def _sample_check(n_classes, num_samples, allow_duplicates):
    def check(got):
        got = np.asarray(got).reshape(num_samples, n_classes)
        assert set(np.unique(got)) <= {0.0, 1.0} and (got.sum(axis=1) == 1).all()  # one-hot rows
        if not allow_duplicates:
            assert (got.sum(axis=0) <= 1).all()
    return check


@case('RandomSample', (ZERO,))
def random_sample(rng):
    w = f64_input(6, batch=False)
    d = np.array([1., 2., 3., 1., 1., 2.])
    return Built(C.random_sample(w, 4, allow_duplicates=False, seed=5), {w: d}, _sample_check(6, 4, False))


def _frequencies(weights, n):
    def check(got):
        got = np.asarray(got).reshape(n, len(weights))
        assert (got.sum(axis=1) == 1).all()
        np.testing.assert_allclose(got.mean(axis=0), weights / weights.sum(), atol=0.03)
    return check


@case('RandomSample', (ZERO,))
def random_sample_with_duplicates(rng):
    w = f64_input(4, batch=False)
    d = np.array([1., 2., 3., 4.])
    return Built(C.random_sample(w, 3000, allow_duplicates=True, seed=9), {w: d}, _frequencies(d, 3000))


@case('RandomSampleInclusionFrequency', (ZERO,))
def random_sample_inclusion_frequency(rng):
    # With duplicates: num_samples * w / sum(w).
    w = f64_input(4, batch=False)
    d = np.array([1., 2., 3., 4.])
    return Built(C.random_sample_inclusion_frequency(w, 5, allow_duplicates=True), {w: d}, 5 * d / d.sum())
