"""ONNX's backend node tests (onnx.backend.test.BackendTest) over an OpenCNTK backend, counted
per ONNX op type.

    PYTHONPATH=python python3 tests/onnx_backend/run.py [--backend opencntk|cntk27]
        [--subset N] [--table docs/onnx.md] [--json out.json] [-k REGEX]

--backend opencntk: cntk.onnx_backend; cntk27: CNTK 2.7's adapter (onnx_cntk/backend.py in
../shared/cntk-tests, unchanged) over the same reader. The tests run in a worker process that
reports each outcome as it finishes, so a crash costs one case (counted as failed), not the run.
Only CPU cases run. The real-model tests (downloads) are not run.
"""

import argparse
import collections
import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED_TESTS = os.environ.get('CNTK_TESTS', os.path.join(os.path.dirname(ROOT), 'shared', 'cntk-tests'))
if not os.path.isdir(SHARED_TESTS):
    SHARED_TESTS = '/work/shared/cntk-tests'

KINDS = {
    'OnnxBackendNodeModelTest': 'node',
    'OnnxBackendSimpleModelTest': 'simple',
    'OnnxBackendPyTorchConvertedModelTest': 'pytorch-converted',
    'OnnxBackendPyTorchOperatorModelTest': 'pytorch-operator',
}
SECTION = '## ONNX backend node tests'
EXPECTED = os.path.join(HERE, 'expected_failures.txt')


def _backend_test(backend):
    warnings.simplefilter('ignore')
    import onnx.backend.test
    if backend == 'cntk27':
        sys.path.insert(0, SHARED_TESTS)
        from onnx_cntk.tests import onnx_backend_test as m  # builds CNTK 2.7's BackendTest
        return m.backend_test
    import cntk.onnx_backend
    return onnx.backend.test.BackendTest(cntk.onnx_backend, 'opencntk_onnx_backend')


def _cases(backend):
    """{test method id: (kind, case name)} of the CPU cases."""
    bt = _backend_test(backend)
    out = {}
    for cls_name, cls in bt.test_cases.items():
        kind = KINDS.get(cls_name)
        if kind is None:
            continue
        for m in sorted(dir(cls)):
            if m.startswith('test_') and m.endswith('_cpu'):
                out[cls_name + '.' + m] = (kind, m[len('test_'):-len('_cpu')])
    return bt, out


def _worker(backend, ids_file, out_file):
    """Runs the listed tests, appending one JSON line per outcome."""
    import unittest
    bt, _ = _cases(backend)
    ids = [l.strip() for l in open(ids_file) if l.strip()]
    with open(out_file, 'a') as out:
        for tid in ids:
            cls_name, meth = tid.split('.')
            out.write(json.dumps({'id': tid, 'status': 'started'}) + '\n')
            out.flush()
            result = unittest.TestResult()
            bt.test_cases[cls_name](meth).run(result)
            if result.errors or result.failures:
                status = 'fail'
                lines = (result.errors or result.failures)[0][1].strip().splitlines()
                msg = next((l for l in lines if re.match(r'^[\w.]*(Error|Exception)\b', l)), lines[-1])[:300]
            elif result.skipped:
                status, msg = 'skip', result.skipped[0][1][:300]
            else:
                status, msg = 'pass', ''
            out.write(json.dumps({'id': tid, 'status': status, 'msg': msg}) + '\n')
            out.flush()


# Element types the engine has no representation of (8-, 4- and 2-bit floats and integers,
# bfloat16, strings): cases over them are not counted against an op type OpenCNTK maps.
UNREPRESENTABLE = re.compile(r'FLOAT8|FLOAT4|E8M0|INT4|INT2|BFLOAT16|bfloat16|STRING|string')


def unrepresentable(name):
    return bool(UNREPRESENTABLE.search(name))


@functools.lru_cache(None)
def _op_types():
    """{case name: ONNX op type} of the node cases: the node's op type; an expanded case (the op's
    function body) counts for the op it expands; else the op type the name starts with."""
    import onnx.backend.test.loader as loader
    cases = {c.name[len('test_'):]: c for c in loader.load_model_tests(kind='node')}
    out = {}
    for name, c in cases.items():
        ops = [n.op_type for n in c.model.graph.node]
        if len(set(ops)) == 1:
            out[name] = ops[0]
    for name, c in cases.items():
        if name in out:
            continue
        base = re.sub(r'_expanded(_ver\d+)?$', '', name)
        if base != name and base in out:
            out[name] = out[base]
            continue
        flat = name.replace('_', '').lower()
        ops = sorted({n.op_type for n in c.model.graph.node}, key=len, reverse=True)
        out[name] = next((o for o in ops if flat.startswith(o.lower())), ops[-1] if ops else '?')
    return out


def _cntk_package_dir():
    """The folder holding the cntk package this interpreter imports (the installed one in CI, python/ in
    a developer tree), so that the worker runs the same build; python/ only where none is importable."""
    spec = importlib.util.find_spec('cntk')
    if spec is None or not spec.submodule_search_locations:
        return os.path.join(ROOT, 'python')
    return os.path.dirname(os.path.abspath(list(spec.submodule_search_locations)[0]))


def run(backend, pattern=None, subset=None, select=None):
    """{test id: (kind, case name, status, message)}; select(kind, case name) filters."""
    _, cases = _cases(backend)
    ids = sorted(t for t in cases
                 if (not pattern or re.search(pattern, t)) and (select is None or select(*cases[t])))
    if subset:
        ids = ids[::max(1, len(ids) // subset)][:subset]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:  # CNTK 2.7's adapter writes tmp_model.pb in the cwd
        out_file = os.path.join(tmp, 'results.jsonl')
        todo = list(ids)
        while todo:
            ids_file = os.path.join(tmp, 'ids.txt')
            with open(ids_file, 'w') as f:
                f.write('\n'.join(todo))
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [_cntk_package_dir(), SHARED_TESTS, os.environ.get('PYTHONPATH', '')]))
            subprocess.run([sys.executable, os.path.abspath(__file__), '--worker', backend, ids_file, out_file],
                           cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            started = None
            for line in open(out_file):
                r = json.loads(line)
                if r['status'] == 'started':
                    started = r['id']
                else:
                    results[r['id']] = (r['status'], r['msg'])
                    started = None if started == r['id'] else started
            if started and started not in results:
                results[started] = ('fail', 'the worker process died (crash)')
            todo = [t for t in todo if t not in results]
    return {t: cases[t] + results[t] for t in ids}


def table(results):
    ops = _op_types()
    per_op = collections.defaultdict(lambda: [0, 0])
    kinds = collections.defaultdict(lambda: [0, 0, 0])
    for kind, name, status, _ in results.values():
        k = kinds[kind]
        k[1] += 1
        k[0] += status == 'pass'
        k[2] += status == 'skip'
        if kind == 'node':
            p = per_op[ops.get(name, '?')]
            p[1] += 1
            p[0] += status == 'pass'
    return per_op, kinds


def read_expected(path=EXPECTED):
    """{case name: reason} of the node cases listed as failing ("test_case  # reason" per line)."""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            case, _, reason = line.partition('  # ')
            if not reason.strip():
                raise ValueError('%s:%d: every entry needs a reason ("test_case  # reason")' % (path, n))
            out[case.strip()] = reason.strip()
    return out


def check_expected(results, expected):
    """(failing cases not listed, listed cases that pass, listed cases that do not exist) of a
    node run over every CPU node case."""
    failing = {'test_' + name: msg for kind, name, status, msg in results.values() if status != 'pass'}
    names = {'test_' + name for kind, name, status, msg in results.values()}
    unlisted = sorted('%s: %s' % (c, m) for c, m in failing.items() if c not in expected)
    passing = sorted(c for c in expected if c in names and c not in failing)
    unknown = sorted(c for c in expected if c not in names)
    return unlisted, passing, unknown


def _reason(name, msg, mapped):
    op = _op_types().get(name, '?')
    if unrepresentable(name) or 'has no engine type' in msg:
        return 'an element type the engine has no representation of (float8/4, int4/2, bfloat16, string)'
    if op not in mapped and not name.endswith('expanded') and 'expanded_ver' not in name:
        return 'the reader has no rule for %s' % op
    m = re.match(r"^ValueError: ONNX import: node '[^']*' \((\w+)\): (.*)", msg)
    if m:  # "Op: error", naming the op once
        msg = m.group(2) if m.group(2).startswith(m.group(1) + ':') else '%s: %s' % m.groups()
    msg = re.sub(r'^ValueError: ONNX import: ', '', msg)
    if msg.startswith('AssertionError'):
        return 'values differ from ONNX\'s reference outputs'
    return msg[:160]


def write_expected(results, path=EXPECTED):
    """Rewrites the list from a run over every CPU node case: passing cases leave it, new
    failures join it with a reason drawn from their error (edit it to say more)."""
    old = read_expected(path) if os.path.exists(path) else {}
    header = [l for l in open(path)] if os.path.exists(path) else []
    header = ''.join(l for l in header[:next((i for i, l in enumerate(header) if l.strip() and not l.startswith('#')),
                                              len(header))])
    mapped = mapped_op_types()
    lines = []
    for kind, name, status, msg in sorted(results.values(), key=lambda r: r[1]):
        if status != 'pass':
            case = 'test_' + name
            lines.append('%s  # %s' % (case, old.get(case) or _reason(name, msg, mapped)))
    with open(path, 'w') as f:
        f.write(header + '\n'.join(lines) + '\n')


def mapped_op_types():
    """The ONNX op types OpenCNTK's reader has a rule for."""
    from cntk import cntk_py  # noqa: F401
    from cntk import _cntk
    return set(_cntk.onnx_import_op_types())


def markdown(per_op, kinds, kinds27):
    mapped = mapped_op_types()
    lines = [SECTION, '',
             'ONNX %s\'s backend test cases on the CPU (`make onnx-backend-tests`, runner in '
             '`tests/onnx_backend/run.py`): over `cntk.onnx_backend`, and over CNTK 2.7\'s adapter '
             '`onnx_cntk/tests/onnx_backend_test.py` unchanged (it feeds the inputs in the order of the '
             'function\'s arguments, returns only the first output, types only booleans and cannot '
             'bind shape inputs given as graph inputs, so it passes fewer). The goal is every node case: '
             'those that still fail are listed with their reasons in '
             '`tests/onnx_backend/expected_failures.txt`, which CI holds to the outcome '
             '(`tests/python/test_onnx_backend.py`: a failure outside the list or a listed case '
             'that passes fails it).' % _onnx_version(), '',
             '| Test kind | Pass (cntk.onnx_backend) | Pass (CNTK 2.7 adapter) | Cases |', '|---|---|---|---|']
    for kind in ('node', 'simple', 'pytorch-converted', 'pytorch-operator'):
        if kind not in kinds:
            continue
        p, n, _ = kinds[kind]
        p27 = kinds27.get(kind, [None])[0]
        lines.append('| %s | %d (%.1f%%) | %s | %d |' % (kind, p, 100.0 * p / max(n, 1),
                                                       '-' if p27 is None else '%d' % p27, n))
    lines += ['', 'Node cases per ONNX op type (**bold**: the reader has a rule for it):', '',
              '| Op type | Pass | Cases |', '|---|---|---|']
    for op in sorted(per_op):
        p, n = per_op[op]
        lines.append('| %s | %d | %d |' % ('**%s**' % op if op in mapped else op, p, n))
    return '\n'.join(lines) + '\n'


def _onnx_version():
    import onnx
    return onnx.__version__


def write_section(path, text):
    """Replaces (or appends) the final section of docs/onnx.md, keeping the others."""
    old = open(path).read() if os.path.exists(path) else ''
    i = old.find(SECTION)
    if i >= 0:
        j = old.find('\n## ', i + len(SECTION))
        new = old[:i] + text + (old[j + 1:] if j >= 0 else '')
    else:
        new = (old.rstrip('\n') + '\n\n' if old else '# ONNX\n\n') + text
    with open(path, 'w') as f:
        f.write(new)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--worker':
        _worker(*sys.argv[2:5])
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument('--backend', choices=['opencntk', 'cntk27', 'both'], default='both')
    ap.add_argument('-k', dest='pattern')
    ap.add_argument('--subset', type=int)
    ap.add_argument('--table')
    ap.add_argument('--json')
    ap.add_argument('--failures', action='store_true', help='print each failing case and its error')
    ap.add_argument('--update-expected', action='store_true',
                    help='rewrite expected_failures.txt from this run (needs every node case: no -k or --subset)')
    a = ap.parse_args()
    backends = ['opencntk', 'cntk27'] if a.backend == 'both' else [a.backend]
    all_results = {b: run(b, a.pattern, a.subset) for b in backends}
    summary = {}
    for b, res in all_results.items():
        per_op, kinds = table(res)
        summary[b] = (per_op, kinds)
        for kind, (p, n, s) in sorted(kinds.items()):
            print('%-8s %-18s %4d / %4d pass (%d skipped)' % (b, kind, p, n, s))
        if a.failures:
            for t, (kind, name, status, msg) in sorted(res.items()):
                if status == 'fail':
                    print('  FAIL %s: %s' % (t, msg))
    if a.update_expected:
        if a.subset or (a.pattern and a.pattern != 'NodeModel'):
            ap.error('--update-expected needs a run over every node case (-k NodeModel at most)')
        write_expected({t: r for t, r in all_results['opencntk'].items() if r[0] == 'node'})
    if a.json:
        with open(a.json, 'w') as f:
            json.dump({b: {t: list(v) for t, v in r.items()} for b, r in all_results.items()}, f, indent=0)
    if a.table:
        per_op, kinds = summary.get('opencntk', next(iter(summary.values())))
        kinds27 = summary['cntk27'][1] if 'cntk27' in summary else {}
        write_section(a.table, markdown(per_op, kinds, kinds27))
    return 0


if __name__ == '__main__':
    sys.exit(main())
