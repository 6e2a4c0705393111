"""The op catalogue's schema as Python sees it (`_cntk.op_schema`, `_cntk.op_schemas`), and the
checks it drives: undeclared attribute keys are rejected, defaults come from the declaration."""
import numpy as np
import pytest

import cntk as C
from cntk import _cntk


def test_every_registered_op_has_a_schema():
    schemas = _cntk.op_schemas()
    assert sorted(schemas) == sorted(_cntk.registered_ops())
    numbers = {}
    for name, s in schemas.items():
        assert s['name'] == name
        assert s['inputs'], name
        for i, spec in enumerate(s['inputs']):
            assert spec['gradient'] in ('rule', 'zero', 'none'), (name, spec)
            # Only the last input may stand for any number of inputs.
            assert not spec['variadic'] or i == len(s['inputs']) - 1, name
        for key, a in s['attributes'].items():
            assert a['type'] in ('int', 'double', 'bool', 'string', 'shape', 'axis', 'axis_list', 'int_list',
                                 'bool_list', 'list', 'dict'), (name, key)
            assert a['axis_order'] in ('none', 'numpy', 'cntk')
        if s['op_type'] >= 0:
            assert s['op_type'] not in numbers, (name, numbers.get(s['op_type']))
            numbers[s['op_type']] = name
        if s['random']:
            assert {'rngSeed', 'rngOffset'} <= set(s['attributes']), name


def test_schema_entries():
    times = _cntk.op_schema('Times')
    assert times['op_type'] == 31
    assert [(i['name'], i['gradient']) for i in times['inputs']] == [('left', 'rule'), ('right', 'rule')]
    assert times['attributes']['outputRank']['default'] == 1
    assert times['attributes']['outputRank']['type'] == 'int'
    assert times['attributes']['inferInputRankToMap']['default'] == -1

    floor = _cntk.op_schema('Floor')
    assert floor['inputs'][0]['gradient'] == 'zero'
    assert 'elementwise_unary' in floor['classes']
    assert 'elementwise_binary' in _cntk.op_schema('Plus')['classes']
    assert 'delay' in _cntk.op_schema('PastValue')['classes']
    assert _cntk.op_schema('EditDistanceError')['inputs'][0]['gradient'] == 'none'
    select = _cntk.op_schema('Select')
    assert [i['name'] for i in select['inputs']] == ['condition', 'then', 'else']
    splice = _cntk.op_schema('Splice')
    assert splice['inputs'][0]['variadic']
    assert splice['attributes']['axis']['axis_order'] == 'numpy'
    # Keys the engine spells otherwise than CNTK's files.
    ed = _cntk.op_schema('EditDistanceError')['attributes']
    assert ed['subPen']['cntk_key'] == 'SubstitutionPenalty'
    # Ops CNTK writes as blocks of primitives.
    for op in ('LeakyReLU', 'SELU', 'HardSigmoid', 'And', 'Or', 'Xor', 'Not', 'ElementDivide'):
        assert _cntk.op_schema(op)['cntk_block'], op
    assert not _cntk.op_schema('Tanh')['cntk_block']
    with pytest.raises(ValueError, match='Nonexistent'):
        _cntk.op_schema('Nonexistent')


def test_undeclared_attribute_key_is_rejected():
    from cntk.ops._prim import prim
    x = C.input_variable(3)
    with pytest.raises(ValueError, match=r"Tanh.*'scale'"):
        prim('Tanh', [x], {'scale': 2.0})
    with pytest.raises(ValueError, match=r"Times.*'outputrank'"):
        prim('Times', [x, C.parameter((3, 2))], {'outputrank': 1})
    with pytest.raises(TypeError, match='alpha'):
        prim('ELU', [x], {'alpha': 'one'})


def test_declared_defaults_are_used():
    from cntk.ops._prim import prim
    x = C.input_variable(4)
    data = np.array([[-2.0, -0.5, 0.0, 3.0]], dtype=np.float32)
    alpha = _cntk.op_schema('LeakyReLU')['attributes']['alpha']['default']
    assert alpha == pytest.approx(0.01)
    # Without the key, the op computes with the declared default.
    y = prim('LeakyReLU', [x], {}).eval({x: data})
    np.testing.assert_allclose(y, np.where(data > 0, data, alpha * data), rtol=1e-6)
    default = _cntk.op_schema('HardSigmoid')['attributes']
    a, b = default['alpha']['default'], default['beta']['default']
    y = prim('HardSigmoid', [x], {}).eval({x: data})
    np.testing.assert_allclose(y, np.clip(a * data + b, 0, 1), rtol=1e-6)


def test_block_forms_save_and_load(tmp_path):
    x = C.input_variable(4)
    data = np.array([[-2.0, -0.5, 0.25, 3.0]], dtype=np.float32)
    for f in (C.leaky_relu(x, alpha=0.3), C.selu(x), C.hard_sigmoid(x, alpha=0.3, beta=0.4),
              C.element_and(x, x - 1), C.element_not(x), C.element_divide(x, 3.0)):
        path = str(tmp_path / 'f.model')
        f.save(path)
        g = C.load_model(path)
        np.testing.assert_allclose(g.eval({g.arguments[0]: data}), f.eval({x: data}), rtol=1e-6)
