"""OpenCNTK: the Microsoft Cognitive Toolkit's API on a maintained C++ engine.

`import cntk as C` gives CNTK 2.7's Python API.
"""
__version__ = '2.7'

import numpy as np  # noqa: F401

from . import _cntk

from .axis import Axis  # noqa: E402
from .device import *  # noqa: E402,F401,F403
from .core import *  # noqa: E402,F401,F403
from .variables import Parameter, Constant, Variable, Record, _variable_factory  # noqa: E402
from .ops.functions import _function_factory  # noqa: E402

_cntk._set_factories(_function_factory, _variable_factory)
# At exit, the engine drops the Python objects it holds (user functions' instances): cycles
# through them are invisible to the garbage collector and would outlive the interpreter.
import atexit as _atexit  # noqa: E402
_atexit.register(_cntk._release_held_objects)

from .ops import *  # noqa: E402,F401,F403
from .ops import sequence  # noqa: E402,F401
from .ops.functions import Function, CloneMethod, ModelFormat, load_model, BlockFunction  # noqa: E402,F401
from .initializer import *  # noqa: E402,F401,F403
from .losses import *  # noqa: E402,F401,F403
from .metrics import *  # noqa: E402,F401,F403
from .learners import *  # noqa: E402,F401,F403
from .train import *  # noqa: E402,F401,F403
from .eval import *  # noqa: E402,F401,F403
from . import initializer, losses, metrics, random  # noqa: E402,F401
from . import layers  # noqa: E402,F401
from . import logging  # noqa: E402,F401
from . import io  # noqa: E402,F401
from . import debugging  # noqa: E402,F401
from . import misc  # noqa: E402,F401
from . import default_options as _default_options_module  # noqa: E402,F401
from .default_options import *  # noqa: E402,F401,F403
from .internal.utils import _to_cntk_dict_value  # noqa: E402,F401
from .layers import typing  # noqa: E402,F401
from .internal.switches import *  # noqa: E402,F401,F403
from . import cntk_py  # noqa: E402,F401

InferredDimension = _cntk.InferredDimension
FreeDimension = _cntk.FreeDimension

DATATYPE = np.float32
