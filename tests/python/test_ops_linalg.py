"""times / times_transpose / @: NumPy-reference forward and float64 gradient checks,
output_rank, infer_input_rank_to_map, inferred parameter shapes and batch axes on either side."""
import numpy as np
import pytest

import cntk as C
from op_harness import check_forward, gradcheck, f64_input


def test_vector_times_matrix_batch():
    x = f64_input(3)
    W = C.parameter((3, 4), init=np.random.randn(3, 4), dtype=np.float64)
    d = np.random.randn(5, 3)
    f = C.times(x, W)
    check_forward(f, {x: d}, d @ W.value)
    gradcheck(f, {x: d})


def test_matrix_times_batched_vector():
    # times(W, x): the static left operand multiplies each sample of the right.
    W = C.parameter((4, 3), init=np.random.randn(4, 3), dtype=np.float64)
    x = f64_input(3)
    d = np.random.randn(5, 3)
    f = C.times(W, x, output_rank=0)
    assert f.shape == (4,)
    check_forward(f, {x: d}, d @ W.value.T)
    gradcheck(f, {x: d})


def test_both_operands_batched():
    a, b = f64_input((2, 3)), f64_input((3, 4))
    da, db = np.random.randn(3, 2, 3), np.random.randn(3, 3, 4)
    f = C.times(a, b)
    check_forward(f, {a: da, b: db}, np.einsum('bij,bjk->bik', da, db))
    gradcheck(f, {a: da, b: db})


def test_output_rank_and_higher_rank_left():
    x = f64_input((2, 3))
    W = C.parameter((3, 4, 5), init=np.random.randn(3, 4, 5), dtype=np.float64)
    d = np.random.randn(2, 2, 3)
    f = C.times(x, W, output_rank=2)
    assert f.shape == (2, 4, 5)
    check_forward(f, {x: d}, np.einsum('bij,jkl->bikl', d, W.value))
    gradcheck(f, {x: d})
    # Contract two axes: W's first two axes against x's last two.
    W2 = C.parameter((2, 3, 5), init=np.random.randn(2, 3, 5), dtype=np.float64)
    f2 = C.times(x, W2)
    assert f2.shape == (5,)
    check_forward(f2, {x: d}, np.einsum('bij,ijk->bk', d, W2.value))
    gradcheck(f2, {x: d})


def test_inferred_input_dims():
    x = C.input_variable((4, 3))
    W = C.parameter((C.InferredDimension, 2), init=C.glorot_uniform())
    z = C.times(x, W)  # infer_input_rank_to_map=-1: W takes x's last axis
    assert W.shape == (3, 2) and z.shape == (4, 2)
    W2 = C.parameter((C.InferredDimension, 2), init=C.glorot_uniform())
    z2 = C.times(x, W2, infer_input_rank_to_map=0)  # all of x's axes are contracted
    assert W2.shape == (4, 3, 2) and z2.shape == (2,)


def test_times_transpose_and_matmul_operator():
    x = f64_input(3)
    W = C.parameter((4, 3), init=np.random.randn(4, 3), dtype=np.float64)
    d = np.random.randn(2, 3)
    f = C.times_transpose(x, W)
    check_forward(f, {x: d}, d @ W.value.T)
    gradcheck(f, {x: d})
    check_forward(x @ C.constant(np.eye(3)), {x: d}, d)


def test_float32_matches_float64():
    x = C.input_variable(64)
    w = np.random.randn(64, 32).astype(np.float32)
    d = np.random.randn(16, 64).astype(np.float32)
    check_forward(C.times(x, C.constant(w)), {x: d}, d.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)


def test_times_errors():
    x = C.input_variable(3)
    with pytest.raises(ValueError, match='Times'):
        C.times(x, C.parameter((4, 2)))
    with pytest.raises(ValueError, match='Times'):
        C.times(x, C.parameter((3, 2)), output_rank=3)
    with pytest.raises(ValueError, match='Times'):
        C.times(C.input_variable(3, is_sparse=True), C.input_variable((3, 2), is_sparse=True))


def test_times_with_an_input_of_inferred_dimension():
    # As CNTK: an input keeps its inferred dimension (only parameters and constants take
    # an inferred shape); its data fills it in.
    a, b = C.input_variable((2, 2)), C.input_variable((C.InferredDimension, 2))
    z = C.times(a, b)
    assert b.shape == (C.InferredDimension, 2)
    da = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    db = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    np.testing.assert_allclose(z.eval({a: da, b: db}), np.matmul(da, db))


def test_times_reducing_the_sequence_axis():
    # CNTK's TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK: times summed over the sequence.
    a, b = C.sequence.input_variable(2), C.sequence.input_variable(3)
    f = C.times(a, b, infer_input_rank_to_map=C.TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK)
    assert len(f.dynamic_axes) == 1 and f.shape == (2, 3)
    da = [np.random.randn(4, 2).astype(np.float32), np.random.randn(1, 2).astype(np.float32)]
    db = [np.random.randn(4, 3).astype(np.float32), np.random.randn(1, 3).astype(np.float32)]
    np.testing.assert_allclose(f.eval({a: da, b: db}), [np.einsum('ti,tj->ij', x, y) for x, y in zip(da, db)],
                               rtol=1e-5, atol=1e-6)
    assert C.TIMES_NO_INFERRED_INPUT_RANK == -1


def test_times_checks_free_inner_dimensions_against_the_data():
    # An input's inferred dimension is filled by its data; a mismatch with the weight is an error.
    x = C.input_variable((C.FreeDimension, -1))
    w = C.parameter(init=np.asarray([[2, 5], [1, 3]], dtype=np.float32))
    t = C.times(x, w)
    np.testing.assert_allclose(t.eval({x: np.asarray([[[0.5, 0.2]]], np.float32)}), [[[1.2, 3.1]]], rtol=1e-6)
    with pytest.raises(ValueError):
        t.eval({x: np.asarray([[[0.5, 0.2, 0.9]]], np.float32)})
