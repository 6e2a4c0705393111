"""cntk.layers: CNTK's layer library, built from graph ops in Python."""
from ..default_options import *  # noqa: F401,F403
from . import typing  # noqa: F401
from .blocks import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .higher_order_layers import *  # noqa: F401,F403
from .sequence import *  # noqa: F401,F403
from .models import AttentionModel  # noqa: F401,E402  (CNTK 2.7 exports it here too)
from ..ops.functions import BlockFunction  # noqa: F401,E402  (CNTK's blocks module exported it; deprecated)
