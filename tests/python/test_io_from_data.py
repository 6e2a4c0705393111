"""cntk.io.MinibatchSourceFromData and MinibatchData."""
import numpy as np
import pytest
import scipy.sparse

import cntk as C
from cntk.layers.typing import Sequence, Tensor


def test_linear_reading_with_max_samples():
    X = np.arange(15, dtype=np.float32).reshape(5, 3)
    s = C.io.MinibatchSourceFromData(dict(x=X), max_samples=len(X))
    mb = s.next_minibatch(3)
    d = mb[s.streams['x']]
    np.testing.assert_array_equal(d.data.asarray(), X[:3])
    assert d.num_samples == 3 and d.num_sequences == 3 and not d.end_of_sweep
    mb = s.next_minibatch(3)
    np.testing.assert_array_equal(mb[s.streams.x].asarray(), X[3:])
    assert mb[s.streams.x].end_of_sweep
    assert s.next_minibatch(3) == {}


def test_repeats_and_sparse_stream():
    X = np.arange(15, dtype=np.float32).reshape(5, 3)
    Y = scipy.sparse.csr_matrix((np.ones(5, np.float32), (range(5), [i % 2 for i in range(5)])), shape=(5, 2))
    s = C.io.MinibatchSourceFromData(dict(x=X, y=Y))
    for _ in range(2):
        s.next_minibatch(3)
    mb = s.next_minibatch(3)  # wrapped around
    y = mb[s.streams.y]
    assert y.is_sparse
    np.testing.assert_array_equal(np.asarray(y.data.data.asarray().todense()), Y[:3].toarray())


def test_sequences_count_steps():
    XX = [np.array([[1], [3], [2]], np.float32), np.array([[4], [1]], np.float32)]
    s = C.io.MinibatchSourceFromData(dict(xx=(XX, Sequence[Tensor[1]])))
    mb = s.next_minibatch(3)
    d = mb[s.streams.xx]
    assert d.num_samples == 3 and d.num_sequences == 1
    assert d.shape == (1, 3, 1)
    mb = s.next_minibatch(10)
    assert mb[s.streams.xx].num_sequences == 1  # the second sequence, then the sweep ends


def test_checkpoint_and_errors():
    X = np.zeros((4, 2), np.float32)
    s = C.io.MinibatchSourceFromData(dict(x=X))
    s.next_minibatch(3)
    state = s.get_checkpoint_state()
    s.next_minibatch(3)
    s.restore_from_checkpoint(state)
    assert s.get_checkpoint_state() == state
    with pytest.raises(ValueError):
        C.io.MinibatchSourceFromData({})
    with pytest.raises(ValueError):
        C.io.MinibatchSourceFromData(dict(x=X, y=np.zeros((3, 2), np.float32)))
    with pytest.raises(TypeError):
        C.io.MinibatchSourceFromData(dict(x=[1, 2, 3]))


def test_minibatch_data_feeds_eval():
    X = np.arange(6, dtype=np.float32).reshape(3, 2)
    s = C.io.MinibatchSourceFromData(dict(x=X))
    x = C.input_variable(2)
    mb = s.next_minibatch(3)
    np.testing.assert_array_equal((x * 2).eval({x: mb[s.streams.x]}), X * 2)
    mb = s.next_minibatch(2, input_map={x: s.streams.x})
    assert x in mb
