"""cntk.layers.typing: variable types for @Function signatures and update_signature."""
import numpy as np
import pytest
import scipy.sparse as sparse

import cntk as C
from cntk.axis import Axis
from cntk.layers.typing import Tensor, SparseTensor, ParameterTensor, Sequence, SequenceOver, SequenceOverMeta, \
    Signature, tensor


def test_tensor_types():
    tp = Tensor[13, 42]
    assert tp.shape == (13, 42)
    assert tp.is_sparse is False
    assert [str(a.name) for a in tp.dynamic_axes] == ['defaultBatchAxis']
    assert str(tp) == 'Tensor[13,42]'
    assert Tensor[5].shape == (5,)
    assert SparseTensor[9000].is_sparse is True
    assert str(SparseTensor[9000]) == 'SparseTensor[9000]'
    assert ParameterTensor[512, 256].dynamic_axes == ()
    assert str(ParameterTensor[512, 256]) == 'ParameterTensor[512,256]'
    assert str(tensor) == 'tensor'


def test_dtype_as_first_entry():
    tp = Tensor[np.float32, 13, 42]
    assert tp.dtype == np.float32 and tp.shape == (13, 42)
    assert Tensor[np.float64, 3].dtype == np.float64
    with pytest.raises(TypeError):
        Tensor['a']


def test_sequence_types():
    tp = Sequence[SparseTensor[9000]]
    assert [str(a.name) for a in tp.dynamic_axes] == ['defaultBatchAxis', 'defaultDynamicAxis']
    assert tp.is_sparse
    assert str(tp) == 'Sequence[SparseTensor[9000]]'
    assert Sequence[Tensor[3]].shape == (3,)
    input_sequence = SequenceOver[Axis('input')]
    tp = input_sequence[SparseTensor[9000]]
    assert [str(a.name) for a in tp.dynamic_axes] == ['defaultBatchAxis', 'input']
    assert str(tp) == 'SequenceOver[input][SparseTensor[9000]]'
    assert isinstance(SequenceOver, SequenceOverMeta)


def test_type_errors():
    with pytest.raises(TypeError, match="cannot be instantiated"):
        Tensor[32]()
    with pytest.raises(ValueError, match="type object"):
        C.sigmoid(Tensor[32])
    with pytest.raises(TypeError, match="sequences over sequences"):
        Sequence[Sequence[Tensor[32]]]


def test_input_from_a_type():
    x = C.input_variable(**Tensor[3, 4])
    assert x.shape == (3, 4) and x.dynamic_axes == (Axis.default_batch_axis(),)
    s = C.input_variable(**Sequence[SparseTensor[10]])
    assert s.is_sparse and len(s.dynamic_axes) == 2


def test_function_with_annotations():
    @C.Function
    def f(x: Tensor[3], y: Tensor[3]):
        return x * y + x
    assert [a.name for a in f.arguments] == ['x', 'y']
    assert all(a.is_input for a in f.arguments)
    assert f.shape == (3,)
    np.testing.assert_allclose(f([[1, 2, 3]], [[2, 2, 2]]), [[3, 6, 9]])
    np.testing.assert_allclose(f(x=[[1, 2, 3]], y=[[0, 0, 0]]), [[1, 2, 3]])
    assert str(f) == 'Composite(x: Tensor[3], y: Tensor[3]) -> Tensor[3]'
    assert str(C.Function(lambda a, b: a + b)) == 'Plus(a: Sequence[tensor], b: Sequence[tensor]) -> Sequence[tensor]'


def test_function_with_sparse_and_sequence_annotations():
    @C.Function
    def embed(w: SparseTensor[4]):
        return C.times(w, np.arange(8, dtype=np.float32).reshape(4, 2))
    assert embed.arguments[0].is_sparse
    m = sparse.csr_matrix(np.array([[0, 1, 0, 0]], np.float32))
    np.testing.assert_allclose(embed(m), [[2, 3]])

    @C.Function
    def double(s: Sequence[Tensor[2]]):
        return s * 2
    assert len(double.arguments[0].dynamic_axes) == 2
    out = double([np.ones((1, 2), np.float32), np.ones((3, 2), np.float32)])
    assert [o.shape for o in out] == [(1, 2), (3, 2)]


def test_signature_decorator():
    @C.Function
    @Signature(Tensor[13])
    def f(x):
        return x * x
    assert f.arguments[0].shape == (13,) and f.arguments[0].is_input
    assert str(f) == 'ElementTimes(x: Tensor[13]) -> Tensor[13]'

    @C.Function
    @Signature(x=Tensor[2], y=Tensor[2])
    def g(x, y):
        return x - y
    assert [a.shape for a in g.arguments] == [(2,), (2,)]
    with pytest.raises(TypeError):
        Signature(Tensor[1], Tensor[2])(lambda x: x)
    with pytest.raises(ValueError):
        def h(x: Tensor[3]):
            return x
        Signature(Tensor[3])(h)


def test_mismatched_argument_type_is_a_type_error():
    @C.Function
    @Signature(x=Tensor[13])
    def f(x):
        return C.sigmoid(x)
    with pytest.raises(TypeError, match="incompatible"):
        f(C.input_variable((42,)))
    y = f(C.input_variable((13,)))
    assert y.shape == (13,)


def test_update_signature_with_types():
    @C.Function
    def f(x):
        return x + 1
    f.update_signature(Tensor[2, 3])
    assert f.arguments[0].shape == (2, 3) and f.arguments[0].is_input
    assert f.arguments[0].name == 'x'
    np.testing.assert_allclose(f(np.zeros((1, 2, 3), np.float32)), np.ones((1, 2, 3)))

    @C.Function
    def g(x):
        return x + 1
    g.update_signature(np.float64)  # a scalar type
    assert g.dtype == np.float64 and g.shape == ()

    @C.Function
    def h(x, y):
        return x * y
    h.update_signature(3, y=(3,))
    assert [a.shape for a in h.arguments] == [(3,), (3,)]

    @C.Function
    def k(x):
        return x * 2
    k.update_signature(Sequence[Tensor[2]])
    assert len(k.arguments[0].dynamic_axes) == 2
    with pytest.raises(TypeError):
        k.update_signature('a')


def test_with_signature_decorator():
    @C.Function.with_signature(Tensor[2])
    def f(x):
        return x * 3
    assert f.arguments[0].shape == (2,)
    np.testing.assert_allclose(f([[1, 2]]), [[3, 6]])
