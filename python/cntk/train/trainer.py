"""Trainer: trains a model's parameters on minibatches with one or more learners.

Each ``train_minibatch`` runs the model and its loss forward in training mode,
backpropagates from the loss (summed over the minibatch's samples) and lets each
learner update its parameters with their summed gradients.
"""
import sys

from .. import _cntk
from ..core import _from_value
from ..eval.evaluator import _as_function, _call_writers, _minibatch_arguments, _unique_arguments, _writer_list

__all__ = ['Trainer']


def _native_learner(learner):
    if isinstance(learner, _cntk.Learner):
        return learner
    native = getattr(learner, '_native', None)
    if isinstance(native, _cntk.Learner):
        return native  # a UserLearner
    raise TypeError("parameter_learners must be learners from cntk.learners (or UserLearners), not %s"
                    % type(learner).__name__)


class Trainer(_cntk.Trainer):
    """Trains the parameters of a model by minimizing a loss with learners.

    Args:
        model (:class:`~cntk.ops.functions.Function`): the model (may be None when
         the criterion holds everything).
        criterion: the loss, or a (loss, metric) tuple, or a Function with one or
         two outputs (loss, then metric). Both are per sample; the metric is
         optional and need not be differentiable.
        parameter_learners (learner or list): learners from :mod:`cntk.learners`;
         each parameter may belong to one learner only.
        progress_writers (writer or list): progress writers from :mod:`cntk.logging`;
         they receive each minibatch (``update_training(samples, loss_sum,
         metric_sum)``), test minibatches (``update_test``), the summaries
         (``write_training_summary``, ``write_test_summary``) and changes of
         learning rates (``write(name, value)``).
    """

    @staticmethod
    def _get_loss_metric(criterion):
        if isinstance(criterion, _cntk.Function):
            criterion = tuple(criterion.outputs) if len(criterion.outputs) > 1 else (criterion,)
        elif isinstance(criterion, _cntk.Variable):
            criterion = (criterion,)
        elif not isinstance(criterion, (tuple, list)):
            raise TypeError("criterion must be a loss Function, a (loss, metric) tuple or a Function with outputs "
                            "(loss, metric), not %s" % type(criterion).__name__)
        criterion = tuple(criterion)
        if len(criterion) == 1:
            criterion = criterion + (None,)
        elif len(criterion) != 2:
            raise ValueError("criterion must be a loss or a (loss, metric) tuple; %d elements were given"
                             % len(criterion))
        loss, metric = criterion
        if loss is None:
            raise ValueError("criterion: the loss must not be None")
        loss = _as_function(loss, 'the loss')
        if metric is not None:
            metric = _as_function(metric, 'the metric')
        return loss, metric

    def __init__(self, model, criterion, parameter_learners, progress_writers=None):
        loss, metric = Trainer._get_loss_metric(criterion)
        if model is not None:
            model = _as_function(model, 'model')
        if not isinstance(parameter_learners, (list, tuple)):
            parameter_learners = [parameter_learners]
        learners = list(parameter_learners)
        super(Trainer, self).__init__(model, loss, metric, [_native_learner(l) for l in learners])
        self._model_fn = model
        self._loss_fn = loss
        self._metric_fn = metric
        self._learners = learners  # keeps UserLearners alive while the native side calls them
        self._writers = _writer_list(progress_writers)
        self._all_args = _unique_arguments([loss, model, metric])
        if self._writers:
            writers = list(self._writers)

            def write(name, value):
                _call_writers(writers, 'write', name, value)

            for learner in learners:
                _native_learner(learner)._add_progress_reporter(write)
        missing = self._parameters_not_covered()
        if missing:
            sys.stderr.write("[Note:] Trainer: %d of the model parameters are not covered by any of the learners; "
                             "these parameters will not be learned\n" % len(missing))

    def train_minibatch(self, arguments, outputs=None, device=None, is_sweep_end=None):
        """Trains on one minibatch: forward, backward, parameter updates.

        Args:
            arguments: the minibatch: a dict mapping the input variables (or their
             names) to data (NumPy arrays, lists of sequences, SciPy sparse data,
             Values or MinibatchData); a single input may get its data directly.
             An empty dict means the end of the local training data.
            outputs (list): variables whose values to return as well.
            device: ignored (computation runs on the CPU).
            is_sweep_end (bool): whether this minibatch ends a sweep over the data;
             with MinibatchData it comes from the data and must not be given.

        Returns:
            bool, or (bool, dict) with ``outputs``: False when every learner has
            stopped learning; the dict maps each output to its value.
        """
        pairs, data_sweep_end = _minibatch_arguments(arguments, self._all_args)
        if data_sweep_end is not None and is_sweep_end is not None:
            raise ValueError("is_sweep_end must not be given when the data is MinibatchData: the data says it")
        sweep_end = data_sweep_end if data_sweep_end is not None else bool(is_sweep_end)
        out_vars = []
        for o in (outputs or []):
            out_vars.append(o.output if isinstance(o, _cntk.Function) else o)
        updated, values = self._train_minibatch(pairs, sweep_end, out_vars)
        self._report_training_minibatch()
        if outputs:
            return updated, {o: _from_value(o, v) for o, v in zip(out_vars, values)}
        return updated

    def test_minibatch(self, arguments, device=None):
        """The metric's average per sample over a minibatch (no training).

        Args:
            arguments: the minibatch, as for :meth:`train_minibatch`.
            device: ignored (computation runs on the CPU).

        Returns:
            float: the average of the evaluation function per sample.
        """
        return self._test(arguments, False)

    def _test(self, arguments, distributed):
        # distributed: the sums over all workers (each worker calls it, with or without data).
        pairs, _ = _minibatch_arguments(arguments, self._all_args)
        average, _ = self._test_minibatch(pairs, [], distributed)
        self._report_test_minibatch()
        return average

    # The last minibatch's figures to the progress writers (also called by the training session).
    def _report_training_minibatch(self):
        loss = self._previous_minibatch_loss()
        if loss.samples > 0:
            metric = self._previous_minibatch_evaluation().sum if self._metric_fn is not None else None
            _call_writers(self._writers, 'update_training', loss.samples, loss.sum, metric)

    def _report_test_minibatch(self):
        prev = self._previous_test_minibatch()
        if prev.samples > 0:
            _call_writers(self._writers, 'update_test', prev.samples, prev.sum)

    def save_checkpoint(self, filename, external_state={}):
        """Saves the trainer's state: the training graph (model, loss and metric) as a model file
        ``filename``, and beside it (``filename + '.ckp'``) every learner's state (sample and
        minibatch counts, momentum and other per-parameter state), the generator state of the
        random ops (dropout, sampling) and ``external_state``, a dict of the caller's own values.

        Each file is first written under a temporary name and then renamed, so a crash while
        saving leaves the previous checkpoint intact. The position of a MinibatchSource is not
        part of the checkpoint yet (save it in ``external_state``)."""
        if not isinstance(external_state, dict):
            raise TypeError("save_checkpoint: external_state must be a dict, not %s" % type(external_state).__name__)
        import os
        _cntk.save_trainer_checkpoint(self, os.fspath(filename), external_state)

    def restore_from_checkpoint(self, filename):
        """Restores what :meth:`save_checkpoint` saved into this trainer (built over the same graph
        and learners) and returns the ``external_state`` dict that was saved with it."""
        import os
        path = os.fspath(filename)
        for p in (path, path + '.ckp'):
            if not os.path.exists(p):
                raise IOError("restore_from_checkpoint: the checkpoint file '%s' does not exist" % p)
        return _cntk.restore_trainer_checkpoint(self, path)

    @property
    def model(self):
        """The model the trainer trains."""
        return self._model_fn

    @property
    def loss_function(self):
        """The loss function the trainer minimizes."""
        return self._loss_fn

    @property
    def evaluation_function(self):
        """The evaluation function (metric), or None."""
        return self._metric_fn

    @property
    def parameter_learners(self):
        """The learners the trainer uses."""
        return list(self._learners)

    @property
    def previous_minibatch_loss_average(self):
        """The average loss per sample over the last trained minibatch."""
        return self._previous_minibatch_loss_average()

    @property
    def previous_minibatch_evaluation_average(self):
        """The average metric per sample over the last trained minibatch."""
        return self._previous_minibatch_evaluation_average()

    @property
    def previous_minibatch_sample_count(self):
        """The number of samples in the last trained minibatch."""
        return self._previous_minibatch_sample_count()

    @property
    def total_number_of_samples_seen(self):
        """The number of samples seen since training started (counted by the first learner)."""
        return self._total_number_of_samples_seen()

    def summarize_training_progress(self):
        """Writes the summary of training since the last summary to the progress writers.
        With block momentum, the loss and metric sums are first averaged over the workers
        (every worker must call it), as CNTK does."""
        if _cntk._trainer_communicator(self) is not None:
            accs = [w._training for w in self._writers if hasattr(w, '_training')]
            loss = accs[0].total_loss if accs else 0.0
            metric = (accs[0].total_metric or 0.0) if accs else 0.0
            loss, metric = _cntk._trainer_aggregate_metrics(self, loss, metric)
            for acc in accs:
                acc.total_loss = loss
                if acc.total_metric is not None:
                    acc.total_metric = metric
        _call_writers(self._writers, 'write_training_summary')

    def summarize_test_progress(self):
        """Writes the summary of the tests since the last summary to the progress writers."""
        _call_writers(self._writers, 'write_test_summary')

    def print_node_timing(self):
        """Prints the per-node totals (cntk.debugging.set_node_timing) of the model, the loss
        and the evaluation function."""
        from ..debugging.debug import _print_node_timing
        _print_node_timing([self.model, self.loss_function, self.evaluation_function])
