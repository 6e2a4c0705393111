"""Ops: movement family."""
from ._prim import prim  # noqa: F401

__all__ = []
