"""Leak warnings stay on (nanobind reports every native object still alive when the extension
is torn down) and a run ends without a report. Module-level Python objects live in reference
cycles (a function and its module's globals, a class and its methods) that only the garbage
collector frees; when another extension (PyTorch) changes the interpreter's teardown order,
native objects they hold are still alive at the extension's check and reported as leaks. So
the package keeps no native objects in signature defaults or in the closures of its type
classes (cntk.layers.typing).

Test modules hold native objects too (parametrize lists of Axis objects). Hypothesis' pytest
plugin, when installed, imports Hypothesis at the end of a run, and in a process that has also
imported PyTorch the test modules then outlive the interpreter's finalization: every such object
was reported. The project's pytest configuration (pyproject.toml) turns that plugin off."""
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


MODULE_WITH_AXES = """
import pytest
import cntk as C
AXES = [C.Axis(0), C.Axis(1), C.Axis.default_batch_axis()]
@pytest.mark.parametrize('axis', AXES)
def test_axis(axis):
    assert axis is not None
"""


def test_test_modules_holding_native_objects_end_without_leak_reports(tmp_path):
    # A test file whose module holds native objects in a parametrize list, run under the
    # project's pytest configuration in a process that imported PyTorch first.
    (tmp_path / 'test_axes.py').write_text(MODULE_WITH_AXES)
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(cntk.__file__)))
    config = os.path.join(os.path.dirname(os.path.dirname(HERE)), 'pyproject.toml')
    prog = ('import importlib.util, sys, pytest\n'
            'if importlib.util.find_spec("torch"): import torch\n'
            'sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-c", %r, "--rootdir", %r, %r]))\n'
            % (config, str(tmp_path), str(tmp_path / 'test_axes.py')))
    r = subprocess.run([sys.executable, '-c', prog], cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=pkg),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert '3 passed' in r.stdout, r.stdout[-2000:]
    assert 'leaked' not in r.stderr, r.stderr[-3000:]


SCRIPT_WITH_USER_FUNCTION = """
import numpy as np
import cntk as C


class Twice(C.ops.functions.UserFunction):
    def __init__(self, x, name='twice'):
        super(Twice, self).__init__([x], name=name)

    def infer_outputs(self):
        return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]

    def forward(self, argument, device=None, outputs_to_retain=None):
        return None, 2 * argument

    def backward(self, state, root_gradients):
        return 2 * root_gradients


x = C.input_variable(3)
model = Twice(x)  # held by this module, whose globals the class's methods refer to
print(model.eval({x: np.ones((1, 3), np.float32)}).tolist())
"""


def test_a_module_holding_a_function_of_its_own_user_function_ends_without_leak_reports():
    # The engine holds the instance (a reference the garbage collector cannot see); the
    # instance's class refers to the module's globals, which hold the Function: a cycle that
    # the package breaks at exit.
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(cntk.__file__)))
    r = subprocess.run([sys.executable, '-c', SCRIPT_WITH_USER_FUNCTION], env=dict(os.environ, PYTHONPATH=pkg),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == '[[2.0, 2.0, 2.0]]', r.stdout
    assert 'leaked' not in r.stderr, r.stderr[-3000:]
