"""Opt-in compatibility hook for running Keras 2.3.1 on today's Pythons.

Keras 2.3.1 (the last release with a CNTK backend) was written for Python 3.6,
h5py 2 and NumPy 1.x. Three things it relies on are gone on the Pythons OpenCNTK
supports:

* ``collections.Iterable``, ``Mapping``, ``Sequence``, ``Container``, ... (the
  aliases of ``collections.abc`` were removed in Python 3.10); Keras imports
  them at module level, so ``import keras`` fails.
* h5py 3 returns attributes written as ``bytes`` as ``str`` (Keras' model loading
  calls ``.decode('utf8')`` on them), and opens files read-only when no mode is given
  (Keras' in-memory saving gives none; h5py 2 used 'a') and has no ``File.fid``.
* NumPy 2 removed ``np.string_`` (Keras' H5Dict), ``np.Inf`` (its callbacks) and
  ``np.int`` (its NumPy reference backend, which its backend tests compare against).

``install()`` puts each missing name back where Keras looks for it, and gives
h5py 2's behaviour back: attributes written as bytes read back as bytes (those
written as str stay str), and files opened without a mode open in mode 'a'. It
changes no file of Keras, and does nothing until called: ``import cntk`` alone
never installs it. Use it either as

    python -m cntk.keras script.py [args]      # also sets KERAS_BACKEND=cntk

(which installs it in the Python processes the script starts too, Keras' 'spawn'
workers among them), or, inside a script, before ``import keras``:

    import cntk.keras_compat
    cntk.keras_compat.install()
"""

import collections
import collections.abc
import os
import sys

__all__ = ['install', 'installed', 'main']

# Every abstract base class collections.abc exports; Python 3.9 still had them
# in collections (with a deprecation warning).
_ABC_NAMES = [n for n in collections.abc.__all__ if not n.startswith('_')]

# Aliases NumPy 2 dropped that Keras 2.3.1 or its tests use, with what they meant.
_NUMPY_ALIASES = {'string_': 'bytes_', 'unicode_': 'str_', 'Inf': 'inf', 'alltrue': 'all'}
_NUMPY_BUILTIN_ALIASES = {'int': int, 'float': float, 'complex': complex,
                          'object': object, 'str': str}

_installed = False


def _as_h5py2(value, dtype):
    """An attribute as h5py 2 returned it: h5py 3 stores bytes as variable-length ASCII
    strings and reads them back as str; h5py 2 gave bytes (and arrays of bytes)."""
    import h5py
    import numpy as np
    info = h5py.check_string_dtype(dtype)
    if info is None or info.encoding != 'ascii' or info.length is not None:
        return value
    if isinstance(value, str):
        return value.encode('utf-8', 'surrogateescape')
    if isinstance(value, np.ndarray) and value.dtype == object:
        return np.array([v.encode('utf-8', 'surrogateescape') if isinstance(v, str) else v
                         for v in value.flat]).reshape(value.shape)
    return value


def _install_collections():
    for name in _ABC_NAMES:
        if not hasattr(collections, name):
            setattr(collections, name, getattr(collections.abc, name))


def _install_numpy():
    import numpy as np
    import warnings
    for alias, target in _NUMPY_ALIASES.items():
        if alias not in np.__dict__:
            setattr(np, alias, getattr(np, target))
    with warnings.catch_warnings():
        # NumPy warns on probing names it plans to reintroduce (np.object, np.str).
        warnings.simplefilter('ignore')
        for alias, target in _NUMPY_BUILTIN_ALIASES.items():
            if alias not in np.__dict__:
                setattr(np, alias, target)


def _install_h5py():
    try:
        import h5py
    except ImportError:
        return  # Keras only needs h5py for saving; nothing to adapt
    if int(h5py.__version__.split('.')[0]) < 3:
        return
    manager = h5py.AttributeManager
    if getattr(manager.__getitem__, '_cntk_keras_compat', False):
        return
    original = manager.__getitem__

    def __getitem__(self, name):
        return _as_h5py2(original(self, name), self.get_id(name).dtype)
    __getitem__._cntk_keras_compat = True
    manager.__getitem__ = __getitem__

    # h5py 2 opened files in mode 'a' when none was given (h5py 3: 'r'); Keras'
    # save_to_binary_h5py creates an in-memory file that way.
    file_init = h5py.File.__init__

    def __init__(self, name, mode=None, *args, **kwargs):
        file_init(self, name, 'a' if mode is None else mode, *args, **kwargs)
    h5py.File.__init__ = __init__
    if not hasattr(h5py.File, 'fid'):  # h5py 2's name for the file's low-level id
        h5py.File.fid = property(lambda self: self.id)


def install():
    """Supplies the names Keras 2.3.1 needs on Python 3.10+, h5py 3 and NumPy 2.

    Idempotent. Call it before ``import keras``.
    """
    global _installed
    _install_collections()
    _install_numpy()
    _install_h5py()
    _installed = True


def installed():
    """Whether ``install()`` has run in this interpreter."""
    return _installed


_USAGE = ('usage: python -m cntk.keras script.py [args ...]\n'
          '       python -m cntk.keras -m module [args ...]\n'
          'Runs a Keras 2.3.1 script (or module, e.g. pytest) on OpenCNTK: installs\n'
          'cntk.keras_compat and sets KERAS_BACKEND=cntk unless already set.')


def main(argv=None):
    """Runs a script or module, like ``python``, with the hook installed."""
    import runpy
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ('-h', '--help'):
        print(_USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    os.environ.setdefault('KERAS_BACKEND', 'cntk')
    # Python processes started from here (Keras' 'spawn' and 'forkserver' workers) install
    # the hook at startup too: keras/_startup/sitecustomize.py, first on their path.
    startup = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'keras', '_startup')
    path = os.environ.get('PYTHONPATH')
    if startup not in (path or '').split(os.pathsep):
        os.environ['PYTHONPATH'] = startup + (os.pathsep + path if path else '')
    install()
    if argv[0] == '-m':
        if len(argv) < 2:
            print(_USAGE, file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name='__main__', alter_sys=True)
    else:
        sys.argv = argv
        # The script's folder comes first on the path, as `python script.py` does.
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name='__main__')
    return 0
