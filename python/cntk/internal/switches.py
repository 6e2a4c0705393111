"""Global switches CNTK scripts call (also reachable as cntk.cntk_py.NAME and _cntk_py.NAME)."""
from .. import _cntk


def set_fixed_random_seed(value):
    """Makes random initializers and random ops reproducible from `value`."""
    _cntk.set_fixed_random_seed(int(value))


def force_deterministic_algorithms(value=True):
    """Asks for bit-reproducible kernels (the CPU kernels here already are)."""
    _cntk.force_deterministic_algorithms(bool(value))


def set_computation_network_trace_level(level):
    """Verbosity of engine tracing (0 = off)."""
    _cntk.set_computation_network_trace_level(int(level))


def get_computation_network_trace_level():
    return _cntk.get_computation_network_trace_level()


def should_force_deterministic_algorithms():
    return _cntk.should_force_deterministic_algorithms()


def is_random_seed_fixed():
    return _cntk.is_random_seed_fixed()


__all__ = ['set_fixed_random_seed', 'force_deterministic_algorithms', 'set_computation_network_trace_level',
           'get_computation_network_trace_level', 'should_force_deterministic_algorithms', 'is_random_seed_fixed']
