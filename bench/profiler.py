"""Profiler overhead: the cost of one recorded event (C++ micro-benchmark) and the
slowdown of an MLP training epoch (bench/mlp_epoch.py's OpenCNTK workload) with
profiling enabled, per-node events included.

    PYTHONPATH=python python3 bench/profiler.py            # writes bench/results/<date>-profiler.{json,md}
    PYTHONPATH=python python3 bench/profiler.py --quick    # a short smoke run; writes nothing

Needs the build tree's bench_profiler_overhead (cmake --build build/dev) and
Debian's dataset-fashion-mnist. See bench/README.md for the method.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
THREADS = 2


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--build-dir', default=os.path.join(ROOT, 'build', 'dev'))
    ap.add_argument('--events', type=int, default=2000000, help='events per thread in the micro-benchmark')
    ap.add_argument('--epochs', type=int, default=4, help='measured epochs per mode (off, on)')
    ap.add_argument('--epoch-steps', type=int, default=None, help='steps per measured epoch (default: all 469)')
    ap.add_argument('--warmup-steps', type=int, default=None, help='warm-up steps (default: one epoch)')
    ap.add_argument('--quick', action='store_true', help='short smoke run; writes nothing')
    ap.add_argument('--out', default=os.path.join(HERE, 'results'))
    return ap.parse_args()


def micro(build_dir, events, threads):
    exe = os.path.join(build_dir, 'bench_profiler_overhead')
    if not os.path.exists(exe):
        sys.exit("%s is missing: build it with cmake --build %s --target bench_profiler_overhead" % (exe, build_dir))
    out = subprocess.run([exe, str(events), str(threads)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def mlp_epochs(args):
    """Epochs of the MLP with profiling off and on, alternating (the order flips every epoch)."""
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, 'examples', 'python'))
    import numpy as np
    import fashion_mnist_data
    import mlp_epoch
    import cntk as C

    x, y = fashion_mnist_data.load('train')
    x = np.ascontiguousarray(x.reshape(-1, 784))
    fw = mlp_epoch.OpenCNTK(x, y)
    fw.build(mlp_epoch.DROPOUT)
    steps = args.epoch_steps or mlp_epoch.STEPS_PER_EPOCH
    fw.train(mlp_epoch.epoch_order(0), args.warmup_steps or mlp_epoch.STEPS_PER_EPOCH)

    samples = {'off': [], 'on': [], 'off_cpu': [], 'on_cpu': []}
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for e in range(args.epochs):
            for mode in (['off', 'on'] if e % 2 == 0 else ['on', 'off']):
                order = mlp_epoch.epoch_order(1 + e)
                if mode == 'on':
                    C.debugging.start_profiler(os.path.join(tmp, 'epoch%d' % e))
                    C.debugging.enable_profiler()
                c0, t0 = time.process_time(), time.perf_counter()
                fw.train(order, steps)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                run = {'mode': mode, 'epoch': 1 + e, 'wall_s': wall, 'cpu_s': cpu}
                if mode == 'on':
                    st = C.cntk_py.profiler_status()
                    w0 = time.perf_counter()
                    paths = C.debugging.stop_profiler()
                    run.update(events=st['recorded'], dropped=st['dropped'], write_s=time.perf_counter() - w0,
                               detail_bytes=os.path.getsize(paths[1]))
                samples[mode].append(wall)
                samples[mode + '_cpu'].append(cpu)
                runs.append(run)
    return steps, samples, runs


def main():
    args = parse_args()
    if args.quick:
        args.events, args.epochs, args.epoch_steps, args.warmup_steps = 200000, 2, 20, 10
    os.environ.setdefault('OMP_NUM_THREADS', str(THREADS))
    os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
    cpus = sorted(os.sched_getaffinity(0))[:THREADS]
    os.sched_setaffinity(0, cpus)
    with open('/proc/loadavg') as f:
        load0 = [float(v) for v in f.read().split()[:3]]

    micro_runs = [micro(args.build_dir, args.events, t) for t in (1, 2)]
    steps, samples, runs = mlp_epochs(args)
    off, on = statistics.median(samples['off']), statistics.median(samples['on'])
    off_cpu, on_cpu = statistics.median(samples['off_cpu']), statistics.median(samples['on_cpu'])
    events = statistics.median(r['events'] for r in runs if r['mode'] == 'on')
    per_event_ns = micro_runs[0]['ns']['overhead_per_event']['cpu']
    with open('/proc/loadavg') as f:
        load1 = [float(v) for v in f.read().split()[:3]]
    report = {
        'date': datetime.date.today().isoformat(), 'pinned_cpus': cpus, 'loadavg_start': load0, 'loadavg_end': load1,
        'omp_wait_policy': os.environ.get('OMP_WAIT_POLICY'), 'micro': micro_runs,
        'mlp_epoch': {'steps': steps, 'off_s': samples['off'], 'on_s': samples['on'], 'median_off_s': off,
                      'median_on_s': on, 'slowdown': on / off - 1.0, 'events_per_epoch': events,
                      'off_cpu_s': samples['off_cpu'], 'on_cpu_s': samples['on_cpu'], 'median_off_cpu_s': off_cpu,
                      'median_on_cpu_s': on_cpu, 'cpu_slowdown': on_cpu / off_cpu - 1.0,
                      'expected_cost_s': events * per_event_ns * 1e-9,
                      'implied_ns_per_event': (on - off) / events * 1e9 if events else None, 'runs': runs},
    }
    md = markdown(report)
    print(md)
    if not args.quick:
        os.makedirs(args.out, exist_ok=True)
        base = os.path.join(args.out, report['date'] + '-profiler')
        with open(base + '.json', 'w') as f:
            json.dump(report, f, indent=1)
        with open(base + '.md', 'w') as f:
            f.write(md)
        print('wrote %s.json and .md' % base)


def markdown(r):
    m = r['mlp_epoch']
    lines = ['# Profiler overhead, %s' % r['date'], '',
             '- CPUs pinned: %s; OMP_WAIT_POLICY=%s; load average at start %s, at end %s'
             % (r['pinned_cpus'], r['omp_wait_policy'], r['loadavg_start'], r['loadavg_end']), '',
             '## Per event (bench/cpp/profiler_overhead.cpp)', '',
             'Best of %d loops of %d scopes per thread around a trivial body; overhead = the scope\'s time minus '
             'the same body without a scope. CPU: the calling thread\'s CPU time per call; wall: elapsed time per '
             'call, which on a shared machine also counts waiting for a CPU. Profiler clock: %s.'
             % (r['micro'][0]['repetitions'], r['micro'][0]['events_per_thread'], r['micro'][0]['clock']), '',
             '| threads | off: overhead, CPU / wall (ns) | recording: per event, CPU / wall (ns) '
             '| buffer full: per event, CPU / wall (ns) | two profiler-clock reads, CPU (ns) '
             '| two steady_clock reads, CPU (ns) |',
             '| ---: | ---: | ---: | ---: | ---: | ---: |']
    for u in r['micro']:
        ns = u['ns']
        lines.append('| %d | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.1f | %.1f |' % (
            u['threads'], ns['overhead_off']['cpu'], ns['overhead_off']['wall'], ns['overhead_per_event']['cpu'],
            ns['overhead_per_event']['wall'], ns['overhead_buffer_full']['cpu'], ns['overhead_buffer_full']['wall'],
            ns['two_profiler_clock_reads']['cpu'], ns['two_steady_clock_reads']['cpu']))
    lines += ['', '## MLP training epoch (bench/mlp_epoch.py, OpenCNTK)', '',
              '%d steps per epoch; epochs alternate between profiling off and on (start, enable, train, then '
              'stop outside the timed part); %d of each.' % (m['steps'], len(m['off_s'])), '',
              '| profiling | median epoch, wall (s) | all, wall (s) | median CPU (s) |', '| --- | ---: | --- | ---: |',
              '| off | %.3f | %s | %.3f |' % (m['median_off_s'], ', '.join('%.3f' % v for v in m['off_s']),
                                             m['median_off_cpu_s']),
              '| on (phases + per-node events) | %.3f | %s | %.3f |' % (
                  m['median_on_s'], ', '.join('%.3f' % v for v in m['on_s']), m['median_on_cpu_s']), '',
              '- slowdown with profiling on (medians): wall %+.1f%%, CPU %+.1f%%%s' % (
                  100 * m['slowdown'], 100 * m['cpu_slowdown'],
                  ' (the ranges of the two modes overlap: the difference is within the noise of this machine)'
                  if min(m['on_s']) <= max(m['off_s']) and min(m['off_s']) <= max(m['on_s']) else ''),
              '- expected cost from the per-event cost above: %d events x %.1f ns = %.2f ms per epoch (%.3f%%)' % (
                  m['events_per_epoch'], m['expected_cost_s'] / max(m['events_per_epoch'], 1) * 1e9,
                  m['expected_cost_s'] * 1e3, 100 * m['expected_cost_s'] / m['median_off_s']),
              '- events per epoch: %d (%.0f per step); dropped: %d' % (m['events_per_epoch'],
                                                                      m['events_per_epoch'] / m['steps'],
                                                                      max(x.get('dropped', 0) for x in m['runs'])),
              '- writing the files at stop: %.3f s (detail log %.1f MB)' % (
                  statistics.median(x['write_s'] for x in m['runs'] if x['mode'] == 'on'),
                  statistics.median(x['detail_bytes'] for x in m['runs'] if x['mode'] == 'on') / 1e6)]
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    main()
