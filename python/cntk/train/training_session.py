"""TrainingSession: the training loop over a minibatch source, with periodic
progress summaries, cross-validation, a final test and checkpoints (CNTK's training_session).
The loop is the engine's TrainingSession (include/cntk/training_session.h); this module keeps
CNTK's Python configuration classes and hands Python sources, progress writers and callbacks to it.
A checkpoint holds the trainer (Trainer.save_checkpoint) and, in its external state, the
training source's position (get_checkpoint_state) under CNTK's key 'TrainingMinibatchSource'."""
import enum
import sys

import numpy as np

from .. import _cntk
from ..variables import Record


class DataUnit(enum.IntEnum):
    """Units of frequencies and sizes: samples, minibatches, or sweeps over the data."""
    sample = 0
    minibatch = 1
    sweep = 2


class minibatch_size_schedule(object):
    """Minibatch sizes over training: an int, a list (one entry per `epoch_size` samples),
    or a list of (count, size) pairs."""

    def __init__(self, schedule, epoch_size=1):
        if isinstance(schedule, (int, np.integer)):
            self._steps = [(1, int(schedule))]
        else:
            steps = []
            for item in schedule:
                if isinstance(item, tuple):
                    steps.append((int(item[0]), int(item[1])))
                else:
                    steps.append((1, int(item)))
            if not steps:
                raise ValueError("minibatch_size_schedule: empty schedule")
            self._steps = steps
        for _, size in self._steps:
            if size <= 0:
                raise ValueError("minibatch sizes must be positive")
        self.epoch_size = int(epoch_size)

    def __getitem__(self, samples_seen):
        """The minibatch size after `samples_seen` samples."""
        unit = max(self.epoch_size, 1)
        position = samples_seen // unit
        for count, size in self._steps:
            if position < count:
                return size
            position -= count
        return self._steps[-1][1]


def _frequency(freq):
    if freq is None:
        return None, DataUnit.sample
    if isinstance(freq, tuple):
        return int(freq[0]), DataUnit(freq[1])
    return int(freq), DataUnit.sample


class CheckpointConfig(object):
    """Where and how often to checkpoint, and whether to restore from the last checkpoint.

    `frequency` None: one checkpoint at the end of training; 0: none. With `preserve_all`, each
    checkpoint is kept as `filename` + its index, and the last also under `filename`."""

    def __init__(self, filename, frequency=None, restore=True, preserve_all=False):
        frequency, unit = _frequency(frequency)
        if not filename:
            if frequency:
                raise ValueError("Checkpoint frequency cannot be specified without checkpoint_filename")
            if preserve_all:
                raise ValueError("CheckpointConfig: preserve_all needs a checkpoint file name")
            frequency, filename = 0, ''
        self.filename = filename
        self.frequency = sys.maxsize if frequency is None else frequency
        self.frequency_unit = unit
        self.restore = restore
        self.preserve_all = preserve_all


class CrossValidationConfig(object):
    """Evaluate on `minibatch_source` every `frequency` (None: once, at the end of training), at
    most `max_samples` samples each time; `callback(index, average_error, num_samples,
    num_minibatches)` is called after each pass (with zeros when there is no source); returning
    False from it stops training."""

    def __init__(self, minibatch_source=None, frequency=None, minibatch_size=32, callback=None, max_samples=None,
                 model_inputs_to_streams=None, criterion=None, source=None, mb_size=None):
        self.source = source if source is not None else minibatch_source
        frequency, self.frequency_unit = _frequency(frequency)
        if self.source is None and callback is None:
            if frequency:
                raise ValueError("Either minibatch_source of callback should be specified.")
            frequency = 0
        self.frequency = sys.maxsize if frequency is None else frequency
        self.mb_size = minibatch_size_schedule(mb_size if mb_size is not None else minibatch_size)
        self.callback = callback
        self.max_samples = sys.maxsize if max_samples is None else max_samples
        self.model_inputs_to_streams = model_inputs_to_streams
        self.criterion = criterion


class TestConfig(object):
    """Evaluate on `minibatch_source` once training is over."""

    def __init__(self, minibatch_source=None, minibatch_size=32, model_inputs_to_streams=None, criterion=None,
                 source=None, mb_size=None):
        self.source = source if source is not None else minibatch_source
        self.mb_size = minibatch_size_schedule(mb_size if mb_size is not None else minibatch_size)
        self.model_inputs_to_streams = model_inputs_to_streams
        self.criterion = criterion


def _as_schedule(mb_size):
    if isinstance(mb_size, minibatch_size_schedule):
        return mb_size
    return minibatch_size_schedule(mb_size)


def _source_and_map(source, input_map, function, infinitely_repeat=True):
    """NumPy/SciPy data (a tuple, one entry per argument) becomes a MinibatchSourceFromData."""
    from ..io import MinibatchSourceFromData, INFINITELY_REPEAT
    if isinstance(source, (tuple, list)) or isinstance(source, np.ndarray):
        data = tuple(source) if isinstance(source, (tuple, list)) else (source,)
        args = list(function.arguments)
        if len(data) != len(args):
            raise ValueError("%d data arrays given for a function with %d arguments" % (len(data), len(args)))
        if input_map is not None:
            raise ValueError("model_inputs_to_streams must not be given with NumPy data")
        streams = {}
        for i, (arg, d) in enumerate(zip(args, data)):
            name = arg.name or 'stream%d' % i
            if len(arg.dynamic_axes) > 1:
                from ..layers.typing import _VariableType
                streams[name] = (d, _VariableType(arg.shape, arg.is_sparse, list(arg.dynamic_axes), arg.dtype))
            else:
                streams[name] = d
        src = MinibatchSourceFromData(streams, max_samples=INFINITELY_REPEAT if infinitely_repeat else
                                      sum(1 for _ in range(len(data[0]))))
        input_map = {arg: src.streams[arg.name or 'stream%d' % i] for i, arg in enumerate(args)}
        return src, input_map
    return source, input_map


class _SessionSource(object):
    """A Python minibatch source as the engine's session reads it (_cntk._python_training_source):
    `next` returns None at the end, else the minibatch as (variable, Value) pairs and its sweep end."""

    def __init__(self, source, input_map, all_args):
        self.source, self.input_map, self.all_args = source, input_map, all_args
        self.has_state = hasattr(source, 'get_checkpoint_state') and hasattr(source, 'restore_from_checkpoint')
        self.infinite = hasattr(source, 'is_infinite') and bool(source.is_infinite())

    def next(self, size, workers, rank):
        from ..io import UserMinibatchSource, MinibatchSourceFromData
        from ..eval.evaluator import _minibatch_arguments
        source, input_map = self.source, self.input_map
        if not isinstance(source, UserMinibatchSource) or isinstance(source, MinibatchSourceFromData):
            parts = {} if workers == 1 else {'num_data_partitions': workers, 'partition_index': rank}
            if input_map is not None:
                parts['input_map'] = input_map
            mb = source.next_minibatch(size, **parts)
        else:
            # A UserMinibatchSource has CNTK's signature (size, number of workers, worker rank) and
            # returns data by stream; it is mapped to the model's inputs here.
            mb = source.next_minibatch(size, workers, rank)
            if mb and input_map is not None:
                mb = {var: mb[source.stream_info(si) if isinstance(si, str) else si] for var, si in input_map.items()}
        if not mb:
            return None
        pairs, sweep_end = _minibatch_arguments(mb, self.all_args)
        return pairs, bool(sweep_end)

    def state(self):
        return self.source.get_checkpoint_state()

    def restore(self, state):
        self.source.restore_from_checkpoint(state)


def _native_source(source, input_map, trainer):
    if source is None:
        return None
    return _cntk._python_training_source(_SessionSource(source, input_map, trainer._all_args))


class _SessionProgress(object):
    """The session's progress reports to the trainer's progress writers."""

    def __init__(self, trainer):
        self.trainer = trainer

    def training_minibatch(self):
        self.trainer._report_training_minibatch()

    def test_minibatch(self):
        self.trainer._report_test_minibatch()

    def training_summary(self):
        self.trainer.summarize_training_progress()

    def test_summary(self):
        self.trainer.summarize_test_progress()


def _native_schedule(schedule):
    return _cntk.minibatch_size_schedule(list(schedule._steps), schedule.epoch_size)


def _native_frequency(value, unit):
    return _cntk._Frequency(value, int(unit))


def _continue_unless_false(hook):
    def wrapped(*args):
        return hook(*args) is not False
    wrapped.__name__ = getattr(hook, '__name__', 'callback')
    wrapped.__doc__, wrapped._returns_bool = getattr(hook, '__doc__', None), True
    return wrapped


class TrainingSession(_cntk.TrainingSession):
    """Runs `trainer` over `mb_source` until `max_samples` samples (or the data ends).

    The loop is the engine's (include/cntk/training_session.h): after each minibatch the
    periodic actions run, in this order, whenever the units they count (samples, minibatches or
    sweeps, as the trainer's learners count them) enter a new period: checkpoint, progress
    summary, cross-validation. When training ends, each action whose last period was partial runs
    once more; then the test runs. A subclass may override the hooks (`on_minibatch_start`,
    `on_minibatch_end`, `on_checkpoint_start`, `on_checkpoint_end`, `on_cross_validation_end`,
    `minibatch_size`); they are called from the loop with the GIL held."""

    def __init__(self, trainer, mb_source, mb_size, model_inputs_to_streams, max_samples, progress_frequency,
                 checkpoint_config, cv_config, test_config):
        if trainer is None:
            raise ValueError("Trainer must not be None.")
        if mb_source is None:
            raise ValueError("Training minibatch source must not be None.")
        self.trainer = trainer
        self.mb_source = mb_source
        self.mb_size = _as_schedule(mb_size)
        self.model_inputs_to_streams = model_inputs_to_streams
        self.max_samples = max_samples if max_samples is not None else sys.maxsize
        if self.max_samples == 0:
            raise ValueError("TrainingSession: max_samples must not be zero")
        progress, progress_unit = _frequency(progress_frequency)
        self.progress_frequency = sys.maxsize if progress is None else progress
        self.progress_unit = progress_unit
        self.checkpoint_config = checkpoint_config
        self.cv_config = cv_config
        self.test_config = test_config
        self.cv_callback = cv_config.callback if cv_config is not None else None

        ckp = checkpoint_config
        native_ckp = (_cntk._CheckpointConfig(ckp.filename, _native_frequency(ckp.frequency, ckp.frequency_unit),
                                              bool(ckp.restore), bool(ckp.preserve_all))
                      if ckp is not None else _cntk._CheckpointConfig('', _native_frequency(0, DataUnit.sample),
                                                                      False, False))
        cv = cv_config
        if cv is not None:
            cv_map = cv.model_inputs_to_streams if cv.model_inputs_to_streams is not None else model_inputs_to_streams
            native_cv = _cntk._CrossValidationConfig(
                _native_source(cv.source, cv_map, trainer), _native_frequency(cv.frequency, cv.frequency_unit),
                _native_schedule(cv.mb_size), min(cv.max_samples, sys.maxsize),
                _continue_unless_false(cv.callback) if cv.callback is not None else None)
        else:
            native_cv = _cntk._CrossValidationConfig(None, _native_frequency(0, DataUnit.sample),
                                                     _cntk.minibatch_size_schedule(32), sys.maxsize, None)
        test = test_config
        test_map = None
        if test is not None:
            test_map = test.model_inputs_to_streams if test.model_inputs_to_streams is not None \
                else model_inputs_to_streams
        native_test = _cntk._TestConfig(_native_source(test.source if test is not None else None, test_map, trainer),
                                        _native_schedule(test.mb_size) if test is not None
                                        else _cntk.minibatch_size_schedule(32))
        super(TrainingSession, self).__init__(
            trainer, _native_source(mb_source, model_inputs_to_streams, trainer),
            _native_schedule(self.mb_size), min(self.max_samples, sys.maxsize),
            _native_frequency(self.progress_frequency, progress_unit), native_ckp, native_cv, native_test,
            [_cntk._python_training_progress(_SessionProgress(trainer))])

    def __init_subclass__(cls, **kwargs):
        # The engine reads these hooks' results as bools; a Python override that returns None
        # (or anything but False) continues training, as CNTK's did.
        super().__init_subclass__(**kwargs)
        for name in ('on_minibatch_end', 'on_cross_validation_end'):
            hook = cls.__dict__.get(name)
            if hook is not None and not getattr(hook, '_returns_bool', False):
                setattr(cls, name, _continue_unless_false(hook))

    def train(self, device=None):
        """Runs the training loop. With a CheckpointConfig, checkpoints are written every `frequency`
        and at the end, and training resumes from the last checkpoint when `restore` is set. If it
        raises, a running profiler session writes its files before the exception propagates."""
        self._train()

    def restore_from_checkpoint(self, filename):
        """Restores the trainer and the training source from a checkpoint the session wrote."""
        self._restore_from_checkpoint(filename)

    def on_cross_validation_end(self, index, average_error, num_samples, num_minibatches):
        """Called after each cross-validation pass; calls `cv_callback` (the configuration's
        callback). Returns False to stop training."""
        if self.cv_callback is not None:
            return self.cv_callback(index, average_error, num_samples, num_minibatches) is not False
        return True


def training_session(trainer, mb_source, mb_size, model_inputs_to_streams=None, progress_frequency=None,
                     max_samples=None, checkpoint_config=None, cv_config=None, test_config=None):
    """A TrainingSession; call `.train()` on it."""
    return TrainingSession(trainer, mb_source, mb_size, model_inputs_to_streams, max_samples, progress_frequency,
                           checkpoint_config, cv_config, test_config)


__all__ = ['DataUnit', 'minibatch_size_schedule', 'CheckpointConfig', 'CrossValidationConfig', 'TestConfig',
           'TrainingSession', 'training_session']
