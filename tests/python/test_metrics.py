"""cntk.metrics: NumPy-reference checks."""
import numpy as np
import pytest

import cntk as C
from op_harness import check_forward, f64_input, covers_op


def test_classification_error_documented_examples():
    np.testing.assert_array_equal(C.classification_error([[1., 2., 3., 4.]], [[0., 0., 0., 1.]]).eval(), [[0.]])
    np.testing.assert_array_equal(C.classification_error([[1., 2., 3., 4.]], [[0., 0., 1., 0.]]).eval(), [[1.]])
    np.testing.assert_array_equal(C.classification_error([[1., 2., 3., 4.]], [[5., 0., 1., 0.]]).eval(), [[1.]])


def test_classification_error_output_and_target_of_different_ranks_broadcast():
    # CNTK's top-1 error is 1 - target . hardmax(output): an output of shape (1, N) pairs with a target of
    # shape (N,); the target's gradient is -hardmax(output).
    o, t = C.input_variable((1, 3)), C.input_variable(3)
    e = C.classification_error(o, t)
    assert e.shape == (1, 1)
    ov = np.float32([[[0, 2, 1]], [[5, 0, 1]]])
    tv = np.float32([[0, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(e.eval({o: ov, t: tv}).reshape(-1), [0, 1])
    np.testing.assert_array_equal(e.grad({o: ov, t: tv}, wrt=[t]), [[0, -1, 0], [-1, 0, 0]])
    with pytest.raises(ValueError, match='number of classes'):
        C.classification_error(C.input_variable((1, 3)), C.input_variable(4))


def test_classification_error_batch():
    o, t = C.input_variable(6), C.input_variable(6)
    f = C.classification_error(o, t)
    assert f.output.shape == (1,)
    od = np.random.randn(50, 6).astype(np.float32)
    labels = np.random.randint(0, 6, 50)
    td = np.eye(6, dtype=np.float32)[labels]
    check_forward(f, {o: od, t: td}, (od.argmax(1) != labels).astype(np.float32)[:, None])


def test_classification_error_ties_take_the_first_maximum():
    o, t = C.input_variable(4), C.input_variable(4)
    f = C.classification_error(o, t)
    od = np.array([[1, 3, 3, 0], [1, 3, 3, 0], [2, 2, 2, 2]], np.float32)
    td = np.array([[0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0]], np.float32)
    check_forward(f, {o: od, t: td}, [[0.], [1.], [0.]])


def _topn_ref(o, t, n):
    """1 unless the target's class (first maximum) is among the n best outputs, ties ranked by position."""
    out = []
    for orow, trow in zip(o, t):
        c = int(np.argmax(trow))
        ahead = np.sum(orow > orow[c]) + np.sum(orow[:c] == orow[c])
        out.append([0. if ahead < n else 1.])
    return np.array(out)


@pytest.mark.parametrize('n', [1, 2, 3, 5])
def test_classification_error_top_n(n):
    o, t = C.input_variable(5), C.input_variable(5)
    f = C.classification_error(o, t, topN=n)
    assert f.output.shape == (1,)
    od = np.random.randint(0, 4, size=(200, 5)).astype(np.float32)  # many ties
    td = np.eye(5, dtype=np.float32)[np.random.randint(0, 5, 200)]
    got = f.eval({o: od, t: td})
    np.testing.assert_array_equal(got, _topn_ref(od, td, n))
    if n == 5:
        np.testing.assert_array_equal(got, 0)


def test_classification_error_top_n_without_ties_matches_argsort():
    o, t = C.input_variable(10), C.input_variable(10)
    od = np.random.randn(100, 10).astype(np.float32)
    labels = np.random.randint(0, 10, 100)
    td = np.eye(10, dtype=np.float32)[labels]
    top3 = np.argsort(-od, axis=1)[:, :3]
    ref = np.array([[0. if l in row else 1.] for l, row in zip(labels, top3)])
    np.testing.assert_array_equal(C.classification_error(o, t, topN=3).eval({o: od, t: td}), ref)


def test_classification_error_top_n_ties_at_the_boundary():
    o, t = C.input_variable(4), C.input_variable(4)
    f = C.classification_error(o, t, topN=2)
    od = np.array([[5, 1, 1, 1]] * 4, np.float32)
    td = np.eye(4, dtype=np.float32)
    # Ranked 5 > 1 (class 1) > 1 (class 2) > 1 (class 3): classes 0 and 1 are the two best.
    check_forward(f, {o: od, t: td}, [[0.], [0.], [1.], [1.]])


def test_classification_error_along_another_axis():
    o, t = C.input_variable((3, 4)), C.input_variable((3, 4))
    f = C.classification_error(o, t, axis=0)
    assert f.output.shape == ()  # CNTK's C++ mean over all static axes drops them
    od = np.random.randint(0, 3, size=(6, 3, 4)).astype(np.float32)
    td = np.zeros((6, 3, 4), np.float32)
    td[np.arange(6)[:, None], np.random.randint(0, 3, (6, 4)), np.arange(4)[None, :]] = 1
    # CNTK: a column is wrong unless the output's maxima are exactly the target's ones; mean over the columns.
    pred = (od == od.max(axis=1, keepdims=True)).astype(np.float32)
    wrong = ((td != pred).sum(axis=1) >= 1).astype(np.float32)
    check_forward(f, {o: od, t: td}, wrong.mean(axis=1))


def test_classification_error_has_zero_gradient():
    o, t = f64_input(3), f64_input(3)
    f = C.classification_error(o, t, topN=2)
    g = f.grad({o: np.random.randn(2, 3), t: np.eye(3)[[0, 2]]}, wrt=[o])
    np.testing.assert_array_equal(g, 0)
    loss = C.cross_entropy_with_softmax(o, t) + C.classification_error(o, t)
    assert np.any(loss.grad({o: np.random.randn(2, 3), t: np.eye(3)[[0, 2]]}, wrt=[o]) != 0)


def test_classification_error_top1_gradient_goes_to_the_target():
    # CNTK's top-1 error is 1 - target . hardmax(output): the target gets -hardmax(output).
    o, t = f64_input(4), f64_input(4)
    od = np.array([[1., 2., 3., 4.], [5., 1., 5., 0.]])
    td = np.eye(4)[[0, 2]]
    g = C.classification_error(o, t).grad({o: od, t: td}, wrt=[o, t])
    np.testing.assert_array_equal(g[o], 0)
    np.testing.assert_array_equal(g[t], -np.eye(4)[[3, 0]])


def test_classification_error_sequences():
    o = C.sequence.input_variable(3)
    t = C.sequence.input_variable(3)
    od = [np.array([[1, 2, 0], [3, 0, 0]], np.float32), np.array([[0, 0, 1]], np.float32)]
    td = [np.eye(3, dtype=np.float32)[[1, 1]], np.eye(3, dtype=np.float32)[[2]]]
    got = C.classification_error(o, t).eval({o: od, t: td})
    np.testing.assert_array_equal(got[0], [[0.], [1.]])
    np.testing.assert_array_equal(got[1], [[0.]])


# ---------------------------------------------------------------- ndcg_at_1

def _ndcg1_ref(score, gain, group):
    groups, prev = [], None
    for i, g in enumerate(group):
        if i == 0 or int(g) != prev:
            groups.append([])
        prev = int(g)
        groups[-1].append(i)
    total = 0.0
    for idx in groups:
        if gain[idx[0]] == 0:
            continue
        best = sorted(idx, key=lambda i: (-score[i], gain[i]))[0]
        total += gain[best] / gain[idx[0]]
    return total / len(groups) * 100


def test_ndcg_at_1_documented_example():
    group, score, gain = C.input_variable((1,)), C.input_variable((1,)), C.input_variable((1,))
    g = np.array([1, 1, 2, 2], dtype=np.float32).reshape(4, 1)
    s = np.array([2, 1, 3, 1], dtype=np.float32).reshape(4, 1)
    n = np.array([7, 1, 3, 1], dtype=np.float32).reshape(4, 1)
    got = C.ndcg_at_1(score, gain, group).eval({score: s, gain: n, group: g})
    assert got.shape == ()  # one value for the minibatch, as CNTK's
    np.testing.assert_allclose(got, 400.0)


@covers_op('NDCG', 'forward')
def test_ndcg_at_1_against_reference():
    rng = np.random.RandomState(5)
    sizes = [4, 1, 6, 3, 2]
    group = np.repeat(np.arange(len(sizes)) * 3, sizes).astype(np.float64)
    gain = np.concatenate([np.sort(rng.randint(0, 5, n))[::-1] for n in sizes]).astype(np.float64)
    gain[4] = 0  # a group whose best gain is 0 counts as 0
    score = rng.randint(0, 3, len(gain)).astype(np.float64)  # ties: the smaller gain ranks first
    s, gn, gr = f64_input(1), f64_input(1), f64_input(1)
    f = C.ndcg_at_1(s, gn, gr)
    got = f.eval({s: score[:, None], gn: gain[:, None], gr: group[:, None]})
    np.testing.assert_allclose(got, _ndcg1_ref(score, gain, group) * len(score), rtol=1e-12)
    g = f.grad({s: score[:, None], gn: gain[:, None], gr: group[:, None]}, wrt=[s])
    np.testing.assert_array_equal(g, 0)


def test_edit_distance_error_on_a_batch():
    # CNTK's docstring inputs: each sample is a one-step sequence. Labels (argmax) are
    # [1, 0] against [0, 0]; with label 1 ignored, the first sample needs one insertion.
    # 1 error * 2 frames / 2 labels of input_b = 1, as CNTK (more in test_losses_sequence.py).
    a, b = C.input_variable(2), C.input_variable(2)
    f = C.edit_distance_error(a, b, 0, 1, 1, True, [1])
    assert float(f.eval({a: np.array([[1., 3.], [2., 0.]]), b: np.array([[2., 0.], [2., 0.]])})) == 1.0
    assert float(C.edit_distance_error(a, b).eval({a: np.eye(2), b: np.eye(2)})) == 0.0


def test_bad_arguments():
    o, t = C.input_variable(4), C.input_variable(4)
    with pytest.raises(ValueError, match='classification_error.*topN'):
        C.classification_error(o, t, topN=0)
    with pytest.raises(ValueError, match='classification_error.*topN'):
        C.classification_error(o, t, topN=1.5)
    with pytest.raises(ValueError, match='ClassificationError.*topN'):
        C.classification_error(o, t, topN=5)
    with pytest.raises(ValueError, match='classification_error.*axis'):
        C.classification_error(C.input_variable((2, 4)), C.input_variable((2, 4)), axis=0, topN=2)
    with pytest.raises(ValueError, match='ClassificationError'):
        C.classification_error(o, C.input_variable(3))
    with pytest.raises(ValueError, match='NDCG'):
        C.ndcg_at_1(o, C.input_variable(1), C.input_variable(1))
    with pytest.raises(ValueError, match='NDCG.*sequence'):
        C.ndcg_at_1(C.sequence.input_variable(1), C.sequence.input_variable(1), C.sequence.input_variable(1))
