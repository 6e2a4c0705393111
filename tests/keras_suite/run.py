#!/usr/bin/env python3
"""Runs Keras 2.3.1's own tests with KERAS_BACKEND=cntk on OpenCNTK.

The tests come from Keras' source distribution on PyPI (the wheel has none):
`pip download keras==2.3.1 --no-binary :all: --no-deps`, cached under
$OPENCNTK_KERAS_CACHE (default ~/.cache/opencntk/keras-2.3.1). Only its tests/ folder
is unpacked, so `import keras` finds the installed Keras 2.3.1, unmodified. The
tests run under `python -m cntk.keras -m pytest` (cntk.keras_compat's hook).

    python3 tests/keras_suite/run.py                       # backend tests, checked
    python3 tests/keras_suite/run.py --all --table out.md  # whole suite, per-module table

With no paths the backend tests run and every failure must be listed in
expected_failures.txt (a listed test that passes fails the run too).
"""
import argparse
import collections
import os
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = '2.3.1'
BACKEND_TESTS = 'tests/keras/backend/backend_test.py'
# tests/test_api.py needs pyux, a tool of Keras' own CI; tests/docs checks Keras' documentation.
ALL_TESTS = ['tests/keras', 'tests/integration_tests'] + [
    'tests/test_%s.py' % n for n in ('dynamic_trainability', 'loss_masking', 'loss_weighting',
                                     'model_pickling', 'model_saving', 'multiprocessing')]
FASHION_MNIST = '/usr/share/datasets/fashion-mnist'


def cache_dir():
    return os.environ.get('OPENCNTK_KERAS_CACHE',
                          os.path.join(os.path.expanduser('~'), '.cache', 'opencntk', 'keras-' + VERSION))


def fetch_tests():
    """The unpacked tests of Keras' source distribution (downloaded once)."""
    root = cache_dir()
    unpacked = os.path.join(root, 'Keras-' + VERSION)
    if os.path.isdir(os.path.join(unpacked, 'tests')):
        return unpacked
    os.makedirs(root, exist_ok=True)
    archive = os.path.join(root, 'Keras-%s.tar.gz' % VERSION)
    if not os.path.exists(archive):
        subprocess.run([sys.executable, '-m', 'pip', 'download', '-q', '--disable-pip-version-check',
                        '--no-binary', ':all:', '--no-deps', '-d', root, 'keras==' + VERSION], check=True)
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith('Keras-%s/tests/' % VERSION)]
        tmp = tempfile.mkdtemp(dir=root)
        try:
            tar.extractall(tmp, members=members, filter='data')
        except TypeError:  # Pythons before the extraction filters (3.11.4)
            tar.extractall(tmp, members=members)
    os.replace(os.path.join(tmp, 'Keras-' + VERSION), unpacked)
    os.rmdir(tmp)
    return unpacked


def keras_home(base):
    """A KERAS_HOME whose dataset cache holds Debian's Fashion-MNIST (Keras' loader
    takes cached files without a hash check). It is the .keras of a HOME of its own, the
    folder Keras falls back to where KERAS_HOME is unset (one of its tests unsets it)."""
    home = os.path.join(base, 'home', '.keras')
    data = os.path.join(home, 'datasets', 'fashion-mnist')
    os.makedirs(data, exist_ok=True)
    if os.path.isdir(FASHION_MNIST):
        for f in os.listdir(FASHION_MNIST):
            link = os.path.join(data, f)
            if not os.path.exists(link):
                os.symlink(os.path.join(FASHION_MNIST, f), link)
    return home


def run(paths, timeout=300, extra=()):
    """Runs Keras' tests; returns {test id: outcome} with outcome in passed, failed,
    error, skipped."""
    src = fetch_tests()
    work = tempfile.mkdtemp(prefix='keras-tests-')
    xml = os.path.join(work, 'results.xml')
    home = keras_home(work)
    env = dict(os.environ, KERAS_BACKEND='cntk', KERAS_HOME=home, HOME=os.path.dirname(home))
    # Spinning OpenMP workers stall on a machine shared with other jobs.
    env.setdefault('OMP_WAIT_POLICY', 'passive')
    # Warnings are off for the run (Keras 2.3.1 on today's libraries is verbose), the way
    # Keras' tests expect to be told: they skip their checks of Keras' own warnings then.
    env['PYTHONWARNINGS'] = 'ignore'
    # The tests run from Keras' tree: a relative PYTHONPATH (PYTHONPATH=python) must still find
    # cntk; exit_plugin (here) ends pytest's process once the results are written, and
    # warns_plugin gives Keras' tests pytest.warns(None), which pytest 8 removed.
    paths_env = [HERE] + [os.path.abspath(p) for p in env.get('PYTHONPATH', '').split(os.pathsep) if p]
    env['PYTHONPATH'] = os.pathsep.join(paths_env)
    cmd = [sys.executable, '-m', 'cntk.keras', '-m', 'pytest', '-q', '--tb=short', '-p', 'no:cacheprovider',
           '-o', 'addopts=', '-p', 'exit_plugin', '-p', 'warns_plugin', '--timeout', str(timeout),
           '--continue-on-collection-errors',
           '--junitxml', xml] + list(extra) + list(paths)
    proc = subprocess.run(cmd, cwd=src, env=env)
    if not os.path.exists(xml):
        raise RuntimeError("Keras' tests did not run (pytest exit status %d)" % proc.returncode)
    return parse_junit(xml, src)


def parse_junit(xml, src):
    """{pytest test id: outcome} from pytest's JUnit XML (whose classnames join the
    test file's path and its test class with dots)."""
    results = collections.OrderedDict()
    for case in ET.parse(xml).getroot().iter('testcase'):
        if not case.get('classname'):  # a module that failed to import: its dotted name
            results[case.get('name').replace('.', '/') + '.py'] = 'error'
            continue
        parts = case.get('classname').split('.')
        k = len(parts)
        while k > 0 and not os.path.isfile(os.path.join(src, *parts[:k]) + '.py'):
            k -= 1
        path = '/'.join(parts[:k]) + '.py' if k else '/'.join(parts)
        test_id = '::'.join([path] + parts[k:] + [case.get('name')])
        tags = {child.tag for child in case}
        outcome = ('failed' if 'failure' in tags else 'error' if 'error' in tags
                   else 'skipped' if 'skipped' in tags else 'passed')
        results[test_id] = outcome
    return results


def table(results):
    per = collections.OrderedDict()
    for test_id, outcome in results.items():
        per.setdefault(test_id.split('::')[0], collections.Counter())[outcome] += 1
    lines = ['| module | collected | passed | failed | errors | skipped |', '| --- | ---: | ---: | ---: | ---: | ---: |']
    total = collections.Counter()
    for module, c in sorted(per.items()):
        n = sum(c.values())
        total.update(c)
        lines.append('| %s | %d | %d | %d | %d | %d |' % (module, n, c['passed'], c['failed'], c['error'], c['skipped']))
    n = sum(total.values())
    lines.append('| **all** | %d | %d | %d | %d | %d |' % (n, total['passed'], total['failed'], total['error'],
                                                             total['skipped']))
    return '\n'.join(lines) + '\n', total


def expected_failures():
    out = {}
    with open(os.path.join(HERE, 'expected_failures.txt')) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith('#'):
                test_id, _, reason = line.partition('#')
                out[test_id.strip()] = reason.strip()
    return out


def check_backend(results):
    """Problems with the backend tests' results: unlisted failures, listed passes."""
    expected = expected_failures()
    bad = [t for t, o in results.items() if o in ('failed', 'error') and t not in expected]
    fixed = [t for t in expected if results.get(t) == 'passed']
    problems = ['unexpected failure: ' + t for t in bad] + ['listed but passes: ' + t for t in fixed]
    ran = [o for o in results.values() if o != 'skipped']
    if not ran:
        problems.append('no test ran')
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('paths', nargs='*', help="Keras test paths, relative to its source tree (tests/...)")
    ap.add_argument('--all', action='store_true', help='the whole suite')
    ap.add_argument('--table', help='write the per-module table (Markdown) to this file')
    ap.add_argument('--timeout', type=int, default=300, help='seconds per test')
    args = ap.parse_args()
    paths = ALL_TESTS if args.all else (args.paths or [BACKEND_TESTS])
    results = run(paths, args.timeout)
    text, total = table(results)
    print(text)
    if args.table:
        with open(args.table, 'w') as f:
            f.write(text)
    if not args.all and not args.paths:
        problems = check_backend(results)
        for p in problems:
            print(p)
        return 1 if problems else 0
    return 0


if __name__ == '__main__':
    sys.exit(main())
