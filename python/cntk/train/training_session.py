"""TrainingSession: the training loop over a minibatch source, with periodic
progress summaries, cross-validation, a final test and checkpoints (CNTK's training_session).
A checkpoint holds the trainer (Trainer.save_checkpoint) and, in its external state, the
training source's position (get_checkpoint_state) under CNTK's key 'TrainingMinibatchSource'."""
import enum
import os
import sys

import numpy as np

from .. import _cntk
from ..debugging.profiler import _phase as _profiler_phase, _flush_after_error as _flush_profiler_after_error
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


def _is_infinite(source, max_samples=sys.maxsize):
    """Whether reading `source` up to `max_samples` never ends (CNTK's check)."""
    from ..io import INFINITELY_REPEAT
    limitless = max_samples is None or max_samples == INFINITELY_REPEAT or max_samples >= np.iinfo(np.int64).max
    return limitless and hasattr(source, 'is_infinite') and bool(source.is_infinite())


class _Action(object):
    """A periodic action of the session: checkpoint, progress summary or cross-validation."""

    def __init__(self, frequency, unit, run):
        self.frequency, self.unit, self.run = frequency, unit, run
        self.index = 0        # the period the units seen are in
        self.last_count = 0   # the units seen when it last ran


class TrainingSession(object):
    """Runs `trainer` over `mb_source` until `max_samples` samples (or the data ends).

    After each minibatch the periodic actions run, in this order, whenever the units they count
    (samples, minibatches or sweeps, as the trainer's learners count them) enter a new period:
    checkpoint, progress summary, cross-validation. When training ends, each action whose last
    period was partial runs once more; then the test runs."""

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
        # Distributed learners (CNTK's rule): each worker reads its own partition of the data once
        # every learner is distributed (after the longest warm start), block momentum reads
        # `workers` times the minibatch size, and tests sum over all workers.
        self._parallel_after, self._rank, self._workers, self._mb_scale = 0, 0, 1, 1
        for learner in trainer.parameter_learners:
            if isinstance(learner, _cntk.DistributedLearner):
                self._parallel_after = max(self._parallel_after, learner.parallelization_after())
                self._rank = learner.communicator().current_worker().global_rank
                self._workers = len(learner.communicator().workers())
                self._mb_scale = learner.minibatch_size_scale_factor()
        self._actions = []
        ckp = checkpoint_config
        if ckp is not None and ckp.frequency:
            self._actions.append(_Action(ckp.frequency, ckp.frequency_unit, self._checkpoint_action))
        if self.progress_frequency:
            self._actions.append(_Action(self.progress_frequency, progress_unit, self._progress_action))
        if cv_config is not None and cv_config.frequency:
            self._actions.append(_Action(cv_config.frequency, cv_config.frequency_unit, self._cross_validate))

    def _next(self, source, size, input_map, workers=1, rank=0):
        from ..io import UserMinibatchSource, MinibatchSourceFromData
        if size <= 0:
            return {}
        if not isinstance(source, UserMinibatchSource) or isinstance(source, MinibatchSourceFromData):
            parts = {} if workers == 1 else {'num_data_partitions': workers, 'partition_index': rank}
            if input_map is not None:
                return source.next_minibatch(size, input_map=input_map, **parts)
            return source.next_minibatch(size, **parts)
        # A UserMinibatchSource has CNTK's signature (size, number of workers, worker rank) and
        # returns data by stream; the session maps it to the model's inputs.
        mb = source.next_minibatch(size, workers, rank)
        if not mb or input_map is None:
            return mb
        return {var: mb[source.stream_info(si) if isinstance(si, str) else si] for var, si in input_map.items()}

    def _units_seen(self, unit):
        if unit == DataUnit.sample:
            return self.trainer.total_number_of_samples_seen
        from .trainer import _native_learner
        learner = _native_learner(self.trainer.parameter_learners[0])
        return (learner.total_number_of_minibatches_seen() if unit == DataUnit.minibatch
                else learner.total_number_of_sweeps_seen())

    # The key of the training source's position in a checkpoint's external state (CNTK's).
    _SOURCE_KEY = 'TrainingMinibatchSource'

    def _save_checkpoint(self, filename):
        state = {}
        if hasattr(self.mb_source, 'get_checkpoint_state'):
            state[self._SOURCE_KEY] = self.mb_source.get_checkpoint_state()
        self.trainer.save_checkpoint(filename, state)

    def _checkpoint_action(self, index):
        cfg = self.checkpoint_config
        self._save_checkpoint(cfg.filename + (str(index) if cfg.preserve_all else ''))
        # As in CNTK, the profiler is enabled after each checkpoint (so the first
        # checkpoint period is not profiled); this has no effect unless start_profiler ran.
        _cntk.enable_profiler()
        return True

    def _progress_action(self, index):
        self.trainer.summarize_training_progress()
        return True

    def _checkpoint_to_restore(self):
        """The checkpoint file itself, or else the <filename>N with the largest N (preserve_all), or None."""
        name = self.checkpoint_config.filename
        if os.path.exists(name):
            return name
        folder, base = os.path.split(name)
        if folder and not os.path.isdir(folder):
            os.makedirs(folder, exist_ok=True)
        best, best_n = None, -1
        for f in os.listdir(folder or '.'):
            suffix = f[len(base):]
            if f.startswith(base) and suffix.isdigit() and os.path.exists(os.path.join(folder, f) + '.ckp'):
                if int(suffix) > best_n:
                    best, best_n = os.path.join(folder, f), int(suffix)
        return best

    def _restore_checkpoint(self):
        """Restores the trainer and the training source, and puts each action in its period."""
        path = self._checkpoint_to_restore()
        if path is None:
            return
        state = self.trainer.restore_from_checkpoint(path)
        if self._SOURCE_KEY in state and hasattr(self.mb_source, 'restore_from_checkpoint'):
            self.mb_source.restore_from_checkpoint(state[self._SOURCE_KEY])
        for a in self._actions:
            count = self._units_seen(a.unit)
            a.index = count // a.frequency
            a.last_count = count - count % a.frequency

    def train(self, device=None):
        """Runs the training loop. With a CheckpointConfig, checkpoints are written every `frequency`
        and at the end, and training resumes from the last checkpoint when `restore` is set. If it
        raises, a running profiler session writes its files before the exception propagates."""
        try:
            self._train()
        except BaseException:
            _flush_profiler_after_error()
            raise

    def _train(self):
        trainer = self.trainer
        ckp = self.checkpoint_config
        if ckp is not None and ckp.restore and ckp.filename:
            self._restore_checkpoint()
        restored = trainer.total_number_of_samples_seen
        if _is_infinite(self.mb_source, self.max_samples):
            raise ValueError("Train minibatch source must have a limited number of samples or sweeps.")
        early_exit = False
        should_train = True
        while should_train:
            seen = trainer.total_number_of_samples_seen
            left = 0 if early_exit or self.max_samples <= seen else self.max_samples - seen
            distributed = self._workers > 1 and seen >= self._parallel_after
            workers, rank, scale = (self._workers, self._rank, self._mb_scale) if distributed else (1, 0, 1)
            with _profiler_phase('read minibatch'):
                mb = self._next(self.mb_source, min(self.mb_size[seen] * scale, left), self.model_inputs_to_streams,
                                workers, rank)
            # An empty minibatch ends training (train_minibatch returns False for it); a worker
            # out of data still trains it, since the others may not be.
            if mb or self._workers > 1:
                should_train = bool(trainer.train_minibatch(mb or {}))
            else:
                should_train = False
            for a in self._actions:
                count = self._units_seen(a.unit)
                index = count // a.frequency
                if index != a.index:
                    early_exit |= a.run(a.index) is False
                    a.index, a.last_count = index, count
        if restored != trainer.total_number_of_samples_seen:
            # The last, partial period of each action.
            for a in self._actions:
                count = self._units_seen(a.unit)
                if count % a.frequency != 0 and count != a.last_count:
                    a.run(a.index)
        if ckp is not None and ckp.frequency and ckp.preserve_all and not os.path.exists(ckp.filename):
            self._save_checkpoint(ckp.filename)  # the final state, under the plain file name too
        self._test()

    def _evaluate(self, source, input_map, mb_size, max_samples):
        """Tests the trainer on `source` until it ends or `max_samples` samples were read; returns
        (error sum, samples, minibatches)."""
        if input_map is None:
            input_map = self.model_inputs_to_streams
        total = minibatches = 0
        error_sum = 0.0
        distributed = self._workers > 1
        while True:
            mb = self._next(source, min(mb_size[total], max_samples - total), input_map, self._workers, self._rank)
            if not mb and not distributed:
                break
            self.trainer._test(mb or {}, distributed)
            prev = self.trainer._previous_test_minibatch()
            if distributed and prev.samples == 0:
                break  # every worker is out of data
            error_sum += prev.sum
            total += prev.samples
            minibatches += 1
        return error_sum, total, minibatches

    def _cross_validate(self, index):
        # The training source's position is kept across cross-validation (as CNTK does, so that
        # truncated sequences start anew), and the cross-validation source is read from the same
        # position each time.
        state = self.mb_source.get_checkpoint_state() if hasattr(self.mb_source, 'get_checkpoint_state') else None
        cfg = self.cv_config
        if cfg.source is not None:
            if _is_infinite(cfg.source, cfg.max_samples):
                raise ValueError("Cross validation minibatch source must have a limited number of samples or sweeps.")
            position = cfg.source.get_checkpoint_state()
            error_sum, total, mbs = self._evaluate(cfg.source, cfg.model_inputs_to_streams, cfg.mb_size,
                                                   cfg.max_samples)
            cfg.source.restore_from_checkpoint(position)
            self.trainer.summarize_test_progress()
            result = self.on_cross_validation_end(index, error_sum / total if total else 0.0, total, mbs)
        else:
            result = self.on_cross_validation_end(index, 0, 0, 0)
        if state is not None:
            self.mb_source.restore_from_checkpoint(state)
        return result is not False

    def on_cross_validation_end(self, index, average_error, num_samples, num_minibatches):
        """Called after each cross-validation pass; calls the configuration's callback. Returns
        False to stop training."""
        if self.cv_callback is not None:
            return self.cv_callback(index, average_error, num_samples, num_minibatches)
        return True

    def _test(self):
        cfg = self.test_config
        if cfg is None or cfg.source is None:
            return
        if _is_infinite(cfg.source):
            raise ValueError("Test minibatch source must have a limited number of samples or sweeps.")
        self._evaluate(cfg.source, cfg.model_inputs_to_streams, cfg.mb_size, sys.maxsize)
        self.trainer.summarize_test_progress()


def training_session(trainer, mb_source, mb_size, model_inputs_to_streams=None, progress_frequency=None,
                     max_samples=None, checkpoint_config=None, cv_config=None, test_config=None):
    """A TrainingSession; call `.train()` on it."""
    return TrainingSession(trainer, mb_source, mb_size, model_inputs_to_streams, max_samples, progress_frequency,
                           checkpoint_config, cv_config, test_config)


__all__ = ['DataUnit', 'minibatch_size_schedule', 'CheckpointConfig', 'CrossValidationConfig', 'TestConfig',
           'TrainingSession', 'training_session']
