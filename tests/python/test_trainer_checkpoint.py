"""Trainer.save_checkpoint / restore_from_checkpoint: learners, parameters, random state and the
caller's external state come back exactly, also in a new process after the old one was killed."""
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cntk as C


# One training script for every run: a small MLP with dropout, momentum SGD on fixed data.
SCRIPT = textwrap.dedent('''
    import os, signal, sys
    import numpy as np
    import cntk as C

    def build():
        C.cntk_py.set_fixed_random_seed(5)
        x = C.input_variable(4, dtype=np.float64)
        y = C.input_variable(3, dtype=np.float64)
        h = C.layers.Dense(8, activation=C.relu)(x)
        z = C.layers.Dense(3)(C.dropout(h, 0.3))
        loss = C.cross_entropy_with_softmax(z, y)
        learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9))
        return x, y, z, C.Trainer(z, (loss, C.classification_error(z, y)), [learner])

    def data(step):
        rng = np.random.RandomState(100 + step)
        return rng.standard_normal((6, 4)), np.eye(3)[rng.randint(0, 3, 6)]

    def train(trainer, x, y, start, stop, checkpoint=None, at=None, kill_at=None):
        for step in range(start, stop):
            if kill_at is not None and step == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            fx, fy = data(step)
            trainer.train_minibatch({x: fx, y: fy})
            if checkpoint is not None and step + 1 == at:
                trainer.save_checkpoint(checkpoint, {'step': step + 1, 'note': 'mid-run'})

    def params(z):
        return np.concatenate([np.asarray(p.value).ravel() for p in z.parameters])
''')

STEPS, CHECKPOINT_AT = 12, 5


def _run(code, tmp_path, expect_kill=False):
    # The cntk this test imported (in place or installed), for the child processes too.
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(C.__file__)))
    path = tmp_path / 'run.py'
    path.write_text(SCRIPT + textwrap.dedent(code))
    proc = subprocess.run([sys.executable, str(path)], env=env, cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=300)
    if expect_kill:
        assert proc.returncode == -signal.SIGKILL, proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _build_in_process():
    ns = {}
    exec(SCRIPT, ns)
    return ns


def test_restore_in_the_same_process_continues_bit_identically(tmp_path):
    ns = _build_in_process()
    ckp = str(tmp_path / 'trainer.ckp_model')
    x, y, z, trainer = ns['build']()
    ns['train'](trainer, x, y, 0, STEPS, checkpoint=ckp, at=CHECKPOINT_AT)
    straight = ns['params'](z)
    assert os.path.exists(ckp) and os.path.exists(ckp + '.ckp')
    assert sorted(os.listdir(str(tmp_path))) == ['trainer.ckp_model', 'trainer.ckp_model.ckp']

    x2, y2, z2, trainer2 = ns['build']()
    state = trainer2.restore_from_checkpoint(ckp)
    assert state == {'step': CHECKPOINT_AT, 'note': 'mid-run'}
    assert trainer2.total_number_of_samples_seen == 6 * CHECKPOINT_AT
    ns['train'](trainer2, x2, y2, CHECKPOINT_AT, STEPS)
    np.testing.assert_array_equal(ns['params'](z2), straight)


def test_restore_needs_a_matching_trainer(tmp_path):
    ns = _build_in_process()
    ckp = str(tmp_path / 'm')
    x, y, z, trainer = ns['build']()
    ns['train'](trainer, x, y, 0, 2)
    trainer.save_checkpoint(ckp)
    xo = C.input_variable(4, dtype=np.float64)
    zo = C.layers.Dense(3)(xo)
    yo = C.input_variable(3, dtype=np.float64)
    other = C.Trainer(zo, (C.cross_entropy_with_softmax(zo, yo),), [C.sgd(zo.parameters, C.learning_parameter_schedule(0.1))])
    with pytest.raises((ValueError, IOError)):
        other.restore_from_checkpoint(ckp)
    with pytest.raises(IOError, match='does not exist'):
        trainer.restore_from_checkpoint(str(tmp_path / 'missing'))
    with pytest.raises(TypeError):
        trainer.save_checkpoint(ckp, external_state=[1, 2])
    # A truncated state file: a clear error, and the trainer is left as it was.
    before = ns['params'](z)
    with open(ckp + '.ckp', 'rb') as f:
        data = f.read()
    with open(ckp + '.ckp', 'wb') as f:
        f.write(data[:len(data) // 2])
    with pytest.raises(IOError, match=r'm\.ckp'):
        trainer.restore_from_checkpoint(ckp)
    np.testing.assert_array_equal(ns['params'](z), before)


@pytest.mark.slow
def test_sigkill_after_a_checkpoint_then_resume_matches_an_uninterrupted_run(tmp_path):
    straight = _run('''
        x, y, z, trainer = build()
        train(trainer, x, y, 0, %d)
        np.save('straight.npy', params(z))
    ''' % STEPS, tmp_path)
    _run('''
        x, y, z, trainer = build()
        train(trainer, x, y, 0, %d, checkpoint='ckp.model', at=%d, kill_at=%d)
    ''' % (STEPS, CHECKPOINT_AT, CHECKPOINT_AT + 3), tmp_path, expect_kill=True)
    assert os.path.exists(str(tmp_path / 'ckp.model.ckp'))
    _run('''
        x, y, z, trainer = build()
        state = trainer.restore_from_checkpoint('ckp.model')
        assert state['step'] == %d, state
        train(trainer, x, y, state['step'], %d)
        np.save('resumed.npy', params(z))
    ''' % (CHECKPOINT_AT, STEPS), tmp_path)
    a, b = np.load(str(tmp_path / 'straight.npy')), np.load(str(tmp_path / 'resumed.npy'))
    np.testing.assert_array_equal(a, b)


def _session_setup():
    C.cntk_py.set_fixed_random_seed(3)
    rng = np.random.RandomState(7)
    # 64 samples: minibatches of 16 never straddle the end of a sweep, so a run stopped at a
    # multiple of 16 trains the same minibatches as the uninterrupted one.
    X = rng.standard_normal((64, 4)).astype(np.float32)
    Y = np.eye(3, dtype=np.float32)[rng.randint(0, 3, 64)]
    x, y = C.input_variable(4), C.input_variable(3)
    z = C.layers.Dense(3)(C.dropout(C.layers.Dense(6, activation=C.tanh)(x), 0.2))
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.05), C.momentum_schedule(0.9))])
    src = C.io.MinibatchSourceFromData(dict(x=X, y=Y))
    return z, trainer, src, {x: src.streams.x, y: src.streams.y}


def _session(tmp_path, name, max_samples, restore, preserve_all=False):
    z, trainer, src, input_map = _session_setup()
    cfg = C.train.CheckpointConfig(str(tmp_path / name), frequency=40, restore=restore, preserve_all=preserve_all)
    C.train.training_session(trainer, src, 16, input_map, max_samples=max_samples, checkpoint_config=cfg).train()
    return np.concatenate([np.asarray(p.value).ravel() for p in z.parameters]), trainer


@pytest.mark.parametrize('preserve_all', [False, True])
def test_training_session_checkpoints_and_resumes(tmp_path, preserve_all):
    straight, t = _session(tmp_path, 'straight', 200, restore=False)
    assert t.total_number_of_samples_seen == 200
    first, t = _session(tmp_path, 'resumed', 96, restore=False, preserve_all=preserve_all)
    files = sorted(os.listdir(str(tmp_path)))
    assert 'resumed' in files and 'resumed.ckp' in files
    if preserve_all:
        assert 'resumed1' in files and 'resumed2' in files and 'resumed2.ckp' in files
        os.remove(str(tmp_path / 'resumed'))  # restore then takes the highest numbered one
        os.remove(str(tmp_path / 'resumed.ckp'))
    resumed, t = _session(tmp_path, 'resumed', 200, restore=True)
    assert t.total_number_of_samples_seen == 200
    np.testing.assert_array_equal(resumed, straight)
    # Without restore, the session starts over (and overwrites the checkpoint).
    again, t = _session(tmp_path, 'resumed', 96, restore=False)
    np.testing.assert_array_equal(again, first)


def test_checkpoints_and_restore_bring_back_constants(tmpdir):
    # batch normalization's running statistics are constants: CNTK restores them too
    x = C.input_variable(4)
    f = C.layers.BatchNormalization()(x)
    trainer = C.Trainer(f, C.reduce_sum(f), C.sgd(f.parameters, C.learning_parameter_schedule_per_sample(0.1)))

    def set_all(v):
        for c in f.constants + f.parameters:
            c.value = 0 * c.value + v if c.shape else np.array(v, np.float32)

    def all_are(fn, v):
        return all((c.value == v).all() for c in fn.constants + fn.parameters)

    model, ckpt = str(tmpdir / 'model'), str(tmpdir / 'ckpt')
    set_all(1)
    f.save(model)
    set_all(2)
    trainer.save_checkpoint(ckpt)
    set_all(3)
    trainer.restore_from_checkpoint(ckpt)
    assert all_are(f, 2)
    f.restore(model)
    assert all_are(f, 1)
