"""Startup module of the Python processes that a ``python -m cntk.keras`` run starts.

``python -m cntk.keras`` puts this folder first on PYTHONPATH, so every Python interpreter
started under it imports this module at startup (``site`` imports ``sitecustomize``) and
has cntk.keras_compat installed before anything imports Keras. That covers Keras' own
worker processes: its data loaders with ``use_multiprocessing=True`` under the 'spawn'
and 'forkserver' start methods re-import Keras in fresh interpreters, which the hook
installed in the parent does not reach. A ``sitecustomize`` further along the path, which
this one hides, still runs.
"""
import importlib.machinery
import importlib.util
import os
import sys


def _run_hidden_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec('sitecustomize', rest)
    if spec is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules['sitecustomize'] = module
    spec.loader.exec_module(module)


def _install_hook():
    try:
        from cntk import keras_compat
    except ModuleNotFoundError as e:
        if e.name != 'cntk':
            raise
        return  # an interpreter that has no OpenCNTK: nothing of Keras to adapt
    keras_compat.install()


_run_hidden_sitecustomize()
_install_hook()
