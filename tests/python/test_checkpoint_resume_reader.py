"""Exact resume with a file reader: training from a randomized CTF MinibatchSource with dropout,
checkpointed (model, learner, random state and the source's position as external state), killed with
SIGKILL, then resumed in a new process, ends with the parameters of an uninterrupted run, bit for bit."""
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cntk as C


SCRIPT = textwrap.dedent('''
    import os, signal, sys
    import numpy as np
    import cntk as C
    from cntk.io import MinibatchSource, CTFDeserializer, StreamDef, StreamDefs

    STEPS = 14

    def build():
        C.cntk_py.set_fixed_random_seed(11)
        x = C.input_variable(5)
        y = C.input_variable(3)
        h = C.layers.Dense(16, activation=C.relu)(x)
        z = C.layers.Dense(3)(C.layers.Dropout(0.3)(h))
        loss = C.cross_entropy_with_softmax(z, y)
        learner = C.adam(z.parameters, C.learning_parameter_schedule(0.01), C.momentum_schedule(0.9))
        trainer = C.Trainer(z, (loss, C.classification_error(z, y)), [learner])
        # Chunks of about 1 kB: the randomizer shuffles chunks and sequences within a window of them.
        src = MinibatchSource(CTFDeserializer('data.ctf', StreamDefs(
            features=StreamDef(field='x', shape=5), labels=StreamDef(field='y', shape=3, is_sparse=True)),
            chunk_size_in_bytes=1024), randomize=True, randomization_window_in_chunks=3, randomization_seed=4)
        return x, y, z, trainer, src

    def train(x, y, trainer, src, start, checkpoint_at=None, kill_at=None):
        for step in range(start, STEPS):
            if step == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            mb = src.next_minibatch(20)
            trainer.train_minibatch({x: mb[src.streams.features], y: mb[src.streams.labels]})
            if step + 1 == checkpoint_at:
                trainer.save_checkpoint('ckp.model', {'step': step + 1, 'source': src.get_checkpoint_state()})

    def params(z):
        return np.concatenate([np.asarray(p.value).ravel() for p in z.parameters])
''')


def _run(code, tmp_path, expect_kill=False):
    # The cntk this test imported (in place or installed), for the child processes too.
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(C.__file__)))
    path = tmp_path / 'run.py'
    path.write_text(SCRIPT + textwrap.dedent(code))
    proc = subprocess.run([sys.executable, str(path)], env=env, cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == (-signal.SIGKILL if expect_kill else 0), proc.stderr


def _write_data(path):
    rng = np.random.default_rng(0)
    with open(path, 'w') as f:
        for i in range(120):
            label = rng.integers(0, 3)
            f.write('%d |x %s |y %d:1\n' % (i, ' '.join('%.4f' % v for v in rng.standard_normal(5) + label), label))


@pytest.mark.slow
def test_sigkill_then_resume_with_a_randomized_reader_and_dropout(tmp_path):
    _write_data(str(tmp_path / 'data.ctf'))
    _run('''
        x, y, z, trainer, src = build()
        train(x, y, trainer, src, 0)
        np.save('straight.npy', params(z))
    ''', tmp_path)
    _run('''
        x, y, z, trainer, src = build()
        train(x, y, trainer, src, 0, checkpoint_at=8, kill_at=11)
    ''', tmp_path, expect_kill=True)
    _run('''
        x, y, z, trainer, src = build()
        state = trainer.restore_from_checkpoint('ckp.model')
        src.restore_from_checkpoint(state['source'])
        train(x, y, trainer, src, state['step'])
        np.save('resumed.npy', params(z))
    ''', tmp_path)
    straight, resumed = np.load(str(tmp_path / 'straight.npy')), np.load(str(tmp_path / 'resumed.npy'))
    np.testing.assert_array_equal(straight, resumed)
    # The run is not trivially the same: another randomization seed gives other parameters.
    _run('''
        x, y, z, trainer, src = build()
        src = MinibatchSource(CTFDeserializer('data.ctf', StreamDefs(
            features=StreamDef(field='x', shape=5), labels=StreamDef(field='y', shape=3, is_sparse=True)),
            chunk_size_in_bytes=1024), randomize=True, randomization_window_in_chunks=3, randomization_seed=5)
        train(x, y, trainer, src, 0)
        np.save('other.npy', params(z))
    ''', tmp_path)
    assert not np.array_equal(straight, np.load(str(tmp_path / 'other.npy')))
