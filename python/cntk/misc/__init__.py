"""Model conversion helpers (CNTK's cntk.misc): `convert` substitutes the functions of a
graph that a filter selects, `convert_optimized_rnnstack` rewrites optimized_rnnstack
ops into Recurrence compositions with the same weights."""
from .converter import convert  # noqa: F401
from .optimized_rnnstack_converter import convert_optimized_rnnstack  # noqa: F401
