"""cntk.layers, feed-forward part: documented behaviour of each layer."""
import numpy as np
import pytest

import cntk as C
from cntk.layers import (Dense, Embedding, Activation, LayerNormalization, Label, Sequential, For,
                         SequentialClique, ResNetBlock, Stabilizer, identity, default_options)


def test_dense_projects_whole_input_by_default():
    x = C.input_variable((4, 3, 3))
    z = Dense(5)(x)
    assert z.shape == (5,)
    W = [p for p in z.parameters if p.name == 'W'][0]
    assert W.shape == (4, 3, 3, 5)


def test_dense_input_rank_and_map_rank():
    x = C.input_variable((4, 3))
    assert Dense(5, input_rank=1)(x).shape == (4, 5)
    assert Dense(5, map_rank=1)(x).shape == (4, 5)
    assert Dense((2, 5))(x).shape == (2, 5)
    with pytest.raises(ValueError):
        Dense(5, input_rank=1, map_rank=1)


def test_dense_matches_numpy():
    x = C.input_variable(3)
    d = Dense(2, activation=C.tanh, init=np.arange(6).reshape(3, 2) * 0.1, init_bias=0.5)
    z = d(x)
    data = np.array([[1, 2, 3]], np.float32)
    np.testing.assert_allclose(z.eval({x: data}), np.tanh(data @ (np.arange(6).reshape(3, 2) * 0.1) + 0.5),
                               rtol=1e-5)


def test_dense_without_bias_has_one_parameter():
    x = C.input_variable(3)
    assert len(Dense(2, bias=False)(x).parameters) == 1


def test_default_options_override_and_restore():
    x = C.input_variable(3)
    with default_options(activation=C.relu, init=np.ones((3, 2))):
        d = Dense(2, init_bias=-100)
    assert np.all(d(x).eval({x: [[1, 1, 1]]}) == 0)  # relu of a large negative number
    d2 = Dense(2, init=np.ones((3, 2)), init_bias=-100)
    assert np.all(d2(x).eval({x: [[1, 1, 1]]}) < 0)  # identity again outside the block


def test_reusing_a_layer_shares_parameters():
    a, b = C.input_variable(3), C.input_variable(3)
    d = Dense(2)
    za, zb = d(a), d(b)
    pa = {p.uid for p in za.parameters}
    pb = {p.uid for p in zb.parameters}
    assert pa == pb


def test_sequential_and_for():
    x = C.input_variable(4)
    m = Sequential([Dense(5, activation=C.relu), [Dense(3)], Activation(C.sigmoid)])
    out = m(x).eval({x: np.ones((2, 4), np.float32)})
    assert out.shape == (2, 3) and np.all((out > 0) & (out < 1))
    f = For(range(3), lambda i: Dense(i + 2))
    assert f(x).shape == (4,)
    assert len(f(x).parameters) == 6


def test_sequential_tuple_forks():
    x = C.input_variable(4)
    m = Sequential([Dense(4), (Dense(2), Dense(3))])
    assert [o.shape for o in m(x).outputs] == [(2,), (3,)]


def test_resnet_block_and_clique():
    x = C.input_variable(3)
    r = ResNetBlock(Dense(3, init=np.zeros((3, 3)), bias=False))(x)
    np.testing.assert_allclose(r.eval({x: [[1, 2, 3]]}), [[1, 2, 3]])
    zero = Dense(3, init=np.zeros((3, 3)), init_bias=1.0)
    c = SequentialClique([zero, Dense(3, init=np.eye(3), bias=False)])(x)
    # Second layer sees x + first output = x + 1.
    np.testing.assert_allclose(c.eval({x: [[1, 2, 3]]}), [[2, 3, 4]], rtol=1e-6)


def test_layer_normalization():
    x = C.input_variable(4)
    z = LayerNormalization()(x)
    d = np.array([[1, 2, 3, 4]], np.float32)
    # CNTK adds epsilon to the standard deviation; scale and bias are one per element.
    ref = (d - d.mean()) / (np.sqrt(d.var()) + 1e-5)
    np.testing.assert_allclose(z.eval({x: d}), ref, rtol=1e-6)
    assert sorted((p.name, p.shape) for p in z.parameters) == [('bias', (4,)), ('scale', (4,))]


def test_stabilizer_starts_as_identity():
    x = C.input_variable(3)
    np.testing.assert_allclose(Stabilizer()(x).eval({x: [[1, 2, 3]]}), [[1, 2, 3]], rtol=1e-5)
    assert len(Stabilizer(enable_self_stabilization=False)(x).parameters) == 0


def test_label_and_identity():
    x = C.input_variable(3)
    z = Label('feature')(x)
    assert z.find_by_name('feature') is not None
    np.testing.assert_allclose(identity(x).eval({x: [[1, 2, 3]]}), [[1, 2, 3]])


def test_embedding_from_weights_is_constant():
    w = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = C.input_variable(4)
    z = Embedding(weights=w)(x)
    assert z.shape == (3,) and len(z.parameters) == 0
    onehot = np.eye(4, dtype=np.float32)[[2]]
    np.testing.assert_allclose(z.eval({x: onehot}), w[[2]])
    e = Embedding(5)(x)
    assert e.parameters[0].shape == (4, 5)


def test_layer_gradients_flow_to_parameters():
    x = C.input_variable(3, dtype=np.float64)
    with default_options(activation=C.tanh):
        m = Sequential([Dense(4), Dense(2)])
    z = C.reduce_sum(m(x))
    g = z.grad({x: np.ones((2, 3))}, wrt=z.parameters)
    assert all(np.any(v != 0) for v in g.values())


def test_default_options_dtype_sets_the_type_of_layer_parameters():
    # As in CNTK, default_options(dtype=...) reaches parameters made without a dtype
    # (the layers' weights); an explicit dtype wins, and the default stays float32.
    with default_options(dtype=np.float64):
        d = Dense(2)
        explicit = C.Parameter((2,), init=1.0, dtype=np.float32)
    x = C.input_variable(3, dtype=np.float64)
    assert all(p.dtype == np.float64 for p in d(x).parameters)
    assert explicit.dtype == np.float32
    assert all(p.dtype == np.float32 for p in Dense(2)(C.input_variable(3)).parameters)
    from cntk.default_options import default_options_for
    with default_options_for(C.Parameter, dtype=np.float64):
        assert C.Parameter((2,), init=0.5).dtype == np.float64


def test_embedding_and_for_refuse_bad_arguments():
    with pytest.raises(ValueError):
        Embedding(shape=None, init=1, weights=[1., 2., 3.])   # init and weights exclude each other
    with pytest.raises(ValueError):
        Embedding(3, weights=[1., 2., 3.])                     # so do shape and weights
    with pytest.raises(ValueError):
        For(range(3), Dense(5))                                # a layer, not a constructor
    with pytest.raises(ValueError):
        For(range(3), type('Maker', (), {'__call__': lambda self, i: Dense(i)})())
    assert len(For(range(2), lambda: Dense(3)).parameters) == 4


def test_sequential_ending_in_a_recurrence_has_one_output():
    # The recurrence passes on h of the LSTM's (h, c): the composition has that one output.
    x = C.sequence.input_variable(5)
    f = C.layers.Sequential([C.layers.Embedding(8), C.layers.Recurrence(C.layers.LSTM(4))])(x)
    assert len(f.outputs) == 1 and f.output.shape == (4,)
