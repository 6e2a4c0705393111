"""Reader rules of the attention-family ops (LinearAttention, FlexAttention, CausalConvWithState,
TensorScatter), the training domain's optimizer steps and the ai.onnx.ml numeric ops, where
ONNX's backend node cases do not reach: gradients through the imported ops to their operands
(initializers read as parameters, checked against central differences of the imported model
itself), forms the cases leave out (a circular cache write that wraps, a cache axis after
other axes, T = 0 of the optimizers, a 1-D feature array) against ONNX's reference evaluator,
and the errors of malformed nodes."""
import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402
from onnx_import_checks import check_gradients  # noqa: E402

R = np.random.RandomState(5)


def _model(nodes, inputs, outputs, inits=None, opsets=(('', 27),)):
    """A model of `nodes` over the float graph inputs `inputs` (name: value) and the
    initializers `inits`, with the graph outputs `outputs`."""
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
    graph = helper.make_graph(
        nodes, 'g', [helper.make_tensor_value_info(n, types[v.dtype], v.shape) for n, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],
        [numpy_helper.from_array(v, n) for n, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])


def _load(model):
    return C.load_model(model.SerializeToString(), format=C.ModelFormat.ONNX)


def _run(model, inputs):
    z = _load(model)
    got = z.eval({a: inputs[a.name] for a in z.arguments}, as_numpy=True)
    if not isinstance(got, dict):
        return [np.asarray(got)]
    return [np.asarray(got[o]) for o in z.outputs]


def _check_against_reference(model, inputs, rtol=1e-5, atol=1e-5):
    want = ReferenceEvaluator(model).run(None, inputs)
    got = _run(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == np.asarray(w).shape, (g.shape, np.asarray(w).shape)
        np.testing.assert_allclose(g, np.asarray(w, dtype=np.float64), rtol=rtol, atol=atol)


def _check_gradients(model, inputs, output=0, unaffected=(), eps=1e-2, samples=5, rtol=3e-2, atol=3e-3):
    check_gradients(model, inputs, output=output, unaffected=unaffected, eps=eps, samples=samples, rtol=rtol,
                    atol=atol)


# ------------------------------------------------------------------ LinearAttention

def _linear_attention(rule, hq=4, hkv=2, b=2, t=3, dk=4, dv=3, per_head_decay=False, past=True):
    r = np.random.RandomState(1)
    inits = {'q': r.randn(b, t, hq * dk).astype(np.float32) * 0.5,
             'k': r.randn(b, t, hkv * dk).astype(np.float32) * 0.5,
             'v': r.randn(b, t, hkv * dv).astype(np.float32)}
    names = ['q', 'k', 'v', 'past' if past else '', '', '']
    if 'gated' in rule:
        inits['decay'] = -np.abs(r.randn(b, t, hkv if per_head_decay else hkv * dk)).astype(np.float32) * 0.2
        names[4] = 'decay'
    if 'delta' in rule:
        inits['beta'] = r.rand(b, t, hkv).astype(np.float32)
        names[5] = 'beta'
    while names[-1] == '':
        names.pop()
    inputs = {'past': r.randn(b, hkv, dk, dv).astype(np.float32) * 0.1} if past else {}
    node = helper.make_node('LinearAttention', names, ['y', 'state'], q_num_heads=hq, kv_num_heads=hkv,
                            update_rule=rule)
    return _model([node], inputs, ['y', 'state'], inits), inputs


@pytest.mark.parametrize('rule', ['linear', 'gated', 'delta', 'gated_delta'])
def test_linear_attention_gradients_reach_every_operand(rule):
    model, inputs = _linear_attention(rule)
    _check_against_reference(model, inputs, rtol=1e-4, atol=1e-5)
    _check_gradients(model, inputs, output=0)
    _check_gradients(model, inputs, output=1, unaffected=('q',))  # the state never reads the queries


def test_linear_attention_per_head_decay_without_past_state():
    model, inputs = _linear_attention('gated', per_head_decay=True, past=False)
    _check_against_reference(model, inputs, rtol=1e-4, atol=1e-5)
    _check_gradients(model, inputs)


@pytest.mark.parametrize('rule, names, what', [('gated', ['q', 'k', 'v'], 'decay'),
                                               ('linear', ['q', 'k', 'v', '', '', 'beta'], 'beta'),
                                               ('sparse', ['q', 'k', 'v'], 'update_rule')])
def test_linear_attention_refuses_inputs_its_rule_does_not_match(rule, names, what):
    x = {n: np.ones((1, 2, 8), np.float32) for n in ('q', 'k', 'v', 'beta')}
    node = helper.make_node('LinearAttention', names, ['y'], q_num_heads=2, kv_num_heads=2, update_rule=rule)
    with pytest.raises(ValueError, match=what):
        _load(_model([node], {}, ['y'], {n: x[n] for n in names if n}))


# ------------------------------------------------------------------- FlexAttention

def test_flex_attention_with_soft_cap_and_grouped_heads_trains():
    r = np.random.RandomState(2)
    inits = {'Q': r.randn(1, 4, 3, 8).astype(np.float32), 'K': r.randn(1, 2, 5, 8).astype(np.float32),
             'V': r.randn(1, 2, 5, 6).astype(np.float32)}
    cap = helper.make_graph(
        [helper.make_node('Div', ['s', 'c'], ['d']), helper.make_node('Tanh', ['d'], ['t']),
         helper.make_node('Mul', ['t', 'c'], ['out'])], 'soft_cap',
        [helper.make_tensor_value_info('s', TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info('out', TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(2.0, np.float32), 'c')])
    node = helper.make_node('FlexAttention', ['Q', 'K', 'V'], ['Y'], domain='ai.onnx.preview', score_mod=cap,
                            scale=0.3)
    model = _model([node], {}, ['Y'], inits, opsets=(('', 26), ('ai.onnx.preview', 1)))
    _check_against_reference(model, {}, rtol=1e-4, atol=1e-5)
    _check_gradients(model, {})


# ---------------------------------------------------- CausalConvWithState, TensorScatter

def test_causal_conv_with_state_gradients_reach_weight_bias_and_past_state():
    r = np.random.RandomState(3)
    inits = {'w': r.randn(3, 1, 3).astype(np.float32), 'bias': r.randn(3).astype(np.float32),
             'past': r.randn(2, 3, 2).astype(np.float32)}
    inputs = {'x': r.randn(2, 3, 5).astype(np.float32)}
    node = helper.make_node('CausalConvWithState', ['x', 'w', 'bias', 'past'], ['y', 'state'], activation='silu')
    model = _model([node], inputs, ['y', 'state'], inits)
    _check_against_reference(model, inputs)
    _check_gradients(model, inputs)


def test_tensor_scatter_circular_write_wraps_after_other_axes_and_trains():
    r = np.random.RandomState(4)
    # Cache [B, heads, L, D] written along axis 2 from positions 3 and 1: the first batch wraps.
    inits = {'cache': r.randn(2, 3, 4, 2).astype(np.float32), 'update': r.randn(2, 3, 3, 2).astype(np.float32)}
    inputs = {'at': np.array([3, 1], np.int64)}
    node = helper.make_node('TensorScatter', ['cache', 'update', 'at'], ['y'], mode='circular', axis=2)
    model = _model([node], inputs, ['y'], inits, opsets=(('', 24),))
    _check_against_reference(model, inputs, rtol=0, atol=0)
    _check_gradients(model, inputs)


def test_tensor_scatter_refuses_the_batch_axis():
    node = helper.make_node('TensorScatter', ['cache', 'update'], ['y'], axis=0)
    inits = {'cache': np.zeros((2, 4), np.float32), 'update': np.zeros((1, 4), np.float32)}
    with pytest.raises(ValueError, match='batch axis'):
        _load(_model([node], {}, ['y'], inits, opsets=(('', 24),)))


# ------------------------------------------------------- optimizer steps, ai.onnx.ml

TRAINING = (('', 17), ('ai.onnx.preview.training', 1))


@pytest.mark.parametrize('t', [0, 3])
@pytest.mark.parametrize('op, kinds, attrs', [
    ('Adagrad', 3, dict(decay_factor=0.1, epsilon=1e-5, norm_coefficient=0.01)),
    ('Adam', 4, dict(alpha=0.9, beta=0.99, epsilon=1e-3, norm_coefficient=0.01, norm_coefficient_post=0.05)),
    ('Momentum', 3, dict(alpha=0.9, beta=0.5, mode='standard', norm_coefficient=0.01)),
    ('Momentum', 3, dict(alpha=0.9, beta=0.5, mode='nesterov', norm_coefficient=0.01))])
def test_optimizer_steps_at_the_first_and_a_later_step(op, kinds, attrs, t):
    r = np.random.RandomState(6)
    inputs = {'R': np.array(0.1, np.float32), 'T': np.array(t, np.int64)}
    names = ['R', 'T']
    for k in range(kinds):
        for i, shape in enumerate([(3,), (2, 2)]):
            n = f'in{k}_{i}'
            inputs[n] = (np.abs(r.randn(*shape)) if k == kinds - 1 else r.randn(*shape)).astype(np.float32)
            names.append(n)
    outs = [f'out{j}' for j in range(2 * (kinds - 1))]
    node = helper.make_node(op, names, outs, domain='ai.onnx.preview.training', **attrs)
    _check_against_reference(_model([node], inputs, outs, opsets=TRAINING), inputs)


def test_array_feature_extractor_of_a_vector_and_of_a_matrix_trains():
    r = np.random.RandomState(7)
    ml = (('', 17), ('ai.onnx.ml', 1))
    node = helper.make_node('ArrayFeatureExtractor', ['x', 'i'], ['y'], domain='ai.onnx.ml')
    vec = {'x': r.randn(5).astype(np.float32), 'i': np.array([[4, 0, 4]], np.int64)}
    _check_against_reference(_model([node], vec, ['y'], opsets=ml), vec, rtol=0, atol=0)
    model = _model([node], {'i': np.array([2, 1], np.int64)}, ['y'], {'x': r.randn(2, 3, 4).astype(np.float32)},
                   opsets=ml)
    _check_against_reference(model, {'i': np.array([2, 1], np.int64)}, rtol=0, atol=0)
    _check_gradients(model, {'i': np.array([2, 1], np.int64)})


@pytest.mark.parametrize('aggregate', [0, 1, 2, 3])
def test_tree_ensemble_of_two_trees_aggregates_and_tracks_missing_values(aggregate):
    # Tree 0: node 0 (x0 <= 0.5) -> node 1 (x1 > 0, NaN true) | leaf 2; node 1 -> leaf 0 | leaf 1.
    # Tree 1: node 2 (x2 in {1, 2}) -> leaf 3 | node 3 (x0 != 0.25) -> leaf 4 | leaf 5.
    node = helper.make_node(
        'TreeEnsemble', ['X'], ['Y'], domain='ai.onnx.ml', aggregate_function=aggregate, n_targets=2,
        tree_roots=[0, 2], nodes_featureids=[0, 1, 2, 0], nodes_truenodeids=[1, 0, 3, 4],
        nodes_falsenodeids=[2, 1, 3, 5], nodes_trueleafs=[0, 1, 1, 1], nodes_falseleafs=[1, 1, 0, 1],
        nodes_missing_value_tracks_true=[0, 1, 0, 0], leaf_targetids=[0, 1, 0, 1, 1, 0],
        nodes_modes=helper.make_tensor('m', TensorProto.UINT8, [4], [0, 3, 6, 5]),
        nodes_splits=numpy_helper.from_array(np.array([0.5, 0.0, np.nan, 0.25], np.float32), 's'),
        membership_values=numpy_helper.from_array(np.array([1, 2, np.nan], np.float32), 'mv'),
        leaf_weights=numpy_helper.from_array(np.array([1.5, -2, 4, 8, 16, -32], np.float32), 'w'))
    x = np.array([[0.1, 1, 1], [0.1, -1, 3], [0.1, np.nan, 2], [0.9, 0, 5], [0.25, 0, 7]], np.float32)
    _check_against_reference(_model([node], {'X': x}, ['Y'], opsets=(('', 21), ('ai.onnx.ml', 5))), {'X': x})


@pytest.mark.parametrize('mode', ['TF', 'IDF', 'TFIDF'])
@pytest.mark.parametrize('shape', [(9,), (2, 7)])
def test_tfidf_vectorizer_weighted_modes_with_skips(mode, shape):
    # Unigrams 2, 5, 7; bigrams (5, 6), (7, 7); trigram (2, 5, 6); two n-grams share column 1.
    x = np.random.RandomState(8).randint(2, 8, size=shape).astype(np.int64)
    node = helper.make_node('TfIdfVectorizer', ['X'], ['Y'], mode=mode, min_gram_length=1, max_gram_length=3,
                            max_skip_count=2, ngram_counts=[0, 3, 7], ngram_indexes=[0, 1, 2, 3, 1, 4],
                            pool_int64s=[2, 5, 7, 5, 6, 7, 7, 2, 5, 6], weights=[0.5, 2, 3, 0.25, 4])
    _check_against_reference(_model([node], {'X': x}, ['Y'], opsets=(('', 21),)), {'X': x}, rtol=0, atol=0)


def test_cast_like_a_float16_result_no_rule_typed_is_float16():
    # Attention's expanded body: a float mask cast like the float16 padded attn_mask, then added to it.
    nodes = [helper.make_node('Less', ['a', 'b'], ['c']),
             helper.make_node('Where', ['c', 'neg_inf', 'zero'], ['mask']),
             helper.make_node('Pad', ['x', 'pads'], ['xp']),
             helper.make_node('CastLike', ['mask', 'xp'], ['mask16']),
             helper.make_node('Add', ['xp', 'mask16'], ['y'])]
    inits = {'neg_inf': np.array([-np.inf], np.float32), 'zero': np.array([0], np.float32),
             'pads': np.array([0, 0, 0, 2], np.int64)}
    r = np.random.RandomState(9)
    inputs = {'x': r.randn(1, 6).astype(np.float16), 'a': r.randint(0, 4, (1, 8)), 'b': r.randint(0, 4, (1, 8))}
    graph = helper.make_graph(
        nodes, 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT16, [1, 6]),
                     helper.make_tensor_value_info('a', TensorProto.INT64, [1, 8]),
                     helper.make_tensor_value_info('b', TensorProto.INT64, [1, 8])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT16, [1, 8])],
        [numpy_helper.from_array(v, n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 23)])
    z = _load(model)
    assert z.output.dtype == np.float16
    want = ReferenceEvaluator(model).run(None, inputs)[0]
    got = np.asarray(z.eval({a: inputs[a.name] for a in z.arguments}))
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_an_unread_integer_input_beside_a_float16_output_stays_an_argument():
    # The graph input 'n' only gives a shape, which folds away: it stays an argument of the read
    # function (DependsOn) whatever its type.
    nodes = [helper.make_node('Shape', ['n'], ['s']), helper.make_node('Cast', ['s'], ['sf'], to=TensorProto.FLOAT16),
             helper.make_node('Mul', ['x', 'sf'], ['y'])]
    graph = helper.make_graph(
        nodes, 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT16, [1, 3]),
                     helper.make_tensor_value_info('n', TensorProto.INT64, [3])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT16, [1, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 21)])
    z = _load(model)
    assert sorted(a.name for a in z.arguments) == ['n', 'x'] and z.output.dtype == np.float16
    x = np.array([[0.5, -1, 2]], np.float16)
    got = np.asarray(z.eval({a: {'x': x, 'n': np.arange(3)}[a.name] for a in z.arguments}))
    np.testing.assert_array_equal(got.reshape(1, 3), x * np.float16(3))
