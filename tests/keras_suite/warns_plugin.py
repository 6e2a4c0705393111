"""A pytest plugin for Keras' suite: Keras 2.3.1's tests were written for pytest 4/5 and
use `pytest.warns(None)` to record warnings without expecting any (then checking the
record themselves). pytest 7 deprecated that form and pytest 8 removed it (it raises
TypeError), so with this plugin `pytest.warns(None)` records warnings as it used to;
every other use of `pytest.warns` is pytest's own."""
import pytest
from _pytest.recwarn import WarningsRecorder

_pytest_warns = pytest.warns


def _warns(*args, **kwargs):
    if len(args) == 1 and args[0] is None and not kwargs:
        return WarningsRecorder(_ispytest=True)
    return _pytest_warns(*args, **kwargs)


pytest.warns = _warns
