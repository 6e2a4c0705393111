"""cntk.debugging: the performance profiler (summary report, Trace Event detail log,
per-node and phase events, custom scopes, buffer overflow, files on errors and at exit),
per-node timing, and the other debugging helpers."""
import collections
import json
import os
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import cntk as C
from cntk.debugging.debug import _primitives

FILE_RE = re.compile(r'^\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}(\.\d+)?_(summary|detail)_(\d+)\.(txt|json)$')


@pytest.fixture(autouse=True)
def _no_session():
    """Every test starts and ends without a profiling session (the profiler is process-wide)."""
    C.debugging.stop_profiler()
    yield
    C.debugging.stop_profiler()
    C.debugging.set_node_timing(False)


def _model():
    x = C.input_variable(4, np.float32, name='features')
    y = C.input_variable(3, np.float32, name='labels')
    h = C.layers.Dense(5, activation=C.relu, name='hidden')(x)
    z = C.layers.Dense(3, name='out')(C.sigmoid(h, name='squash'))
    loss = C.cross_entropy_with_softmax(z, y, name='ce')
    err = C.classification_error(z, y, name='err')
    trainer = C.Trainer(z, (loss, err), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    return x, y, z, loss, err, trainer


def _batch(n=8, seed=0):
    rng = np.random.RandomState(seed)
    xs = rng.randn(n, 4).astype(np.float32)
    ys = np.eye(3, dtype=np.float32)[rng.randint(0, 3, n)]
    return xs, ys


def _files(d):
    names = sorted(os.listdir(str(d)))
    summary = [n for n in names if '_summary_' in n]
    detail = [n for n in names if '_detail_' in n]
    assert len(summary) == 1 and len(detail) == 1, names
    return os.path.join(str(d), summary[0]), os.path.join(str(d), detail[0])


def _validate_trace(path):
    """Loads the detail log and checks it against the Trace Event format; returns its timed events."""
    with open(path) as f:
        doc = json.load(f)
    assert isinstance(doc, dict) and isinstance(doc['traceEvents'], list)
    timed = []
    open_b = collections.defaultdict(list)
    for e in doc['traceEvents']:
        assert isinstance(e['name'], str) and e['ph'] in ('X', 'B', 'E', 'M', 'i'), e
        assert isinstance(e['pid'], int) and isinstance(e['tid'], int), e
        if e['ph'] == 'M':
            continue
        assert isinstance(e['ts'], (int, float)) and e['ts'] >= 0, e
        if e['ph'] == 'X':
            assert isinstance(e['dur'], (int, float)) and e['dur'] >= 0, e
            timed.append(e)
        elif e['ph'] == 'B':
            open_b[(e['pid'], e['tid'])].append(e)
        elif e['ph'] == 'E':
            b = open_b[(e['pid'], e['tid'])].pop()
            timed.append(dict(b, ph='X', dur=e['ts'] - b['ts']))
    assert not any(open_b.values()), "unmatched B events"
    return doc, timed


def _summary_rows(path):
    """{(section, name): (count, total_ms)} from the summary's tables."""
    rows, section = {}, None
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            m = re.match(r'^(Phase|Node \(forward\)|Node \(backward\))\s+Average\(ms\)', line)
            if m:
                section = m.group(1)
                continue
            if section and line.strip():
                name, avg, std, mn, mx, count, total = line.rsplit(None, 6)
                assert float(mn) <= float(avg) <= float(mx) and float(std) >= 0
                rows[(section, name.strip())] = (int(count), float(total))
            elif not line.strip():
                section = None
    return rows


def test_detail_log_is_trace_event_json_and_agrees_with_summary(tmp_path):
    x, y, z, loss, err, trainer = _model()
    xs, ys = _batch()
    trainer.train_minibatch({x: xs, y: ys})  # plans compiled before profiling
    C.debugging.start_profiler(str(tmp_path / 'prof'), sync_gpu=False)
    assert C.debugging.enable_profiler() is True
    t0 = time.perf_counter()
    for i in range(4):
        trainer.train_minibatch({x: xs, y: ys})
    elapsed_us = (time.perf_counter() - t0) * 1e6
    trainer.test_minibatch({x: xs, y: ys})
    with C.debugging.profiler_scope('my scope'):
        pass
    paths = C.debugging.stop_profiler()
    summary, detail = _files(tmp_path / 'prof')
    assert [os.path.basename(p) for p in paths] == [os.path.basename(summary), os.path.basename(detail)]
    for p in (summary, detail):
        m = FILE_RE.match(os.path.basename(p))
        assert m and m.group(3) == '0', p

    doc, timed = _validate_trace(detail)
    assert doc['otherData']['dropped_events'] == 0
    by_name = collections.defaultdict(list)
    for e in timed:
        by_name[(e['cat'], e['name'])].append(e['dur'])
    assert len(by_name[('phase', 'minibatch')]) == 4
    assert len(by_name[('phase', 'evaluation')]) == 1
    for phase in ('forward', 'backward', 'parameter update'):
        assert len(by_name[('phase', phase)]) == 4, phase
    assert len(by_name[('custom', 'my scope')]) == 1
    # ts and dur are microseconds: the minibatches fill most of the measured wall time.
    mb_us = sum(by_name[('phase', 'minibatch')])
    assert 0.05 * elapsed_us < mb_us <= elapsed_us
    # Nested phases lie within their minibatch.
    mbs = sorted((e['ts'], e['ts'] + e['dur']) for e in timed if e['name'] == 'minibatch')
    for e in timed:
        if e['name'] == 'forward':
            assert any(b <= e['ts'] and e['ts'] + e['dur'] <= end + 1e-3 for b, end in mbs)

    rows = _summary_rows(summary)
    section = {'phase': 'Phase', 'node.forward': 'Node (forward)', 'node.backward': 'Node (backward)'}
    expected = {}
    for (cat, name), durs in by_name.items():
        if cat == 'custom':
            continue
        expected[(section[cat], name)] = (len(durs), sum(durs) / 1000.0)
    assert set(rows) == set(expected)
    for key, (count, total_ms) in expected.items():
        assert rows[key][0] == count, key
        assert rows[key][1] == pytest.approx(total_ms, rel=1e-5, abs=2e-6), key
    text = open(summary).read()
    assert 'my scope' not in text  # custom scopes: detail log only
    assert 'dropped events: 0' in text and 'sync_gpu: false' in text


def test_per_node_events_name_every_primitive(tmp_path):
    x, y, z, loss, err, trainer = _model()
    xs, ys = _batch()
    C.debugging.start_profiler(str(tmp_path))
    C.debugging.enable_profiler()
    trainer.train_minibatch({x: xs, y: ys})
    events = C.cntk_py.profiler_events()
    C.debugging.stop_profiler()
    forward = {n for n, cat, *_ in events if cat == 'node.forward'}
    backward = {n for n, cat, *_ in events if cat == 'node.backward'}
    prims = _primitives([loss, err])
    assert len(prims) >= 8
    ops = {p.op_name for p in prims}
    assert {'Times', 'Plus', 'ReLU', 'StableSigmoid'} <= ops
    for p in prims:
        label = '%s %s' % (p.op_name, p.name or p.uid)
        assert label in forward, label
    # The backward pass visits every node of the loss between the parameters and the loss.
    for p in _primitives([loss]):
        label = '%s %s (backward)' % (p.op_name, p.name or p.uid)
        assert label in backward, label
    assert not any(n.startswith('ClassificationError') for n in backward)
    assert 'StableSigmoid squash' in forward and 'StableSigmoid squash (backward)' in backward


def test_buffer_overflow_counts_dropped_events(tmp_path):
    x, y, z, loss, err, trainer = _model()
    xs, ys = _batch()
    C.debugging.start_profiler(str(tmp_path / 'one'))
    C.debugging.enable_profiler()
    trainer.train_minibatch({x: xs, y: ys})
    per_minibatch = C.cntk_py.profiler_status()['recorded']
    C.debugging.stop_profiler()
    C.debugging.start_profiler(str(tmp_path), reserve_mem=10 * 32)  # room for 10 events
    C.debugging.enable_profiler()
    for i in range(3):
        trainer.train_minibatch({x: xs, y: ys})
    status = C.cntk_py.profiler_status()
    assert status['capacity'] == 10 and status['recorded'] == 10
    assert status['dropped'] == 3 * per_minibatch - 10 > 0
    C.debugging.stop_profiler()
    summary, detail = _files(tmp_path)
    doc, timed = _validate_trace(detail)
    assert len(timed) == 10
    assert doc['otherData']['dropped_events'] == status['dropped']
    assert ('dropped events: %d' % status['dropped']) in open(summary).read()


def test_nothing_is_recorded_unless_started_and_enabled(tmp_path):
    assert C.debugging.enable_profiler() is False  # no session: no effect
    assert C.debugging.disable_profiler() is False
    assert C.debugging.stop_profiler() == []
    x, y, z, loss, err, trainer = _model()
    xs, ys = _batch()
    C.debugging.start_profiler(str(tmp_path))
    trainer.train_minibatch({x: xs, y: ys})  # started, not enabled
    with C.debugging.profiler_scope('not recorded'):
        pass
    assert C.cntk_py.profiler_events() == []
    C.debugging.enable_profiler()
    trainer.train_minibatch({x: xs, y: ys})
    C.debugging.disable_profiler()
    n = len(C.cntk_py.profiler_events())
    trainer.train_minibatch({x: xs, y: ys})
    assert len(C.cntk_py.profiler_events()) == n > 0


def test_custom_scopes_as_context_manager_and_decorator(tmp_path):
    @C.debugging.profiler_scope('decorated')
    def work(v):
        with C.debugging.profiler_scope('inner'):
            return v * 2

    C.debugging.start_profiler(str(tmp_path))
    C.debugging.enable_profiler()
    assert work(3) == 6 and work(4) == 8
    with pytest.raises(KeyError):
        with C.debugging.profiler_scope('raising'):
            raise KeyError('x')
    events = C.cntk_py.profiler_events()
    names = collections.Counter(n for n, cat, *_ in events if cat == 'custom')
    assert names == {'decorated': 2, 'inner': 2, 'raising': 1}
    dec = [e for e in events if e[0] == 'decorated']
    inner = [e for e in events if e[0] == 'inner']
    for (_, _, b, e, _), (_, _, ib, ie, _) in zip(dec, inner):
        assert b <= ib <= ie <= e
    with pytest.raises(ValueError):
        C.debugging.profiler_scope('')


def test_start_profiler_checks_its_arguments(tmp_path):
    with pytest.raises(ValueError, match='reserve_mem'):
        C.debugging.start_profiler(str(tmp_path), reserve_mem=0)
    with pytest.raises(ValueError, match='holds no event'):
        C.debugging.start_profiler(str(tmp_path), reserve_mem=8)
    with pytest.raises(TypeError):
        C.debugging.start_profiler(str(tmp_path), reserve_mem='big')
    with pytest.raises(TypeError):
        C.debugging.start_profiler(42)
    blocker = tmp_path / 'file'
    blocker.write_text('x')
    with pytest.raises(OSError, match='cannot create'):
        C.debugging.start_profiler(str(blocker / 'sub'))
    C.debugging.start_profiler(tmp_path / 'ok')  # a pathlib.Path is a path too
    assert C.cntk_py.profiler_status()['dir'] == str(tmp_path / 'ok')
    with pytest.raises(ValueError, match='already started'):
        C.debugging.start_profiler(str(tmp_path / 'ok'))
    assert C.cntk_py.default_profiler_buffer_size == 32 * 1024 * 1024
    assert C.cntk_py.profiler_status()['capacity'] == 32 * 1024 * 1024 // 32
    assert C.cntk_py.profiler_status()['sync_gpu'] is True


class _FailingSource(object):
    """A minibatch source that fails after `good` minibatches."""

    def __init__(self, x, y, good):
        self.x, self.y, self.good = x, y, good

    def next_minibatch(self, size, input_map=None):
        if self.good == 0:
            raise IOError('the data file went away')
        self.good -= 1
        xs, ys = _batch(size)
        return {self.x: xs, self.y: ys}


def test_files_are_written_when_training_raises(tmp_path):
    x, y, z, loss, err, trainer = _model()
    C.debugging.start_profiler(str(tmp_path))
    C.debugging.enable_profiler()
    session = C.training_session(trainer, _FailingSource(x, y, 3), 8, max_samples=1000)
    with pytest.raises(IOError, match='went away'):
        session.train()
    summary, detail = _files(tmp_path)  # written before stop_profiler
    doc, timed = _validate_trace(detail)
    counts = collections.Counter(e['name'] for e in timed)
    assert counts['minibatch'] == 3 and counts['read minibatch'] == 4  # the failed read too
    assert 'read minibatch' in open(summary).read()

    # A minibatch that raises inside the Trainer writes them too.
    C.debugging.stop_profiler()
    d2 = tmp_path / 'second'
    C.debugging.start_profiler(str(d2))
    C.debugging.enable_profiler()
    xs, ys = _batch()
    trainer.train_minibatch({x: xs, y: ys})
    with pytest.raises(ValueError):
        trainer.train_minibatch({x: np.zeros((8, 7), np.float32), y: ys})
    summary, detail = _files(d2)
    assert 'parameter update' in open(summary).read()


def test_files_are_written_at_exit_after_an_uncaught_exception(tmp_path):
    script = textwrap.dedent('''
        import numpy as np, cntk as C
        x = C.input_variable(2, np.float32)
        z = C.layers.Dense(1)(x)
        C.debugging.start_profiler(%r)
        C.debugging.enable_profiler()
        z.eval({x: np.ones((3, 2), np.float32)})
        raise RuntimeError('the script failed')
    ''' % str(tmp_path))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1 and 'the script failed' in proc.stderr
    summary, detail = _files(tmp_path)
    doc, timed = _validate_trace(detail)
    assert any(e['cat'] == 'node.forward' and e['name'].startswith('Times') for e in timed)


def test_training_session_enables_the_profiler_after_the_first_checkpoint(tmp_path, monkeypatch):
    from cntk.train.training_session import TrainingSession
    saved = []
    monkeypatch.setattr(TrainingSession, 'on_checkpoint_start', lambda self, index: saved.append(index))
    x, y, z, loss, err, trainer = _model()
    src = _FailingSource(x, y, 10)
    C.debugging.start_profiler(str(tmp_path))
    session = C.training_session(trainer, src, 10, max_samples=100,
                                 checkpoint_config=C.CheckpointConfig(str(tmp_path / 'ckpt'), frequency=30,
                                                                      restore=False))
    session.train()
    assert saved  # the checkpoint was due
    counts = collections.Counter(n for n, cat, *_ in C.cntk_py.profiler_events())
    assert counts['minibatch'] == 7  # minibatches 4..10: the first checkpoint came after the third
    assert C.cntk_py.profiler_status()['enabled']
    C.debugging.stop_profiler()

    # Without start_profiler the session's enable has no effect.
    x, y, z, loss, err, trainer = _model()
    C.training_session(trainer, _FailingSource(x, y, 5), 10, max_samples=50,
                       checkpoint_config=C.CheckpointConfig(str(tmp_path / 'ckpt'), frequency=10,
                                                            restore=False)).train()
    assert not C.cntk_py.profiler_status()['enabled']


def test_node_timing_and_print_node_timing(capsys):
    x, y, z, loss, err, trainer = _model()
    xs, ys = _batch()
    z.print_node_timing()
    assert 'set_node_timing(True)' in capsys.readouterr().err
    C.debugging.set_node_timing(True)
    z.eval({x: xs})
    z.eval({x: xs})
    z.print_node_timing()
    out = capsys.readouterr().err
    for p in _primitives([z]):
        label = '%s %s' % (p.op_name, p.name or p.uid)
        line = [l for l in out.splitlines() if l.strip().startswith(label + ' ')]
        assert len(line) == 1, label
        assert re.search(r'forward:\s+2 calls .*backward:\s+0 calls', line[0]), line[0]
    trainer.train_minibatch({x: xs, y: ys})
    trainer.print_node_timing()
    out = capsys.readouterr().err
    assert re.search(r'Sigmoid squash\s+forward:\s+3 calls .*backward:\s+1 calls', out), out
    assert 'CrossEntropyWithSoftmax ce' in out
    ev = C.Evaluator(err)
    ev.test_minibatch({x: xs, y: ys})
    ev.print_node_timing()
    out = capsys.readouterr().err
    assert 'ClassificationError err' in out and 'CrossEntropyWithSoftmax' not in out
    C.debugging.set_node_timing(True)  # already on: totals kept
    C.debugging.set_node_timing(False)
    C.debugging.set_node_timing(True)  # switched on again: totals restart
    z.print_node_timing()
    assert 'Node timing (0 nodes)' in capsys.readouterr().err


def test_other_debugging_helpers(capsys, tmp_path):
    C.debugging.force_deterministic(7)
    assert C.cntk_py.is_random_seed_fixed() and C.cntk_py.should_force_deterministic_algorithms()
    C.debugging.set_computation_network_trace_level(0)
    assert C.cntk_py.get_computation_network_trace_level() == 0
    C.debugging.set_checked_mode(False)
    x, y, z, loss, err, trainer = _model()
    legacy = str(tmp_path / 'model.dnn')
    C.debugging.save_as_legacy_model(z, legacy)  # CNTK's v1 format, read back by load_model
    assert len(C.load_model(legacy).parameters) == len(z.parameters)
    C.debugging.dump_signature(z)
    out = capsys.readouterr().out.strip()
    assert out.startswith('out(features: ') and '-> ' in out
    C.debugging.dump_function(loss, 'criterion')
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith('ce(features: ')
    body = '\n'.join(lines[1:])
    for word in ('Parameter', 'Input', 'ReLU', 'Sigmoid', 'CrossEntropyWithSoftmax'):
        assert word in body, word


def test_debugging_names_of_cntk27_exist():
    tsv = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'reference', 'cntk27_python_api.tsv')
    if not os.path.exists(tsv):
        pytest.skip('reference list absent')
    import importlib
    found = 0
    with open(tsv) as f:
        for line in f:
            module, kind, name = line.rstrip('\n').split('\t')[:3]
            if module.startswith('cntk.debugging'):
                mod = importlib.import_module(module)
                assert hasattr(mod, name.split('(')[0]), (module, name)
                found += 1
    assert found == 12
