"""int8 and int16: storage types of CNTK (parameters, constants and saved values)."""
import os

import numpy as np
import pytest

import cntk as C


@pytest.mark.parametrize('dtype', [np.int8, np.int16])
def test_ndarrayview_keeps_int_data(dtype):
    a = np.arange(-6, 6, dtype=dtype).reshape(3, 4)
    v = C.NDArrayView.from_dense(a)
    assert v.dtype == dtype
    np.testing.assert_array_equal(np.asarray(v), a)
    np.testing.assert_array_equal(v.asarray(), a)


@pytest.mark.parametrize('dtype', [np.int8, np.int16])
def test_dictionary_value_files(tmpdir, dtype):
    a = np.arange(-32, 32, dtype=dtype).reshape(16, 4)
    dv = C._to_cntk_dict_value(a)
    path = str(tmpdir / 'value.bin')
    dv.save(path)
    # one DictionaryValue message: int8 as raw bytes, int16 as zigzag sint32 (one byte each here)
    assert os.path.getsize(path) == 82
    back = C.cntk_py.DictionaryValue.load(path)
    assert back == dv
    np.testing.assert_array_equal(np.asarray(back.value), a)
    assert back != C._to_cntk_dict_value(a + 1)


@pytest.mark.parametrize('dtype', [np.int8, np.int16])
def test_int_parameters_survive_a_model_file(tmpdir, dtype):
    w = C.Parameter((1, 5), dtype=dtype)
    w.value = np.arange(5).reshape(1, 5)
    x = C.input_variable((1, 5))
    z = C.custom_proxy_op("my_op", (5, 2), dtype, x, w, name='proxy')
    path = str(tmpdir / 'model.bin')
    z.save(path)
    back = C.load_model(path)
    assert back.output.shape == (5, 2)
    assert back.output.dtype == dtype
    assert back.parameters[0].dtype == dtype
    np.testing.assert_array_equal(back.parameters[0].value, w.value)


@pytest.mark.parametrize('dtype', [np.int8, np.int16])
def test_int_custom_attribute_survives_a_model_file(tmpdir, dtype):
    x = C.input_variable(3)
    z = C.times(x, C.parameter((3, 2)))
    z.custom_attributes = {'table': C._to_cntk_dict_value(np.arange(6, dtype=dtype).reshape(2, 3))}
    path = str(tmpdir / 'model.bin')
    z.save(path)
    table = C.load_model(path).custom_attributes['table']
    assert table.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(table), np.arange(6, dtype=dtype).reshape(2, 3))


def test_int_types_do_not_compute():
    x = C.input_variable(3)
    c = C.constant(np.arange(3), dtype=np.int8)
    assert c.dtype == np.int8
    with pytest.raises((TypeError, ValueError, NotImplementedError)):
        (x + c).eval({x: np.ones((1, 3), np.float32)})
