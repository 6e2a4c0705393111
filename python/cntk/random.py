"""cntk.random: ops that draw random tensors (not yet implemented)."""


def _not_yet(name):
    def f(*args, **kwargs):
        raise NotImplementedError("cntk.random.%s is not implemented yet" % name)
    f.__name__ = name
    return f


for _n in ['uniform', 'normal', 'gumbel', 'bernoulli', 'uniform_like', 'normal_like', 'gumbel_like', 'bernoulli_like']:
    globals()[_n] = _not_yet(_n)
