"""Parameter initializers. Each returns a spec (a dict) that the engine turns into
values once the parameter's shape is known."""
import numpy as np

from . import _cntk

DefaultParamInitScale = 1.0
SentinelValueForInferParamInitRank = 2147483647
SentinelValueForAutoSelectRandomSeed = -1


class _Initializer(dict):
    """An initializer spec; `initializer_with_rank` adjusts its ranks."""

    def __repr__(self):
        return "Initializer(%s)" % dict.__repr__(self)


def _is_initializer(x):
    return isinstance(x, _Initializer)


def _spec(kind, scale=DefaultParamInitScale, output_rank=SentinelValueForInferParamInitRank,
          filter_rank=SentinelValueForInferParamInitRank, seed=SentinelValueForAutoSelectRandomSeed, **extra):
    if seed is None:
        seed = SentinelValueForAutoSelectRandomSeed
    if seed == SentinelValueForAutoSelectRandomSeed:
        seed = int(_cntk.next_random_seed())
    d = _Initializer(type=kind, scale=float(scale), outputRank=int(output_rank), filterRank=int(filter_rank),
                     randomSeed=int(seed))
    d.update(extra)
    return d


def uniform(scale, seed=None):
    """Uniform in [-scale, scale]."""
    return _spec('uniform', scale, seed=seed)


def normal(scale, output_rank=SentinelValueForInferParamInitRank, filter_rank=SentinelValueForInferParamInitRank,
           seed=None):
    """Normal with mean 0 and standard deviation `scale`."""
    return _spec('normal', scale, output_rank, filter_rank, seed)


def xavier(scale=DefaultParamInitScale, output_rank=SentinelValueForInferParamInitRank,
           filter_rank=SentinelValueForInferParamInitRank, seed=None):
    """Normal with standard deviation scale * sqrt(3 / fan_in)."""
    return _spec('xavier', scale, output_rank, filter_rank, seed)


def glorot_uniform(scale=DefaultParamInitScale, output_rank=SentinelValueForInferParamInitRank,
                   filter_rank=SentinelValueForInferParamInitRank, seed=None):
    """Uniform in +-scale * sqrt(6 / (fan_in + fan_out))."""
    return _spec('glorot_uniform', scale, output_rank, filter_rank, seed)


def glorot_normal(scale=DefaultParamInitScale, output_rank=SentinelValueForInferParamInitRank,
                  filter_rank=SentinelValueForInferParamInitRank, seed=None):
    """Normal with standard deviation scale * sqrt(2 / (fan_in + fan_out))."""
    return _spec('glorot_normal', scale, output_rank, filter_rank, seed)


def he_uniform(scale=DefaultParamInitScale, output_rank=SentinelValueForInferParamInitRank,
               filter_rank=SentinelValueForInferParamInitRank, seed=None):
    """Uniform in +-scale * sqrt(6 / fan_in)."""
    return _spec('he_uniform', scale, output_rank, filter_rank, seed)


def he_normal(scale=DefaultParamInitScale, output_rank=SentinelValueForInferParamInitRank,
              filter_rank=SentinelValueForInferParamInitRank, seed=None):
    """Normal with standard deviation scale * sqrt(2 / fan_in)."""
    return _spec('he_normal', scale, output_rank, filter_rank, seed)


def bilinear(kernel_width, kernel_height):
    """Bilinear upsampling kernels for convolution_transpose."""
    return _Initializer(type='bilinear', kernelWidth=int(kernel_width), kernelHeight=int(kernel_height))


def truncated_normal(stdev, seed=None):
    """Normal with standard deviation `stdev`, values beyond two deviations redrawn."""
    return _spec('truncated_normal', stdev, seed=seed)


def initializer_with_rank(initializer, output_rank=None, filter_rank=None):
    """A copy of `initializer` with its output and filter ranks set."""
    if not _is_initializer(initializer):
        raise TypeError("initializer_with_rank needs an initializer (e.g. glorot_uniform())")
    d = _Initializer(initializer)
    if output_rank is not None:
        d['outputRank'] = int(output_rank)
    if filter_rank is not None:
        d['filterRank'] = int(filter_rank)
    return d


__all__ = ['uniform', 'normal', 'xavier', 'glorot_uniform', 'glorot_normal', 'he_uniform', 'he_normal',
           'bilinear', 'truncated_normal', 'initializer_with_rank']
