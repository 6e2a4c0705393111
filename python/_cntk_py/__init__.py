"""Top-level alias of the native module, for scripts that write `from _cntk_py import NAME`."""
from cntk._cntk import *  # noqa: F401,F403
from cntk.internal.switches import *  # noqa: F401,F403
