"""Progress writers: ProgressPrinter (CNTK's console/log format), TensorBoardProgressWriter,
TrainingSummaryProgressCallback, and log_number_of_parameters."""
import sys
import time
import warnings

from ._event_file import EventFileWriter
from .progress_writer import ProgressWriter, avg as _avg


def _deprecated(message):
    warnings.warn('DEPRECATED: ' + message, DeprecationWarning, stacklevel=3)


class ProgressPrinter(ProgressWriter):
    """Prints loss and metric as training and evaluation go.

    freq: None = no per-minibatch lines; 0 = after minibatch 1, 2, 4, 8, ...; N > 0 = every N minibatches
    (and each of the first `first`). tag: shown in epoch summaries. log_to_file: a file instead of stdout
    (with `rank`, one file per worker). metric_is_pct: print the metric as a percentage.
    """

    def __init__(self, freq=None, first=0, tag='', log_to_file=None, rank=None, gen_heartbeat=False, num_epochs=None,
                 test_freq=None, test_first=0, metric_is_pct=True, distributed_freq=None, distributed_first=0):
        super(ProgressPrinter, self).__init__(freq, first, test_freq, test_first, distributed_freq, distributed_first)
        self.tag = '[%s] ' % tag if tag else ''
        self.log_to_file = log_to_file
        self.gen_heartbeat = gen_heartbeat
        self.num_epochs = num_epochs
        self.metric_is_pct = metric_is_pct
        self.metric_multiplier = 100.0 if metric_is_pct else 1.0
        self._heartbeat_time = 0
        # State of the deprecated manual-update API.
        self.loss_since_start = self.metric_since_start = self.samples_since_start = self.updates_since_start = 0
        self.loss_since_last = self.metric_since_last = self.samples_since_last = 0
        self.total_updates = 0
        self.epochs = 0
        self.epoch_start_time = time.time()
        self.logfilename = None
        if log_to_file is not None:
            self.logfilename = log_to_file + ('rank' + str(rank) if rank is not None else '')
            print("Redirecting log to file " + self.logfilename)
            with open(self.logfilename, 'w') as f:
                f.write(self.logfilename + '\n')
            # CNTK's log parsers expect a total; CNTK wrote 300 when none was given.
            total = num_epochs if num_epochs is not None else 300
            self._print('CNTKCommandTrainInfo: train : %d' % total)
            self._print('CNTKCommandTrainInfo: CNTKNoMoreCommands_Total : %d' % total)
            self._print('CNTKCommandTrainBegin: train')
        if self.freq == 0:
            self._print(' average      since    average      since      examples')
            self._print('    loss       last     metric       last              ')
            self._print(' ------------------------------------------------------')

    def _print(self, line):
        if self.logfilename is None:
            print(line)
            sys.stdout.flush()
        else:
            with open(self.logfilename, 'a') as f:
                f.write(line + '\n')

    def log(self, message):
        """Writes `message` to the log."""
        self._print(message)

    def end_progress_print(self, msg=''):
        """Marks the end of training in the log."""
        self._print('CNTKCommandTrainEnd: train')
        if msg and self.log_to_file is not None:
            self._print(msg)

    def _heartbeat(self):
        if self.gen_heartbeat and time.time() - self._heartbeat_time > 10:
            print("PROGRESS: 0.00%")
            self._heartbeat_time = time.time()

    def _write_update(self, samples, updates, loss, metric, freq, name):
        if freq == 0:
            parts = []
            if loss is not None:
                parts.append('{:8.3g}   {:8.3g}   '.format(_avg(loss[1], samples[1]), _avg(loss, samples)))
            else:
                parts.append('{:8s}   {:8s}   '.format('', ''))
            if metric is not None:
                parts.append('{:8.3g}   {:8.3g}   '.format(_avg(metric[1], samples[1]), _avg(metric, samples)))
            else:
                parts.append('{:8s}   {:8s}   '.format('', ''))
            self._print(' ' + ''.join(parts) + ' {:10d}'.format(samples[1]))
            return
        line = ' {}Minibatch[{:4d}-{:4d}]: '.format(name, updates[0] + 1, updates[1])
        count = samples[1] - samples[0]
        if loss is not None:
            line += 'loss = {:0.6f} * {:d}'.format(_avg(loss, samples), count)
        if metric is not None:
            if loss is not None:
                line += ', '
            if self.metric_is_pct:
                line += 'metric = {:0.2f}% * {:d}'.format(_avg(metric, samples) * 100.0, count)
            else:
                line += 'metric = {:0.6f} * {:d}'.format(_avg(metric, samples), count)
        self._print(line + ';')

    def on_write_training_update(self, samples, updates, aggregate_loss, aggregate_metric):
        self._write_update(samples, updates, aggregate_loss, aggregate_metric, self.freq, '')

    def on_training_update_end(self):
        self._heartbeat()

    def on_write_test_update(self, samples, updates, aggregate_metric):
        self._write_update(samples, updates, None, aggregate_metric, self.test_freq, 'Evaluation ')

    def on_write_distributed_sync_update(self, samples, updates, aggregate_metric):
        self._print("Distributed training: #Syncs elapsed = {}, #Samples elapsed = {}".format(
            updates[1] - updates[0], samples[1] - samples[0]))

    def on_write_training_summary(self, samples, updates, summaries, aggregate_loss, aggregate_metric,
                                  elapsed_milliseconds):
        if self.freq == 0:
            return  # the geometric schedule prints no epoch summaries
        seconds = elapsed_milliseconds / 1000.0
        speed = _avg(samples, seconds)
        loss = _avg(aggregate_loss, samples)
        # "Epoch[3 of 10]" when the total is known, else "Epoch[3]" (CNTK's log parsers read both).
        epoch = str(summaries) + (' of %s' % self.num_epochs if self.num_epochs is not None else '')
        if aggregate_metric is not None:
            metric = _avg(aggregate_metric, samples)
            if self.metric_is_pct:
                msg = "Finished Epoch[{}]: {}loss = {:0.6f} * {}, metric = {:0.2f}% * {} {:0.3f}s ({:5.1f} " \
                      "samples/s);".format(epoch, self.tag, loss, samples, metric * 100.0, samples, seconds, speed)
            else:
                msg = "Finished Epoch[{}]: {}loss = {:0.6f} * {}, metric = {:0.6f} * {} {:0.3f}s ({:5.1f} " \
                      "samples/s);".format(epoch, self.tag, loss, samples, metric, samples, seconds, speed)
        else:
            msg = "Finished Epoch[{}]: {}loss = {:0.6f} * {} {:0.3f}s ({:5.1f} samples/s);".format(
                epoch, self.tag, loss, samples, seconds, speed)
        self._print(msg)

    def on_write_test_summary(self, samples, updates, summaries, aggregate_metric, elapsed_milliseconds):
        if self.metric_is_pct:
            fmt = "Finished Evaluation [{}]: Minibatch[1-{}]: metric = {:0.2f}% * {};"
            value = _avg(aggregate_metric, samples) * 100.0
        else:
            fmt = "Finished Evaluation [{}]: Minibatch[1-{}]: metric = {:0.6f} * {};"
            value = _avg(aggregate_metric, samples)
        self._print(fmt.format(summaries, updates, value, samples))

    def write(self, key, value):
        self._print('{}: {}'.format(key, value))

    # -- deprecated manual API (kept for old scripts) ------------------------------
    def update(self, loss, minibatch_size, metric=None):
        """DEPRECATED: report a minibatch by hand (average loss and metric over `minibatch_size` samples)."""
        if self.total_updates == 0:
            _deprecated('ProgressPrinter.update; pass the printer to the Trainer instead')
        if minibatch_size == 0:
            return
        self.samples_since_start += minibatch_size
        self.samples_since_last += minibatch_size
        self.loss_since_start += loss * minibatch_size
        self.loss_since_last += loss * minibatch_size
        self.updates_since_start += 1
        self.total_updates += 1
        if metric is not None:
            self.metric_since_start += metric * minibatch_size
            self.metric_since_last += metric * minibatch_size
        self.update_training(minibatch_size, loss * minibatch_size,
                             None if metric is None else metric * minibatch_size)

    def update_with_trainer(self, trainer, with_metric=False):
        """DEPRECATED: report the trainer's last minibatch."""
        if trainer is not None and trainer.previous_minibatch_sample_count != 0:
            self.update(trainer.previous_minibatch_loss_average, trainer.previous_minibatch_sample_count,
                        trainer.previous_minibatch_evaluation_average if with_metric else None)

    def epoch_summary(self, with_metric=False):
        """DEPRECATED: write the epoch summary of the manual API."""
        self.epochs += 1
        self.write_training_summary()
        return self.reset_start()

    def avg_loss_since_start(self):
        return _avg(self.loss_since_start, self.samples_since_start)

    def avg_metric_since_start(self):
        return _avg(self.metric_since_start, self.samples_since_start)

    def avg_loss_since_last(self):
        return _avg(self.loss_since_last, self.samples_since_last)

    def avg_metric_since_last(self):
        return _avg(self.metric_since_last, self.samples_since_last)

    def reset_start(self):
        ret = self.avg_loss_since_start(), self.avg_metric_since_start(), self.samples_since_start
        self.loss_since_start = self.metric_since_start = self.samples_since_start = self.updates_since_start = 0
        return ret

    def reset_last(self):
        ret = self.avg_loss_since_last(), self.avg_metric_since_last(), self.samples_since_last
        self.loss_since_last = self.metric_since_last = self.samples_since_last = 0
        return ret


class TensorBoardProgressWriter(ProgressWriter):
    """Writes loss and metric to a TensorBoard event file in `log_dir` (only rank 0 writes)."""

    def __init__(self, freq=None, log_dir='.', rank=None, model=None):
        super(TensorBoardProgressWriter, self).__init__(freq, 0, None, 0, None, 0)
        self.writer = EventFileWriter(log_dir) if not rank else None
        self.model = model
        self.closed = False

    def _check_open(self):
        if self.closed:
            raise RuntimeError('TensorBoardProgressWriter is closed')

    def write_value(self, name, value, step):
        """Records a scalar `value` named `name` at `step`."""
        self._check_open()
        if self.writer:
            self.writer.write_scalar(str(name), float(value), int(step))

    def write_image(self, name, data, step):
        """Records the images in `data` ({variable: batch of shape (N, channels, height,
        width)}) as PNG image summaries '<name>/image/<i>' at `step`."""
        self._check_open()
        if self.writer:
            from ._event_file import to_image_pixels
            for batch in data.values():
                self.writer.write_image(str(name), to_image_pixels(batch), int(step))

    def flush(self):
        """Writes buffered records to disk."""
        self._check_open()
        if self.writer:
            self.writer.flush()

    def close(self):
        """Flushes and closes the file; the writer cannot be used afterwards."""
        self._check_open()
        if self.writer:
            self.writer.close()
        self.closed = True

    def on_write_training_update(self, samples, updates, aggregate_loss, aggregate_metric):
        self.write_value('minibatch/avg_loss', _avg(aggregate_loss, samples), self.total_training_updates())
        if aggregate_metric is not None:
            self.write_value('minibatch/avg_metric', _avg(aggregate_metric, samples), self.total_training_updates())

    def on_write_test_update(self, samples, updates, aggregate_metric):
        raise NotImplementedError('TensorBoardProgressWriter does not record per-minibatch evaluation results')

    def on_write_training_summary(self, samples, updates, summaries, aggregate_loss, aggregate_metric,
                                  elapsed_milliseconds):
        self.write_value('summary/avg_loss', _avg(aggregate_loss, samples), summaries)
        if aggregate_metric is not None:
            self.write_value('summary/avg_metric', _avg(aggregate_metric, samples), summaries)

    def on_write_test_summary(self, samples, updates, summaries, aggregate_metric, elapsed_milliseconds):
        value = _avg(aggregate_metric, samples)
        if self.total_training_updates() != 0:
            self.write_value('minibatch/test_avg_metric', value, self.total_training_updates())
        else:
            self.write_value('summary/test_avg_metric', value, summaries)


class TrainingSummaryProgressCallback(ProgressWriter):
    """Calls `callback(epoch_index, average_loss, average_metric, num_samples)` after each epoch."""

    def __init__(self, epoch_size, callback):
        super(TrainingSummaryProgressCallback, self).__init__(None, 0, None, 0, None, 0)
        self.epoch_size = epoch_size
        self.callback = callback

    def on_write_training_summary(self, samples, updates, summaries, aggregate_loss, aggregate_metric,
                                  elapsed_milliseconds):
        self.callback(summaries - 1, _avg(aggregate_loss, samples),
                      _avg(aggregate_metric, samples) if aggregate_metric is not None else None, samples)


def log_number_of_parameters(model, trace_level=0):
    """Prints how many parameters `model` has (and their shapes when trace_level > 0)."""
    params = model.parameters
    if any(d < 0 for p in params for d in p.shape):
        total = 'so far unspecified number of'
    else:
        total = 0
        for p in params:
            n = 1
            for d in p.shape:
                n *= d
            total += n
    print("Training {} parameters in {} parameter tensors.".format(total, len(params)))
    if trace_level > 0:
        print()
        for p in params:
            print("\t{}".format(p.shape))


__all__ = ['ProgressPrinter', 'TensorBoardProgressWriter', 'TrainingSummaryProgressCallback',
           'log_number_of_parameters']
