"""Learners: algorithms that update a set of parameters from their gradients.

A learner tunes a set of parameters during training; different learners may
tune different parameters of one model. Available: :func:`sgd`,
:func:`momentum_sgd`, :func:`nesterov`, :func:`adagrad`, :func:`adadelta`,
:func:`fsadagrad`, :func:`adam` (and Adamax), :func:`rmsprop`, :func:`universal`
(an update written as a graph) and :class:`UserLearner` (an update written in Python).

Hyper-parameters are schedules (:func:`learning_parameter_schedule`,
:func:`momentum_schedule`, ...) whose values may change with the number of
samples seen, and which carry a reference minibatch size: the number of samples
a value was designed for. The learners receive gradients summed over the
minibatch and scale the values to the actual minibatch size.
"""
import copy
import inspect
import numbers
import warnings
import weakref
from enum import Enum, unique

import numpy as np

from .. import _cntk
from ..core import NDArrayView

__all__ = ['UnitType', 'default_unit_gain_value', 'set_default_unit_gain_value', 'Learner', 'UserLearner', 'IGNORE',
           'training_parameter_schedule', 'learning_parameter_schedule', 'learning_parameter_schedule_per_sample',
           'learning_rate_schedule', 'momentum_schedule', 'momentum_schedule_per_sample',
           'momentum_as_time_constant_schedule', 'sgd', 'momentum_sgd', 'nesterov', 'adadelta', 'adagrad',
           'fsadagrad', 'adam', 'rmsprop', 'universal']

_Schedule = _cntk.training_double_parameter_schedule
_FULL_DATA_SWEEP = _Schedule.full_data_sweep


@unique
class UnitType(Enum):
    """Deprecated since CNTK 2.2: whether schedule values are per sample or per
    minibatch. Use the ``minibatch_size`` arguments instead."""

    sample = 'sample'
    '''Values are per sample (reference minibatch size 1).'''

    minibatch = 'minibatch'
    '''Values are per minibatch, whatever its size (reference minibatch size 0).'''


def default_unit_gain_value():
    """True if momentum is applied in the unit-gain fashion by default."""
    return _cntk.default_unit_gain_value()


def set_default_unit_gain_value(value):
    """Sets the default unit-gain flag of the momentum learners."""
    _cntk.set_default_unit_gain_value(bool(value))


def _is_number(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _is_schedule(x):
    return isinstance(x, _Schedule)


def _explicit(schedule):
    # Schedules made outside this module carry their reference size on purpose.
    return getattr(schedule, 'is_minibatch_size_explicitly_specified', True)


def _mark(schedule, explicit):
    schedule.is_minibatch_size_explicitly_specified = bool(explicit)
    return schedule


def _schedule_entries(schedule):
    """A list of numbers and (count, value) pairs -> (count, value) pairs."""
    entries = []
    for item in schedule:
        if _is_number(item):
            entries.append((1, float(item)))
        elif isinstance(item, (tuple, list)) and len(item) == 2 and _is_number(item[1]):
            count = item[0]
            if not isinstance(count, numbers.Integral) or count < 0:
                raise ValueError("schedule entry %r: the count must be a non-negative integer" % (item,))
            entries.append((int(count), float(item[1])))
        else:
            raise ValueError("schedule entries must be numbers or (count, value) pairs, not %r" % (item,))
    if not entries:
        raise ValueError("the schedule is empty")
    return entries


def _make_schedule(schedule, minibatch_size, epoch_size):
    if _is_number(schedule):
        if epoch_size is not None:
            warnings.warn('When providing the schedule as a number, epoch_size is ignored', RuntimeWarning)
        return _Schedule(float(schedule), int(minibatch_size))
    if isinstance(schedule, (list, tuple)):
        epoch = _FULL_DATA_SWEEP if epoch_size is None else int(epoch_size)
        return _Schedule(_schedule_entries(schedule), epoch, int(minibatch_size))
    raise ValueError('schedule must be either a float or a list, not %s' % type(schedule).__name__)


def training_parameter_schedule(schedule, unit=UnitType.minibatch, epoch_size=None):
    """Deprecated since CNTK 2.2: a schedule with per-sample or per-minibatch values.

    Args:
        schedule (float or list): a value for all samples; or a list whose i-th
         value holds for the i-th block of ``epoch_size`` samples; or a list of
         (count, value) pairs, each value holding for count blocks. The last value
         holds until the end.
        unit (:class:`UnitType`): ``sample`` (reference minibatch size 1) or
         ``minibatch`` (reference size 0: values apply to a minibatch as is).
        epoch_size (int, optional): samples per scheduling unit; None means a
         unit is a full data sweep.

    Examples:
        >>> s = training_parameter_schedule([0.01, 0.001], epoch_size=1000)
        >>> s[0], s[999], s[1000]
        (0.01, 0.01, 0.001)
    """
    ref = 1 if UnitType(unit) == UnitType.sample else _Schedule.ignored_minibatch_size
    if _is_schedule(schedule):
        return _mark(schedule, True)
    return _mark(_make_schedule(schedule, ref, epoch_size), True)


def learning_parameter_schedule(schedule, minibatch_size=None, epoch_size=None):
    """A learning parameter schedule (learning rate, momentum, ...).

    Args:
        schedule (float or list): a value for all samples; or a list [p_1, ..., p_n]
         where p_i holds for the i-th block of ``epoch_size`` samples; or a list of
         (num_epochs, value) pairs. The last value holds until the end.
        minibatch_size (int): the minibatch size the values are designed for; the
         learners rescale them to the actual minibatch sizes. None: values apply
         to each minibatch as they are (:attr:`IGNORE`), unless the learner is
         given a ``minibatch_size`` of its own, which the schedule then takes.
         A per-minibatch learning rate lr is applied as lr / n to the gradient
         summed over n samples; learners that normalize the gradient's scale
         (adam, rmsprop, adagrad, adadelta, fsadagrad) therefore step by about
         lr / n, as in CNTK. Give the learner ``minibatch_size=IGNORE`` to apply
         lr to the mean gradient instead (see src/learn/README.md).
        epoch_size (int, optional): samples per scheduling unit; None means a
         unit is a full data sweep.

    Examples:
        >>> s = learning_parameter_schedule([(2, 0.1), (1, 0.01)], epoch_size=100)
        >>> s[0], s[199], s[200], s[10000]
        (0.1, 0.1, 0.01, 0.01)
    """
    if _is_schedule(schedule):
        return schedule
    explicit = minibatch_size is not None
    return _mark(_make_schedule(schedule, minibatch_size if explicit else 0, epoch_size), explicit)


def learning_parameter_schedule_per_sample(schedule, epoch_size=None):
    """A learning parameter schedule whose values are per sample (reference minibatch size 1)."""
    return learning_parameter_schedule(schedule, minibatch_size=1, epoch_size=epoch_size)


def learning_rate_schedule(lr, unit, epoch_size=None):
    """Deprecated since CNTK 2.2: a learning-rate schedule (see :func:`training_parameter_schedule`)."""
    return training_parameter_schedule(lr, unit, epoch_size)


def momentum_schedule(momentum, epoch_size=None, minibatch_size=None):
    """A momentum schedule. With ``minibatch_size`` N, a momentum m is applied as
    m ** (n / N) to a minibatch of n samples (equal decay per sample); without it,
    m applies to every minibatch as it is.

    Examples:
        >>> m = momentum_schedule([(999, 0.99), (888, 0.88), (0, 0.77)])
        >>> m[0], m[998], m[999], m[999 + 887], m[999 + 888]
        (0.99, 0.99, 0.88, 0.88, 0.77)
    """
    return learning_parameter_schedule(momentum, minibatch_size, epoch_size)


def momentum_schedule_per_sample(momentum, epoch_size=None):
    """A momentum schedule with per-sample values (reference minibatch size 1)."""
    return momentum_schedule(momentum, minibatch_size=1, epoch_size=epoch_size)


def momentum_as_time_constant_schedule(momentum, epoch_size=None):
    """Deprecated since CNTK 2.2: momentum given as the time constant T (in samples)
    of a unit-gain first-order filter; the per-sample momentum is exp(-1 / T).

    Examples:
        >>> m = momentum_as_time_constant_schedule(1100)
        >>> round(m[0], 6), m.minibatch_size
        (0.999091, 1)
    """
    if _is_schedule(momentum):
        return _mark(momentum, True)
    if _is_number(momentum):
        if epoch_size is not None:
            warnings.warn('When providing the schedule as a number, epoch_size is ignored', RuntimeWarning)
        return _mark(_cntk.momentum_as_time_constant_schedule(float(momentum)), True)
    if isinstance(momentum, (list, tuple)):
        s = _make_schedule(momentum, 1, epoch_size)
        return _mark(_cntk.momentum_as_time_constant_schedule(s), True)
    raise ValueError('momentum must be either a float or a list, not %s' % type(momentum).__name__)


# ----------------------------------------------------------------------- Learner

def _verify_schedule(schedule, what):
    if not _is_schedule(schedule):
        raise ValueError('%s type (%s) not supported: it must be a number, a list or a training schedule '
                         '(see learning_parameter_schedule)' % (what, type(schedule).__name__))


def _gradient_view(parameter, value):
    if isinstance(value, _cntk.NDArrayView):
        return value
    if hasattr(value, 'asarray') and not isinstance(value, np.ndarray):
        value = value.asarray()
    arr = np.ascontiguousarray(np.asarray(value, dtype=parameter.dtype))
    if arr.size != int(np.prod(parameter.shape, dtype=np.int64)):
        raise ValueError("the gradient for %s has shape %s" % (parameter, arr.shape))
    return NDArrayView.from_numpy(arr.reshape(parameter.shape))


def _learner_update(self, gradient_values, training_sample_count, is_sweep_end=False):
    """Updates the parameters of this learner.

    Args:
        gradient_values (dict): maps each :class:`~cntk.variables.Parameter` to
         its gradient (a NumPy array or NDArrayView), summed over the minibatch.
        training_sample_count (int): number of samples in the minibatch.
        is_sweep_end (bool): whether the minibatch ends a sweep over the data.

    Returns:
        bool: False when learning has stopped (the learning rate is 0).
    """
    pairs = [(p, _gradient_view(p, g)) for p, g in gradient_values.items()]
    return self._update(pairs, int(training_sample_count), bool(is_sweep_end))


def _learner_reset_learning_rate(self, learning_rate):
    """Replaces the learning-rate schedule. The new schedule starts at the current
    number of samples (or sweeps) seen; the learner keeps its reference minibatch size.
    """
    _verify_schedule(learning_rate, 'learning_rate')
    if not _explicit(learning_rate) and self.minibatch_size != IGNORE:
        learning_rate = copy.copy(learning_rate)
        learning_rate.minibatch_size = self.minibatch_size
    self._reset_learning_rate(learning_rate)


Learner = _cntk.Learner
Learner.__doc__ = """Updates a subset of a model's parameters from their gradients.
Create one with the functions of this module (:func:`sgd`, :func:`adam`, ...)."""
Learner.update = _learner_update
Learner.reset_learning_rate = _learner_reset_learning_rate
Learner.parameters = property(lambda self: list(self._parameters()),
                              doc="The parameters this learner updates.")
Learner.__repr__ = lambda self: "Learner(%d parameters, learning rate %g)" % (len(self._parameters()),
                                                                              self.learning_rate())

IGNORE = Learner.ignored_minibatch_size
'''Reference minibatch size meaning "apply the values to each minibatch as they are".'''


class UserLearner(object):
    """Base of learners written in Python: derive from it and override :meth:`update`.

    Args:
        parameters (list): the parameters to learn.
        lr_schedule: the learning rate (a number or a schedule).
        as_numpy (bool): whether :meth:`update` receives NumPy arrays (else NDArrayViews).
    """

    def __init__(self, parameters, lr_schedule, as_numpy=True):
        if _is_number(lr_schedule) or isinstance(lr_schedule, (list, tuple)):
            lr_schedule = learning_parameter_schedule(lr_schedule)
        _verify_schedule(lr_schedule, 'lr_schedule')
        self.as_numpy = as_numpy
        this = weakref.ref(self)

        def native_update(gradients, training_sample_count, sweep_end):
            learner = this()
            if learner is None:
                raise RuntimeError("the UserLearner was deleted while its Trainer still uses it")
            return learner._update(gradients, training_sample_count, sweep_end)

        self._native = _cntk.callback_learner(list(parameters), lr_schedule, native_update)

    def _update(self, gradients, training_sample_count, sweep_end):
        if self.as_numpy:
            values = {p: g.to_numpy() for p, g in gradients}
        else:
            values = {p: g for p, g in gradients}
        result = self.update(values, training_sample_count, sweep_end)
        return True if result is None else bool(result)

    def update(self, gradient_values, training_sample_count, sweep_end):
        """Updates the parameters.

        Args:
            gradient_values (dict): maps each :class:`~cntk.variables.Parameter` to
             its gradient summed over the minibatch (a NumPy array when ``as_numpy``).
            training_sample_count (int): number of samples in the minibatch.
            sweep_end (bool): whether the minibatch ends a sweep over the data.

        Returns:
            bool: False to signal that learning has stopped.
        """
        raise NotImplementedError('UserLearner.update must be overridden')

    @property
    def parameters(self):
        """The parameters this learner updates (also callable, as CNTK's UserLearner.parameters() is)."""
        return _CallableList(self._native._parameters())

    def learning_rate(self):
        """The current learning rate."""
        return self._native.learning_rate()

    def reset_learning_rate(self, learning_rate):
        """Replaces the learning-rate schedule (see :meth:`Learner.reset_learning_rate`)."""
        _learner_reset_learning_rate(self._native, learning_rate)

    @property
    def minibatch_size(self):
        return self._native.minibatch_size

    def total_number_of_samples_seen(self):
        return self._native.total_number_of_samples_seen()

    def create_checkpoint(self):
        """The learner's counts and learning-rate schedule (a dict)."""
        return self._native.create_checkpoint()

    def restore_from_checkpoint(self, checkpoint):
        """Restores what :meth:`create_checkpoint` saved."""
        self._native.restore_from_checkpoint(checkpoint)


class _CallableList(list):
    """A list that returns itself when called."""

    def __call__(self):
        return self


# ------------------------------------------------------------- learner factories

def _infer_ref_minibatch_size(ref_minibatch_size, use_mean_gradient):
    """The learner's reference minibatch size from minibatch_size and the
    deprecated use_mean_gradient (True means IGNORE: work on mean gradients)."""
    if ref_minibatch_size is not None:
        if use_mean_gradient and ref_minibatch_size != IGNORE:
            warnings.warn('minibatch_size is given, so use_mean_gradient=True (deprecated) is ignored',
                          DeprecationWarning)
        return int(ref_minibatch_size)
    if use_mean_gradient is not None:
        return IGNORE if use_mean_gradient else None
    return None


def _infer_schedule(value, ref_minibatch_size, epoch_size, use_mean_gradient=None):
    """A number or list becomes a schedule for the learner's reference size; a
    schedule without an explicit reference size takes the learner's."""
    if _is_number(value) or (isinstance(value, (list, tuple)) and
                             all(_is_number(v) or isinstance(v, (tuple, list)) for v in value)):
        ref = 0 if ref_minibatch_size is None else ref_minibatch_size
        return _mark(learning_parameter_schedule(value, ref, epoch_size), True)
    if _is_schedule(value):
        schedule = value
        if not _explicit(schedule) and ref_minibatch_size is not None:
            schedule = copy.copy(schedule)
            schedule.minibatch_size = ref_minibatch_size
        if use_mean_gradient and schedule.minibatch_size == 1:
            # The deprecated (use_mean_gradient=True, UnitType.sample) pair meant mean
            # gradients with the rate as given: per minibatch.
            schedule = copy.copy(schedule)
            schedule.minibatch_size = IGNORE
            warnings.warn('use_mean_gradient=True with a per-sample schedule is deprecated; '
                          'use the minibatch_size arguments instead', DeprecationWarning)
        return schedule
    raise ValueError('training parameter schedule type (%s) not supported: it must be a number, a list or a '
                     'training schedule' % type(value).__name__)


def _options(l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
             gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation, minibatch_size):
    o = _cntk.AdditionalLearningOptions()
    o.l1_regularization_weight = float(l1_regularization_weight)
    o.l2_regularization_weight = float(l2_regularization_weight)
    noise = gaussian_noise_injection_std_dev
    o.gaussian_noise_injection_std_dev = noise if _is_schedule(noise) else training_parameter_schedule(noise)
    o.gradient_clipping_threshold_per_sample = float(gradient_clipping_threshold_per_sample)
    o.gradient_clipping_with_truncation = bool(gradient_clipping_with_truncation)
    o.minibatch_size = minibatch_size
    return o


def _parameter_list(parameters):
    if isinstance(parameters, _cntk.Variable):
        parameters = [parameters]
    params = list(parameters)
    for p in params:
        if not isinstance(p, _cntk.Variable) or not p.is_parameter:
            raise ValueError("learners update parameters only, not %r" % (p,))
    return params


def _prepare(parameters, lr, minibatch_size, use_mean_gradient, epoch_size):
    ref = _infer_ref_minibatch_size(minibatch_size, use_mean_gradient)
    lr = _infer_schedule(lr, ref, epoch_size, use_mean_gradient)
    return _parameter_list(parameters), lr, ref


def _finish(learner, ref):
    learner.is_minibatch_size_explicitly_specified = ref is not None
    return learner


def _unit_gain(unit_gain):
    return default_unit_gain_value() if unit_gain is None else bool(unit_gain)


def sgd(parameters, lr, l1_regularization_weight=0.0, l2_regularization_weight=0.0,
        gaussian_noise_injection_std_dev=0.0, gradient_clipping_threshold_per_sample=np.inf,
        gradient_clipping_with_truncation=True, use_mean_gradient=None, minibatch_size=None, epoch_size=None):
    """Stochastic gradient descent: w -= lr * g.

    Args:
        parameters (list of parameters): the parameters to tune (e.g. ``model.parameters``).
        lr (float, list or schedule): learning rate; see :func:`learning_parameter_schedule`.
        l1_regularization_weight (float): L1 weight per sample (proximal step after the update).
        l2_regularization_weight (float): L2 weight per sample (added to the gradient).
        gaussian_noise_injection_std_dev (float): standard deviation of Gaussian noise
         added to the parameters after each update.
        gradient_clipping_threshold_per_sample (float): clipping threshold per sample.
        gradient_clipping_with_truncation (bool): clip each element (True) or
         rescale the gradient's norm (False).
        use_mean_gradient (bool): deprecated; use ``minibatch_size``.
        minibatch_size (int): reference minibatch size of the hyper-parameters given
         as numbers; :attr:`IGNORE` makes the learner work on mean gradients.
        epoch_size (int): samples per scheduling unit of list-valued hyper-parameters.

    Returns:
        :class:`Learner`: to pass to a :class:`~cntk.train.trainer.Trainer`.
    """
    params, lr, ref = _prepare(parameters, lr, minibatch_size, use_mean_gradient, epoch_size)
    opts = _options(l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
                    gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation, ref)
    return _finish(_cntk.sgd_learner(params, lr, opts), ref)


def momentum_sgd(parameters, lr, momentum, unit_gain=None, l1_regularization_weight=0.0,
                 l2_regularization_weight=0.0, gaussian_noise_injection_std_dev=0.0,
                 gradient_clipping_threshold_per_sample=np.inf, gradient_clipping_with_truncation=True,
                 use_mean_gradient=None, minibatch_size=None, epoch_size=None):
    """SGD with momentum: s = m * s + (1 - m) * lr * g (unit gain; lr * g otherwise); w -= s.

    ``unit_gain`` defaults to :func:`default_unit_gain_value`. See :func:`sgd` for
    the other arguments and :func:`momentum_schedule` for ``momentum``.
    """
    params, lr, ref = _prepare(parameters, lr, minibatch_size, use_mean_gradient, epoch_size)
    momentum = _infer_schedule(momentum, ref, epoch_size)
    opts = _options(l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
                    gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation, ref)
    return _finish(_cntk.momentum_sgd_learner(params, lr, momentum, _unit_gain(unit_gain), opts), ref)


def nesterov(parameters, lr, momentum, unit_gain=None, l1_regularization_weight=0.0, l2_regularization_weight=0.0,
             gaussian_noise_injection_std_dev=0.0, gradient_clipping_threshold_per_sample=np.inf,
             gradient_clipping_with_truncation=True, use_mean_gradient=None, minibatch_size=None, epoch_size=None):
    """Nesterov's accelerated gradient: s = m * s + k * lr * g; w -= m * s + k * lr * g
    (k = 1 - m with unit gain, else 1). See :func:`momentum_sgd`."""
    params, lr, ref = _prepare(parameters, lr, minibatch_size, use_mean_gradient, epoch_size)
    momentum = _infer_schedule(momentum, ref, epoch_size)
    opts = _options(l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
                    gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation, ref)
    return _finish(_cntk.nesterov_learner(params, lr, momentum, _unit_gain(unit_gain), opts), ref)


def adadelta(parameters, lr=None, rho=0.95, epsilon=1e-8,
             l1_regularization_weight=0.0, l2_regularization_weight=0.0, gaussian_noise_injection_std_dev=0.0,
             gradient_clipping_threshold_per_sample=np.inf, gradient_clipping_with_truncation=True,
             use_mean_gradient=None, minibatch_size=None, epoch_size=None):
    """AdaDelta (Zeiler 2012) with decay ``rho`` and ``epsilon``; the step is scaled
    by ``lr`` (per sample, 1 by default). See :func:`sgd` for the other arguments."""
    # Schedule defaults are made per call (see _DEFAULT_VARIANCE_MOMENTUM).
    if lr is None:
        lr = learning_parameter_schedule_per_sample(1)
    params, lr, ref = _prepare(parameters, lr, minibatch_size, use_mean_gradient, epoch_size)
    opts = _options(l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
                    gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation, ref)
    return _finish(_cntk.ada_delta_learner(params, lr, float(rho), float(epsilon), opts), ref)


def adagrad(parameters, lr, need_ave_multiplier=True, l1_regularization_weight=0.0, l2_regularization_weight=0.0,
            gaussian_noise_injection_std_dev=0.0, gradient_clipping_threshold_per_sample=np.inf,
            gradient_clipping_with_truncation=True, use_mean_gradient=None, minibatch_size=None, epoch_size=None):
    """AdaGrad: the gradient divided by the root of the sum of past squared
    gradients; with ``need_ave_multiplier`` the step is divided by the mean of that
    factor. See :func:`sgd` for the other arguments."""
    params, lr, ref = _prepare(parameters, lr, minibatch_size, use_mean_gradient, epoch_size)
    opts = _options(l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
                    gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation, ref)
    return _finish(_cntk.ada_grad_learner(params, lr, bool(need_ave_multiplier), opts), ref)


_DEFAULT_VARIANCE_MOMENTUM = 0.9999986111120757  # exp(-1 / 720000): a time constant of 2 * 3600 * 100 samples


def _variance_momentum(variance_momentum):
    # None is CNTK's default, momentum_schedule_per_sample(_DEFAULT_VARIANCE_MOMENTUM), made per
    # call: a native schedule kept as a signature default would outlive the extension's teardown.
    if variance_momentum is None:
        return momentum_schedule_per_sample(_DEFAULT_VARIANCE_MOMENTUM)
    return variance_momentum


def fsadagrad(parameters, lr, momentum, unit_gain=None,
              variance_momentum=None,
              l1_regularization_weight=0.0, l2_regularization_weight=0.0, gaussian_noise_injection_std_dev=0.0,
              gradient_clipping_threshold_per_sample=np.inf, gradient_clipping_with_truncation=True,
              use_mean_gradient=None, minibatch_size=None, epoch_size=None):
    """FSAdaGrad: an AdaGrad-normalised gradient (running mean of g^2 with
    ``variance_momentum``) followed by momentum. See :func:`momentum_sgd`."""
    params, lr, ref = _prepare(parameters, lr, minibatch_size, use_mean_gradient, epoch_size)
    momentum = _infer_schedule(momentum, ref, epoch_size)
    variance_momentum = _infer_schedule(_variance_momentum(variance_momentum), ref, epoch_size)
    opts = _options(l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
                    gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation, ref)
    return _finish(_cntk.fsada_grad_learner(params, lr, momentum, _unit_gain(unit_gain), variance_momentum, opts),
                   ref)


def adam(parameters, lr, momentum, unit_gain=None,
         variance_momentum=None,
         l1_regularization_weight=0.0, l2_regularization_weight=0.0, gaussian_noise_injection_std_dev=0.0,
         gradient_clipping_threshold_per_sample=np.inf, gradient_clipping_with_truncation=True,
         use_mean_gradient=None, epsilon=1e-8, adamax=False, minibatch_size=None, epoch_size=None):
    """Adam (Kingma and Ba 2015): ``momentum`` is beta1 and ``variance_momentum``
    beta2; with ``adamax`` the second moment is an infinity norm. With unit gain
    the first moment is the usual (1 - beta1)-weighted mean. See :func:`momentum_sgd`."""
    params, lr, ref = _prepare(parameters, lr, minibatch_size, use_mean_gradient, epoch_size)
    momentum = _infer_schedule(momentum, ref, epoch_size)
    variance_momentum = _infer_schedule(_variance_momentum(variance_momentum), ref, epoch_size)
    opts = _options(l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
                    gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation, ref)
    return _finish(_cntk.adam_learner(params, lr, momentum, _unit_gain(unit_gain), variance_momentum,
                                      float(epsilon), bool(adamax), opts), ref)


def rmsprop(parameters, lr, gamma, inc, dec, max, min, need_ave_multiplier=True, l1_regularization_weight=0.0,
            l2_regularization_weight=0.0, gaussian_noise_injection_std_dev=0.0,
            gradient_clipping_threshold_per_sample=np.inf, gradient_clipping_with_truncation=True,
            use_mean_gradient=None, minibatch_size=None, epoch_size=None):
    """CNTK's RMSProp: the gradient over the root of a running mean of g^2
    (factor ``gamma``), times per-element step sizes that grow by ``inc`` while the
    gradient keeps its sign and shrink by ``dec`` when it flips, within [min, max].

    Args:
        gamma (float): in (0, 1). inc (float): greater than 1. dec (float): in (0, 1).
        max (float): greater than 0 and than min. min (float): greater than 0.
        need_ave_multiplier (bool): divide the step by the mean scale factor.

    See :func:`sgd` for the other arguments.
    """
    params, lr, ref = _prepare(parameters, lr, minibatch_size, use_mean_gradient, epoch_size)
    opts = _options(l1_regularization_weight, l2_regularization_weight, gaussian_noise_injection_std_dev,
                    gradient_clipping_threshold_per_sample, gradient_clipping_with_truncation, ref)
    return _finish(_cntk.rmsprop_learner(params, lr, float(gamma), float(inc), float(dec), float(max), float(min),
                                         bool(need_ave_multiplier), opts), ref)


def universal(update_func, parameters):
    """A learner whose update is a graph.

    ``update_func(parameters, gradients)`` receives the parameters and, for each, a
    constant that holds its gradient (summed over the minibatch) at update time, and
    returns a Function whose :func:`~cntk.ops.assign` operations update the
    parameters. The graph is evaluated once per minibatch; without assign
    operations nothing changes.

    Example:
        >>> def my_sgd(parameters, gradients):
        ...     return C.combine([C.assign(p, p - 0.01 * g) for p, g in zip(parameters, gradients)])
        >>> learner = C.universal(my_sgd, z.parameters)  # doctest: +SKIP
    """
    from ..ops import constant, combine
    try:
        params_of_func = [p for p in inspect.signature(update_func).parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params_of_func = [None, None]
    if len(params_of_func) != 2:
        raise ValueError('update_func must be a function that accepts two arguments (parameters, gradients)')
    parameters = _parameter_list(parameters)
    gradients = []
    for p in parameters:
        if any(d < 0 for d in p.shape):
            raise ValueError('parameter %s has inferred dimensions; create the learner after all parameter shapes '
                             'are known' % p)
        gradients.append(constant(0, shape=p.shape, dtype=p.dtype, name='grad'))
    result = update_func(parameters, gradients)
    if isinstance(result, _cntk.Variable):
        result = combine([result])
    elif isinstance(result, (list, tuple)):
        result = combine(list(result))
    if not isinstance(result, _cntk.Function):
        raise TypeError('update_func must return a Function, not %s' % type(result).__name__)
    return _cntk.universal_learner(parameters, gradients, result)
