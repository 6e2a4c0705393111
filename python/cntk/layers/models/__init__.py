"""cntk.layers.models: layers that stand for a specific kind of model rather than a
generic building block (CNTK 2.7 has the attention model here)."""
from .attention import *  # noqa: F401,F403
