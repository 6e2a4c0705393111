"""Function.train and Function.test: training and evaluating a criterion function
in one call, over NumPy data or a minibatch source (CNTK's declarative API)."""
from ..logging.progress_writer import ProgressWriter, avg
from ..variables import Record
from .training_session import (CheckpointConfig, CrossValidationConfig, TestConfig, minibatch_size_schedule,
                               training_session, _source_and_map)


class _ProgressCollector(ProgressWriter):
    """Records minibatch updates and summaries as Records(loss, metric, samples)."""

    def __init__(self, freq=None):
        super(_ProgressCollector, self).__init__(freq, 0, None, 0, None, 0)
        self.training_updates, self.training_summaries, self.test_summaries = [], [], []

    def on_write_training_update(self, samples, updates, aggregate_loss, aggregate_metric):
        self.training_updates.append(Record(loss=avg(aggregate_loss, samples),
                                            metric=avg(aggregate_metric, samples) if aggregate_metric else 0.0,
                                            samples=samples[1] - samples[0]))

    def on_write_training_summary(self, samples, updates, summaries, aggregate_loss, aggregate_metric,
                                  elapsed_milliseconds):
        self.training_summaries.append(Record(loss=avg(aggregate_loss, samples),
                                              metric=avg(aggregate_metric, samples) if aggregate_metric else 0.0,
                                              samples=samples))

    def on_write_test_summary(self, samples, updates, summaries, aggregate_metric, elapsed_milliseconds):
        self.test_summaries.append(Record(metric=avg(aggregate_metric, samples), samples=samples))


def train(self, minibatch_source, minibatch_size=32, streams=None, model_inputs_to_streams=None,
          parameter_learners=[], callbacks=[], progress_frequency=None, max_epochs=None, epoch_size=None,
          max_samples=None):
    """Trains the parameters of this criterion function (a loss, or loss and metric outputs).

    `minibatch_source` is a minibatch source (then `epoch_size` or `max_samples` is required, and
    `streams` or `model_inputs_to_streams` maps the arguments to its streams) or a tuple of NumPy/SciPy
    arrays, one per argument. `callbacks` may hold progress writers and one each of CheckpointConfig,
    CrossValidationConfig and TestConfig. Returns a Record with `epoch_summaries` and `updates` (lists of
    Records with loss, metric and samples) and, with a TestConfig, `test_summary`.
    """
    from ..io import UserMinibatchSource
    from .trainer import Trainer
    if minibatch_size is None:
        raise ValueError("minibatch_size must not be None")
    mb_schedule = minibatch_size if isinstance(minibatch_size, minibatch_size_schedule) else \
        minibatch_size_schedule(minibatch_size)
    if max_samples is None:
        if epoch_size is None:
            if isinstance(minibatch_source, UserMinibatchSource) or hasattr(minibatch_source, 'next_minibatch'):
                raise ValueError("epoch_size must be given, unless max_samples is given or the data is NumPy/SciPy")
            first = minibatch_source[0] if isinstance(minibatch_source, (tuple, list)) else minibatch_source
            epoch_size = first.shape[0] if hasattr(first, 'shape') else len(first)
        max_samples = int((1 if max_epochs is None else max_epochs) * epoch_size)
    elif max_epochs is not None:
        raise ValueError("max_epochs and max_samples are mutually exclusive")
    writers, configs = [], {CheckpointConfig: None, CrossValidationConfig: None, TestConfig: None}
    for cb in callbacks or []:
        if isinstance(cb, ProgressWriter):
            writers.append(cb)
            continue
        for kind in configs:
            if isinstance(cb, kind):
                if configs[kind] is not None:
                    raise ValueError("only one %s is allowed in callbacks" % kind.__name__)
                configs[kind] = cb
                break
        else:
            raise ValueError("callbacks may only hold progress writers, CheckpointConfig, CrossValidationConfig "
                             "and TestConfig, not %s" % type(cb).__name__)
    if progress_frequency is None and epoch_size is not None:
        progress_frequency = epoch_size
    collector_freq = writers[0].freq if writers else (
        max(progress_frequency // mb_schedule[0], 1) if progress_frequency is not None else None)
    collector = _ProgressCollector(collector_freq)
    trainer = Trainer(None, self, parameter_learners, progress_writers=writers + [collector])
    if streams:
        if model_inputs_to_streams:
            raise ValueError("streams and model_inputs_to_streams are mutually exclusive")
        model_inputs_to_streams = self.argument_map(*streams)
    source, input_map = _source_and_map(minibatch_source, model_inputs_to_streams, self)
    for cfg in (configs[CrossValidationConfig], configs[TestConfig]):
        if cfg is not None and cfg.source is not None:
            cfg.source, cfg.model_inputs_to_streams = _source_and_map(cfg.source, cfg.model_inputs_to_streams, self,
                                                                      infinitely_repeat=False)
    session = training_session(trainer, source, mb_schedule, input_map, progress_frequency, max_samples,
                               configs[CheckpointConfig], configs[CrossValidationConfig], configs[TestConfig])
    session.train()
    if collector.training_summaries:
        result = Record(updates=collector.training_updates, epoch_summaries=collector.training_summaries)
    else:
        empty = Record(loss=0, metric=0, samples=0)
        result = Record(updates=[empty], epoch_summaries=[empty])
    if configs[TestConfig] is not None and collector.test_summaries:
        result = result.updated_with(test_summary=collector.test_summaries[-1])
    return result


def test(self, minibatch_source, minibatch_size=32, streams=None, model_inputs_to_streams=None, callbacks=None):
    """Average of the metric (the second output, or the only one) over all of `minibatch_source`:
    a Record with `metric` and `samples`."""
    from ..eval.evaluator import Evaluator
    if minibatch_size is None:
        raise ValueError("minibatch_size must not be None")
    if streams:
        if model_inputs_to_streams:
            raise ValueError("streams and model_inputs_to_streams are mutually exclusive")
        model_inputs_to_streams = self.argument_map(*streams)
    source, input_map = _source_and_map(minibatch_source, model_inputs_to_streams, self, infinitely_repeat=False)
    outputs = self.outputs
    output = outputs[0] if len(outputs) == 1 else outputs[1]
    collector = _ProgressCollector()
    writers = [callbacks] if isinstance(callbacks, ProgressWriter) else list(callbacks or [])
    evaluator = Evaluator(output, writers + [collector])
    schedule = minibatch_size if isinstance(minibatch_size, minibatch_size_schedule) else \
        minibatch_size_schedule(minibatch_size)
    seen = 0
    while True:
        mb = source.next_minibatch(schedule[seen], input_map=input_map) if input_map is not None else \
            source.next_minibatch(schedule[seen])
        if not mb:
            break
        evaluator.test_minibatch(mb)
        seen += next(iter(mb.values())).num_samples
        if any(d.end_of_sweep for d in mb.values()):
            break
    evaluator.summarize_test_progress()
    return collector.test_summaries[-1] if collector.test_summaries else Record(metric=0.0, samples=0)
