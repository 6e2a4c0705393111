"""Function.train / Function.test and the training session over NumPy data and minibatch sources."""
import os
import sys

import numpy as np
import pytest
import scipy.sparse

import cntk as C
from cntk.layers.typing import Tensor, SparseTensor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'examples', 'python'))


def _blobs(n=250, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 2, size=n)
    x = ((rng.randn(n, 2) + 3) * (y[:, None] + 1)).astype(np.float32)
    yy = scipy.sparse.csr_matrix((np.ones(n, np.float32), (range(n), y)), shape=(n, 2))
    return x, yy


def _criterion():
    # A fixed initializer seed: the error threshold below must not depend on how many
    # parameters earlier tests happened to initialize.
    model = C.layers.Dense(2, activation=None, init=C.glorot_uniform(seed=4))

    @C.Function.with_signature(Tensor[2], SparseTensor[2])
    def criterion(data, label_one_hot):
        z = model(data)
        return C.cross_entropy_with_softmax(z, label_one_hot), C.classification_error(z, label_one_hot)
    return model, criterion


def test_train_on_numpy_returns_summaries():
    X, Y = _blobs()
    model, criterion = _criterion()
    progress = criterion.train((X, Y), minibatch_size=25, max_epochs=20, epoch_size=125,
                               parameter_learners=[C.sgd(model.parameters, 0.5)])
    assert len(progress.epoch_summaries) == 20
    assert all(s.samples == 125 for s in progress.epoch_summaries)
    assert progress.epoch_summaries[-1].loss < progress.epoch_summaries[0].loss
    result = criterion.test((X, Y), minibatch_size=25)
    assert result.samples == 250 and result.metric < 0.25


def test_train_with_source_needs_epoch_size_and_callbacks_are_checked():
    X, Y = _blobs()
    model, criterion = _criterion()
    src = C.io.MinibatchSourceFromData(dict(x=X, y=Y))
    with pytest.raises(ValueError, match='epoch_size'):
        criterion.train(src, streams=[src.streams.x, src.streams.y], parameter_learners=[C.sgd(model.parameters, 0.1)])
    with pytest.raises(ValueError):
        criterion.train((X, Y), parameter_learners=[C.sgd(model.parameters, 0.1)], callbacks=[object()])
    with pytest.raises(ValueError):
        criterion.train((X, Y), max_epochs=1, max_samples=10, parameter_learners=[C.sgd(model.parameters, 0.1)])


def test_train_from_source_with_progress_writer_and_test_config(capsys):
    X, Y = _blobs()
    model, criterion = _criterion()
    src = C.io.MinibatchSourceFromData(dict(x=X, y=Y))
    test_src = C.io.MinibatchSourceFromData(dict(x=X, y=Y), max_samples=len(X))
    printer = C.logging.ProgressPrinter(tag='Training')
    progress = criterion.train(src, streams=[src.streams.x, src.streams.y], minibatch_size=50, epoch_size=250,
                               max_epochs=3, parameter_learners=[C.sgd(model.parameters, 0.1)],
                               callbacks=[printer, C.train.TestConfig(test_src, minibatch_size=100,
                                          model_inputs_to_streams={criterion.arguments[0]: test_src.streams.x,
                                                                   criterion.arguments[1]: test_src.streams.y})])
    out = capsys.readouterr().out
    assert out.count('Finished Epoch') == 3 and 'Finished Evaluation' in out
    assert progress.test_summary.samples == 250


def test_minibatch_size_schedule_and_cross_validation_callback():
    sched = C.train.minibatch_size_schedule([(2, 10), (1, 20)], epoch_size=100)
    assert sched[0] == 10 and sched[150] == 10 and sched[200] == 20 and sched[10000] == 20
    X, Y = _blobs()
    model, criterion = _criterion()
    calls = []

    def cv(index, average_error, num_samples, num_minibatches):
        calls.append(index)
        return index < 1  # stop after the second call
    criterion.train((X, Y), minibatch_size=25, max_epochs=10, epoch_size=250,
                    parameter_learners=[C.sgd(model.parameters, 0.1)],
                    callbacks=[C.train.CrossValidationConfig(frequency=250, callback=cv)])
    assert calls == [0, 1]


def test_logistic_regression_example_learns():
    import logistic_regression
    assert logistic_regression.train(verbose=False) < 0.15  # the blobs overlap: about 10% is the best possible


def _ctf_source(tmp_path, **kw):
    # 10 sequences of one sample each: x is the line's number, y its parity.
    path = tmp_path / 'data.ctf'
    path.write_text(''.join('%d |x %d |y %d %d\n' % (i, i, i % 2, 1 - i % 2) for i in range(10)))
    return C.io.MinibatchSource(C.io.CTFDeserializer(str(path), C.io.StreamDefs(
        x=C.io.StreamDef('x', 1), y=C.io.StreamDef('y', 2))), randomize=False, **kw)


def _session_model():
    x, y = C.input_variable(1), C.input_variable(2)
    z = C.layers.Dense(2, init=C.glorot_uniform(seed=1))(x)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.01))])
    return x, y, trainer


def test_session_periodic_actions_follow_cntk(tmp_path):
    # As CNTK's training session: an infinite source with no max_samples raises; cross-validation reads
    # its source to the end, from the same position each time, and once more for the last partial
    # period; preserve_all names checkpoints by period index and keeps the last under the plain name.
    x, y, trainer = _session_model()
    src = _ctf_source(tmp_path)
    input_map = {x: src.streams.x, y: src.streams.y}
    with pytest.raises(ValueError, match='Train minibatch source must have a limited number'):
        C.training_session(trainer, src, 4, input_map).train()
    calls = []
    cv_src = _ctf_source(tmp_path, max_sweeps=1)
    cv = C.CrossValidationConfig(cv_src, frequency=8, minibatch_size=3,
                                 callback=lambda *a: calls.append(a) or True)
    ckp = C.CheckpointConfig(str(tmp_path / 'ck'), frequency=(2, C.train.DataUnit.minibatch), preserve_all=True)
    C.training_session(trainer, src, 4, input_map, max_samples=20, cv_config=cv, checkpoint_config=ckp).train()
    assert trainer.total_number_of_samples_seen == 20
    assert [(i, n, m) for i, _, n, m in calls] == [(0, 10, 4), (1, 10, 4), (2, 10, 4)]  # after 8, 16, 20 samples
    files = sorted(f for f in os.listdir(str(tmp_path)) if f.startswith('ck'))
    assert files == ['ck', 'ck.ckp', 'ck0', 'ck0.ckp', 'ck1', 'ck1.ckp', 'ck2', 'ck2.ckp']  # after minibatch 2, 4, 5
    # Restoring the last checkpoint: nothing is left to train, no action runs again.
    calls.clear()
    C.training_session(trainer, _ctf_source(tmp_path), 4, input_map, max_samples=20, cv_config=cv,
                       checkpoint_config=ckp).train()
    assert calls == [] and trainer.total_number_of_samples_seen == 20


def test_session_reads_a_user_minibatch_source_by_cntk_signature():
    x, y, trainer = _session_model()

    class Source(C.io.UserMinibatchSource):
        def __init__(self):
            self.xs = C.io.StreamInformation('x', 0, 'dense', np.float32, (1,))
            self.ys = C.io.StreamInformation('y', 1, 'dense', np.float32, (2,))
            self.calls = []
            super(Source, self).__init__()

        def stream_infos(self):
            return [self.xs, self.ys]

        def next_minibatch(self, num_samples, number_of_workers, worker_rank, device=None):
            self.calls.append((num_samples, number_of_workers, worker_rank))
            data = np.ones((num_samples, 1), np.float32)
            labels = np.tile(np.float32([[1, 0]]), (num_samples, 1))
            return {self.xs: C.io.MinibatchData(C.Value(batch=data), num_samples, num_samples, False),
                    self.ys: C.io.MinibatchData(C.Value(batch=labels), num_samples, num_samples, False)}

    src = Source()
    assert src['x'] is src.xs
    C.training_session(trainer, src, 3, {x: src.xs, y: 'y'}, max_samples=7).train()
    assert src.calls == [(3, 1, 0), (3, 1, 0), (1, 1, 0)] and trainer.total_number_of_samples_seen == 7


def test_session_subclass_hooks_are_called_from_the_engine_loop(tmp_path):
    # The loop runs in C++; a Python subclass's hooks are called from it (CNTK's TrainingSession
    # hooks). A hook returning None continues; False from on_minibatch_end stops training.
    x, y, trainer = _session_model()
    src = _ctf_source(tmp_path)
    input_map = {x: src.streams.x, y: src.streams.y}
    events = []

    class Session(C.train.TrainingSession):
        def on_minibatch_start(self):
            events.append('start')

        def on_minibatch_end(self):
            events.append(('end', self.trainer.total_number_of_samples_seen))
            return False if self.trainer.total_number_of_samples_seen >= 12 else None

        def on_checkpoint_start(self, index):
            events.append(('ckp', index))

        def on_cross_validation_end(self, index, average_error, num_samples, num_minibatches):
            events.append(('cv', index, num_samples))

        def minibatch_size(self):
            return 3

    cv = C.CrossValidationConfig(_ctf_source(tmp_path, max_sweeps=1), frequency=6, minibatch_size=5)
    ckp = C.CheckpointConfig(str(tmp_path / 'ck'), frequency=9, restore=False)
    Session(trainer, src, 4, input_map, 100, None, ckp, cv, None).train()
    # Minibatches of 3 (the override, not 4); stopped after 12 samples. As in CNTK's loop the
    # hooks also run around the last, empty read that ends training.
    assert [e for e in events if e[0] == 'end'] == [('end', 3), ('end', 6), ('end', 9), ('end', 12), ('end', 12)]
    assert events.count('start') == 5
    assert ('cv', 0, 10) in events and ('cv', 1, 10) in events and ('ckp', 0) in events
    assert os.path.exists(str(tmp_path / 'ck.ckp'))


def test_session_callback_errors_reach_the_caller(tmp_path):
    x, y, trainer = _session_model()
    src = _ctf_source(tmp_path)

    def cv(*args):
        raise KeyError('from the callback')

    session = C.training_session(trainer, src, 4, {x: src.streams.x, y: src.streams.y}, max_samples=20,
                                 cv_config=C.CrossValidationConfig(frequency=8, callback=cv))
    with pytest.raises(KeyError, match='from the callback'):
        session.train()
    assert trainer.total_number_of_samples_seen == 8
