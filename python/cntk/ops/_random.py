"""Dropout and weighted random sampling."""
import numbers

from .. import _cntk
from ..initializer import SentinelValueForAutoSelectRandomSeed
from ._prim import prim

__all__ = ['dropout', 'random_sample', 'random_sample_inclusion_frequency', 'SentinelValueForAutoSelectRandomSeed']


def _resolve_seed(seed, op):
    """The rngSeed attribute: the given seed, or the next global one (reproducible
    after set_fixed_random_seed) when it is left to be selected automatically."""
    if seed is None or (isinstance(seed, numbers.Integral) and seed == SentinelValueForAutoSelectRandomSeed):
        return int(_cntk.next_random_seed())
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError("%s: seed must be an integer, not %s" % (op, type(seed).__name__))
    if seed < 0:
        raise ValueError("%s: seed must be non-negative, got %d" % (op, seed))
    return int(seed)


def _random_attrs(seed, op):
    return {'rngSeed': _resolve_seed(seed, op), 'rngOffset': 0}


def dropout(x, dropout_rate=0.0, seed=SentinelValueForAutoSelectRandomSeed, name='', keep_prob=None):
    """Sets each element of `x` to 0 with probability `dropout_rate` and scales the
    others by 1 / (1 - dropout_rate), during training only; evaluation passes `x` through.

    `keep_prob` (keyword only; 1 - dropout_rate) may be given instead of `dropout_rate`.
    """
    if keep_prob is not None:
        if dropout_rate not in (None, 0.0):
            raise ValueError("dropout: dropout_rate and keep_prob cannot be given together")
        if not 0.0 < keep_prob <= 1.0:
            raise ValueError("dropout: keep_prob must be in the interval (0, 1], got %r" % (keep_prob,))
        dropout_rate = 1.0 - keep_prob
    if dropout_rate is None:
        dropout_rate = 0.0
    if not 0.0 <= dropout_rate < 1.0:
        raise ValueError("dropout: dropout_rate must be in the interval [0, 1), got %r" % (dropout_rate,))
    attrs = _random_attrs(seed, 'dropout')
    attrs['dropoutRate'] = float(dropout_rate)
    return prim('Dropout', [x], attrs, name)


def _sample_attrs(op, num_samples, allow_duplicates, seed):
    if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral):
        raise TypeError("%s: num_samples must be an integer, not %s" % (op, type(num_samples).__name__))
    if num_samples < 1:
        raise ValueError("%s: num_samples must be > 0, got %d" % (op, num_samples))
    attrs = _random_attrs(seed, op)
    attrs['numSamples'] = int(num_samples)
    attrs['allowDuplicates'] = bool(allow_duplicates)
    return attrs


def random_sample(weights, num_samples, allow_duplicates, seed=SentinelValueForAutoSelectRandomSeed, name=''):
    """Draws `num_samples` classes with probabilities weights[i] / sum(weights), with
    replacement (`allow_duplicates`) or without. The result has shape
    (num_samples, len(weights)): one one-hot row per sample, and no dynamic axes.
    A new set is drawn at every evaluation.
    """
    attrs = _sample_attrs('random_sample', num_samples, allow_duplicates, seed)
    return prim('RandomSample', [weights], attrs, name)


def random_sample_inclusion_frequency(weights, num_samples, allow_duplicates,
                                      seed=SentinelValueForAutoSelectRandomSeed, name=''):
    """The expected number of times each class appears in a set drawn by `random_sample`
    with the same arguments: num_samples * p with duplicates; without them an estimate
    of the inclusion probability from the average number of draws a set needs.
    """
    attrs = _sample_attrs('random_sample_inclusion_frequency', num_samples, allow_duplicates, seed)
    return prim('RandomSampleInclusionFrequency', [weights], attrs, name)
