"""cntk.logging: progress writers, trace levels and graph utilities."""
import enum

from .. import _cntk
from .progress_writer import ProgressWriter  # noqa: F401
from .progress_print import *  # noqa: F401,F403
from . import graph  # noqa: F401
from .graph import *  # noqa: F401,F403  (CNTK reaches the graph helpers from cntk.logging)


class TraceLevel(enum.IntEnum):
    """Verbosity of engine messages."""
    Error = 0
    Warning = 1
    Info = 2


# The verbosity of the library's messages; as in CNTK, a setting of its own, apart from the
# computation network's trace level (cntk.debugging.set_computation_network_trace_level).
_trace_level = TraceLevel.Warning


def set_trace_level(value):
    """Sets the verbosity of the library's messages (a TraceLevel or its int value)."""
    global _trace_level
    _trace_level = TraceLevel(int(value))


def get_trace_level():
    """The verbosity of the library's messages (TraceLevel.Warning by default)."""
    return _trace_level
