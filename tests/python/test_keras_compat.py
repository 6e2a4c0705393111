"""cntk.keras_compat: the opt-in hook that lets Keras 2.3.1 import and save models
on Python 3.10+, h5py 3 and NumPy 2 without changes to Keras' files."""
import collections
import os
import subprocess
import sys

import numpy as np
import pytest

import cntk.keras_compat as compat

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(compat.__file__)))


def _run(args, **env):
    full_env = dict(os.environ, PYTHONPATH=PYTHON_DIR, **env)
    return subprocess.run([sys.executable] + args, capture_output=True, text=True,
                          env=full_env, timeout=120)


def test_import_cntk_does_not_install_the_hook():
    out = _run(['-c', 'import cntk, collections, cntk.keras_compat as k; '
                      'print(hasattr(collections, "Iterable"), k.installed())'])
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ['False', 'False']


def test_install_supplies_collections_abcs():
    compat.install()
    assert compat.installed()
    for name in ('Iterable', 'Mapping', 'Sequence', 'Container', 'Callable',
                 'MutableMapping', 'Hashable'):
        assert getattr(collections, name) is getattr(collections.abc, name)
    assert isinstance([], collections.Container)
    assert np.string_ is np.bytes_ and np.int is int


def test_h5py_attributes_and_file_mode_as_h5py2(tmp_path):
    h5py = pytest.importorskip('h5py')
    compat.install()
    compat.install()  # idempotent: the attribute reader is wrapped once
    path = str(tmp_path / 'a.h5')
    with h5py.File(path, 'w') as f:
        f.attrs['config'] = '{"a": 1}'.encode('utf8')
        f.attrs['names'] = [n.encode('utf8') for n in ('dense_1', 'dense_2')]
        f.attrs['fixed'] = np.array([b'w1', b'w22'])
        f.attrs['text'] = 'kept as str'
        f.attrs['texts'] = ['a', 'b']
    with h5py.File(path, 'r') as f:
        assert f.attrs['config'] == b'{"a": 1}'
        assert f.attrs['config'].decode('utf8') == '{"a": 1}'
        assert list(f.attrs['names']) == [b'dense_1', b'dense_2']
        assert f.attrs['names'].tolist() == [b'dense_1', b'dense_2']
        assert [n.decode('utf8') for n in f.attrs['fixed']] == ['w1', 'w22']
        assert f.attrs['text'] == 'kept as str' and list(f.attrs['texts']) == ['a', 'b']
    # no mode: h5py 2 opened (and created) the file read-write
    with h5py.File(str(tmp_path / 'new.h5')) as f:
        f.attrs['x'] = 1
    with h5py.File('in-memory', driver='core', backing_store=False) as f:
        f.create_dataset('d', data=np.arange(3))
        assert len(f.fid.get_file_image()) > 0


def test_module_runs_a_script_with_the_hook_and_cntk_backend(tmp_path):
    script = tmp_path / 'script.py'
    script.write_text('import os, sys, collections\n'
                      'from collections import Iterable, Mapping\n'
                      'print(os.environ["KERAS_BACKEND"], sys.argv[1:], __name__)\n')
    env = {k: v for k, v in os.environ.items() if k != 'KERAS_BACKEND'}
    out = subprocess.run([sys.executable, '-m', 'cntk.keras', str(script), 'x', '--y'],
                         capture_output=True, text=True, timeout=120,
                         env=dict(env, PYTHONPATH=PYTHON_DIR))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "cntk ['x', '--y'] __main__"


def test_module_runs_a_module_and_keeps_a_chosen_backend(tmp_path):
    (tmp_path / 'kmod.py').write_text('import os, sys\n'
                                      'print(os.environ["KERAS_BACKEND"], sys.argv[1:], __name__)\n')
    out = subprocess.run([sys.executable, '-m', 'cntk.keras', '-m', 'kmod', '-q'],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, KERAS_BACKEND='numpy',
                                  PYTHONPATH=PYTHON_DIR + os.pathsep + str(tmp_path)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "numpy ['-q'] __main__"


def test_module_without_arguments_prints_usage():
    out = _run(['-m', 'cntk.keras'])
    assert out.returncode == 2 and 'usage' in out.stderr


def test_module_installs_the_hook_in_spawned_processes(tmp_path):
    # Keras' data loaders with use_multiprocessing=True re-import Keras in fresh
    # interpreters under 'spawn'; those must get the hook, and a sitecustomize that was
    # on the path before must still run in them.
    (tmp_path / 'site').mkdir()
    (tmp_path / 'site' / 'sitecustomize.py').write_text('import os\nos.environ["EARLIER_SITE"] = "ran"\n')
    (tmp_path / 'worker.py').write_text(
        'import os\n'
        'def probe(_):\n'
        '    from collections import Iterable\n'
        '    import cntk.keras_compat as k\n'
        '    return Iterable.__name__, k.installed(), os.environ.get("EARLIER_SITE")\n')
    script = tmp_path / 'script.py'
    script.write_text('import multiprocessing as mp\n'
                      'import worker\n'
                      'if __name__ == "__main__":\n'
                      '    for method in ("spawn", "forkserver"):\n'
                      '        with mp.get_context(method).Pool(1) as pool:\n'
                      '            print(method, *pool.map(worker.probe, [0])[0])\n')
    out = subprocess.run([sys.executable, '-m', 'cntk.keras', str(script)],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                             [PYTHON_DIR, str(tmp_path / 'site'), str(tmp_path)])))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split('\n')[:2] == ['spawn Iterable True ran', 'forkserver Iterable True ran']
