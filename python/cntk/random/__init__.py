"""cntk.random: functions that draw tensors from random distributions.

Each function is an op that draws anew at every evaluation. With a fixed `seed`
(or after `set_fixed_random_seed`) a newly built graph draws the same numbers.
"""
import numbers

import numpy as np

from .. import _cntk
from ..initializer import SentinelValueForAutoSelectRandomSeed as auto_select
from ..internal import dtype_code, sanitize_shape, FLOAT16, FLOAT
from ..ops._prim import prim
from ..ops._random import _random_attrs

__all__ = ['uniform', 'normal', 'gumbel', 'bernoulli', 'uniform_like', 'normal_like', 'gumbel_like',
           'bernoulli_like']


def _number(op, name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError("%s: %s must be a number, not %s" % (op, name, type(v).__name__))
    return float(v)


def _distribution(op, kind, args, seed, shape=None, dtype=None, x=None, name=''):
    args = [_number(op, n, v) for n, v in args]
    if kind == 'uniform' and not args[0] < args[1]:
        raise ValueError("%s: low (%g) must be less than high (%g)" % (op, args[0], args[1]))
    if kind in ('normal', 'gumbel') and args[1] < 0:
        raise ValueError("%s: scale (%g) must be non-negative" % (op, args[1]))
    if kind == 'bernoulli' and not 0 <= args[0] <= 1:
        raise ValueError("%s: mean (%g) must be between 0 and 1" % (op, args[0]))
    attrs = _random_attrs(seed, op)
    attrs['randomDistributionType'] = kind
    attrs['randomDistributionArgs'] = args
    if x is not None:
        return prim('RandomDistribution', [x], attrs, name)
    code = dtype_code(dtype)
    shape = sanitize_shape(shape)
    if any(d < 0 for d in shape):
        raise ValueError("%s: the shape %s must not have free or inferred dimensions" % (op, shape))
    attrs['newShape'] = list(shape)
    if code == FLOAT16:
        # Drawn in float32 and converted: the engine computes in float32/float64.
        attrs['newDataType'] = FLOAT
        from ..ops import cast
        return cast(prim('RandomDistribution', [], attrs), np.float16, name=name)
    attrs['newDataType'] = code
    return prim('RandomDistribution', [], attrs, name)


def uniform(shape, dtype=np.float32, low=0.0, high=1.0, seed=auto_select, name=''):
    """Samples from the uniform distribution on [`low`, `high`)."""
    return _distribution('uniform', 'uniform', [('low', low), ('high', high)], seed, shape, dtype, name=name)


def normal(shape, dtype=np.float32, mean=0.0, scale=1.0, seed=auto_select, name=''):
    """Samples from the normal distribution with mean `mean` and standard deviation `scale`."""
    return _distribution('normal', 'normal', [('mean', mean), ('scale', scale)], seed, shape, dtype, name=name)


def gumbel(shape, dtype=np.float32, loc=0.0, scale=1.0, seed=auto_select, name=''):
    """Samples from the Gumbel distribution with location `loc` and scale `scale`."""
    return _distribution('gumbel', 'gumbel', [('loc', loc), ('scale', scale)], seed, shape, dtype, name=name)


def bernoulli(shape, dtype=np.float32, mean=0.5, seed=auto_select, name=''):
    """Samples from the Bernoulli distribution with success probability `mean` (values 0 and 1)."""
    return _distribution('bernoulli', 'bernoulli', [('mean', mean)], seed, shape, dtype, name=name)


def uniform_like(x, low=0.0, high=1.0, seed=auto_select, name=''):
    """Uniform samples on [`low`, `high`) with the shape, type and dynamic axes of `x`."""
    return _distribution('uniform_like', 'uniform', [('low', low), ('high', high)], seed, x=x, name=name)


def normal_like(x, mean=0.0, scale=1.0, seed=auto_select, name=''):
    """Normal samples with the shape, type and dynamic axes of `x`."""
    return _distribution('normal_like', 'normal', [('mean', mean), ('scale', scale)], seed, x=x, name=name)


def gumbel_like(x, loc=0.0, scale=1.0, seed=auto_select, name=''):
    """Gumbel samples with the shape, type and dynamic axes of `x`."""
    return _distribution('gumbel_like', 'gumbel', [('loc', loc), ('scale', scale)], seed, x=x, name=name)


def bernoulli_like(x, mean=0.5, seed=auto_select, name=''):
    """Bernoulli samples (0 and 1) with the shape, type and dynamic axes of `x`."""
    return _distribution('bernoulli_like', 'bernoulli', [('mean', mean)], seed, x=x, name=name)
