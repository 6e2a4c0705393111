"""oneDNN 2.6.3 (Debian's, which OpenCNTK links) against oneDNN 3.x (PyPI's GNU-OpenMP build), primitive by
primitive, on this machine: the convolutions, LSTMs and products the suite's workloads spend their time in.

    python3 bench/onednn_versions.py                 # writes bench/results/<date>-onednn-versions.{json,md}
    python3 bench/onednn_versions.py --quick         # one short round; writes nothing

It downloads onednn-cpu-gomp and onednn-devel-cpu-gomp (--wheel-version, 2023.2.0 = oneDNN 3.2) into
build/onednn-<version>, builds bench/cpp/onednn_primitives.cpp against each library, and runs the two programs
alternately (--rounds each), pinned to 2 CPUs with 2 OpenMP threads and OMP_WAIT_POLICY=active, as the suite's
workers run. A case's time is the median over the rounds of each program's own median of 5 batches.
"""
import argparse
import datetime
import glob
import json
import os
import statistics
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SOURCE = os.path.join(HERE, 'cpp', 'onednn_primitives.cpp')
sys.path.insert(0, HERE)
import run as bench_run  # noqa: E402  (THREADS, cpu_model)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--wheel-version', default='2023.2.0', help='onednn-cpu-gomp version (2023.2.0 is oneDNN 3.2)')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--scale', type=float, default=1.0, help='about this many GFLOP per timed batch')
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--out', default=os.path.join(HERE, 'results'))
    return ap.parse_args()


def fetch_onednn(version):
    """(include dir, lib dir) of the PyPI wheels, downloaded and unpacked once into build/onednn-<version>."""
    dest = os.path.join(ROOT, 'build', 'onednn-' + version)
    inc = os.path.join(dest, 'onednn_devel_cpu_gomp-%s.data' % version, 'data', 'include')
    lib = os.path.join(dest, 'onednn_cpu_gomp-%s.data' % version, 'data', 'lib')
    if not (os.path.isdir(inc) and os.path.isdir(lib)):
        os.makedirs(dest, exist_ok=True)
        for pkg in ('onednn-cpu-gomp', 'onednn-devel-cpu-gomp'):
            subprocess.run([sys.executable, '-m', 'pip', 'download', '-q', '--no-deps', '-d', dest,
                            '%s==%s' % (pkg, version)], check=True)
        for whl in glob.glob(os.path.join(dest, '*.whl')):
            with zipfile.ZipFile(whl) as z:
                z.extractall(dest)
    return inc, lib


def build(out, include=None, lib=None):
    cmd = ['g++', '-O2', '-std=c++17', SOURCE, '-o', out]
    if include:
        cmd += ['-I' + include, '-L' + lib, '-l:libdnnl.so.3', '-Wl,-rpath,' + lib]
    else:
        cmd += ['-ldnnl']  # the system's oneDNN, as OpenCNTK's build finds it
    subprocess.run(cmd, check=True)
    return out


def run(exe, scale):
    env = dict(os.environ, OMP_NUM_THREADS=str(bench_run.THREADS), OMP_WAIT_POLICY='active')
    cpus = ','.join(str(c) for c in sorted(os.sched_getaffinity(0))[:bench_run.THREADS])  # as run.pin_threads
    text = subprocess.run(['taskset', '-c', cpus, exe, str(scale)], env=env, check=True, capture_output=True,
                          text=True).stdout
    lines = text.split('\n')
    version = lines[0].split()[1]
    times = {}
    for line in lines[1:]:
        if line.strip():
            kind, case, ms = line.split()
            times[kind + ' ' + case] = float(ms)
    return version, times


def main():
    args = parse_args()
    rounds, scale = (1, 0.2) if args.quick else (args.rounds, args.scale)
    inc, lib = fetch_onednn(args.wheel_version)
    bindir = os.path.join(ROOT, 'build', 'onednn-' + args.wheel_version)
    exes = {'system': build(os.path.join(bindir, 'primitives-system')),
            'wheel': build(os.path.join(bindir, 'primitives-wheel'), inc, lib)}
    samples = {k: [] for k in exes}
    versions = {}
    for r in range(rounds):
        for k in (exes if r % 2 == 0 else reversed(list(exes))):
            versions[k], times = run(exes[k], scale)
            samples[k].append(times)
    cases = list(samples['system'][0])
    rows = []
    for case in cases:
        a = statistics.median(s[case] for s in samples['system'])
        b = statistics.median(s[case] for s in samples['wheel'])
        kind, name = case.split(' ', 1)
        rows.append({'kind': kind, 'case': name, 'old_ms': a, 'new_ms': b, 'ratio': b / a})
    cpu = bench_run.cpu_model()
    report = {'date': datetime.date.today().isoformat(), 'cpu': cpu, 'old': versions['system'],
              'new': versions['wheel'], 'wheel': 'onednn-cpu-gomp ' + args.wheel_version, 'rounds': rounds,
              'scale_gflop': scale, 'rows': rows}
    md = ['# oneDNN %s against %s, primitive by primitive (%s)' % (report['new'], report['old'], report['date']), '',
          '- CPU: %s; pinned to 2 CPUs, 2 OpenMP threads, OMP_WAIT_POLICY=active' % cpu,
          '- %s: Debian\'s libdnnl (OpenCNTK links it); %s: PyPI %s' % (report['old'], report['new'],
                                                                        report['wheel']),
          '- method: `bench/cpp/onednn_primitives.cpp` built against each; every memory in the layout the primitive '
          'picks (format_tag::any), no reorder timed; per case the median of 5 batches of calls (about %g GFLOP '
          'each), then the median over %d alternating runs' % (scale, rounds), '',
          '| primitive | case | %s (ms) | %s (ms) | %s / %s |' % (report['old'], report['new'], report['new'],
                                                                report['old']),
          '| --- | --- | ---: | ---: | ---: |']
    for r in rows:
        md.append('| %s | %s | %.3f | %.3f | %.2f |' % (r['kind'], r['case'], r['old_ms'], r['new_ms'], r['ratio']))
    by_kind = {}
    for r in rows:
        by_kind.setdefault(r['kind'].split('_')[0], []).append(r['ratio'])
    md += ['', 'Geometric mean of %s / %s per kind: %s.' % (
        report['new'], report['old'], ', '.join('%s %.2f' % (k, statistics.geometric_mean(v))
                                                 for k, v in by_kind.items()))]
    print('\n'.join(md))
    if args.quick:
        return
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, '%s-onednn-versions' % report['date'])
    with open(base + '.json', 'w') as f:
        json.dump(report, f, indent=1)
    with open(base + '.md', 'w') as f:
        f.write('\n'.join(md) + '\n')
    print('wrote %s.{json,md}' % base)


if __name__ == '__main__':
    main()
