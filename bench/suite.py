"""The benchmark suite: every workload of bench/workloads in OpenCNTK, PyTorch and TensorFlow, side by side.

    python3 bench/suite.py                     # all workloads; writes bench/results/<date>-suite.{json,md,png}
    python3 bench/suite.py --workloads mlp,cnn # some of them
    python3 bench/suite.py --quick             # a smoke run: few steps, 2 measurements, writes nothing

A full run (every workload, results written to bench/results) also rewrites the result table in the
top-level README.md (the block between README_BEGIN and README_END).

Each (workload, framework) pair trains in its own worker process (`suite.py --worker WORKLOAD FRAMEWORK`),
pinned to 2 CPUs with 2 threads, started once and kept warm. After a warm-up, the parent asks the three
workers of a workload for one measurement each in turn (the order rotating every round), so no two
frameworks ever run at once and drift in machine load falls on all of them. A measurement is
MEASURE_STEPS training steps (minibatch preparation from NumPy included, as in a training script).
Reported: median and min-max seconds per step over the measurements, the OpenCNTK/peer ratios of the
medians, and each framework's mean training loss over the last measurement, which must be comparable
across frameworks (nobody wins by doing less work). A workload that OpenCNTK cannot build yet is listed as
missing with the reason. See bench/README.md.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
THREADS = 2
FRAMEWORKS = ['opencntk', 'pytorch', 'tensorflow']
LABELS = {'opencntk': 'OpenCNTK', 'pytorch': 'PyTorch', 'tensorflow': 'TensorFlow'}
CLASSES = {'opencntk': 'OpenCNTK', 'pytorch': 'PyTorch', 'tensorflow': 'TensorFlow'}
LOSS_SPREAD_LIMIT = 0.25  # largest (max - min) / median of the final losses called comparable


def worker_env():
    env = dict(os.environ)
    env['OMP_NUM_THREADS'] = str(THREADS)
    env.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
    env['TF_CPP_MIN_LOG_LEVEL'] = '2'
    env['PYTHONPATH'] = os.pathsep.join([os.path.join(ROOT, 'python'), HERE] +
                                        ([env['PYTHONPATH']] if env.get('PYTHONPATH') else []))
    return env


# ---------------------------------------------------------------------------- worker

def framework_info(name):
    import run as bench_run
    if name == 'opencntk':
        import cntk
        return {'version': 'OpenCNTK %s (commit %s), oneDNN %s' % (cntk.__version__, bench_run.git_commit(),
                                                                   bench_run.onednn_version()),
                'threads': 'OpenMP %s' % bench_run.omp_max_threads()}
    if name == 'pytorch':
        import torch
        return {'version': 'PyTorch %s' % torch.__version__,
                'threads': 'intra-op %d, inter-op %d' % (torch.get_num_threads(), torch.get_num_interop_threads())}
    import tensorflow as tf
    import keras
    return {'version': 'TensorFlow %s, Keras %s' % (tf.__version__, keras.__version__),
            'threads': 'intra-op %d, inter-op %d' % (tf.config.threading.get_intra_op_parallelism_threads(),
                                                     tf.config.threading.get_inter_op_parallelism_threads())}


def worker_main(workload, framework):
    proto = os.fdopen(os.dup(1), 'w', buffering=1)
    os.dup2(2, 1)  # library output goes to the log, not into the protocol
    sys.stdout = sys.stderr

    def reply(**kw):
        proto.write(json.dumps(kw) + '\n')

    try:
        cpus = sorted(os.sched_getaffinity(0))[:THREADS]
        os.sched_setaffinity(0, cpus)
        import workloads
        w = workloads.load(workload)
        data = w.make_data()
        fw = getattr(w, CLASSES[framework])(data)
        info = dict(framework_info(framework), pinned_cpus=cpus)
        reply(ok=True, info=info, measure_steps=w.MEASURE_STEPS, warmup_steps=w.WARMUP_STEPS,
              epoch_steps=w.EPOCH_STEPS)
    except Exception as e:  # noqa: BLE001: reported to the parent, which records it
        import traceback
        traceback.print_exc()
        reply(ok=False, error='%s: %s' % (type(e).__name__, str(e).splitlines()[0] if str(e) else ''))
        return 1
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd['cmd'] == 'quit':
            break
        try:
            start, steps = cmd['start'], cmd['steps']
            losses = []
            c0, t0 = time.process_time(), time.perf_counter()
            for s in range(start, start + steps):
                losses.append(fw.step(*(fw.batch(s) if hasattr(fw, 'batch') else fw.data.get(s))))
            t1, c1 = time.perf_counter(), time.process_time()
            reply(ok=True, wall_s=t1 - t0, cpu_s=c1 - c0, loss=sum(losses) / len(losses), steps=steps)
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            reply(ok=False, error='%s: %s' % (type(e).__name__, e))
    return 0


# ---------------------------------------------------------------------------- parent

class Worker:
    def __init__(self, workload, framework, log_dir):
        self.name = '%s/%s' % (workload, framework)
        self.log = open(os.path.join(log_dir, 'suite-%s-%s.log' % (workload, framework)), 'w')
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--worker', workload, framework],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     bufsize=1, env=worker_env(), cwd=ROOT)

    def ask(self, **cmd):
        if cmd:
            self.proc.stdin.write(json.dumps(cmd) + '\n')
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('the worker exited (see %s)' % self.log.name)
        r = json.loads(line)
        if not r.get('ok'):
            raise RuntimeError(r.get('error'))
        return r

    def close(self):
        try:
            self.proc.stdin.write('{"cmd": "quit"}\n')
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            self.proc.kill()
        self.log.close()


def run_workload(name, args, log_dir):
    """Measures one workload in every framework; returns its result row."""
    import workloads
    w = workloads.load(name)
    row = {'workload': name, 'title': w.TITLE, 'batch': w.BATCH, 'frameworks': {}, 'missing': {}}
    workers = {}
    for fw in args.frameworks:
        wk = Worker(name, fw, log_dir)
        try:
            r = wk.ask()
            workers[fw] = wk
            row['frameworks'][fw] = {'info': r['info']}
            steps, warm, epoch = r['measure_steps'], r['warmup_steps'], r['epoch_steps']
        except RuntimeError as e:
            wk.close()
            row['missing'][fw] = str(e)
            print('  %-10s missing: %s' % (LABELS[fw], e))
    if not workers:
        return row
    if args.quick:
        steps, warm = min(steps, 3), min(warm, 1)
    row.update(measure_steps=steps, warmup_steps=warm, epoch_steps=epoch)
    names = [fw for fw in args.frameworks if fw in workers]
    try:
        for fw in names:
            r = workers[fw].ask(cmd='train', start=0, steps=warm)
            row['frameworks'][fw]['warmup'] = r
            print('  %-10s warm-up %d steps %.2f s, loss %.4f' % (LABELS[fw], warm, r['wall_s'], r['loss']))
        samples = {fw: [] for fw in names}
        for rep in range(args.measurements):
            k = rep % len(names)
            for fw in names[k:] + names[:k]:
                if fw not in workers:
                    continue
                try:
                    r = workers[fw].ask(cmd='train', start=warm + rep * steps, steps=steps)
                except RuntimeError as e:
                    row['missing'][fw] = 'failed while training: %s' % e
                    print('  %-10s failed: %s' % (LABELS[fw], e))
                    workers.pop(fw).close()
                    continue
                samples[fw].append(r)
                print('  %-10s %d steps %.2f s (%.1f ms/step), loss %.4f'
                      % (LABELS[fw], steps, r['wall_s'], 1e3 * r['wall_s'] / steps, r['loss']))
    finally:
        for wk in workers.values():
            wk.close()
    for fw, rs in samples.items():
        if not rs or fw in row['missing']:
            row['frameworks'].pop(fw, None)
            continue
        per_step = [r['wall_s'] / r['steps'] for r in rs]
        cpu = [r['cpu_s'] / r['steps'] for r in rs]
        d = row['frameworks'][fw]
        d.update(step_s_median=statistics.median(per_step), step_s_min=min(per_step), step_s_max=max(per_step),
                 cpu_step_s_median=statistics.median(cpu), step_s_samples=per_step,
                 loss_per_measurement=[r['loss'] for r in rs], final_loss=rs[-1]['loss'])
        if epoch:
            d['epoch_s_median'] = d['step_s_median'] * epoch
    fws = row['frameworks']
    if 'opencntk' in fws:
        for peer in ('pytorch', 'tensorflow'):
            if peer in fws:
                row['ratio_vs_' + peer] = fws['opencntk']['step_s_median'] / fws[peer]['step_s_median']
        peers = [fws[p]['step_s_median'] for p in ('pytorch', 'tensorflow') if p in fws]
        if peers:
            row['ratio_vs_faster_peer'] = fws['opencntk']['step_s_median'] / min(peers)
    finals = [d['final_loss'] for d in fws.values()]
    if len(finals) > 1:
        spread = (max(finals) - min(finals)) / abs(statistics.median(finals))
        row['final_loss_spread'] = spread
        row['losses_comparable'] = spread <= LOSS_SPREAD_LIMIT
    return row


GOAL = ('Goal: OpenCNTK faster than the faster of PyTorch and TensorFlow on every row '
        '("vs faster peer" below 1 everywhere).')


def _ms(d, key='step_s'):
    return '%.1f (%.1f-%.1f)' % (1e3 * d[key + '_median'], 1e3 * d[key + '_min'], 1e3 * d[key + '_max'])


def table(report):
    """The result table(s) alone: per-step times and ratios, then epoch times where a workload has epochs."""
    lines = [GOAL, '',
             '| workload | OpenCNTK (ms/step) | PyTorch (ms/step) | TensorFlow (ms/step) | vs PyTorch | '
             'vs TensorFlow | vs faster peer | losses (OpenCNTK / PyTorch / TF) | comparable |',
             '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |']
    for row in report['results']:
        cells = [row['workload']]
        for fw in FRAMEWORKS:
            d = row['frameworks'].get(fw)
            if d:
                cells.append(_ms(d))
            else:
                cells.append('missing' if fw in row['missing'] else 'not run')
        for key in ('ratio_vs_pytorch', 'ratio_vs_tensorflow', 'ratio_vs_faster_peer'):
            r = row.get(key)
            cells.append(('**%.2f**' if key == 'ratio_vs_faster_peer' else '%.2f') % r if r is not None else '-')
        cells.append(' / '.join('%.4f' % row['frameworks'][fw]['final_loss'] if fw in row['frameworks'] else '-'
                                for fw in FRAMEWORKS))
        c = row.get('losses_comparable')
        cells.append('-' if c is None else ('yes' if c else 'NO (spread %.0f%%)' % (100 * row['final_loss_spread'])))
        lines.append('| ' + ' | '.join(cells) + ' |')
    epochs = [row for row in report['results'] if row.get('epoch_steps')
              and any('epoch_s_median' in d for d in row['frameworks'].values())]
    if epochs:
        lines += ['', 'Epoch time (seconds): median time per step times the steps of one epoch.', '',
                  '| workload | steps per epoch | OpenCNTK (s) | PyTorch (s) | TensorFlow (s) |',
                  '| --- | ---: | ---: | ---: | ---: |']
        for row in epochs:
            cells = [row['workload'], str(row['epoch_steps'])]
            for fw in FRAMEWORKS:
                d = row['frameworks'].get(fw)
                cells.append('%.1f' % d['epoch_s_median'] if d and 'epoch_s_median' in d else '-')
            lines.append('| ' + ' | '.join(cells) + ' |')
    return lines


def markdown(report):
    env = report['environment']
    lines = ['# Benchmark suite: OpenCNTK, PyTorch, TensorFlow (%s)' % env['date'], '',
             '- CPU: %s; every worker pinned to %d CPUs, %d threads per framework, OMP_WAIT_POLICY=%s'
             % (env['cpu_model'], THREADS, THREADS, env['omp_wait_policy']),
             '- Python %s, NumPy %s; load average at start %s, at end %s'
             % (env['python'], env['numpy'], env['loadavg_at_start'], env['loadavg_at_end'])]
    seen = {}
    for row in report['results']:
        for fw, d in row['frameworks'].items():
            seen.setdefault(fw, d['info'])
    for fw, info in seen.items():
        lines.append('- %s: %s; threads: %s' % (LABELS[fw], info['version'], info['threads']))
    lines += ['- method: %s' % report['method'], '',
              'Milliseconds per training step (wall): median (min-max) over the measurements. Ratios: OpenCNTK '
              'over the peer, of the medians (below 1: OpenCNTK is faster). Loss: mean training loss over the '
              'last measurement; "yes" when the three agree within %d%%.' % (100 * LOSS_SPREAD_LIMIT), '']
    lines += table(report)
    lines += ['', 'Workloads:', '']
    for row in report['results']:
        lines.append('- `%s`: %s%s' % (row['workload'], row['title'],
                                        '; %d steps per measurement' % row['measure_steps']
                                        if 'measure_steps' in row else ''))
    missing = [(row['workload'], fw, why) for row in report['results'] for fw, why in row['missing'].items()]
    if missing:
        lines += ['', 'Missing:', '']
        lines += ['- `%s` in %s: %s' % (wl, LABELS[fw], why) for wl, fw, why in missing]
    lines.append('')
    return '\n'.join(lines)


README_BEGIN = '<!-- bench-suite:begin (written by bench/suite.py) -->'
README_END = '<!-- bench-suite:end -->'


def update_readme(report, base, readme=os.path.join(ROOT, 'README.md')):
    """Replaces the README's result block (between README_BEGIN and README_END) with this run's table."""
    with open(readme) as f:
        text = f.read()
    if README_BEGIN not in text or README_END not in text:
        print('%s has no %s ... %s block: not updated' % (readme, README_BEGIN, README_END))
        return
    env = report['environment']
    rel = os.path.relpath(base, ROOT)
    block = [README_BEGIN, '', 'Latest full run (%s, %s, %d threads per framework; details in `%s.md`, chart '
             '`%s.png`):' % (env['date'], env['cpu_model'], THREADS, rel, rel), ''] + table(report) + ['', README_END]
    head, rest = text.split(README_BEGIN, 1)
    tail = rest.split(README_END, 1)[1]
    with open(readme, 'w') as f:
        f.write(head + '\n'.join(block) + tail)
    print('updated the result table in %s' % readme)


def chart(report, path):
    """A bar chart of OpenCNTK's time over each peer's, per workload (log scale; below 1 is faster)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    rows = report['results']
    names = [r['workload'] for r in rows]
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(names)), 4))
    width = 0.38
    for i, (peer, color) in enumerate((('pytorch', '#d9534f'), ('tensorflow', '#f0ad4e'))):
        vals = [r.get('ratio_vs_' + peer) for r in rows]
        xs = [j + (i - 0.5) * width for j in range(len(names))]
        ax.bar([x for x, v in zip(xs, vals) if v], [v for v in vals if v], width, label='vs ' + LABELS[peer],
               color=color)
        for x, v in zip(xs, vals):
            if v is None:
                ax.text(x, 1.0, 'n/a', ha='center', va='bottom', fontsize=7, rotation=90)
    ax.axhline(1.0, color='black', linewidth=0.8)
    ax.set_yscale('log')
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30, ha='right')
    ax.set_ylabel('OpenCNTK time / peer time (lower is better)')
    ax.set_title('OpenCNTK vs peers, %s' % report['environment']['date'])
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    sys.path.insert(0, HERE)
    import run as bench_run
    import numpy as np
    import workloads
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--workloads', default=','.join(workloads.ORDER))
    ap.add_argument('--frameworks', default=','.join(FRAMEWORKS))
    ap.add_argument('--measurements', type=int, default=5, help='measurements per framework (at least 5)')
    ap.add_argument('--quick', action='store_true', help='smoke run: 3 steps per measurement, writes nothing')
    ap.add_argument('--out', default=os.path.join(HERE, 'results'))
    ap.add_argument('--no-write', action='store_true')
    args = ap.parse_args()
    args.workloads = [w for w in args.workloads.split(',') if w]
    args.frameworks = [f for f in args.frameworks.split(',') if f]
    for w in args.workloads:
        workloads.load(w)
    if args.quick:
        args.measurements = min(args.measurements, 2)
        args.no_write = True
    elif args.measurements < 5:
        ap.error('--measurements must be at least 5 (use --quick for a smoke run)')
    log_dir = os.path.join(ROOT, 'build', 'bench-logs')
    os.makedirs(log_dir, exist_ok=True)
    env = {'date': datetime.date.today().isoformat(), 'cpu_model': bench_run.cpu_model(),
           'logical_cpus_on_machine': os.cpu_count(), 'python': platform.python_version(), 'numpy': np.__version__,
           'omp_wait_policy': worker_env()['OMP_WAIT_POLICY'], 'loadavg_at_start': bench_run.loadavg(),
           'threads': THREADS}
    print('CPU: %s; %d threads per framework; load average %s; logs in %s'
          % (env['cpu_model'], THREADS, env['loadavg_at_start'], log_dir))
    results = []
    for name in args.workloads:
        print('%s:' % name)
        results.append(run_workload(name, args, log_dir))
    env['loadavg_at_end'] = bench_run.loadavg()
    method = ('one worker process per framework and workload, kept warm; warm-up steps excluded; %d measurements '
              'of MEASURE_STEPS steps each, the frameworks taking turns (order rotating each round); Glorot-uniform '
              'weights and zero biases in every framework; the same data, minibatches, optimizer settings and '
              'batch size' % args.measurements)
    report = {'environment': env, 'method': method, 'results': results}
    md = markdown(report)
    print()
    print(md)
    if not args.no_write:
        os.makedirs(args.out, exist_ok=True)
        base = os.path.join(args.out, env['date'] + '-suite')
        with open(base + '.json', 'w') as f:
            json.dump(report, f, indent=1)
            f.write('\n')
        with open(base + '.md', 'w') as f:
            f.write(md)
        try:
            chart(report, base + '.png')
        except ImportError:
            print('matplotlib is not installed: no chart (pip install matplotlib)')
        print('wrote %s.{json,md,png}' % base)
        if os.path.abspath(args.out) == os.path.join(HERE, 'results') and set(args.workloads) == set(workloads.ORDER):
            update_readme(report, base)


if __name__ == '__main__':
    if len(sys.argv) == 4 and sys.argv[1] == '--worker':
        sys.path.insert(0, HERE)
        sys.exit(worker_main(sys.argv[2], sys.argv[3]))
    main()
