"""The graph forms Keras' CNTK backend builds, in plain CNTK terms (no Keras needed):
each is something CNTK 2.7 accepted and OpenCNTK must too."""
import numpy as np
import pytest

import cntk as C


def test_trainer_takes_a_scalar_metric_over_state_variables():
    # Keras 2.3's metrics are total / count over state variables: a scalar with no
    # batch axis and nothing below it with one. CNTK's Evaluator counts it as one sample.
    x = C.input_variable(3)
    y = C.input_variable(2)
    w = C.parameter((3, 2), init=C.glorot_uniform(seed=1))
    z = C.times(x, w)
    loss = C.reduce_mean(C.cross_entropy_with_softmax(z, y), axis=C.Axis.all_axes())
    total = C.parameter((), init=6.0)
    count = C.parameter((), init=4.0)
    metric = total / count
    assert metric.output.dynamic_axes == () and loss.output.dynamic_axes == ()
    learner = C.sgd(z.parameters, C.learning_parameter_schedule(0.1))
    trainer = C.Trainer(z, (loss, metric), [learner])
    xd = np.random.rand(5, 3).astype(np.float32)
    yd = np.eye(2, dtype=np.float32)[np.random.randint(0, 2, 5)]
    w0 = w.value.copy()
    trainer.train_minibatch({x: xd, y: yd})
    assert not np.allclose(w.value, w0)
    # The loss is already a mean: found below it, the batch counts the samples, and
    # CNTK divides the evaluation sum by the loss's sample count.
    assert trainer.previous_minibatch_sample_count == 5
    assert trainer.previous_minibatch_evaluation_average == pytest.approx(1.5 / 5)
    ev = C.eval.Evaluator(metric)
    assert ev.test_minibatch({x: xd, y: yd}) == pytest.approx(1.5)


def test_evaluator_counts_samples_by_the_root_functions_first_input():
    x = C.input_variable(4)
    err = C.reduce_mean(x, axis=C.Axis.all_axes())
    ev = C.eval.Evaluator(err)
    xd = np.arange(12, dtype=np.float32).reshape(3, 4)
    # sum of the scalar mean over 3 samples, as CNTK reports it
    assert ev.test_minibatch({x: xd}) == pytest.approx(xd.mean() / 3)


def test_combine_of_nothing_is_a_function_without_outputs():
    f = C.combine([])
    assert list(f.outputs) == [] and list(f.arguments) == [] and list(f.parameters) == []
    assert f.find_all_with_name('keras_grad_placeholder') == []
    assert 'Composite' in str(f)


def test_reduction_over_all_axes_is_a_scalar():
    v = C.parameter((4, 2), init=np.arange(8, dtype=np.float32).reshape(4, 2))
    r = C.reduce_max(v, axis=C.Axis.all_axes())
    assert r.shape == ()
    assert np.asarray(r.eval()).shape == ()
    assert float(r.eval()) == 7.0
    assert C.reduce_sum(v, axis=[C.Axis.all_axes()]).shape == ()
    assert C.reduce_sum(v, axis=0).shape == (1, 2)
    assert C.reduce_sum(v, axis=0, keepdims=False).shape == (2,)


def test_align_axis_indexing_counts_the_batch_axis_first():
    z = C.input_variable(6)
    d = np.arange(12, dtype=np.float32).reshape(2, 6)
    with pytest.raises(IndexError):
        z[:, :4]  # CNTK's own indexing: static axes only
    C.set_global_option('align_axis', 1)
    try:
        s = z[:, 2:5]
        assert s.shape == (3,)
        np.testing.assert_array_equal(s.eval({z: d}), d[:, 2:5])
        with pytest.raises(IndexError, match='dynamic axes'):
            z[:4]  # that would slice the batch axis
    finally:
        C.set_global_option('align_axis', 0)


def test_free_dimension_broadcasts_to_the_known_one():
    # Keras' targets are placeholders of free dimensions; CNTK's broadcasting rule
    # gives the known dimension (other than 1) of the other operand.
    a = C.input_variable((10, 3))
    b = C.input_variable((C.FreeDimension, C.FreeDimension))
    assert (a - b).shape == (10, 3) and (b - a).shape == (10, 3)
    assert (b + C.input_variable((1, 3))).shape == (C.FreeDimension, 3)
    ad, bd = np.random.rand(2, 10, 3).astype(np.float32), np.random.rand(2, 10, 3).astype(np.float32)
    np.testing.assert_allclose((a - b).eval({a: ad, b: bd}), ad - bd, rtol=1e-6)


def test_reshape_to_a_free_dimension_resolves_at_run_time():
    # Keras' expand_dims of a mask over a free time axis: (-3,) -> (-3, 1).
    m = C.input_variable(C.FreeDimension)
    r = C.reshape(m, (C.FreeDimension, 1))
    assert r.shape == (C.FreeDimension, 1)
    d = np.random.rand(2, 7).astype(np.float32)
    np.testing.assert_array_equal(r.eval({m: d}), d.reshape(2, 7, 1))
    both = C.reshape(C.input_variable((C.FreeDimension, 4)), (C.InferredDimension, C.FreeDimension))
    assert both.shape == (C.FreeDimension, C.FreeDimension)
    with pytest.raises(ValueError, match='more than one dimension to infer'):
        both.eval({both.arguments[0]: np.zeros((1, 3, 4), np.float32)})
    # a known operand: the free dimension is the one left to infer
    assert C.reshape(C.input_variable((2, 6)), (C.FreeDimension, 3)).shape == (4, 3)
