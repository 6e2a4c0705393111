#!/usr/bin/env python3
"""Runs CNTK 2.7's own Python test suite (../shared/cntk-tests, unmodified) against the
`cntk` package that PYTHON imports, and compares the outcome with expected_failures.txt.

    python3 tests/compat/check.py [--python PYTHON] [--shared DIR] [-- pytest paths...]

Every test that fails or errors must be listed in expected_failures.txt (one line per
test: `test id  # reason`); a listed test that passes fails the check too (the list only
shrinks), except for entries whose reason starts with "flaky:" (a test whose outcome
varies between runs for a reason the entry states): those may pass or fail. A run that dies (segfault, abort) writes no report and fails the check. With
paths given, only listed tests inside those paths are checked. The counts per module go
to build/compat-last-run.json (read by `--table`, which prints the README's table).
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EXPECTED = os.path.join(HERE, 'expected_failures.txt')


def read_expected(path=EXPECTED):
    """{test id: reason} from the list; blank lines and lines starting with # are skipped."""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            test, _, reason = line.partition('  # ')
            if not reason.strip():
                sys.exit('%s:%d: every entry needs a reason ("TEST  # reason")' % (path, n))
            out[test.strip()] = reason.strip()
    return out


def test_id(case):
    """The pytest node id of a JUnit <testcase>: path::Class::name (path relative to the package root)."""
    classname, name = case.get('classname', ''), case.get('name', '')
    if not classname:  # a module that failed to import: pytest names the module only
        return name.replace('.', '/') + '.py'
    parts = classname.split('.')
    # classname is "cntk.ops.tests.linear_test" or "cntk.ops.tests.linear_test.SomeTest"
    module_parts = parts
    cls = None
    if parts and parts[-1][:1].isupper() and parts[-1].endswith('Test'):
        module_parts, cls = parts[:-1], parts[-1]
    path = '/'.join(module_parts) + '.py'
    return '::'.join([path] + ([cls] if cls else []) + [name])


def outcomes(junit_xml):
    """{test id: 'passed' | 'failed' | 'error' | 'skipped'} from pytest's JUnit report."""
    result = {}
    for case in ET.parse(junit_xml).getroot().iter('testcase'):
        kinds = [child.tag for child in case]
        if 'error' in kinds:
            outcome = 'error'
        elif 'failure' in kinds:
            outcome = 'failed'
        elif 'skipped' in kinds:
            outcome = 'skipped'
        else:
            outcome = 'passed'
        tid = test_id(case)
        # A test that passed and then errored in teardown counts as an error.
        if result.get(tid) in ('error', 'failed'):
            continue
        result[tid] = outcome
    return result


def module_of(tid):
    return tid.split('::')[0]


def table(results, expected):
    """Markdown table of counts per module (ONNX modules apart)."""
    per = collections.OrderedDict()
    for tid in sorted(results):
        c = per.setdefault(module_of(tid), collections.Counter())
        c[results[tid]] += 1
    lines = ['| module | passed | failed (listed) | skipped |', '| --- | ---: | ---: | ---: |']
    tot = collections.Counter()
    tot_onnx = collections.Counter()
    for mod, c in per.items():
        bad = c['failed'] + c['error']
        lines.append('| %s | %d | %d | %d |' % (mod, c['passed'], bad, c['skipped']))
        (tot_onnx if '/onnx_' in mod else tot).update(c)
    for label, c in (('all but ONNX', tot), ('ONNX modules', tot_onnx)):
        run = c['passed'] + c['failed'] + c['error']
        pct = 100.0 * c['passed'] / run if run else 0.0
        lines.append('| **%s** | **%d** | **%d** | **%d** |' % (label, c['passed'], c['failed'] + c['error'],
                                                                c['skipped']))
        lines.append('')
        lines.append('%s: %d of %d run tests pass (%.1f%%).' % (label, c['passed'], run, pct))
        lines.append('')
    return '\n'.join(lines)


def mpi_environment(tmp, shared, python):
    """The environment for CNTK's distributed tests, which start `mpiexec ... python script.py`
    themselves: `python` is the interpreter under test, Open MPI may run as root and more ranks
    than cores (CI runs 4 ranks on 2 cores), and the workers, plain interpreters outside pytest,
    get the harness's NumPy aliases through a usercustomize module in a user site of their own
    (run.sh sets PYTHONPATH itself)."""
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_rmaps_base_oversubscribe='1')
    bindir = os.path.join(tmp, 'bin')
    os.makedirs(bindir, exist_ok=True)
    os.symlink(os.path.abspath(python) if os.sep in python else shutil.which(python), os.path.join(bindir, 'python'))
    env['PATH'] = bindir + os.pathsep + env.get('PATH', '')
    base = os.path.join(tmp, 'userbase')
    version = subprocess.run([python, '-c', 'import sys; print("%d.%d" % sys.version_info[:2])'],
                             stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
    site = os.path.join(base, 'lib', 'python' + version, 'site-packages')
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, 'usercustomize.py'), 'w') as f:
        f.write("import sys\n"
                "sys.path.append(%r)\n"
                "import cntk_tests_numpy  # noqa: F401\n" % os.path.join(shared, 'cntk-tests', 'harness'))
    env['PYTHONUSERBASE'] = base
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable)
    ap.add_argument('--shared', default=os.path.join(os.path.dirname(REPO), 'shared'))
    ap.add_argument('--table', action='store_true', help='print the table of the last run and exit')
    ap.add_argument('--timeout', default='600', help='per-test timeout in seconds (pytest-timeout)')
    ap.add_argument('paths', nargs='*', help='test paths relative to the package root (default: all)')
    args = ap.parse_args()
    last = os.path.join(REPO, 'build', 'compat-last-run.json')
    os.makedirs(os.path.dirname(last), exist_ok=True)
    expected = read_expected()
    if args.table:
        with open(last) as f:
            print(table(json.load(f), expected))
        return 0
    run_sh = os.path.join(args.shared, 'cntk-tests', 'run.sh')
    if not os.path.exists(run_sh):
        sys.exit('CNTK\'s test suite is not at %s (pass --shared)' % run_sh)
    with tempfile.TemporaryDirectory() as tmp:
        junit = os.path.join(tmp, 'junit.xml')
        # -p no:flaky: the `flaky` plugin (present in some environments, unused by CNTK's tests)
        # keeps each failed test's call info, and with it the test's frames and native objects,
        # in a module-level dict until the interpreter ends: the extension's leak check at exit
        # then reports them (one report per expected failure's locals). -p no:hypothesispytest:
        # the same for every test module's objects once PyTorch is loaded (pyproject.toml says why).
        # --assert=plain: CNTK's pytest.ini (python_files = *.py) makes pytest's assertion rewriting
        # take every module imported during the run, the package's included; each keeps the rewriting
        # import hook as its loader, the hook keeps the configuration and, through it, the session
        # and every collected item with its parameters, and that cycle outlives the module teardown
        # at exit (the interpreter collects no garbage after it): the leak check reported the Axis
        # objects of CNTK's parametrize lists. Plain asserts pass and fail alike, with shorter messages.
        cmd = ['bash', run_sh, args.python, '-q', '-p', 'no:randomly', '-p', 'no:flaky', '-p', 'no:hypothesispytest',
               '--assert=plain', '--timeout=' + args.timeout,
               '--continue-on-collection-errors', '-o', 'junit_family=xunit1', '--junitxml=' + junit]
        if args.paths:
            cmd += ['--'] + args.paths
        print('+', ' '.join(cmd), flush=True)
        rc = subprocess.call(cmd, cwd=REPO, env=mpi_environment(tmp, args.shared, args.python))
        if not os.path.exists(junit):
            print('CNTK test run died without a report (exit code %d): a crash' % rc)
            return 1
        results = outcomes(junit)
    if rc not in (0, 1):
        print('pytest exited with %d (interrupted, internal error or crash)' % rc)
        return 1
    if not args.paths:
        with open(last, 'w') as f:
            json.dump(results, f, indent=0, sort_keys=True)
    in_scope = (lambda t: True) if not args.paths else \
        (lambda t: any(t.startswith(p.rstrip('/')) for p in args.paths))
    bad = sorted(t for t, o in results.items() if o in ('failed', 'error') and t not in expected)
    fixed = sorted(t for t in expected if in_scope(t) and results.get(t) == 'passed'
                   and not expected[t].startswith('flaky:'))
    missing = sorted(t for t in expected if in_scope(t) and t not in results and not args.paths)
    print(table(results, expected))
    for t in bad:
        print('UNEXPECTED FAILURE: %s (%s)' % (t, results[t]))
    for t in fixed:
        print('NOW PASSES (remove it from expected_failures.txt): %s' % t)
    for t in missing:
        print('LISTED BUT NOT RUN (remove or rename it): %s' % t)
    n_pass = sum(1 for o in results.values() if o == 'passed')
    n_fail = sum(1 for o in results.values() if o in ('failed', 'error'))
    ok = not bad and not fixed and not missing
    print('cntk-tests: %d passed, %d failed (%d listed as expected)' % (n_pass, n_fail, n_fail - len(bad)))
    print('compat check: ' + ('OK' if ok else 'FAILED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
