"""Extra utilities built on top of CNTK.

Bridges to other toolkits (``crosstalk``, ``crosstalkcaffe``), reinforcement
learning agents (``deeprl``) and network compression (``netopt``).
Subpackages are imported on first use so that ``import cntk.contrib`` stays cheap
and does not require the optional third-party packages some of them need.
"""

import importlib

_SUBPACKAGES = ('crosstalk', 'crosstalkcaffe', 'deeprl', 'netopt')


def __getattr__(name):
    # PEP 562 lazy import: `cntk.contrib.crosstalk` works as an attribute
    # without paying for every subpackage at `import cntk.contrib` time.
    if name in _SUBPACKAGES:
        module = importlib.import_module('.' + name, __name__)
        globals()[name] = module
        return module
    raise AttributeError('module {!r} has no attribute {!r}'.format(__name__, name))


def __dir__():
    return sorted(list(globals()) + list(_SUBPACKAGES))
