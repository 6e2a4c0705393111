"""cntk.train.Trainer and cntk.eval.Evaluator: gradients summed over minibatches,
counters, several learners, progress writers, sequences, and a small training run."""
import numpy as np
import pytest

import cntk as C
from cntk.learners import learning_parameter_schedule, learning_parameter_schedule_per_sample


def _combine_works():
    try:
        C.combine([C.input_variable(1)])
        return True
    except NotImplementedError:
        return False


needs_combine = pytest.mark.skipif(not _combine_works(), reason="needs the Combine op")


def linear_regression(dtype=np.float64):
    x = C.input_variable(2, dtype, name='x')
    y = C.input_variable(1, dtype, name='y')
    W = C.parameter((2, 1), init=np.array([[0.5], [-1.0]]), dtype=dtype, name='W')
    b = C.parameter((1,), init=0.25, dtype=dtype, name='b')
    z = C.plus(C.times(x, W), b, name='z')
    loss = C.squared_error(z, y)
    return x, y, W, b, z, loss


def numpy_step(X, Y, W, b):
    r = X @ W + b - Y  # residuals, (n, 1)
    return np.sum(r ** 2), 2 * X.T @ r, 2 * np.sum(r, axis=0)


DATA = [
    (np.array([[1, 2], [-1, 0.5], [3, -2]]), np.array([[1], [0], [-1.0]])),
    (np.array([[0.5, 0.5]]), np.array([[2.0]])),
    (np.array([[1, 0], [0, 1], [1, 1], [2, -1], [-2, 1]]), np.array([[1], [1], [0], [0.5], [-0.5]])),
]


def test_gradients_are_sums_and_counters():
    x, y, W, b, z, loss = linear_regression()
    lr = 0.05
    t = C.Trainer(z, (loss, loss), [C.sgd(z.parameters, lr=learning_parameter_schedule_per_sample(lr))])
    Wn, bn = W.value.copy(), b.value.copy()
    seen = 0
    for X, Y in DATA:
        loss_sum, gW, gb = numpy_step(X, Y, Wn, bn)
        assert t.train_minibatch({x: X, y: Y})
        Wn, bn = Wn - lr * gW, bn - lr * gb
        seen += len(X)
        np.testing.assert_allclose(W.value, Wn, rtol=1e-12)
        np.testing.assert_allclose(b.value, bn, rtol=1e-12)
        assert t.previous_minibatch_sample_count == len(X)
        assert t.previous_minibatch_loss_average == pytest.approx(loss_sum / len(X), rel=1e-12)
        assert t.previous_minibatch_evaluation_average == pytest.approx(loss_sum / len(X), rel=1e-12)
        assert t.total_number_of_samples_seen == seen


def test_per_minibatch_learning_rate_uses_the_mean_gradient():
    x, y, W, b, z, loss = linear_regression()
    t = C.Trainer(z, loss, C.sgd(z.parameters, lr=0.1))
    X, Y = DATA[0]
    _, gW, gb = numpy_step(X, Y, W.value, b.value)
    W0 = W.value.copy()
    t.train_minibatch({x: X, y: Y})
    np.testing.assert_allclose(W.value, W0 - 0.1 * gW / len(X), rtol=1e-12)


def test_several_learners_on_one_trainer():
    x, y, W, b, z, loss = linear_regression()
    lW = C.momentum_sgd([W], lr=learning_parameter_schedule_per_sample(0.01), momentum=0.5)
    lb = C.sgd([b], lr=learning_parameter_schedule_per_sample(0.2))
    t = C.Trainer(z, loss, [lW, lb])
    assert t.parameter_learners == [lW, lb]
    Wn, bn, s = W.value.copy(), b.value.copy(), np.zeros((2, 1))
    for X, Y in DATA:
        _, gW, gb = numpy_step(X, Y, Wn, bn)
        t.train_minibatch({x: X, y: Y})
        s = 0.5 * s + 0.5 * 0.01 * gW
        Wn, bn = Wn - s, bn - 0.2 * gb
        np.testing.assert_allclose(W.value, Wn, rtol=1e-12)
        np.testing.assert_allclose(b.value, bn, rtol=1e-12)
    assert lW.total_number_of_samples_seen() == lb.total_number_of_samples_seen() == 9


def test_bad_learners_and_criteria():
    x, y, W, b, z, loss = linear_regression()
    with pytest.raises(ValueError, match="two learners"):
        C.Trainer(z, loss, [C.sgd([W, b], lr=0.1), C.sgd([b], lr=0.1)])
    stray = C.parameter((3,), init=0.0, dtype=np.float64, name='stray')
    with pytest.raises(ValueError, match="not part of the model"):
        C.Trainer(z, loss, [C.sgd([W, b, stray], lr=0.1)])
    with pytest.raises(TypeError):
        C.Trainer(z, 'loss', [C.sgd([W, b], lr=0.1)])
    with pytest.raises(ValueError, match="tuple"):
        C.Trainer(z, (loss, loss, loss), [C.sgd([W, b], lr=0.1)])
    with pytest.raises(ValueError, match="loss"):
        C.Trainer(z, (None, loss), [C.sgd([W, b], lr=0.1)])
    with pytest.raises(TypeError, match="learners"):
        C.Trainer(z, loss, ['sgd'])
    with pytest.raises(ValueError):
        C.Trainer(z, loss, [])


def test_bad_minibatches():
    x, y, W, b, z, loss = linear_regression()
    t = C.Trainer(z, loss, C.sgd(z.parameters, lr=0.1))
    with pytest.raises(ValueError):
        t.previous_minibatch_loss_average
    with pytest.raises(ValueError, match="y"):
        t.train_minibatch({x: DATA[0][0]})  # no labels
    with pytest.raises(ValueError, match="dict"):
        t.train_minibatch(DATA[0][0])
    with pytest.raises(ValueError, match="evaluation function"):
        t.test_minibatch({x: DATA[0][0], y: DATA[0][1]})
    with pytest.raises(ValueError):
        t.train_minibatch({x: np.ones((3, 5)), y: np.ones((3, 1))})
    assert t.train_minibatch({}) is False  # the end of the data: nothing to do
    assert t.total_number_of_samples_seen == 0


def test_uncovered_parameters_stay_unchanged():
    x, y, W, b, z, loss = linear_regression()
    t = C.Trainer(z, loss, C.sgd([W], lr=0.1))
    b0 = b.value.copy()
    t.train_minibatch({x: DATA[0][0], y: DATA[0][1]})
    np.testing.assert_array_equal(b.value, b0)


def test_arguments_by_name_outputs_and_sweep_end():
    x, y, W, b, z, loss = linear_regression()
    # a per-sweep schedule: 0.1 in the first sweep, 0 from the second on
    l = C.sgd(z.parameters, lr=learning_parameter_schedule([0.1, 0.0]))
    t = C.Trainer(z, loss, l)
    X, Y = DATA[0]
    updated, outs = t.train_minibatch({'x': X, 'y': Y}, outputs=[z], is_sweep_end=True)
    assert updated
    np.testing.assert_allclose(outs[z.output], X @ np.array([[0.5], [-1.0]]) + 0.25)
    W1 = W.value.copy()
    assert t.train_minibatch({x: X, y: Y}) is False  # the learning rate is 0 in the second sweep
    np.testing.assert_array_equal(W.value, W1)


class FakeMinibatchData(object):
    def __init__(self, value, sweep_end):
        self.data = value
        self.end_of_sweep = sweep_end


def test_minibatch_data_carries_sweep_end():
    x, y, W, b, z, loss = linear_regression()
    l = C.sgd(z.parameters, lr=learning_parameter_schedule([0.1, 0.0]))
    t = C.Trainer(z, loss, l)
    X, Y = DATA[0]
    args = {x: FakeMinibatchData(C.Value(batch=X, dtype=np.float64), True),
            y: FakeMinibatchData(C.Value(batch=Y, dtype=np.float64), True)}
    with pytest.raises(ValueError, match="is_sweep_end"):
        t.train_minibatch(args, is_sweep_end=False)
    assert t.train_minibatch(args)
    assert l.learning_rate() == 0.0


class RecordingWriter(object):
    def __init__(self):
        self.calls = []

    def update_training(self, samples, loss_sum, metric_sum):
        self.calls.append(('update_training', samples, loss_sum, metric_sum))

    def update_test(self, samples, metric_sum):
        self.calls.append(('update_test', samples, metric_sum))

    def write_training_summary(self):
        self.calls.append(('write_training_summary',))

    def write_test_summary(self):
        self.calls.append(('write_test_summary',))

    def write(self, key, value):
        self.calls.append(('write', key, value))


def test_progress_writers():
    x, y, W, b, z, loss = linear_regression()
    metric = C.squared_error(z, y)
    w = RecordingWriter()
    t = C.Trainer(z, (loss, metric), C.sgd(z.parameters, lr=0.01), [w])
    X, Y = DATA[0]
    loss_sum, _, _ = numpy_step(X, Y, W.value, b.value)
    t.train_minibatch({x: X, y: Y})
    t.summarize_training_progress()
    avg = t.test_minibatch({x: X, y: Y})
    t.summarize_test_progress()
    assert w.calls[0] == ('write', 'Learning rate per minibatch', 0.01)
    name, n, ls, ms = w.calls[1]
    assert (name, n) == ('update_training', 3)
    assert ls == pytest.approx(loss_sum) and ms == pytest.approx(loss_sum)
    assert w.calls[2] == ('write_training_summary',)
    assert w.calls[3][:2] == ('update_test', 3) and w.calls[3][2] == pytest.approx(avg * 3)
    assert w.calls[4] == ('write_test_summary',)
    # A writer with only some of the methods is fine.
    t2 = C.Trainer(z, loss, C.sgd(z.parameters, lr=0.01), object())
    t2.train_minibatch({x: X, y: Y})
    t2.summarize_training_progress()


def test_sequences_count_tokens_and_ignore_padding():
    x = C.sequence.input_variable(2, np.float64)
    y = C.sequence.input_variable(1, np.float64)
    W = C.parameter((2, 1), init=np.array([[0.5], [-1.0]]), dtype=np.float64)
    b = C.parameter((1,), init=0.75, dtype=np.float64)
    z = C.times(x, W) + b
    loss = C.squared_error(z, y)
    t = C.Trainer(z, loss, C.sgd([W, b], lr=learning_parameter_schedule_per_sample(0.1)))
    X = [np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]]), np.array([[-1.0, 1.0]])]
    Y = [np.array([[1.0], [0.0], [2.0]]), np.array([[0.5]])]
    Xc, Yc = np.concatenate(X), np.concatenate(Y)
    loss_sum, gW, gb = numpy_step(Xc, Yc, W.value, b.value)
    W0, b0 = W.value.copy(), b.value.copy()
    t.train_minibatch({x: X, y: Y})
    assert t.previous_minibatch_sample_count == 4
    assert t.previous_minibatch_loss_average == pytest.approx(loss_sum / 4, rel=1e-12)
    np.testing.assert_allclose(W.value, W0 - 0.1 * gW, rtol=1e-12)
    np.testing.assert_allclose(b.value, b0 - 0.1 * gb, rtol=1e-12)


def test_user_learner_in_trainer():
    class MySGD(C.learners.UserLearner):
        def update(self, gradient_values, training_sample_count, sweep_end):
            for p, g in gradient_values.items():
                assert isinstance(g, np.ndarray)
                p.value = p.value - self.learning_rate() * g
            return True

    x, y, W, b, z, loss = linear_regression()
    t = C.Trainer(z, loss, MySGD(z.parameters, learning_parameter_schedule_per_sample(0.05)))
    X, Y = DATA[0]
    _, gW, gb = numpy_step(X, Y, W.value, b.value)
    W0, b0 = W.value.copy(), b.value.copy()
    assert t.train_minibatch({x: X, y: Y})
    np.testing.assert_allclose(W.value, W0 - 0.05 * gW, rtol=1e-12)
    np.testing.assert_allclose(b.value, b0 - 0.05 * gb, rtol=1e-12)
    assert t.total_number_of_samples_seen == 3

    class Broken(C.learners.UserLearner):
        def update(self, gradient_values, training_sample_count, sweep_end):
            raise KeyError("broken learner")

    t = C.Trainer(z, loss, Broken(z.parameters, 0.1))
    with pytest.raises(KeyError, match="broken learner"):
        t.train_minibatch({x: X, y: Y})


def test_evaluator():
    x, y, W, b, z, loss = linear_regression()
    w = RecordingWriter()
    e = C.Evaluator(loss, [w])
    assert e.evaluation_function == loss
    X, Y = DATA[2]
    loss_sum, _, _ = numpy_step(X, Y, W.value, b.value)
    assert e.test_minibatch({x: X, y: Y}) == pytest.approx(loss_sum / len(X), rel=1e-12)
    e.summarize_test_progress()
    assert w.calls[0][:2] == ('update_test', len(X))
    assert w.calls[1] == ('write_test_summary',)
    with pytest.raises(TypeError):
        C.Evaluator('loss')


def blobs(n, rng):
    labels = rng.randint(0, 2, n)
    centers = np.array([[-1.0, -1.0], [1.0, 1.0]])
    features = centers[labels] + 0.5 * rng.standard_normal((n, 2))
    return features.astype(np.float32), np.eye(2, dtype=np.float32)[labels]


@pytest.mark.parametrize("make_learner", [
    lambda p: C.sgd(p, lr=0.5),
    lambda p: C.momentum_sgd(p, lr=0.1, momentum=0.9),
    lambda p: C.adam(p, lr=0.05, momentum=0.9),
    lambda p: C.adagrad(p, lr=0.2),
    lambda p: C.rmsprop(p, lr=0.05, gamma=0.9, inc=1.2, dec=0.7, max=10, min=1e-4),
])
def test_logistic_regression_reaches_low_error(make_learner):
    rng = np.random.RandomState(0)
    x = C.input_variable(2)
    label = C.input_variable(2)
    W = C.parameter((2, 2), init=0.0)
    b = C.parameter((2,), init=0.0)
    z = C.times(x, W) + b
    loss = C.cross_entropy_with_softmax(z, label)
    error = C.classification_error(z, label)
    t = C.Trainer(z, (loss, error), [make_learner(z.parameters)])
    first = None
    for _ in range(60):
        X, Y = blobs(32, rng)
        t.train_minibatch({x: X, label: Y})
        first = t.previous_minibatch_loss_average if first is None else first
    assert t.previous_minibatch_loss_average < first
    X, Y = blobs(1000, rng)
    assert t.test_minibatch({x: X, label: Y}) < 0.05


@needs_combine
def test_criterion_as_one_function_with_two_outputs():
    x, y, W, b, z, loss = linear_regression()
    metric = C.squared_error(z, y)
    t = C.Trainer(z, C.combine([loss, metric]), C.sgd(z.parameters, lr=0.01))
    t.train_minibatch({x: DATA[0][0], y: DATA[0][1]})
    assert t.previous_minibatch_evaluation_average == pytest.approx(t.previous_minibatch_loss_average)
    t = C.Trainer(z, (loss.output, metric.output), C.sgd(z.parameters, lr=0.01))
    t.train_minibatch({x: DATA[0][0], y: DATA[0][1]})


def test_loss_reduced_over_the_batch_counts_samples_below_it():
    x, y, W, b, z, loss = linear_regression()
    total = C.reduce_sum(loss, axis=C.Axis.all_axes())
    assert total.output.dynamic_axes == ()
    t = C.Trainer(None, total, C.sgd([W, b], lr=learning_parameter_schedule_per_sample(0.1)))
    assert t.model is None
    X, Y = DATA[0]
    loss_sum, gW, gb = numpy_step(X, Y, W.value, b.value)
    W0 = W.value.copy()
    t.train_minibatch({x: X, y: Y})
    assert t.previous_minibatch_sample_count == 3
    assert t.previous_minibatch_loss_average == pytest.approx(loss_sum / 3, rel=1e-12)
    np.testing.assert_allclose(W.value, W0 - 0.1 * gW, rtol=1e-12)


def test_model_is_a_documented_function():
    x = C.input_variable(1)
    z = C.layers.Dense(1)(x)
    t = C.Trainer(z, C.squared_error(z, x), [C.sgd(z.parameters, 0.1)])
    assert isinstance(t.model, C.Function) and t.model.__doc__  # CNTK's own tests check the class docstring


def test_trainer_takes_primitive_functions_as_model_and_loss():
    # The whole graph below a primitive function counts, as CNTK's trainer combines them.
    x = C.input_variable(2)
    z = C.layers.Dense(1)(C.layers.Dense(3)(x))
    loss = C.reduce_sum(z)
    t = C.Trainer(z.root_function, loss.root_function, [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    t.train_minibatch({x: np.ones((2, 2), np.float32)})
    assert np.isfinite(t.previous_minibatch_loss_average)
