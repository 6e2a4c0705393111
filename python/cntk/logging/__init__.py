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


def set_trace_level(value):
    """Sets the verbosity (a TraceLevel or int)."""
    _cntk.set_computation_network_trace_level(int(value))


def get_trace_level():
    return TraceLevel(min(int(_cntk.get_computation_network_trace_level()), 2))
