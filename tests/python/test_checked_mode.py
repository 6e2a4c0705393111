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


class _ReadsPadding(C.ops.functions.UserFunction):
    """A deliberately wrong op: every frame of its output is the sum over the whole padded
    time axis, padding included (what checked mode's NaN padding is there to catch)."""

    def __init__(self, arg, name='ReadsPadding'):
        super().__init__([arg], as_numpy=False, name=name)

    def forward(self, arguments, device=None, outputs_to_retain=None):
        padded = arguments.asarray()  # [batch, time, ...], padding as the engine holds it
        total = np.sum(padded, axis=1, keepdims=True) * np.ones_like(padded)
        lengths = (np.asarray(arguments.mask) > 0).sum(axis=1)
        return None, [total[b, :n].astype(np.float32) for b, n in enumerate(lengths)]

    def infer_outputs(self):
        x = self.inputs[0]
        return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]


def test_padding_holds_nan_in_checked_mode():
    x = C.sequence.input_variable(1)
    f = C.user_function(_ReadsPadding(x * 1))
    seqs = [np.ones((1, 1), np.float32), np.ones((3, 1), np.float32)]
    # Off, padding is whatever the engine left there: here a finite value.
    assert all(np.isfinite(s).all() for s in f.eval({x: seqs}))
    C.debugging.set_checked_mode(True)
    try:
        with pytest.raises(RuntimeError, match='ReadsPadding.*NaN'):
            f.eval({x: seqs})
    finally:
        C.debugging.set_checked_mode(False)


def _ragged_gradients():
    x = C.sequence.input_variable(2)
    idx = C.sequence.input_variable(())
    w = C.parameter(shape=(2, 3), init=C.glorot_uniform(seed=3))
    p = C.parameter(shape=(2,), init=np.array([0.5, -1.5], np.float32))
    table = C.parameter(shape=(6, 3), init=C.glorot_uniform(seed=4))
    # Gradient rules that read padded values times padded (zero) gradients: a weight
    # gradient over every frame, a parameter broadcast over frames, a gather by index.
    y = C.times(C.exp(x) * p, w) + C.gather(table, idx)
    loss = C.sequence.reduce_sum(C.reduce_sum(C.tanh(y)))
    seqs = [np.full((1, 2), 0.3, np.float32), np.arange(8, dtype=np.float32).reshape(4, 2) / 8]
    ids = [np.array([5], np.float32), np.array([0, 1, 2, 3], np.float32)]
    g = loss.grad({x: seqs, idx: ids}, wrt=[w, p, table])
    return [g[w], g[p], g[table]]


def test_padding_does_not_reach_gradients_in_checked_mode():
    expected = _ragged_gradients()
    C.debugging.set_checked_mode(True)
    try:
        got = _ragged_gradients()
    finally:
        C.debugging.set_checked_mode(False)
    for g, e in zip(got, expected):
        assert np.isfinite(e).all()
        np.testing.assert_allclose(g, e, rtol=1e-6)
