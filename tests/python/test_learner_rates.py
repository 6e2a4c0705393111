"""How every learner turns its learning rate (and momentum) into an update for each way
of giving it: per-sample schedules, per-minibatch schedules with and without a reference
minibatch size, the learner's minibatch_size, IGNORE and the deprecated use_mean_gradient.

The expectations are the rule table of src/learn/README.md, written out per case: which
gradient the learner's formula sees (the minibatch sum, or its mean) and which rate it
applies, for a minibatch of n samples. Gradients handed to a learner are sums over the
minibatch, as the Trainer produces them (CNTK 2.7's Learner.h LearningRate(n) and
LearnerBase::PreProcess)."""
import warnings

import numpy as np
import pytest

import cntk as C
from cntk.learners import (IGNORE, UnitType, learning_parameter_schedule, learning_parameter_schedule_per_sample,
                           learning_rate_schedule)
from test_learners import (make_rule_adadelta, make_rule_adagrad, make_rule_adam, make_rule_fsadagrad,
                           make_rule_momentum, make_rule_rmsprop, rule_sgd)

LR = 0.05
M, V = 0.9, 0.99  # momentum and variance momentum, given as numbers


class Case(object):
    def __init__(self, name, lr, kwargs, mean, rate, momentum_ref):
        self.name, self.lr, self.kwargs = name, lr, kwargs
        self.mean = mean                  # the formula sees sum / n (True) or the sum (False)
        self.rate = rate                  # rate(n): the learning rate the formula applies
        self.momentum_ref = momentum_ref  # momentum m given as a number applies as m ** (n / ref); 0: as is

    def __repr__(self):
        return self.name


CASES = [
    # learning_parameter_schedule_per_sample(lr): lr per sample, on the summed gradient
    Case('per_sample', lambda: learning_parameter_schedule_per_sample(LR), {}, False, lambda n: LR, 0),
    # a per-minibatch schedule without reference size: lr / n on the sum = lr on the mean gradient
    Case('per_minibatch', lambda: learning_parameter_schedule(LR), {}, False, lambda n: LR / n, 0),
    Case('number', lambda: LR, {}, False, lambda n: LR / n, 0),
    Case('legacy_minibatch_unit', lambda: learning_rate_schedule(LR, UnitType.minibatch), {}, False,
         lambda n: LR / n, 0),
    # a schedule designed for minibatches of 4: lr / 4 per sample
    Case('schedule_minibatch_size', lambda: learning_parameter_schedule(LR, minibatch_size=4), {}, False,
         lambda n: LR / 4, 0),
    # the learner's minibatch_size: numbers (learning rate and momentum) are for minibatches of 4
    Case('learner_minibatch_size', lambda: LR, {'minibatch_size': 4}, False, lambda n: LR / 4, 4),
    # a schedule without its own size takes the learner's; one with its own keeps it
    Case('schedule_takes_learner_size', lambda: learning_parameter_schedule(LR), {'minibatch_size': 4}, False,
         lambda n: LR / 4, 4),
    Case('schedule_keeps_own_size', lambda: learning_parameter_schedule(LR, minibatch_size=2),
         {'minibatch_size': 4}, False, lambda n: LR / 2, 4),
    # IGNORE: compatible mode, the formula sees the mean gradient and the rate as given
    Case('ignore', lambda: LR, {'minibatch_size': IGNORE}, True, lambda n: LR, 0),
    Case('ignore_schedule_minibatch_size', lambda: learning_parameter_schedule(LR, minibatch_size=4),
         {'minibatch_size': IGNORE}, True, lambda n: LR * n / 4, 0),
    # use_mean_gradient=True (deprecated) is IGNORE; False is as if not given
    Case('use_mean_gradient', lambda: LR, {'use_mean_gradient': True}, True, lambda n: LR, 0),
    Case('use_mean_gradient_legacy_per_sample', lambda: learning_rate_schedule(LR, UnitType.sample),
         {'use_mean_gradient': True}, True, lambda n: LR, 0),
    Case('use_mean_gradient_false', lambda: LR, {'use_mean_gradient': False}, False, lambda n: LR / n, 0),
]

# name: (factory(params, lr, **kw), rule(momentum_ref))
LEARNERS = {
    'sgd': (lambda p, lr, **kw: C.sgd(p, lr, **kw), lambda ref: rule_sgd),
    'momentum_sgd': (lambda p, lr, **kw: C.momentum_sgd(p, lr, M, **kw),
                     lambda ref: make_rule_momentum(M, ref)),
    'nesterov': (lambda p, lr, **kw: C.nesterov(p, lr, M, **kw),
                 lambda ref: make_rule_momentum(M, ref, nesterov=True)),
    'adagrad': (lambda p, lr, **kw: C.adagrad(p, lr, **kw), lambda ref: make_rule_adagrad(True)),
    'adadelta': (lambda p, lr, **kw: C.adadelta(p, lr, **kw), lambda ref: make_rule_adadelta(0.95, 1e-8)),
    'fsadagrad': (lambda p, lr, **kw: C.fsadagrad(p, lr, M, variance_momentum=V, **kw),
                  lambda ref: make_rule_fsadagrad(M, ref, V, ref)),
    'adam': (lambda p, lr, **kw: C.adam(p, lr, M, variance_momentum=V, **kw),
             lambda ref: make_rule_adam(M, ref, V, ref, 1e-8)),
    'rmsprop': (lambda p, lr, **kw: C.rmsprop(p, lr, gamma=0.9, inc=1.5, dec=0.5, max=5.0, min=0.01, **kw),
                lambda ref: make_rule_rmsprop(0.9, 1.5, 0.5, 5.0, 0.01, True)),
}

SIZES = [3, 8, 1, 5]


class State(object):
    def __init__(self, w):
        self.w = np.array(w, dtype=np.float64)
        self.state = {}


@pytest.mark.parametrize("case", CASES, ids=repr)
@pytest.mark.parametrize("learner_name", sorted(LEARNERS))
def test_rate_rules(learner_name, case):
    factory, make_rule = LEARNERS[learner_name]
    init = np.array([0.5, -1.0, 2.0, 0.25, -0.3, 0.1])
    w = C.parameter(init.shape, init=init, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        learner = factory([w], case.lr(), **case.kwargs)
    expected = State(init)
    rule = make_rule(case.momentum_ref)
    rng = np.random.RandomState(7)
    for n in SIZES:
        g = rng.standard_normal(init.shape) * n  # a sum over n samples
        learner.update({w: g}, n)
        rule(expected, g / n if case.mean else g, n, case.rate(n))
        np.testing.assert_allclose(w.value, expected.w, rtol=1e-10, atol=1e-12)


def test_learner_attributes_per_case():
    # What the learner reports for each case: its reference size and compatible mode.
    w = C.parameter((2,), init=0.0)
    want = {
        'per_sample': (IGNORE, 1, False), 'per_minibatch': (IGNORE, 0, False), 'number': (IGNORE, 0, False),
        'legacy_minibatch_unit': (IGNORE, 0, False), 'schedule_minibatch_size': (IGNORE, 4, False),
        'learner_minibatch_size': (4, 4, False), 'schedule_takes_learner_size': (4, 4, False),
        'schedule_keeps_own_size': (4, 2, False), 'ignore': (IGNORE, 0, True),
        'ignore_schedule_minibatch_size': (IGNORE, 4, True), 'use_mean_gradient': (IGNORE, 0, True),
        'use_mean_gradient_legacy_per_sample': (IGNORE, 0, True), 'use_mean_gradient_false': (IGNORE, 0, False),
    }
    assert sorted(want) == sorted(c.name for c in CASES)
    for case in CASES:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            learner = C.adam([w], case.lr(), M, **case.kwargs)
        got = (learner.minibatch_size, learner._learning_rate_schedule.minibatch_size, learner.is_compatible_mode())
        assert got == want[case.name], case.name
        assert learner.learning_rate() == LR


@pytest.mark.parametrize("n", [1, 10, 40])
def test_adam_first_step_size(n):
    # Adam's first step is rate * g / |g| (bias-corrected moments of one gradient), so its
    # size shows the rate: a per-minibatch schedule without a reference size steps lr / n
    # (the Adam update does not undo the 1 / n), per-sample and IGNORE step lr.
    g = np.array([3.0, -0.5, 20.0]) * n
    sign = np.sign(g)
    for lr, kwargs, step in [(learning_parameter_schedule(0.1), {}, 0.1 / n),
                             (learning_parameter_schedule_per_sample(0.1), {}, 0.1),
                             (0.1, {'minibatch_size': IGNORE}, 0.1),
                             (0.1, {'minibatch_size': 20}, 0.1 / 20)]:
        w = C.parameter((3,), init=0.0, dtype=np.float64)
        C.adam([w], lr, 0.9, variance_momentum=0.999, epsilon=0.0, **kwargs).update({w: g}, n)
        np.testing.assert_allclose(w.value, -step * sign, rtol=1e-12)


@pytest.mark.parametrize("n", [1, 4, 16])
def test_sgd_step_on_a_constant_per_sample_gradient(n):
    # Every sample contributes gradient 1 (the sum is n): the per-minibatch rate moves the
    # weight by lr whatever n is; per-sample and minibatch_size=N rates scale with n.
    g = np.full(2, float(n))
    for lr, kwargs, step in [(learning_parameter_schedule(0.1), {}, 0.1),
                             (learning_parameter_schedule_per_sample(0.1), {}, 0.1 * n),
                             (0.1, {'minibatch_size': 4}, 0.1 * n / 4),
                             (0.1, {'minibatch_size': IGNORE}, 0.1)]:
        w = C.parameter((2,), init=0.0, dtype=np.float64)
        C.sgd([w], lr, **kwargs).update({w: g}, n)
        np.testing.assert_allclose(w.value, -step * np.ones(2), rtol=1e-12)
