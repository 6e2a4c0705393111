"""cntk.core: NDArrayView, NDMask, Value, asarray/asvalue, and how user data becomes Values."""
import numpy as np
import pytest
import scipy.sparse as sparse

import cntk as C
from cntk.core import NDArrayView, Value, NDMask, asarray, asvalue

csr = sparse.csr_matrix


# -------------------------------------------------------------- NDArrayView

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_ndarrayview_constructor_and_properties(dtype):
    v = NDArrayView((2, 3), dtype, device=C.cpu())
    assert v.shape == (2, 3)
    assert v.dtype == dtype
    assert v.device == C.cpu() and str(v.device) == 'CPU'
    assert v.is_read_only is False
    assert v.is_sparse is False
    np.testing.assert_array_equal(v.asarray(), np.zeros((2, 3)))
    assert v.asarray().dtype == dtype


def test_from_dense_copies_unless_borrowed():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = NDArrayView.from_dense(a)
    a[0, 0] = 100
    assert v.asarray()[0, 0] == 0  # a copy
    b = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = NDArrayView.from_dense(b, borrow=True)
    b[0, 0] = 100
    assert w.asarray()[0, 0] == 100  # shares the array's memory
    out = w.asarray()
    out[0, 1] = -1
    assert w.asarray()[0, 1] == 1  # asarray hands out a copy


def test_from_dense_arguments():
    with pytest.raises(TypeError):
        NDArrayView.from_dense([1.0, 2.0])
    v = NDArrayView.from_dense(np.array([1, 2, 3]))  # integers are stored as float32
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v.asarray(), [1, 2, 3])
    with pytest.raises(TypeError):
        NDArrayView.from_dense(np.array(['a', 'b']))
    v = NDArrayView.from_dense(np.asfortranarray(np.arange(6.0).reshape(2, 3)))
    np.testing.assert_array_equal(v.asarray(), np.arange(6.0).reshape(2, 3))
    assert NDArrayView.from_dense(np.array(3.0, np.float32)).shape == ()


def test_float16_values_round_trip_without_casts():
    a = (np.arange(12).reshape(3, 4) / 8).astype(np.float16)
    v = NDArrayView.from_dense(a)
    assert v.dtype == np.float16
    back = v.asarray()
    assert back.dtype == np.float16
    np.testing.assert_array_equal(back, a)
    # A Value holds float16 data too, and hands it back as it was.
    val = Value(a)
    assert val.dtype == np.float16
    np.testing.assert_array_equal(val.asarray(), a)
    np.testing.assert_array_equal(np.asarray(val), a)
    # Sliced views of float16 data.
    np.testing.assert_array_equal(v.slice_view((1, 1), (2, 2)).asarray(), a[1:3, 1:3])


def test_read_only_views_refuse_writes():
    v = NDArrayView.from_dense(np.zeros((2,), np.float32), read_only=True)
    assert v.is_read_only
    with pytest.raises(ValueError):
        v.copy_from(NDArrayView.from_dense(np.ones((2,), np.float32)))
    w = NDArrayView.from_dense(np.zeros((2,), np.float32))
    w.copy_from(NDArrayView.from_dense(np.ones((2,), np.float32)))
    np.testing.assert_array_equal(w.asarray(), [1, 1])
    with pytest.raises(ValueError):
        w.copy_from(NDArrayView.from_dense(np.ones((3,), np.float32)))


def test_deep_clone_and_alias():
    v = NDArrayView.from_dense(np.zeros((2, 2), np.float32))
    c = v.deep_clone()
    a = v.alias()
    v.copy_from(NDArrayView.from_dense(np.ones((2, 2), np.float32)))
    np.testing.assert_array_equal(c.asarray(), np.zeros((2, 2)))  # own storage
    np.testing.assert_array_equal(a.asarray(), np.ones((2, 2)))   # same storage
    assert v.as_shape((4,)).shape == (4,)
    np.testing.assert_array_equal(v.to_ndarray(), np.ones((2, 2)))


def test_slice_view_right_aligned_extent():
    # CNTK's example: extent (2, 3) of a (1, 1, 2, 3) view drops the leading axes.
    a = np.asarray([[[[10, 20, 30], [40, 50, 60]]]], dtype=np.float32)
    nd = NDArrayView.from_dense(a)
    sliced = nd.slice_view([0, 0, 0, 0], [2, 3])
    assert sliced.shape == (2, 3)
    np.testing.assert_array_equal(sliced.asarray(), [[10, 20, 30], [40, 50, 60]])
    assert sliced.is_read_only
    b = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    nb = NDArrayView.from_dense(b)
    np.testing.assert_array_equal(nb.slice_view((1, 0, 1), (2, 2)).asarray(), b[1, 0:2, 1:3])
    np.testing.assert_array_equal(nb.slice_view((0, 1, 0), (2, 2, 4)).asarray(), b[0:2, 1:3, :])
    with pytest.raises(ValueError):
        nb.slice_view((0, 0), (1,))  # one offset per axis
    with pytest.raises(ValueError):
        nb.slice_view((0, 2, 0), (2, 4))  # out of bounds


def test_slice_view_writes_through():
    a = np.zeros((3, 4), np.float32)
    nd = NDArrayView.from_dense(a)
    s = nd.slice_view((1, 1), (2, 2), read_only=False)
    assert not s.is_read_only
    s.copy_from(NDArrayView.from_dense(np.ones((2, 2), np.float32)))
    expected = np.zeros((3, 4))
    expected[1:3, 1:3] = 1
    np.testing.assert_array_equal(nd.asarray(), expected)


def test_from_csr():
    data = [[[0, 1, 1], [0, 1, 0]], [[1, 0, 0], [1, 0, 1]]]
    m = csr(np.asarray(data, np.float32).reshape(4, 3))
    v = NDArrayView.from_csr(m, shape=(2, 2, 3))
    assert v.is_sparse and v.shape == (2, 2, 3)
    np.testing.assert_array_equal(np.asarray(v), data)
    with pytest.raises(ValueError):
        NDArrayView.from_csr(m, shape=(3, 2, 3))
    with pytest.raises(ValueError):
        NDArrayView.from_csr(m, shape=(2, 2, 4))
    with pytest.raises(TypeError):
        NDArrayView.from_csr(m.tocoo())
    plain = NDArrayView.from_csr(m)
    assert plain.shape == (4, 3)
    back = plain.asarray()
    assert sparse.issparse(back)
    np.testing.assert_array_equal(back.toarray(), m.toarray())
    assert NDArrayView.from_csr(csr(np.eye(3))).dtype == np.float64


def test_from_data():
    v = NDArrayView.from_data(np.ones((2,), np.float32))
    assert not v.is_sparse
    assert NDArrayView.from_data(v) is v
    assert NDArrayView.from_data(csr(np.eye(2, dtype=np.float32))).is_sparse
    assert NDArrayView.from_data(sparse.coo_matrix(np.eye(2, dtype=np.float32))).is_sparse
    assert NDArrayView.from_data(np.float32(2)).shape == ()
    with pytest.raises(TypeError):
        NDArrayView.from_data([1, 2])


# ------------------------------------------------------------------- NDMask

def test_ndmask():
    m = NDMask((2, 4))
    assert m.shape == (2, 4)
    np.testing.assert_array_equal(m.asarray(), [[2, 1, 1, 1], [2, 1, 1, 1]])
    m.invalidate_section(1, 2, 4)
    np.testing.assert_array_equal(np.asarray(m), [[2, 1, 1, 1], [2, 1, 0, 0]])
    assert m.masked_count() == 2
    assert m.lengths() == [4, 2]
    m.mark_sequence_begin(0, 2)
    assert m.asarray()[0, 2] == 2
    m.clear()
    assert m.masked_count() == 0
    with pytest.raises(ValueError):
        m.invalidate_section(5, 0, 1)
    assert C.cntk_py.MaskKind_Invalid == 0 and C.cntk_py.MaskKind_Valid == 1
    assert C.cntk_py.MaskKind_SequenceBegin == 2


# -------------------------------------------------------------------- Value

def test_value_properties():
    ndav = NDArrayView((1, 2, 3), np.float32, device=C.cpu())
    val = Value(batch=ndav)
    assert isinstance(val.device, C.DeviceDescriptor) and str(val.device) == 'CPU'
    assert val.is_read_only is False
    assert val.is_sparse is False
    assert val.dtype == np.float32
    assert val.shape == (1, 2, 3)
    assert val.is_valid
    assert len(val) == 1
    assert isinstance(val.data, NDArrayView)
    assert val.mask is None


def test_value_from_batch_array():
    a = np.arange(6, dtype=np.float64).reshape(3, 2)
    v = Value(a)
    assert v.shape == (3, 2) and v.dtype == np.float64 and len(v) == 3
    np.testing.assert_array_equal(v.asarray(), a)
    samples = v.as_sequences()
    assert len(samples) == 3
    np.testing.assert_array_equal(samples[1], a[1])


def test_value_from_sequences_of_different_lengths():
    s1 = np.ones((2, 3), np.float32)
    s2 = np.arange(12, dtype=np.float32).reshape(4, 3)
    v = Value([s1, s2])
    assert v.shape == (2, 4, 3)
    np.testing.assert_array_equal(v.mask, [[2, 1, 0, 0], [2, 1, 1, 1]])
    seqs = v.as_sequences()
    assert [s.shape for s in seqs] == [(2, 3), (4, 3)]
    np.testing.assert_array_equal(seqs[0], s1)
    np.testing.assert_array_equal(seqs[1], s2)
    padded = v.asarray()
    assert padded.shape == (2, 4, 3)
    np.testing.assert_array_equal(padded[0, 2:], 0)


def test_value_seq_starts_mark_continuations():
    v = Value([np.ones((2, 1), np.float32), np.ones((3, 1), np.float32)], seq_starts=[True, False])
    np.testing.assert_array_equal(v.mask, [[2, 1, 0], [1, 1, 1]])
    with pytest.raises(ValueError):
        Value([np.ones((2, 1), np.float32)], seq_starts=[True, False])


def test_value_create():
    x = C.sequence.input_variable(3)
    v = Value.create(x, [np.ones((2, 3)), np.ones((1, 3))])
    assert v.shape == (2, 2, 3) and v.dtype == np.float32
    assert [s.shape for s in v.as_sequences(x)] == [(2, 3), (1, 3)]
    b = C.input_variable(3)
    assert Value.create(b, np.zeros((4, 3))).shape == (4, 3)
    assert Value.create(b, np.zeros((4, 3)), read_only=True).is_read_only
    with pytest.raises(TypeError):
        Value.create('x', np.zeros((4, 3)))
    # Sparse sequences given as NDArrayViews.
    seq1 = [[[0, 1, 1], [0, 1, 0]], [[1, 0, 0], [1, 0, 1]]]
    seq2 = [[0, 1, 1], [1, 1, 0]]
    nd1 = NDArrayView.from_csr(csr(np.asarray(seq1, np.float32).reshape(4, 3)), shape=(2, 2, 3))
    nd2 = NDArrayView.from_csr(csr(np.asarray(seq2, np.float32)), shape=(1, 2, 3))
    s = C.sequence.input_variable((2, 3))
    val = Value.create(s, [nd1, nd2])
    np.testing.assert_array_equal(np.asarray(val.data), [seq1, [seq2, [[0, 0, 0], [0, 0, 0]]]])


def test_one_hot():
    v = Value.one_hot([[1, 2], [0]], 4)
    assert v.shape == (2, 2, 4) and v.is_sparse and v.dtype == np.float32
    np.testing.assert_array_equal(v.mask, [[2, 1], [2, 0]])
    dense = np.asarray(v)
    np.testing.assert_array_equal(dense[0], [[0, 1, 0, 0], [0, 0, 1, 0]])
    np.testing.assert_array_equal(dense[1], [[1, 0, 0, 0], [0, 0, 0, 0]])
    assert Value.one_hot([[1]], 3, dtype=np.float64).dtype == np.float64
    assert Value.one_hot(np.array([[0, 1]]), 3).shape == (1, 2, 3)
    flat = Value.one_hot([1, 2], 4)  # a flat list: one sample per index, no sequence axis
    assert flat.shape == (2, 4)
    np.testing.assert_array_equal(np.asarray(flat), [[0, 1, 0, 0], [0, 0, 1, 0]])
    with pytest.raises(ValueError):
        Value.one_hot([[0.5]], 4)  # not integers
    with pytest.raises(ValueError):
        Value.one_hot([[4]], 4)  # out of range


def test_one_hot_index_types():
    # Plain ints, NumPy integer arrays and NumPy integer scalars in a list give the
    # same Value; bools and floats are refused, wherever they sit in a sequence.
    want = np.asarray(Value.one_hot([[1, 2], [3]], 5))
    for batch in ([np.array([1, 2]), np.array([3], dtype=np.uint8)], [[np.int64(1), 2], [np.int32(3)]]):
        np.testing.assert_array_equal(np.asarray(Value.one_hot(batch, 5)), want)
    assert Value.one_hot([[], [0]], 2).shape == (2, 1, 2)
    for bad in ([[1, True]], [np.array([True, False])], [[1, 2.0]], [np.array([1.0])], [[1, [2]]]):
        with pytest.raises(ValueError, match="integers"):
            Value.one_hot(bad, 5)


def test_one_hot_feeds_a_sparse_sequence_input():
    num_classes = 6
    i0 = C.sequence.input_variable(num_classes, is_sparse=True)
    z = C.times(i0, np.eye(num_classes, dtype=np.float32))
    value = Value.one_hot([[1, 5], [4]], num_classes)
    out = z.eval({i0: value})
    assert len(out) == 2
    np.testing.assert_array_equal(out[0], [[0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1]])
    np.testing.assert_array_equal(out[1], [[0, 0, 0, 0, 1, 0]])
    seqs = value.as_sequences(i0)
    assert all(sparse.issparse(s) for s in seqs)
    assert [s.shape for s in seqs] == [(2, 6), (1, 6)]
    np.testing.assert_array_equal(seqs[1].toarray(), [[0, 0, 0, 0, 1, 0]])


def test_one_hot_with_sample_shape():
    sample_shape = (2, 6)
    i0 = C.sequence.input_variable(sample_shape, is_sparse=True)
    z = C.times(i0, np.eye(6, dtype=np.float32))
    value = Value.one_hot([[1, 5, 3, 2], [4, 1]], sample_shape)
    assert value.shape == (2, 2, 2, 6)
    out = z.eval({i0: value})
    np.testing.assert_array_equal(out[0], [[[0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1]],
                                           [[0, 0, 0, 1, 0, 0], [0, 0, 1, 0, 0, 0]]])
    np.testing.assert_array_equal(out[1], [[[0, 0, 0, 0, 1, 0], [0, 1, 0, 0, 0, 0]]])
    with pytest.raises(ValueError):
        Value.one_hot([[1, 5, 3]], sample_shape)  # not a whole number of samples


def test_as_sequences_of_sparse_needs_the_variable():
    v = Value.one_hot([[1, 2]], 4)
    with pytest.raises(ValueError):
        v.as_sequences()


def test_scipy_sparse_input_to_eval():
    x = C.input_variable(4, is_sparse=True)
    f = C.times(x, np.arange(8, dtype=np.float32).reshape(4, 2))
    m = csr(np.array([[1, 0, 0, 0], [0, 0, 2, 0]], np.float32))
    np.testing.assert_allclose(f.eval({x: m}), m.toarray() @ np.arange(8).reshape(4, 2))
    # A list of one-row matrices is a batch of samples too.
    np.testing.assert_allclose(f.eval({x: [m[0], m[1]]}), m.toarray() @ np.arange(8).reshape(4, 2))
    s = C.sequence.input_variable(4, is_sparse=True)
    g = C.times(s, np.eye(4, dtype=np.float32))
    out = g.eval({s: [csr([[0, 1, 0, 0]]), csr([[0, 0, 1, 0], [0, 0, 0, 1]])]})
    np.testing.assert_array_equal(out[0], [[0, 1, 0, 0]])
    np.testing.assert_array_equal(out[1], [[0, 0, 1, 0], [0, 0, 0, 1]])
    with pytest.raises(ValueError):
        f.eval({x: csr(np.ones((2, 5), np.float32))})  # 5 columns for a dimension of 4


# ------------------------------------------------ asvalue / asarray / layouts

a5 = np.asarray([4., 5, 6., 7., 8.], dtype=np.float32)


@pytest.mark.parametrize("data, axes, value_shape, array_shapes", [
    ([[a5], [a5, a5]], 2, (2, 2, 5), [(1, 5), (2, 5)]),
    ([a5, a5], 2, (2, 1, 5), [(1, 5), (1, 5)]),
    ([[a5], [a5]], 2, (2, 1, 5), [(1, 5), (1, 5)]),
    (np.stack([a5, a5]), 2, (2, 5), [(5,), (5,)]),  # an array keeps its shape (CNTK's)
    (np.stack([a5, a5])[None], 2, (1, 2, 5), [(2, 5)]),
    (np.stack([a5, a5]), 1, (2, 5), (2, 5)),
    ([a5, a5], 1, (2, 1, 5), (2, 1, 5)),  # as CNTK: list entries are sequences of one sample
    ([[a5], [a5]], 1, (2, 1, 5), (2, 1, 5)),
    ([a5, a5], 0, (2, 5), (2, 5)),
    (a5, 0, (5,), (5,)),
])
def test_dense_layouts(data, axes, value_shape, array_shapes):
    shape = (5,) if axes else (5,)
    if axes == 2:
        var = C.sequence.input_variable(shape)
    elif axes == 1:
        var = C.input_variable(shape)
    else:
        var = C.input_variable((2, 5) if value_shape == (2, 5) else shape, dynamic_axes=[])
    val = asvalue(var, data)
    assert val.shape == value_shape
    result = C.core._from_value(var, val)
    if isinstance(result, list):
        assert [np.shape(r) for r in result] == array_shapes
    else:
        assert result.shape == array_shapes


@pytest.mark.parametrize("data, axes, value_shape, csr_shapes", [
    ([csr([[1., 0., 2.], [2., 3., 0.]]), csr([5., 0., 1.])], 2, (2, 2, 3), [(2, 3), (1, 3)]),
    ([csr([1, 0, 2]), csr([5, 0, 1])], 2, (2, 1, 3), [(1, 3), (1, 3)]),
    ([csr([[1, 0, 2], [2, 3, 4]])], 2, (1, 2, 3), [(2, 3)]),
    (csr([[1, 0, 2], [2, 3, 4]]), 1, (2, 3), [(1, 3), (1, 3)]),
    ([csr([1, 0, 2]), csr([5, 0, 1])], 1, (2, 1, 3), [(1, 3), (1, 3)]),  # each matrix a sequence, as CNTK
])
def test_sparse_layouts(data, axes, value_shape, csr_shapes):
    var = C.sequence.input_variable(3, is_sparse=True) if axes == 2 else C.input_variable(3, is_sparse=True)
    val = asvalue(var, data)
    assert val.shape == value_shape
    assert val.is_sparse
    result = val.as_sequences(var)
    assert [r.shape for r in result] == csr_shapes
    assert all(sparse.issparse(r) for r in result)


def test_asvalue_round_trips_sparse_sequences():
    var = C.sequence.input_variable(3, is_sparse=True)
    data = [csr([[1, 0, 2], [5, 0, 1]])]
    val = asvalue(var, data)
    for got, want in zip(val.as_sequences(var), data):
        assert (got != want).nnz == 0
    var = C.input_variable(3, is_sparse=True)
    data = csr([[1, 0, 2], [5, 0, 1]], dtype=np.float32)
    val = asvalue(var, data)
    for v in [val, val.data]:
        got = v.asarray()
        assert sparse.issparse(got)
        np.testing.assert_array_equal(got.toarray(), data.toarray())


def test_asarray():
    v = Value(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(asarray(v), np.ones((2, 3)))
    assert asarray(v, dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(asarray(v.data), np.ones((2, 3)))
    np.testing.assert_array_equal(asarray([[1, 2]]), [[1, 2]])
    with pytest.raises(ValueError):
        asarray([[1, 2], [3]])
    # The older form asarray(variable, value).
    x = C.sequence.input_variable(2)
    seqs = asarray(x, asvalue(x, [np.ones((1, 2)), np.ones((3, 2))]))
    assert [s.shape for s in seqs] == [(1, 2), (3, 2)]


def test_eval_as_numpy_false_gives_values():
    x = C.input_variable(2)
    out = (x + 1).eval({x: [[1, 2]]}, as_numpy=False)
    assert isinstance(out, C.cntk_py.Value)
    assert isinstance(out, C.Value)  # the engine's values are cntk.Value instances
    assert not isinstance(np.ones(2), C.Value)
    np.testing.assert_array_equal(out.asarray(), [[2, 3]])
    w = C.parameter(init=np.asarray([1.0], np.float32))
    x1 = C.input_variable(1)
    value = (x1 * 0.1).eval({x1: np.asarray([[1]], np.float32)}, as_numpy=False)
    w.value = value.data.as_shape(value.data.shape[1:])
    np.testing.assert_allclose(w.value, [0.1])


def test_user_function():
    x = C.input_variable(2)
    f = x + 1
    g = C.user_function(f.root_function)
    assert g.is_composite and g.root_function == f.root_function


def test_sequences_of_single_values_may_omit_their_axis():
    # CNTK pads a sequence given as (length,) for a variable of shape (1,) to (length, 1).
    s = C.sequence.input_variable(1)
    out = (s * 2).eval({s: [np.arange(3, dtype=np.float32), np.arange(2, dtype=np.float32)]})
    np.testing.assert_allclose(out[0], [[0], [2], [4]])
    np.testing.assert_allclose(out[1], [[0], [2]])


def test_one_array_with_sequence_start_flags_is_one_sequence_per_entry():
    # as CNTK: with seq_starts, an array is split along its first axis into sequences
    x = C.sequence.input_variable(2)
    data = np.asarray([[1, 2], [2, 3]], np.float32)
    last = C.sequence.last(x)
    np.testing.assert_array_equal(last.eval({x: data}), [[2, 3]])               # one sequence of 2
    np.testing.assert_array_equal(last.eval({x: (data, [True, True])}), [[1, 2], [2, 3]])
    v = C.Value.create(x, data, seq_starts=[True, False])
    assert v.shape[0] == 2
