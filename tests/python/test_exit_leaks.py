"""Leak warnings stay on (nanobind reports every native object still alive when the extension
is torn down) and a run ends without a report. Module-level Python objects live in reference
cycles (a function and its module's globals, a class and its methods) that only the garbage
collector frees; when another extension (PyTorch) changes the interpreter's teardown order,
native objects they hold are still alive at the extension's check and reported as leaks. So
the package keeps no native objects in signature defaults or in the closures of its type
classes (cntk.layers.typing)."""
import importlib
import inspect
import os
import pkgutil
import subprocess
import sys

import cntk

HERE = os.path.dirname(os.path.abspath(__file__))


def _native(v):
    return type(v).__module__.startswith('cntk._cntk')


def _holds_native(v, depth=0):
    if _native(v):
        return True
    if depth < 3 and isinstance(v, (list, tuple, set, frozenset)):
        return any(_holds_native(x, depth + 1) for x in v)
    if depth < 3 and isinstance(v, dict):
        return any(_holds_native(x, depth + 1) for x in v.values())
    return False


def _functions(mod):
    for name, v in vars(mod).items():
        if inspect.isfunction(v):
            yield '%s.%s' % (mod.__name__, name), v
        elif inspect.isclass(v) and v.__module__ == mod.__name__:
            for m, f in vars(v).items():
                f = getattr(f, '__func__', f)
                if inspect.isfunction(f):
                    yield '%s.%s.%s' % (mod.__name__, name, m), f
            for m, f in vars(type(v)).items():  # metaclass methods (typing's Tensor[...])
                if inspect.isfunction(f):
                    yield '%s.%s(meta).%s' % (mod.__name__, name, m), f


def test_no_native_objects_in_defaults_or_closures():
    offenders = []
    for info in pkgutil.walk_packages(cntk.__path__, 'cntk.'):
        if '.tests' in info.name or info.name.startswith('cntk.contrib') or 'keras' in info.name:
            continue
        try:
            mod = importlib.import_module(info.name)
        except Exception:  # optional dependencies of some modules
            continue
        for qual, f in _functions(mod):
            held = list(f.__defaults__ or ()) + list((f.__kwdefaults__ or {}).values())
            held += [c.cell_contents for c in (f.__closure__ or ()) if _cell_set(c)]
            if any(_holds_native(v) for v in held):
                offenders.append(qual)
    assert not offenders, offenders


def _cell_set(c):
    try:
        c.cell_contents
        return True
    except ValueError:
        return False


def test_a_pytest_run_with_torch_ends_without_leak_reports():
    # The reproduction: PyTorch imported before the package, then a test file of ours.
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(cntk.__file__)))
    prog = ('import importlib.util, sys, pytest\n'
            'if importlib.util.find_spec("torch"): import torch\n'
            'sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly",'
            ' "python/test_ops_elementwise.py", "-k", "negate or sigmoid"]))\n')
    env = dict(os.environ, PYTHONPATH=pkg)
    r = subprocess.run([sys.executable, '-c', prog], cwd=os.path.dirname(HERE), env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert 'leaked' not in r.stderr, r.stderr[-3000:]
