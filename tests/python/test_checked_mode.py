"""Checked mode (cntk.debugging.set_checked_mode): NaN in the valid frames of a value or a
gradient raises; correct graphs over padded sequences still run."""
import numpy as np
import pytest

import cntk as C


@pytest.fixture
def checked():
    C.debugging.set_checked_mode(True)
    yield
    C.debugging.set_checked_mode(False)


def test_switch_reaches_the_engine(checked):
    assert C.cntk_py.get_checked_mode()
    C.debugging.set_checked_mode(False)
    assert not C.cntk_py.get_checked_mode()


def test_nan_in_forward_raises_only_in_checked_mode():
    x = C.input_variable(3)
    f = C.asin(x)  # NaN outside [-1, 1] (CNTK's sqrt and log clip instead)
    data = np.array([[0, 2, 1]], np.float32)
    assert np.isnan(f.eval({x: data})).any()  # off: NaN comes back
    C.debugging.set_checked_mode(True)
    try:
        with pytest.raises(RuntimeError, match='Asin.*NaN'):
            f.eval({x: data})
        np.testing.assert_allclose(f.eval({x: np.array([[0, 1, -1]], np.float32)}), [[0, np.pi / 2, -np.pi / 2]],
                                   rtol=1e-6)
    finally:
        C.debugging.set_checked_mode(False)


def test_nan_gradient_raises_in_checked_mode():
    # sqrt's gradient at 0 is infinite; times a zero gradient from above it is NaN, while
    # every value on the way is finite.
    x = C.input_variable(2)
    y = C.parameter(shape=(2,), init=np.array([0.0, 4.0], np.float32))
    f = C.sqrt(y) * x
    data = np.array([[0, 2]], np.float32)
    g = f.grad({x: data}, wrt=[y])
    assert np.isnan(g).any()
    C.debugging.set_checked_mode(True)
    try:
        with pytest.raises(RuntimeError, match='NaN gradients'):
            f.grad({x: data}, wrt=[y])
    finally:
        C.debugging.set_checked_mode(False)


def test_sequences_of_different_lengths_run_in_checked_mode(checked):
    x = C.sequence.input_variable(2)
    w = C.parameter(shape=(2, 3), init=C.glorot_uniform(seed=1))
    h = C.tanh(C.times(x, w))
    last = C.sequence.last(h)
    total = C.sequence.reduce_sum(h)
    rec = C.layers.Recurrence(C.layers.GRU(3))(x)
    seqs = [np.ones((1, 2), np.float32), np.arange(10, dtype=np.float32).reshape(5, 2) / 10]
    out = C.combine([last, total, C.sequence.last(rec)]).eval({x: seqs})
    for v in out.values():
        assert not np.isnan(np.asarray(v)).any()
    grads = (C.reduce_sum(total) + C.reduce_sum(C.sequence.last(rec))).grad({x: seqs}, wrt=[w])
    assert np.isfinite(grads).all()


def test_values_returned_to_the_user_are_not_changed(checked):
    x = C.sequence.input_variable(1)
    f = C.sequence.unpack(x * 1, padding_value=0, no_mask_output=True)
    seqs = [np.array([[1.0]], np.float32), np.array([[1.0], [2.0], [3.0]], np.float32)]
    out = f.eval({x: seqs})
    assert not np.isnan(np.asarray(out)).any()
    assert seqs[0].tolist() == [[1.0]]
