"""Sparse inputs: one-hot data stays sparse into `times`, which runs as a row gather,
and the embedding gradient touches only the rows the data uses."""
import numpy as np
import pytest
import scipy.sparse as sp

import cntk as C

V, E = 7, 3


def embedding_graph(dtype=np.float64, sequence=True, seed=0):
    make = C.sequence.input_variable if sequence else C.input_variable
    x = make(V, is_sparse=True, dtype=dtype)
    w = C.parameter((V, E), init=np.random.RandomState(seed).standard_normal((V, E)).astype(dtype), dtype=dtype)
    return x, w, C.times(x, w)


def one_hot(idx, n=V, dtype=np.float64):
    return np.eye(n, dtype=dtype)[idx]


def test_sparse_times_equals_dense_for_sequences():
    x, w, f = embedding_graph()
    xd = C.sequence.input_variable(V, dtype=np.float64)
    fd = C.times(xd, w)
    idx = [[0, 3, 3, 6], [2], [5, 1]]
    expected = [w.value[i] for i in idx]
    for data in (C.Value.one_hot(idx, V, dtype=np.float64), [sp.csr_matrix(one_hot(i)) for i in idx]):
        got = f.eval({x: data})
        assert [g.shape for g in got] == [(4, E), (1, E), (2, E)]
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12)
    for g, e in zip(fd.eval({xd: [one_hot(i) for i in idx]}), expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_sparse_times_with_weighted_entries_and_a_batch():
    x, w, f = embedding_graph(sequence=False)
    m = sp.csr_matrix(np.array([[0, 2.5, 0, 0, 0, 0, -1], [0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 3, 0, 0, 0]]))
    np.testing.assert_allclose(f.eval({x: m}), m.toarray() @ w.value, rtol=1e-12)


def test_sparse_float32_matches_dense():
    x, w, f = embedding_graph(dtype=np.float32)
    idx = [[1, 2], [6, 6, 0]]
    got = f.eval({x: C.Value.one_hot(idx, V)})
    for g, i in zip(got, idx):
        np.testing.assert_allclose(g, w.value[i], rtol=1e-6)


def test_embedding_gradient_touches_only_the_rows_used():
    x, w, f = embedding_graph()
    idx = [[0, 3, 3], [5]]
    rng = np.random.RandomState(1)
    state, outs = f.forward({x: C.Value.one_hot(idx, V, dtype=np.float64)}, [f.output], keep_for_backward=[f.output])
    root = [rng.standard_normal((len(i), E)) for i in idx]
    grad = f.backward(state, {f.output: root}, [w])[w]
    expected = np.zeros((V, E))
    for i, r in zip(idx, root):
        for k, row in zip(i, r):
            expected[k] += row
    np.testing.assert_allclose(grad, expected, rtol=1e-12)
    assert set(np.nonzero(np.abs(grad).sum(1))[0]) == {0, 3, 5}
    # The same gradient as a dense input gives.
    xd = C.sequence.input_variable(V, dtype=np.float64)
    fd = C.times(xd, w)
    state, _ = fd.forward({xd: [one_hot(i) for i in idx]}, [fd.output], keep_for_backward=[fd.output])
    np.testing.assert_allclose(fd.backward(state, {fd.output: root}, [w])[w], expected, rtol=1e-12)


def test_embedding_training_updates_only_the_rows_used():
    x, w, f = embedding_graph(dtype=np.float32)
    before = w.value.copy()
    loss = C.reduce_sum(C.sequence.reduce_sum(f))
    learner = C.sgd([w], C.learning_parameter_schedule(0.1))
    trainer = C.Trainer(f, (loss, None), [learner])
    trainer.train_minibatch({x: C.Value.one_hot([[1, 4], [4]], V)})
    changed = np.nonzero(np.abs(w.value - before).sum(1))[0]
    assert list(changed) == [1, 4]
    # Each use of row k adds a gradient of ones: row 4 (used twice) moves twice as far as row 1.
    step1, step4 = before[1] - w.value[1], before[4] - w.value[4]
    assert np.all(step1 > 0)
    np.testing.assert_allclose(step1, step1[0], rtol=1e-5)
    np.testing.assert_allclose(step4, 2 * step1, rtol=1e-5)


def test_a_large_embedding_gets_its_gradient_as_the_rows_used():
    # Past four times as many rows as a minibatch uses, the gradient travels as those rows (the learners then
    # read no zero rows); values and training are the dense gradient's.
    vocab = 1000
    x = C.sequence.input_variable(vocab, is_sparse=True, dtype=np.float64)
    xd = C.sequence.input_variable(vocab, dtype=np.float64)
    init = np.random.RandomState(2).standard_normal((vocab, E))
    w, wd = (C.parameter((vocab, E), init=init, dtype=np.float64) for _ in range(2))
    f, fd = C.times(x, w), C.times(xd, wd)
    idx = [[0, 3, 3, 999], [500, 3]]
    root = [np.random.RandomState(3).standard_normal((len(i), E)) for i in idx]
    state, _ = f.forward({x: C.Value.one_hot(idx, vocab, dtype=np.float64)}, [f.output], keep_for_backward=[f.output])
    grad = f.backward(state, {f.output: root}, [w])[w]
    assert sp.issparse(grad)  # a sparse gradient comes back as CSR, as CNTK's sparse block gradient did
    grad = grad.toarray()
    state, _ = fd.forward({xd: [one_hot(i, vocab) for i in idx]}, [fd.output], keep_for_backward=[fd.output])
    np.testing.assert_allclose(grad, fd.backward(state, {fd.output: root}, [wd])[wd], rtol=1e-12)
    assert set(np.nonzero(np.abs(grad).sum(1))[0]) == {0, 3, 500, 999}
    # Adam moves every row (its moments decay) from the sparse gradient as from the dense one.
    trainers = [C.Trainer(g, (C.reduce_sum(C.sequence.reduce_sum(g * g)), None),
                          [C.adam([p], C.learning_parameter_schedule(0.01), momentum=0.9)])
                for g, p in ((f, w), (fd, wd))]
    for step in range(3):
        batch = [[(7 * step + k) % vocab for k in range(5)], [3, 3, 998 - step]]
        trainers[0].train_minibatch({x: C.Value.one_hot(batch, vocab, dtype=np.float64)})
        trainers[1].train_minibatch({xd: [one_hot(i, vocab) for i in batch]})
        np.testing.assert_allclose(w.value, wd.value, rtol=1e-12, atol=1e-15)
    assert np.any(w.value[10] != init[10])  # a row used once and then not: its momentum still moves it


def test_sparse_input_into_a_dense_only_op_is_densified():
    x = C.sequence.input_variable(4, is_sparse=True)
    f = C.sequence.reduce_sum(C.exp(x))
    got = f.eval({x: C.Value.one_hot([[0, 1], [3]], 4)})
    np.testing.assert_allclose(got, [[1 + np.e, 1 + np.e, 2, 2], [1, 1, 1, np.e]], rtol=1e-6)


def test_sparse_sequence_output_comes_back_as_csr():
    x = C.sequence.input_variable(4, is_sparse=True)
    got = C.combine([x]).eval({x: C.Value.one_hot([[0, 2], [3]], 4)})
    dense = [g.toarray() if sp.issparse(g) else np.asarray(g) for g in got]
    np.testing.assert_array_equal(dense[0], one_hot([0, 2], 4))
    np.testing.assert_array_equal(dense[1], one_hot([3], 4))


def test_sparse_data_with_the_wrong_width_is_refused():
    x, w, f = embedding_graph()
    with pytest.raises(ValueError):
        f.eval({x: [sp.csr_matrix(np.eye(V + 1)[[0, 1]])]})


def test_embedding_layer_over_sparse_sequences():
    x = C.sequence.input_variable(V, is_sparse=True)
    emb = C.layers.Embedding(E, init=np.arange(V * E, dtype=np.float32).reshape(V, E))
    f = emb(x)
    idx = [[6, 0], [3]]
    got = f.eval({x: C.Value.one_hot(idx, V)})
    for g, i in zip(got, idx):
        np.testing.assert_allclose(g, np.arange(V * E).reshape(V, E)[i])


def test_sparse_variable_fed_dense_data_and_a_rank_2_sample():
    # A sparse variable also takes dense data; samples of shape (2, V) contract their last axis.
    x = C.input_variable((2, V), is_sparse=True, dtype=np.float64)
    w = C.parameter((V, E), init=np.random.RandomState(2).standard_normal((V, E)))
    f = C.times(x, w)
    rows = one_hot([[1, 4], [0, 0], [6, 2]])  # (3, 2, V)
    expected = rows @ w.value
    np.testing.assert_allclose(f.eval({x: rows}), expected, rtol=1e-12)
    csr = sp.csr_matrix(rows.reshape(6, V))
    np.testing.assert_allclose(f.eval({x: csr}), expected, rtol=1e-12)


def test_sparse_times_a_per_sample_right_operand_densifies_correctly():
    x = C.input_variable(V, is_sparse=True, dtype=np.float64)
    r = C.input_variable((V, E), dtype=np.float64)
    f = C.times(x, r)
    rd = np.random.RandomState(3).standard_normal((2, V, E))
    m = sp.csr_matrix(one_hot([2, 5]))
    np.testing.assert_allclose(f.eval({x: m, r: rd}), np.stack([rd[0, 2], rd[1, 5]]), rtol=1e-12)


def test_sparse_left_operand_reduces_only_its_last_axis():
    # As CNTK: a logic error (RuntimeError) at construction.
    a = C.input_variable((2, 3, 3), is_sparse=True)
    with pytest.raises(RuntimeError, match='Times'):
        C.times(a, C.parameter((3, 3, 2)))
