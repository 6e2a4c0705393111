"""CNTK's performance profiler: a summary report and a chrome://tracing detail log per worker.

    import cntk as C
    C.debugging.start_profiler('profiler')   # prepares the buffer; nothing is recorded yet
    C.debugging.enable_profiler()            # training_session does this after its first checkpoint
    ... train ...
    with C.debugging.profiler_scope('my preprocessing'):   # a custom scope (detail log only)
        ...
    C.debugging.stop_profiler()              # writes <timestamp>_summary_<rank>.txt and _detail_<rank>.json

The files are also written at normal process exit (a session still running is stopped
then) and when a minibatch raises during training.
"""
import contextlib
import os
import threading

from .. import _cntk

_local = threading.local()


def start_profiler(dir='profiler', sync_gpu=True, reserve_mem=_cntk.default_profiler_buffer_size):
    """Prepares a profiling session writing into `dir` (created if missing). Profiling
    starts disabled: call :func:`enable_profiler` (training_session enables it after the
    first checkpoint).

    Args:
        dir (str): directory for the summary and detail files
        sync_gpu (bool): whether timing synchronizes with the GPU; there is no GPU device
            in this build, so it has no effect
        reserve_mem (int): bytes reserved for events (32 bytes each); events beyond it are
            counted as dropped and the count is reported in the summary
    """
    if not isinstance(dir, (str, os.PathLike)):
        raise TypeError("start_profiler: dir must be a path, not %s" % type(dir).__name__)
    dir = os.fspath(dir)
    if isinstance(reserve_mem, bool) or not isinstance(reserve_mem, int):
        raise TypeError("start_profiler: reserve_mem must be an int (bytes), not %s" % type(reserve_mem).__name__)
    if reserve_mem <= 0:
        raise ValueError("start_profiler: reserve_mem must be positive, got %d" % reserve_mem)
    _cntk.start_profiler(dir, bool(sync_gpu), reserve_mem)


def stop_profiler():
    """Stops the session and writes its files. Returns the paths written (summary, detail);
    an empty list when no session was running."""
    return _cntk.stop_profiler()


def enable_profiler():
    """Starts recording events (no effect before :func:`start_profiler`). Returns whether a
    session was running."""
    return _cntk.enable_profiler()


def disable_profiler():
    """Stops recording events; the session stays open. Returns whether a session was running."""
    return _cntk.disable_profiler()


class profiler_scope(contextlib.ContextDecorator):
    """A custom profiler scope, as a context manager or a decorator::

        with profiler_scope('augment'):
            ...

        @profiler_scope('load batch')
        def load(): ...

    Custom scopes appear in the detail log, not in the summary (as in CNTK). With profiling
    disabled a scope records nothing.
    """

    def __init__(self, name):
        if not isinstance(name, str) or not name:
            raise ValueError("profiler_scope: name must be a non-empty string, not %r" % (name,))
        self.name = name
        self._handle = _cntk._ProfilerScopeName(name)

    def _stack(self):
        stack = getattr(_local, 'stack', None)
        if stack is None:
            stack = _local.stack = []
        return stack

    def __enter__(self):
        self._stack().append(_cntk._profiler_begin())
        return self

    def __exit__(self, *exc):
        _cntk._profiler_end_custom(self._handle, self._stack().pop())
        return False


@contextlib.contextmanager
def _phase(name):
    """Times a phase of minibatch processing ('read minibatch', ...) for the summary."""
    begin = _cntk._profiler_begin()
    try:
        yield
    finally:
        _cntk._profiler_end_phase(name, begin)


def _flush_after_error():
    """Writes a running session's files (training raised); never raises itself."""
    try:
        _cntk.flush_profiler()
    except Exception:
        pass


__all__ = ['start_profiler', 'stop_profiler', 'enable_profiler', 'disable_profiler', 'profiler_scope']
