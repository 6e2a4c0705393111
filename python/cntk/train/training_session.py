"""TrainingSession: the training loop over a minibatch source, with periodic
progress summaries, cross-validation, a final test and checkpoints (CNTK's training_session).
A checkpoint holds the trainer (Trainer.save_checkpoint) and, in its external state, the
training source's position (get_checkpoint_state) under CNTK's key 'TrainingMinibatchSource'."""
import enum

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
    """Where and how often to checkpoint, and whether to restore from the last checkpoint."""

    def __init__(self, filename, frequency=None, restore=True, preserve_all=False):
        if not filename:
            raise ValueError("CheckpointConfig: needs a filename")
        self.filename = filename
        self.frequency, self.frequency_unit = _frequency(frequency)
        self.restore = restore
        self.preserve_all = preserve_all


class CrossValidationConfig(object):
    """Evaluate on `minibatch_source` every `frequency` samples (or call `callback(index, average_error,
    num_samples, num_minibatches)`; returning False from it stops training)."""

    def __init__(self, minibatch_source=None, frequency=None, minibatch_size=32, callback=None, max_samples=None,
                 model_inputs_to_streams=None, criterion=None, source=None, mb_size=None):
        self.source = source if source is not None else minibatch_source
        self.frequency, self.frequency_unit = _frequency(frequency)
        self.mb_size = minibatch_size_schedule(mb_size if mb_size is not None else minibatch_size)
        self.callback = callback
        self.max_samples = max_samples
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


class TrainingSession(object):
    """Runs `trainer` over `mb_source` until `max_samples` samples (or the data ends)."""

    def __init__(self, trainer, mb_source, mb_size, model_inputs_to_streams, max_samples, progress_frequency,
                 checkpoint_config, cv_config, test_config):
        if trainer is None:
            raise ValueError("TrainingSession: needs a trainer")
        self.trainer = trainer
        self.mb_source = mb_source
        self.mb_size = _as_schedule(mb_size)
        self.model_inputs_to_streams = model_inputs_to_streams
        self.max_samples = max_samples if max_samples is not None else np.iinfo(np.int64).max
        self.progress_frequency, self.progress_unit = _frequency(progress_frequency)
        self.checkpoint_config = checkpoint_config
        self.cv_config = cv_config
        self.test_config = test_config

    def _next(self, source, size, input_map):
        if input_map is not None:
            return source.next_minibatch(size, input_map=input_map)
        return source.next_minibatch(size)

    def _due(self, freq, unit, samples, minibatches, sweeps, last):
        if freq is None or freq <= 0:
            return False
        position = {DataUnit.sample: samples, DataUnit.minibatch: minibatches, DataUnit.sweep: sweeps}[unit]
        return position // freq > last // freq if unit == DataUnit.sample else position % freq == 0

    # The key of the training source's position in a checkpoint's external state (CNTK's).
    _SOURCE_KEY = 'TrainingMinibatchSource'

    def _save_checkpoint(self, index=None):
        cfg = self.checkpoint_config
        state = {}
        if hasattr(self.mb_source, 'get_checkpoint_state'):
            state[self._SOURCE_KEY] = self.mb_source.get_checkpoint_state()
        filename = cfg.filename + (str(index) if cfg.preserve_all and index is not None else '')
        self.trainer.save_checkpoint(filename, state)

    def _checkpoint_to_restore(self):
        """The checkpoint file itself, or else the <filename>N with the largest N (preserve_all), or None."""
        import os
        name = self.checkpoint_config.filename
        if os.path.exists(name):
            return name
        folder, base = os.path.split(name)
        best, best_n = None, -1
        for f in os.listdir(folder or '.'):
            suffix = f[len(base):]
            if f.startswith(base) and suffix.isdigit() and os.path.exists(os.path.join(folder, f) + '.ckp'):
                if int(suffix) > best_n:
                    best, best_n = os.path.join(folder, f), int(suffix)
        return best

    def _restore_checkpoint(self):
        """Restores the trainer and the training source; returns the number of samples trained so far."""
        path = self._checkpoint_to_restore()
        if path is None:
            return 0
        state = self.trainer.restore_from_checkpoint(path)
        if self._SOURCE_KEY in state and hasattr(self.mb_source, 'restore_from_checkpoint'):
            self.mb_source.restore_from_checkpoint(state[self._SOURCE_KEY])
        return self.trainer.total_number_of_samples_seen

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
        samples = minibatches = sweeps = 0
        ckp = self.checkpoint_config
        if ckp is not None and ckp.restore:
            samples = self._restore_checkpoint()
        last_progress = last_cv = last_checkpoint = samples
        cv_index = 0
        stop = False
        while samples < self.max_samples and not stop:
            size = min(self.mb_size[samples], self.max_samples - samples)
            with _profiler_phase('read minibatch'):
                mb = self._next(self.mb_source, size, self.model_inputs_to_streams)
            if not mb:
                break
            trainer.train_minibatch(mb)
            n = trainer.previous_minibatch_sample_count
            samples += n
            minibatches += 1
            if any(getattr(d, 'end_of_sweep', False) for d in mb.values()):
                sweeps += 1
            if self._due(self.progress_frequency, self.progress_unit, samples, minibatches, sweeps, last_progress):
                trainer.summarize_training_progress()
                last_progress = samples
            if ckp is not None and self._due(ckp.frequency, ckp.frequency_unit, samples, minibatches, sweeps,
                                             last_checkpoint):
                last_checkpoint = samples
                position = {DataUnit.sample: samples, DataUnit.minibatch: minibatches,
                            DataUnit.sweep: sweeps}[ckp.frequency_unit]
                self._save_checkpoint(position // ckp.frequency)
                # As in CNTK, the profiler is enabled after each checkpoint (so the first
                # checkpoint period is not profiled); this has no effect unless start_profiler ran.
                _cntk.enable_profiler()
            if self.cv_config is not None and self._due(self.cv_config.frequency, self.cv_config.frequency_unit,
                                                        samples, minibatches, sweeps, last_cv):
                last_cv = samples
                if not self._cross_validate(cv_index):
                    stop = True
                cv_index += 1
        if last_progress != samples:
            trainer.summarize_training_progress()
        if ckp is not None:
            self._save_checkpoint()  # the final state, under the plain file name (as CNTK does)
        if self.cv_config is not None and self.cv_config.frequency is None:
            self._cross_validate(cv_index)
        if self.test_config is not None:
            self._test()

    def _evaluate(self, config, max_samples=None):
        source, input_map = config.source, config.model_inputs_to_streams
        if input_map is None:
            input_map = self.model_inputs_to_streams
        total = minibatches = 0
        error_sum = 0.0
        while max_samples is None or total < max_samples:
            mb = self._next(source, config.mb_size[total], input_map)
            if not mb:
                break
            avg = self.trainer.test_minibatch(mb)
            n = self.trainer._previous_test_minibatch().samples if hasattr(self.trainer, '_previous_test_minibatch') \
                else next(iter(mb.values())).num_samples
            error_sum += avg * n
            total += n
            minibatches += 1
            if any(getattr(d, 'end_of_sweep', False) for d in mb.values()):
                break
        return (error_sum / total if total else 0.0), total, minibatches

    def _cross_validate(self, index):
        cfg = self.cv_config
        if cfg.source is None:
            return cfg.callback(index, 0.0, 0, 0) is not False if cfg.callback else True
        avg, total, mbs = self._evaluate(cfg, cfg.max_samples)
        self.trainer.summarize_test_progress()
        self.on_cross_validation_end(index, avg, total, mbs)
        if cfg.callback is not None:
            return cfg.callback(index, avg, total, mbs) is not False
        return True

    def on_cross_validation_end(self, index, average_error, num_samples, num_minibatches):
        """Called after each cross-validation pass (override to react)."""
        pass

    def _test(self):
        self._evaluate(self.test_config)
        self.trainer.summarize_test_progress()


def training_session(trainer, mb_source, mb_size, model_inputs_to_streams=None, progress_frequency=None,
                     max_samples=None, checkpoint_config=None, cv_config=None, test_config=None):
    """A TrainingSession; call `.train()` on it."""
    return TrainingSession(trainer, mb_source, mb_size, model_inputs_to_streams, max_samples, progress_frequency,
                           checkpoint_config, cv_config, test_config)


__all__ = ['DataUnit', 'minibatch_size_schedule', 'CheckpointConfig', 'CrossValidationConfig', 'TestConfig',
           'TrainingSession', 'training_session']
