"""cntk.learners: schedules, and every learner's update against a NumPy version of
CNTK's formula (Source/CNTKv2LibraryDll/Learner.cpp, Source/Math/CPUMatrixImpl.h)
over several minibatches of varying sizes."""
import numpy as np
import pytest

import cntk as C
from cntk.learners import (IGNORE, UnitType, learning_parameter_schedule, learning_parameter_schedule_per_sample,
                           learning_rate_schedule, momentum_schedule, sgd, universal)

# ----------------------------------------------------------------- schedules

LR_SCHEDULES = [
    ((0.2, 3), [0.2], 3),
    ((0.2, 4), [0.2, 0.2, 0.2, 0.2], 4),
    (([0.2, 0.4], 7, 5), [0.2] * 5 + [0.4] * 20, 7),
    (([(3, 0.2), (2, 0.4), (1, 0.8)], 13, 5), [0.2] * 15 + [0.4] * 10 + [0.8] * 20, 13),
    ((0.2, 0), [0.2], 0),
    (([0.2, 0.4], 0, 5), [0.2] * 5 + [0.4] * 20, 0),
]


@pytest.mark.parametrize("args, expected, minibatch_size", LR_SCHEDULES)
def test_learning_parameter_schedule(args, expected, minibatch_size):
    s = learning_parameter_schedule(*args)
    assert s.minibatch_size == minibatch_size
    assert [s[i] for i in range(len(expected))] == expected


@pytest.mark.parametrize("args, expected, minibatch_size", [
    ((0.2, UnitType.sample), [0.2, 0.2], 1),
    (([(3, 0.2), (2, 0.4), (1, 0.8)], UnitType.sample, 5), [0.2] * 15 + [0.4] * 10 + [0.8] * 20, 1),
    ((0.2, UnitType.minibatch), [0.2], 0),
    (([0.2, 0.4], 'minibatch', 5), [0.2] * 5 + [0.4] * 20, 0),
])
def test_learning_rate_schedule_legacy(args, expected, minibatch_size):
    s = learning_rate_schedule(*args)
    assert s.minibatch_size == minibatch_size
    assert [s[i] for i in range(len(expected))] == expected


def test_schedules_momentum_and_time_constants():
    m = momentum_schedule([(999, 0.99), (888, 0.88), (0, 0.77)])
    assert (m[0], m[998], m[999], m[999 + 887], m[999 + 888], m[10 ** 6]) == (0.99, 0.99, 0.88, 0.88, 0.77, 0.77)
    assert C.momentum_schedule_per_sample(0.9).minibatch_size == 1
    tc = C.momentum_as_time_constant_schedule(1100)
    assert tc.minibatch_size == 1 and tc[0] == np.exp(-1.0 / 1100)
    tcl = C.momentum_as_time_constant_schedule([980, 520], epoch_size=10)
    assert tcl.minibatch_size == 1
    assert (tcl[9], tcl[10]) == (np.exp(-1.0 / 980), np.exp(-1.0 / 520))
    assert C.momentum_as_time_constant_schedule(0)[0] == 0.0


def test_schedule_without_epoch_size_is_per_sweep():
    s = learning_parameter_schedule([0.1, 0.01])
    assert s.is_sweep_based()
    assert (s[0], s[1], s[5]) == (0.1, 0.01, 0.01)
    assert not learning_parameter_schedule([0.1, 0.01], epoch_size=100).is_sweep_based()


def test_schedule_errors():
    with pytest.raises(ValueError):
        learning_parameter_schedule('fast')
    with pytest.raises(ValueError):
        learning_parameter_schedule([(0, 0.1), (2, 0.2)], epoch_size=10)
    with pytest.raises(ValueError):
        learning_parameter_schedule([])
    with pytest.raises(ValueError):
        sgd([C.parameter((2,), init=0)], lr='fast')


# --------------------------------------------------------- learner attributes

def test_learner_reference_minibatch_sizes():
    w = C.parameter((1,), init=1.0)
    l = sgd([w], lr=0.1, minibatch_size=25)
    assert (l.minibatch_size, l._learning_rate_schedule.minibatch_size, l.is_compatible_mode()) == (25, 25, False)
    l = sgd([w], lr=learning_parameter_schedule(0.1))
    assert (l.minibatch_size, l._learning_rate_schedule.minibatch_size, l.is_compatible_mode()) == (IGNORE, 0, False)
    l = sgd([w], lr=learning_parameter_schedule(0.1, 20), minibatch_size=25)
    assert (l.minibatch_size, l._learning_rate_schedule.minibatch_size) == (25, 20)
    l = sgd([w], lr=learning_parameter_schedule(0.1), minibatch_size=IGNORE)
    assert l.is_compatible_mode()
    l = sgd([w], lr=learning_rate_schedule(0.1, UnitType.sample))
    assert l._learning_rate_schedule.minibatch_size == 1 and l.learning_rate() == 0.1
    l = C.adam([w], lr=[0.4, 0.1, 0.001], momentum=[0.9, 0.1], variance_momentum=[0.9], minibatch_size=32,
               epoch_size=512)
    assert l._learning_rate_schedule.minibatch_size == 32
    assert [l._learning_rate_schedule[i] for i in (0, 511, 512, 1024)] == [0.4, 0.4, 0.1, 0.001]
    assert l.parameters == [w]
    assert isinstance(l, C.learners.Learner)
    # The user's schedule object is not changed by a learner that overrides its reference size.
    lr = learning_parameter_schedule(0.1)
    sgd([w], lr, minibatch_size=10)
    assert lr.minibatch_size == 0


def test_default_unit_gain():
    assert C.default_unit_gain_value()
    try:
        C.set_default_unit_gain_value(False)
        assert not C.default_unit_gain_value()
        w = C.parameter((1,), init=0.0, dtype=np.float64)
        l = C.momentum_sgd([w], lr=1.0, momentum=0.5)
        l.update({w: np.array([1.0])}, 1)
        assert w.value[0] == -1.0  # classic momentum: no (1 - m) factor
    finally:
        C.set_default_unit_gain_value(True)


def test_learner_update_and_reset_learning_rate():
    w = C.parameter((1,), init=1.0)
    l = sgd([w], lr=learning_parameter_schedule([0.1] * 50 + [0.2] * 50, minibatch_size=1, epoch_size=1))
    assert l.learning_rate() == 0.1
    assert l.update({w: np.asarray([2.0], dtype=np.float32)}, 100)
    assert l.learning_rate() == 0.2
    assert w.value[0] < 1.0
    l.reset_learning_rate(learning_parameter_schedule([0.3] * 50 + [0.4] * 50, minibatch_size=1, epoch_size=1))
    assert l.learning_rate() == 0.3
    l.update({w: np.asarray([2.0], dtype=np.float32)}, 100)
    assert l.learning_rate() == 0.4
    with pytest.raises(ValueError):
        l.reset_learning_rate(0.5)


def test_learner_errors():
    w = C.parameter((2,), init=0.0)
    with pytest.raises(ValueError, match="twice"):
        sgd([w, w], lr=0.1)
    with pytest.raises(ValueError):
        sgd([C.input_variable(2)], lr=0.1)
    with pytest.raises(ValueError, match="gamma"):
        C.rmsprop([w], 0.1, gamma=1.5, inc=1.2, dec=0.7, max=10, min=1e-8)
    with pytest.raises(ValueError, match="epsilon"):
        C.adam([w], 0.1, 0.9, epsilon=-1)
    l = sgd([w], lr=0.1)
    with pytest.raises(ValueError, match="no gradient"):
        l.update({}, 4)
    with pytest.raises(ValueError, match="empty"):
        l.update({w: np.ones(2)}, 0)
    assert not sgd([w], lr=0.0).update({w: np.ones(2)}, 4)  # a zero learning rate stops learning


# ------------------------------------------------------ NumPy reference learners

def lr_for(value, ref, n, compat=False):
    """CNTK's LearningRate(n): the rate applied to summed (or, compat, mean) gradients."""
    if ref == 0:
        return value if compat else value / n
    return value * n / ref if compat else value / ref


def momentum_for(value, ref, n):
    return value if ref == 0 else value ** (n / ref)


class Reference(object):
    """Pre-processing, rule and post-processing of CNTK's LearnerBase::Update, in float64."""

    def __init__(self, w, rule, lr, lr_ref, compat=False, l1=0.0, l2=0.0, clip=np.inf, truncate=True):
        self.w = np.array(w, dtype=np.float64)
        self.rule, self.lr, self.lr_ref, self.compat = rule, lr, lr_ref, compat
        self.l1, self.l2, self.clip, self.truncate = l1, l2, clip, truncate
        self.samples = 0
        self.state = {}

    def update(self, g, n):
        g = np.array(g, dtype=np.float64)
        lr_value = self.lr(self.samples) if callable(self.lr) else self.lr
        lr = lr_for(lr_value, self.lr_ref, n, self.compat)
        if self.compat:
            g = g / n
        if self.clip != np.inf:
            limit = self.clip if self.compat else self.clip * n
            if self.truncate:
                g = np.clip(g, -limit, limit)
            else:
                norm = np.sqrt(np.sum(g * g))
                if norm > limit:
                    g = g * (limit / norm)
        if self.l2 > 0:
            g = g + self.l2 * (1 if self.compat else n) * self.w
        self.rule(self, g, n, lr)
        if self.l1 > 0:
            t = lr * self.l1 * (1 if self.compat else n)
            self.w = np.where(self.w > t, self.w - t, np.where(self.w < -t, self.w + t, 0.0))
        self.samples += n


def rule_sgd(r, g, n, lr):
    r.w = r.w - lr * g


def make_rule_momentum(m, m_ref, unit_gain=True, nesterov=False):
    def rule(r, g, n, lr):
        mm = momentum_for(m, m_ref, n)
        k = (1 - mm) if unit_gain else 1.0
        s = r.state.get('s', np.zeros_like(r.w))
        s = mm * s + k * lr * g
        r.state['s'] = s
        r.w = r.w - (mm * s + k * lr * g if nesterov else s)
    return rule


def make_rule_adagrad(need_ave):
    def rule(r, g, n, lr):
        acc = r.state.get('acc', np.zeros_like(r.w)) + g * g
        r.state['acc'] = acc
        d = np.sqrt(acc + 1e-16)
        ave = np.mean(1 / d) if need_ave else 1.0
        r.w = r.w - lr / ave * (g / d)
    return rule


def make_rule_adadelta(rho, eps):
    def rule(r, g, n, lr):
        a = rho * r.state.get('a', np.zeros_like(r.w)) + (1 - rho) * g * g
        x2 = r.state.get('x2', np.zeros_like(r.w))
        dx = -np.sqrt(x2 + eps) / np.sqrt(a + eps) * g
        r.state['a'], r.state['x2'] = a, rho * x2 + (1 - rho) * dx * dx
        r.w = r.w + lr * dx
    return rule


def make_rule_fsadagrad(m, m_ref, v, v_ref, unit_gain=True):
    def rule(r, g, n, lr):
        mm, vv = momentum_for(m, m_ref, n), momentum_for(v, v_ref, n)
        count = vv * r.state.get('count', 0.0) + (1 - vv) * n
        r.state['count'] = count
        a = vv * r.state.get('a', np.zeros_like(r.w)) + (1 - vv) * g * g
        r.state['a'] = a
        f = np.where(a != 0, np.minimum(np.sqrt(count) / np.sqrt(np.where(a != 0, a, 1)), 10.0), 1.0)
        g = g * f
        if mm > 0:
            g = mm * r.state.get('s', np.zeros_like(r.w)) + ((1 - mm) if unit_gain else 1.0) * g
            r.state['s'] = g
        r.w = r.w - lr * g
    return rule


def make_rule_adam(m, m_ref, v, v_ref, eps, unit_gain=True, adamax=False):
    def rule(r, g, n, lr):
        mm, vv = momentum_for(m, m_ref, n), momentum_for(v, v_ref, n)
        t = r.state.get('t', 0) + 1
        r.state['t'] = t
        if adamax:
            a = np.maximum(vv * r.state.get('a', np.zeros_like(r.w)), np.abs(g))
            corr = 1 / (1 - mm ** t)
            denom = a
        else:
            a = vv * r.state.get('a', np.zeros_like(r.w)) + (1 - vv) * g * g
            corr = np.sqrt(1 - vv ** t) / (1 - mm ** t)
            denom = np.sqrt(a)
        r.state['a'] = a
        s = mm * r.state.get('s', np.zeros_like(r.w)) + ((1 - mm) if unit_gain else 1.0) * g
        r.state['s'] = s
        r.w = r.w - s * (corr / (denom + eps)) * lr
    return rule


def make_rule_rmsprop(gamma, inc, dec, mx, mn, need_ave):
    def rule(r, g, n, lr):
        if 'avars' not in r.state:
            r.state.update(avars=g * g, signs=np.zeros_like(g), steps=np.full_like(g, 0.02))
        avars = gamma * r.state['avars'] + (1 - gamma) * g * g
        sign = np.sign(g)
        steps = np.where(r.state['signs'] * sign > 0, np.minimum(r.state['steps'] * inc, mx),
                         np.maximum(r.state['steps'] * dec, mn))
        a = steps / np.sqrt(avars + float(np.float32(1e-6)))  # CNTK's floor is the float literal 1e-6f
        r.state.update(avars=avars, signs=sign, steps=steps)
        ave = np.mean(a) if need_ave else 1.0
        r.w = r.w - lr / ave * (g * a)
    return rule


SIZES = [3, 7, 1, 10, 4, 6]


def run(learner, w, reference, dtype=np.float64, rtol=1e-10, atol=1e-12, sizes=SIZES, seed=0):
    rng = np.random.RandomState(seed)
    for n in sizes:
        g = rng.standard_normal(w.shape) * n
        learner.update({w: g.astype(dtype)}, n)
        reference.update(g.astype(dtype), n)
        np.testing.assert_allclose(w.value, reference.w, rtol=rtol, atol=atol)


def w64(init=(0.5, -1.0, 2.0, 0.25, -0.3, 0.0)):
    return C.parameter((len(init),), init=np.array(init), dtype=np.float64)


# ------------------------------------------------------------ learner formulas

@pytest.mark.parametrize("lr_args, ref", [((0.1,), 0), ((0.1, 1), 1), ((0.1, 5), 5)])
def test_sgd_learning_rate_reference_sizes(lr_args, ref):
    w = w64()
    run(sgd([w], lr=learning_parameter_schedule(*lr_args)), w, Reference(w.value, rule_sgd, 0.1, ref))


def test_sgd_schedule_changing_mid_run():
    # 0.1 for the first 10 samples, then 0.02, then 0.005 (counted in samples seen before each update)
    w = w64()
    values = [(10, 0.1), (10, 0.02), (1, 0.005)]
    sched = learning_parameter_schedule(values, minibatch_size=1, epoch_size=1)
    ref = Reference(w.value, rule_sgd, lambda seen: 0.1 if seen < 10 else (0.02 if seen < 20 else 0.005), 1)
    run(sgd([w], lr=sched), w, ref)


def test_sgd_learner_minibatch_size_and_compatible_mode():
    w = w64()
    run(sgd([w], lr=0.2, minibatch_size=4), w, Reference(w.value, rule_sgd, 0.2, 4))
    w = w64()
    run(sgd([w], lr=0.2, minibatch_size=IGNORE), w, Reference(w.value, rule_sgd, 0.2, 0, compat=True))
    w = w64()
    run(sgd([w], lr=learning_parameter_schedule(0.2, 4), minibatch_size=IGNORE), w,
        Reference(w.value, rule_sgd, 0.2, 4, compat=True))
    w = w64()  # deprecated use_mean_gradient with a per-sample schedule: per minibatch on mean gradients
    with pytest.warns(DeprecationWarning):
        l = sgd([w], lr=learning_rate_schedule(0.2, UnitType.sample), use_mean_gradient=True)
    run(l, w, Reference(w.value, rule_sgd, 0.2, 0, compat=True))


def test_sgd_regularization_and_clipping():
    w = w64()
    run(sgd([w], lr=0.05, l2_regularization_weight=0.01), w, Reference(w.value, rule_sgd, 0.05, 0, l2=0.01))
    w = w64()
    run(sgd([w], lr=0.05, l1_regularization_weight=0.02), w, Reference(w.value, rule_sgd, 0.05, 0, l1=0.02))
    w = w64()
    run(sgd([w], lr=0.05, gradient_clipping_threshold_per_sample=0.5), w,
        Reference(w.value, rule_sgd, 0.05, 0, clip=0.5))
    w = w64()
    run(sgd([w], lr=0.05, gradient_clipping_threshold_per_sample=0.5, gradient_clipping_with_truncation=False), w,
        Reference(w.value, rule_sgd, 0.05, 0, clip=0.5, truncate=False))
    w = w64()
    run(sgd([w], lr=0.05, minibatch_size=IGNORE, gradient_clipping_threshold_per_sample=0.5,
            l2_regularization_weight=0.01, l1_regularization_weight=0.001), w,
        Reference(w.value, rule_sgd, 0.05, 0, compat=True, clip=0.5, l2=0.01, l1=0.001))


@pytest.mark.parametrize("unit_gain", [True, False])
@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_and_nesterov(unit_gain, nesterov):
    make = C.nesterov if nesterov else C.momentum_sgd
    # momentum per 5 samples, learning rate per sample
    w = w64()
    l = make([w], lr=learning_parameter_schedule_per_sample(0.01), momentum=momentum_schedule(0.9, minibatch_size=5),
             unit_gain=unit_gain)
    run(l, w, Reference(w.value, make_rule_momentum(0.9, 5, unit_gain, nesterov), 0.01, 1))
    # both given as numbers for the learner's reference minibatch size
    w = w64()
    l = make([w], lr=0.1, momentum=0.8, unit_gain=unit_gain, minibatch_size=4, l2_regularization_weight=0.001)
    run(l, w, Reference(w.value, make_rule_momentum(0.8, 4, unit_gain, nesterov), 0.1, 4, l2=0.001))
    # per minibatch: the momentum applies as it is
    w = w64()
    l = make([w], lr=0.1, momentum=0.8, unit_gain=unit_gain)
    run(l, w, Reference(w.value, make_rule_momentum(0.8, 0, unit_gain, nesterov), 0.1, 0))


def test_momentum_as_time_constant():
    w = w64()
    l = C.momentum_sgd([w], lr=learning_parameter_schedule_per_sample(0.01),
                       momentum=C.momentum_as_time_constant_schedule(20))
    run(l, w, Reference(w.value, make_rule_momentum(np.exp(-1 / 20.0), 1), 0.01, 1))


@pytest.mark.parametrize("need_ave", [True, False])
def test_adagrad(need_ave):
    w = w64()
    l = C.adagrad([w], lr=0.1, need_ave_multiplier=need_ave)
    run(l, w, Reference(w.value, make_rule_adagrad(need_ave), 0.1, 0))


def test_adadelta():
    w = w64()
    run(C.adadelta([w]), w, Reference(w.value, make_rule_adadelta(0.95, 1e-8), 1.0, 1))
    w = w64()
    run(C.adadelta([w], lr=0.5, rho=0.9, epsilon=1e-6), w, Reference(w.value, make_rule_adadelta(0.9, 1e-6), 0.5, 0))


def test_fsadagrad():
    w = w64()
    l = C.fsadagrad([w], lr=0.01, momentum=0.9)
    run(l, w, Reference(w.value, make_rule_fsadagrad(0.9, 0, 0.9999986111120757, 1), 0.01, 0))
    w = w64()
    l = C.fsadagrad([w], lr=0.01, momentum=momentum_schedule(0.9, minibatch_size=4), unit_gain=False,
                    variance_momentum=0.99)
    run(l, w, Reference(w.value, make_rule_fsadagrad(0.9, 4, 0.99, 0, unit_gain=False), 0.01, 0))


@pytest.mark.parametrize("adamax", [False, True])
@pytest.mark.parametrize("unit_gain", [True, False])
def test_adam(adamax, unit_gain):
    w = w64()
    l = C.adam([w], lr=0.01, momentum=0.9, variance_momentum=0.999, unit_gain=unit_gain, adamax=adamax)
    run(l, w, Reference(w.value, make_rule_adam(0.9, 0, 0.999, 0, 1e-8, unit_gain, adamax), 0.01, 0))
    w = w64()  # default variance momentum (per sample) and momentum per 5 samples
    l = C.adam([w], lr=learning_parameter_schedule_per_sample(0.001), momentum=momentum_schedule(0.9, minibatch_size=5),
               unit_gain=unit_gain, adamax=adamax, epsilon=1e-6)
    run(l, w, Reference(w.value, make_rule_adam(0.9, 5, 0.9999986111120757, 1, 1e-6, unit_gain, adamax), 0.001, 1))


@pytest.mark.parametrize("need_ave", [True, False])
def test_rmsprop(need_ave):
    w = w64()
    l = C.rmsprop([w], lr=0.01, gamma=0.9, inc=1.5, dec=0.5, max=5.0, min=0.01, need_ave_multiplier=need_ave)
    run(l, w, Reference(w.value, make_rule_rmsprop(0.9, 1.5, 0.5, 5.0, 0.01, need_ave), 0.01, 0))


# A parameter past the size at which updates run on every OpenMP thread (2^15 elements), of a size no
# thread count divides (ranges with a tail), with mean gradients (compatible mode: the 1/n is folded into
# each rule's pass) and the learners' own rules, against the float64 reference.
BIG = 70001


@pytest.mark.parametrize("name, make, rule", [
    ('sgd', lambda w: sgd([w], lr=0.05, minibatch_size=IGNORE), rule_sgd),
    ('momentum', lambda w: C.momentum_sgd([w], lr=0.05, momentum=0.9, minibatch_size=IGNORE),
     make_rule_momentum(0.9, 0)),
    ('nesterov', lambda w: C.nesterov([w], lr=0.05, momentum=0.9, minibatch_size=IGNORE),
     make_rule_momentum(0.9, 0, nesterov=True)),
    ('adagrad', lambda w: C.adagrad([w], lr=0.05, need_ave_multiplier=False, minibatch_size=IGNORE),
     make_rule_adagrad(False)),
    ('adagrad_ave', lambda w: C.adagrad([w], lr=0.05, need_ave_multiplier=True, minibatch_size=IGNORE),
     make_rule_adagrad(True)),
    ('adadelta', lambda w: C.adadelta([w], lr=0.5, rho=0.9, epsilon=1e-6, minibatch_size=IGNORE),
     make_rule_adadelta(0.9, 1e-6)),
    ('fsadagrad', lambda w: C.fsadagrad([w], lr=0.05, momentum=0.9, variance_momentum=0.999,
                                        minibatch_size=IGNORE), make_rule_fsadagrad(0.9, 0, 0.999, 0)),
    ('adam', lambda w: C.adam([w], lr=0.05, momentum=0.9, variance_momentum=0.999, minibatch_size=IGNORE),
     make_rule_adam(0.9, 0, 0.999, 0, 1e-8)),
    ('adamax', lambda w: C.adam([w], lr=0.05, momentum=0.9, variance_momentum=0.999, adamax=True,
                                minibatch_size=IGNORE), make_rule_adam(0.9, 0, 0.999, 0, 1e-8, adamax=True)),
    ('rmsprop', lambda w: C.rmsprop([w], lr=0.01, gamma=0.9, inc=1.5, dec=0.5, max=5.0, min=0.01,
                                    need_ave_multiplier=False, minibatch_size=IGNORE),
     make_rule_rmsprop(0.9, 1.5, 0.5, 5.0, 0.01, False)),
    ('rmsprop_ave', lambda w: C.rmsprop([w], lr=0.01, gamma=0.9, inc=1.5, dec=0.5, max=5.0, min=0.01,
                                        need_ave_multiplier=True, minibatch_size=IGNORE),
     make_rule_rmsprop(0.9, 1.5, 0.5, 5.0, 0.01, True)),
])
def test_every_rule_on_a_parameter_updated_by_every_thread(name, make, rule):
    init = np.random.RandomState(7).standard_normal(BIG)
    init[::97] = 0.0  # zero weights and, below, zero gradients: the rules' special cases
    w = C.parameter((BIG,), init=init, dtype=np.float64)
    learner = make(w)
    lr = 0.5 if name == 'adadelta' else (0.01 if name.startswith('rmsprop') else 0.05)
    reference = Reference(init, rule, lr, 0, compat=True)
    rng = np.random.RandomState(1)
    for n in (3, 7, 1, 4):
        g = rng.standard_normal(BIG) * n
        g[::89] = 0.0
        learner.update({w: g}, n)
        reference.update(g, n)
        np.testing.assert_allclose(w.value, reference.w, rtol=1e-10, atol=1e-12, err_msg=name)


def test_float32_parameters():
    init = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    w = C.parameter((4,), init=init)
    l = C.adam([w], lr=0.01, momentum=0.9, variance_momentum=0.999)
    run(l, w, Reference(init, make_rule_adam(0.9, 0, 0.999, 0, 1e-8), 0.01, 0), dtype=np.float32, rtol=2e-5,
        atol=1e-6)
    assert w.value.dtype == np.float32
    w = C.parameter((4,), init=init)
    run(C.momentum_sgd([w], lr=0.1, momentum=0.9, minibatch_size=3), w,
        Reference(init, make_rule_momentum(0.9, 3), 0.1, 3), dtype=np.float32, rtol=2e-5, atol=1e-6)


def test_matrix_parameters_and_several_parameters():
    a = C.parameter((2, 3), init=np.arange(6.0).reshape(2, 3), dtype=np.float64)
    b = C.parameter((3,), init=np.ones(3), dtype=np.float64)
    l = C.adagrad([a, b], lr=0.1)
    ra = Reference(a.value, make_rule_adagrad(True), 0.1, 0)
    rb = Reference(b.value, make_rule_adagrad(True), 0.1, 0)
    rng = np.random.RandomState(3)
    for n in (2, 5, 3):
        ga, gb = rng.standard_normal((2, 3)), rng.standard_normal(3)
        l.update({a: ga, b: gb}, n)
        ra.update(ga, n)
        rb.update(gb, n)
        np.testing.assert_allclose(a.value, ra.w, rtol=1e-12)
        np.testing.assert_allclose(b.value, rb.w, rtol=1e-12)


def test_gaussian_noise_injection():
    w = C.parameter((20000,), init=0.0, dtype=np.float64)
    l = sgd([w], lr=0.1, gaussian_noise_injection_std_dev=0.05)
    l.update({w: np.zeros(20000)}, 4)
    assert abs(np.mean(w.value)) < 0.005
    assert abs(np.std(w.value) - 0.05) < 0.005


def test_learning_stops_at_zero_rate():
    w = w64()
    l = sgd([w], lr=learning_parameter_schedule([(2, 0.1), (1, 0.0)], epoch_size=5))
    assert l.update({w: np.ones(6)}, 10)
    before = w.value.copy()
    assert not l.update({w: np.ones(6)}, 10)
    np.testing.assert_array_equal(w.value, before)


# ------------------------------------------------------------- user learners

class NumpySGD(C.learners.UserLearner):
    def __init__(self, parameters, lr):
        super(NumpySGD, self).__init__(parameters, lr)
        self.calls = []

    def update(self, gradient_values, training_sample_count, sweep_end):
        self.calls.append((training_sample_count, sweep_end))
        for p, g in gradient_values.items():
            p.value = p.value - self.learning_rate() * g / training_sample_count
        return True


def test_user_learner_direct():
    w = w64()
    l = NumpySGD([w], learning_parameter_schedule(0.5))
    before = w.value.copy()
    g = np.arange(6.0)
    assert l._update([(w, C.NDArrayView.from_numpy(g))], 2, True)
    np.testing.assert_allclose(w.value, before - 0.5 * g / 2)
    assert l.calls == [(2, True)]
    assert l.parameters == [w] and l.learning_rate() == 0.5
    with pytest.raises(NotImplementedError):
        C.learners.UserLearner([w], 0.1).update({}, 1, False)


# --------------------------------------------------------- universal learner

def test_universal_learner_writes_gradients_into_its_constants():
    w = C.parameter((3,), init=np.array([1.0, 2.0, 3.0]), dtype=np.float64)
    seen = {}

    def update_func(parameters, gradients):
        seen['g'] = gradients
        # Without assign, the graph runs but changes nothing.
        return C.plus(parameters[0], C.element_times(-0.1, gradients[0]))

    l = universal(update_func, [w])
    assert l.update({w: np.array([1.0, 1.0, 2.0])}, 2)
    np.testing.assert_array_equal(seen['g'][0].value, [1.0, 1.0, 2.0])
    np.testing.assert_array_equal(w.value, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="two arguments"):
        universal(lambda p: p, [w])


@pytest.mark.skipif(not hasattr(C, 'assign'), reason="needs the assign op")
def test_universal_learner_with_assign():
    w = C.parameter((3,), init=np.array([1.0, 2.0, 3.0]), dtype=np.float64)

    def my_sgd(parameters, gradients):
        return C.combine([C.assign(p, p - 0.1 * g) for p, g in zip(parameters, gradients)])

    l = universal(my_sgd, [w])
    l.update({w: np.array([1.0, 1.0, 2.0])}, 2)
    np.testing.assert_allclose(w.value, [0.9, 1.9, 2.8])


# ------------------------------------------- values printed by CNTK 2.7 itself
# The learners manual (Manual/Manual_How_to_use_learners.ipynb in CNTK's repository)
# sets parameters to 0, feeds gradients of all ones summed over the minibatch, and
# prints the first row of the first parameter; these are its printed outputs.

def manual_parameters():
    return [C.parameter((3, 4), init=0.0), C.parameter((4,), init=0.0), C.parameter((4, 2), init=0.0),
            C.parameter((2,), init=0.0)]


def inspect_update(learner, actual_minibatch_size, count=1):
    for p in learner.parameters:
        p.value = 0 * p.value
    gradients_sum = {p: np.zeros_like(p.value) + 1.0 * actual_minibatch_size for p in learner.parameters}
    for _ in range(count):
        learner.update(gradients_sum, actual_minibatch_size)
    return [p.value for p in learner.parameters]


def test_manual_sgd_values():
    params = manual_parameters()
    per_mb = sgd(params, lr=0.5, minibatch_size=IGNORE)
    per_2 = sgd(params, lr=0.5, minibatch_size=2)
    assert np.all(inspect_update(per_mb, 2)[0] == -0.5)
    assert np.all(inspect_update(per_2, 2)[0] == -0.5)
    assert np.all(inspect_update(per_mb, 10)[0] == -0.5)
    assert np.all(inspect_update(per_2, 10)[0] == -2.5)
    assert np.all(inspect_update(sgd(params, learning_rate_schedule(0.5, UnitType.minibatch)), 2)[2] == -0.5)
    assert np.all(inspect_update(sgd(params, learning_rate_schedule(0.5, UnitType.sample)), 2)[3] == -1.0)


def test_manual_momentum_values():
    params = manual_parameters()
    momentum = 0.9672161004820059
    lr = learning_parameter_schedule(1, minibatch_size=IGNORE)
    ug_lr = learning_parameter_schedule(1 / (1 - momentum), minibatch_size=IGNORE)
    m_schedule = momentum_schedule(momentum)
    t_schedule = momentum_schedule(momentum, minibatch_size=10)
    for learner in (C.momentum_sgd(params, lr, m_schedule, unit_gain=False),
                    C.momentum_sgd(params, lr, t_schedule, unit_gain=False),
                    C.momentum_sgd(params, ug_lr, m_schedule, unit_gain=True),
                    C.momentum_sgd(params, learning_rate_schedule(1, UnitType.minibatch),
                                   C.momentum_as_time_constant_schedule(300), unit_gain=False)):
        np.testing.assert_allclose(inspect_update(learner, 10, 5)[0][0], [-14.3602] * 4, atol=1e-4)


def test_manual_adaptive_learner_values():
    params = manual_parameters()
    lr = learning_parameter_schedule(1, minibatch_size=IGNORE)
    t_schedule = momentum_schedule(0.971, minibatch_size=IGNORE)
    expected = [
        (C.adadelta(params, lr, 0.999, 1e-6), -0.0297),
        (C.adagrad(params, lr), -30.0),
        (C.adam(params, lr, t_schedule, unit_gain=False), -32.3197),
        (C.adam(params, lr, t_schedule, unit_gain=False, adamax=True), -32.3276),
        (C.fsadagrad(params, lr, t_schedule, unit_gain=False), -63.1707),
        (C.rmsprop(params, lr, gamma=0.999, inc=1.0 + 1e-9, dec=1.0 - 1e-9, max=np.inf, min=1e-30), -30.0),
        (C.adadelta(params, learning_parameter_schedule(1004, minibatch_size=IGNORE), 0.999, 1e-6), -29.7969),
    ]
    for learner, value in expected:
        np.testing.assert_allclose(inspect_update(learner, 32, 30)[0][0], [value] * 4, atol=1e-4)


@pytest.mark.skipif(not hasattr(C, 'assign'), reason="needs the assign op")
def test_manual_universal_rmsprop_value():
    def my_rmsprop(parameters, gradients):
        rho, lr = 0.999, 0.01
        accumulators = [C.constant(1e-6, shape=p.shape, dtype=p.dtype) for p in parameters]
        update_funcs = []
        for p, g, a in zip(parameters, gradients, accumulators):
            accum_new = C.assign(a, rho * a + (1 - rho) * g * g)
            update_funcs.append(C.assign(p, p - lr * g / C.sqrt(accum_new)))
        return C.combine(update_funcs)

    learner = universal(my_rmsprop, manual_parameters())
    np.testing.assert_allclose(inspect_update(learner, 10, 2)[0][0], [-0.5399] * 4, atol=1e-4)


# ------------------------------------------------ checkpoints and reporting

def test_noise_injection_with_checkpointing():
    init = np.random.RandomState(5).uniform(-1, 1, (100, 100)).astype(np.float32)
    w1, w2, w3 = (C.parameter((100, 100), init=init) for _ in range(3))
    lr = learning_parameter_schedule_per_sample(0.5)
    m = momentum_schedule(0.99)
    l1, l2, l3 = (C.momentum_sgd([w], lr, m, gaussian_noise_injection_std_dev=0.5) for w in (w1, w2, w3))
    rng = np.random.RandomState(0)
    for _ in range(5):
        checkpoint = l1.create_checkpoint()
        v = rng.rand(100, 100).astype(np.float32)
        w3.value = w1.value
        l1.update({w1: v}, 1)
        l2.update({w2: v}, 1)
        assert not np.allclose(w1.value, w2.value)  # different noise
        l3.restore_from_checkpoint(checkpoint)
        l3.update({w3: v}, 1)
        np.testing.assert_array_equal(w1.value, w3.value)  # same noise and state from the checkpoint


def test_checkpoint_contents_and_mismatch():
    w = C.parameter((3, 2), init=1.0, dtype=np.float64)
    l = C.adam([w], lr=0.1, momentum=0.9)
    l.update({w: np.ones((3, 2))}, 4)
    ckp = l.create_checkpoint()
    assert ckp['sample_count'] == 4 and ckp['minibatchCount'] == 1 and ckp['smoothed_count'] == 1.0
    assert ckp['learnig_rate_schedule']['ref_mb_size'] == 0
    # CNTK's layout: the two buffers of a (3, 2) parameter as one [2 * 3, 2] array
    assert ckp['smoothed_gradients'][0].shape == (6, 2)
    with pytest.raises(ValueError, match="smoothed|state"):
        C.momentum_sgd([w], lr=0.1, momentum=0.9).restore_from_checkpoint(ckp)


class LoggingWriter(object):
    def __init__(self):
        self.log_output = []

    def write(self, key, value):
        self.log_output.append(float(value))


def test_learner_logging_through_the_trainer():
    # CNTK's learner_test.test_learner_logging: learning rate and momentum are
    # written to the progress writers whenever they change.
    features = C.input_variable(shape=(1,), needs_gradient=True, name='a')
    w = C.parameter(shape=(1,), init=1)
    z = features * w
    labels = C.input_variable(shape=(1,), name='b')
    ce = C.cross_entropy_with_softmax(z, labels)
    errs = C.classification_error(z, labels)
    writer = LoggingWriter()
    lr_values = [0.3, 0.2, 0.1, 0]
    m_values = [0.6, 0.7, 0.8]
    learner = C.momentum_sgd(z.parameters, learning_parameter_schedule_per_sample(lr_values, epoch_size=1),
                             momentum_schedule(m_values, epoch_size=1))
    trainer = C.Trainer(z, (ce, errs), [learner], writer)
    for _ in range(10):
        trainer.train_minibatch({features: [[2.]], labels: [[1.]]})
    assert writer.log_output == [j for i in zip(lr_values, m_values) for j in i] + [0]
