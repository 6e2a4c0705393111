"""Parameter initializers. Each returns a spec (a dict) that the engine turns into
values once the parameter's shape is known."""


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
    try:
        scale = float(scale)
    except (TypeError, ValueError):
        raise TypeError("%s: scale must be a number, not %r" % (kind, scale))
    if not scale > 0:
        raise ValueError("%s: scale must be positive, got %r" % (kind, scale))
    if seed is None:
        seed = SentinelValueForAutoSelectRandomSeed
    # An automatic seed stays the sentinel here: each parameter created from this
    # initializer draws its own seed (initializers are often default arguments).
    d = _Initializer(type=kind, scale=scale, outputRank=int(output_rank), filterRank=int(filter_rank),
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
    """A copy of `initializer` with its output and filter ranks set (None: inferred).

    Ranks already given to the initializer cannot be changed (None keeps them).
    Uniform and bilinear initializers have no ranks and are returned unchanged.
    """
    if not _is_initializer(initializer):
        raise TypeError("initializer_with_rank needs an initializer (e.g. glorot_uniform()), not %s"
                        % type(initializer).__name__)
    output_rank = SentinelValueForInferParamInitRank if output_rank is None else int(output_rank)
    filter_rank = SentinelValueForInferParamInitRank if filter_rank is None else int(filter_rank)
    d = _Initializer(initializer)
    if d.get('type') in ('uniform', 'bilinear', 'constant'):
        return d
    for key, new, what in (('outputRank', output_rank, 'output'), ('filterRank', filter_rank, 'filter')):
        old = d.get(key, SentinelValueForInferParamInitRank)
        if new == SentinelValueForInferParamInitRank:
            continue  # (CNTK rejects None for a rank that was given; keeping it is harmless)
        if old != SentinelValueForInferParamInitRank and old != new:
            raise ValueError("initializer_with_rank: the %s rank of the initializer is already %d and cannot be "
                             "changed to %d" % (what, old, new))
        d[key] = new
    return d


__all__ = ['uniform', 'normal', 'xavier', 'glorot_uniform', 'glorot_normal', 'he_uniform', 'he_normal',
           'bilinear', 'truncated_normal', 'initializer_with_rank']
