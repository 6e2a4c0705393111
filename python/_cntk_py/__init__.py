"""Top-level name of the native module, for scripts that write `from _cntk_py import NAME`
(CNTK installed its extension under that name): the same module contents as cntk.cntk_py."""
from cntk.cntk_py import *  # noqa: F401,F403
