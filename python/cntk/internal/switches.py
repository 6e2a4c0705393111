"""Global switches CNTK scripts call: the extension's own functions (also reachable as
cntk.cntk_py.NAME and _cntk_py.NAME)."""
from .._cntk import (set_fixed_random_seed, reset_random_seed, is_random_seed_fixed,  # noqa: F401
                     force_deterministic_algorithms, should_force_deterministic_algorithms,
                     set_computation_network_trace_level, get_computation_network_trace_level)

__all__ = ['set_fixed_random_seed', 'reset_random_seed', 'is_random_seed_fixed', 'force_deterministic_algorithms',
           'should_force_deterministic_algorithms', 'set_computation_network_trace_level',
           'get_computation_network_trace_level']
