"""cntk.layers: layer library (typing annotations only so far)."""
from . import typing  # noqa: F401
