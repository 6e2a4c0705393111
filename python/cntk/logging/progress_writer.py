"""ProgressWriter: the base of everything that reports training progress.

The Trainer (and Evaluator) report each minibatch with `update_training` /
`update_test` and each epoch with `write_training_summary` / `write_test_summary`.
The base class keeps the running sums and decides, from `freq` and `first`, when a
writer's `on_write_training_update` is called:
freq == 0 writes after minibatch 1, 2, 4, 8, ...; freq > 0 after every freq-th
minibatch and after each of the first `first` ones.
"""
import sys
import time


class ProgressWriter(object):
    """Base class of progress writers; override the `on_write_*` methods."""

    def __init__(self, freq=None, first=0, test_freq=None, test_first=0, distributed_freq=None, distributed_first=0):
        self.freq = sys.maxsize if freq is None else freq
        self.first = first
        self.test_freq = sys.maxsize if test_freq is None else test_freq
        self.test_first = test_first
        self.distributed_freq = sys.maxsize if distributed_freq is None else distributed_freq
        self.distributed_first = distributed_first
        self._training = _Accumulator()
        self._test = _Accumulator()
        self._training_summaries = 0
        self._test_summaries = 0
        self._total_training_updates = 0
        self._total_training_samples = 0
        self._epoch_start = time.time()
        self._test_start = time.time()

    # -- what trainers call -------------------------------------------------
    def update_training(self, num_samples, loss_sum, metric_sum=None):
        """One training minibatch: its sample count and the sums of loss and metric over it."""
        if num_samples == 0:
            return
        acc = self._training
        acc.add(num_samples, loss_sum, metric_sum)
        self._total_training_updates += 1
        self._total_training_samples += num_samples
        if _due(acc.updates, self.freq, self.first):
            self.on_write_training_update(acc.samples(), acc.update_range(self.freq, self.first), acc.loss(),
                                          acc.metric())
            acc.mark()
        self.on_training_update_end()

    def update_test(self, num_samples, metric_sum):
        """One evaluation minibatch."""
        if num_samples == 0:
            return
        acc = self._test
        acc.add(num_samples, None, metric_sum)
        if _due(acc.updates, self.test_freq, self.test_first):
            self.on_write_test_update(acc.samples(), acc.update_range(self.test_freq, self.test_first), acc.metric())
            acc.mark()

    def write_training_summary(self):
        """Ends a training epoch: writes its summary and starts a new one."""
        acc = self._training
        if acc.updates == 0:
            return
        self._training_summaries += 1
        now = time.time()
        self.on_write_training_summary(acc.total_samples, acc.updates, self._training_summaries, acc.total_loss,
                                       acc.total_metric, (now - self._epoch_start) * 1000)
        self._epoch_start = now
        self._training = _Accumulator()

    def write_test_summary(self):
        """Ends an evaluation pass: writes its summary."""
        acc = self._test
        if acc.updates == 0:
            return
        self._test_summaries += 1
        now = time.time()
        self.on_write_test_summary(acc.total_samples, acc.updates, self._test_summaries, acc.total_metric,
                                   (now - self._test_start) * 1000)
        self._test_start = now
        self._test = _Accumulator()

    def total_training_updates(self):
        return self._total_training_updates

    def total_training_samples(self):
        return self._total_training_samples

    @property
    def summaries(self):
        return self._training_summaries

    # -- what writers override ------------------------------------------------
    def on_write_training_update(self, samples, updates, aggregate_loss, aggregate_metric):
        pass

    def on_training_update_end(self):
        pass

    def on_write_test_update(self, samples, updates, aggregate_metric):
        pass

    def on_write_distributed_sync_update(self, samples, updates, aggregate_metric):
        pass

    def on_write_training_summary(self, samples, updates, summaries, aggregate_loss, aggregate_metric,
                                  elapsed_milliseconds):
        pass

    def on_write_test_summary(self, samples, updates, summaries, aggregate_metric, elapsed_milliseconds):
        pass

    def write(self, key, value):
        """Writes a free-form value (e.g. a learning rate)."""
        pass

    def __disown__(self):
        """CNTK's writers handed their ownership to the native trainer with this call; here the
        trainer holds a Python reference, so there is nothing to hand over. Returns the writer."""
        return self


def _due(updates, freq, first):
    if freq == 0:
        return updates & (updates - 1) == 0
    return updates % freq == 0 or updates <= first


class _Accumulator(object):
    """Running sums since the epoch started, and their values at the last write."""

    def __init__(self):
        self.updates = 0
        self.total_samples = 0
        self.total_loss = 0.0
        self.total_metric = None
        self._mark = (0, 0, 0.0, None)

    def add(self, n, loss, metric):
        self.updates += 1
        self.total_samples += n
        if loss is not None:
            self.total_loss += loss
        if metric is not None:
            self.total_metric = (self.total_metric or 0.0) + metric

    def mark(self):
        self._mark = (self.updates, self.total_samples, self.total_loss, self.total_metric)

    def samples(self):
        return (self._mark[1], self.total_samples)

    def loss(self):
        return (self._mark[2], self.total_loss)

    def metric(self):
        if self.total_metric is None:
            return None
        return (self._mark[3] or 0.0, self.total_metric)

    def update_range(self, freq, first):
        return (self._mark[0], self.updates)


def avg(numerator, denominator):
    """Average of a (begin, end) running sum over a (begin, end) count; 0 when empty."""
    if isinstance(numerator, tuple):
        numerator = numerator[1] - numerator[0]
    if isinstance(denominator, tuple):
        denominator = denominator[1] - denominator[0]
    return (numerator / denominator) if denominator > 0 else 0.0
