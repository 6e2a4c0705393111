"""Bad graph-level input gets a clear ValueError or TypeError naming what is wrong, never a crash."""
import numpy as np
import pytest

import cntk as C
from cntk.layers.typing import Tensor


def test_wrong_data_shape_names_the_variable_and_the_shapes():
    x = C.input_variable(2, name='features')
    with pytest.raises(ValueError, match=r"features.*\(1, 3\)"):
        (x * 2).eval({x: np.ones((1, 3), np.float32)})


def test_scalar_samples_for_a_vector_input():
    x = C.input_variable(1, name='x')
    with pytest.raises(ValueError, match="x"):
        (x + x).eval({x: [np.asarray(2)]})


def test_missing_argument_data_names_the_variable():
    x, y = C.input_variable(2, name='x'), C.input_variable(2, name='y')
    with pytest.raises(ValueError, match="'y'"):
        (x + y).eval({x: np.ones((1, 2), np.float32)})


def test_unbound_placeholder():
    p = C.placeholder(name='p')
    f = p * 2
    with pytest.raises(ValueError, match="placeholder"):
        f.eval({p: [[1]]})
    q = C.placeholder(name='q')
    x = C.input_variable(1)
    g = x * q
    with pytest.raises(ValueError, match="placeholder"):
        g.eval({x: [[1]]})


def test_data_of_the_wrong_type():
    x = C.input_variable(2, name='x')
    with pytest.raises(ValueError, match="x"):
        (x * 2).eval({x: np.array([['a', 'b']])})
    with pytest.raises(ValueError, match="x"):
        (x * 2).eval({x: [{'a': 1}, {'b': 2}]})
    with pytest.raises(TypeError):
        (x * 2).eval({x: np.array([[1j, 2j]])})


def test_unsupported_variable_dtype():
    with pytest.raises(TypeError, match="int32"):
        C.input_variable(2, dtype=np.int32)
    with pytest.raises(TypeError):
        C.parameter((2,), dtype=np.int64)
    with pytest.raises(TypeError):
        C.NDArrayView((2,), np.int32)  # int8 and int16 are storage types, int32 none


def test_non_variable_operands():
    x = C.input_variable(2)
    with pytest.raises(TypeError):
        C.plus(None, x)
    with pytest.raises(TypeError):
        C.plus(object(), x)
    with pytest.raises((TypeError, ValueError)):
        C.plus('abc', x)
    with pytest.raises(TypeError):
        C.combine([x, 3])
    with pytest.raises(TypeError):
        C.as_composite(x)


def test_type_object_as_operand():
    with pytest.raises(ValueError, match="type object"):
        C.sigmoid(Tensor[3])


def test_unnamed_data_for_several_arguments():
    i1 = C.input_variable((1, 2), name='i1')
    i2 = C.input_variable((2, 1), name='i2')
    f = C.plus(i1, i2)
    with pytest.raises(ValueError, match="2 arguments"):
        f.eval(np.ones((1, 1, 2), np.float32))


def test_unknown_argument_name_and_key():
    x = C.input_variable(1, name='x')
    f = x + 1
    with pytest.raises(ValueError, match="'y'"):
        f.eval({'y': [[1]]})
    with pytest.raises(TypeError):
        f.eval({3: [[1]]})


def test_batch_sizes_must_agree():
    x, y = C.input_variable(2, name='x'), C.input_variable(2, name='y')
    with pytest.raises(ValueError, match="batch sizes differ"):
        (x + y).eval({x: np.ones((2, 2), np.float32), y: np.ones((3, 2), np.float32)})


def test_sequence_data_with_wrong_sample_shape():
    s = C.sequence.input_variable(3, name='s')
    with pytest.raises(ValueError, match="sequence 1"):
        (s * 1).eval({s: [np.ones((2, 3)), np.ones((2, 4))]})
    with pytest.raises(ValueError):
        (s * 1).eval({s: []})


def test_ragged_samples_for_a_batch_input():
    x = C.input_variable(2, name='x')
    with pytest.raises(ValueError, match="x"):
        (x * 1).eval({x: [[1, 2], [3]]})


def test_shape_mismatch_at_graph_construction_names_op_and_shapes():
    with pytest.raises(ValueError, match=r"Plus.*\(3,\).*\(4,\)"):
        C.plus(C.input_variable(3), C.input_variable(4))
    with pytest.raises(ValueError, match="Times"):
        C.times(C.input_variable(3), C.parameter((4, 2)))


def test_output_that_is_not_in_the_graph():
    x, y = C.input_variable(2), C.input_variable(2)
    sum_node = x + 2
    times_node = x * y
    with pytest.raises(ValueError, match="not part of the graph"):
        times_node.forward({x: [[1, 2]], y: [[1, 2]]}, sum_node.outputs)


def test_backward_without_state():
    x = C.input_variable(1, needs_gradient=True)
    f = C.sigmoid(x)
    state, _ = f.forward({x: [[0]]})
    assert state is None
    with pytest.raises(ValueError, match="keep_for_backward"):
        f.backward(state, {f.output: np.ones((1, 1), np.float32)}, [x])


def test_backward_root_gradient_of_the_wrong_shape():
    x = C.input_variable(2, needs_gradient=True)
    f = x * 2
    state, _ = f.forward({x: [[1, 2]]}, keep_for_backward=[f.output])
    with pytest.raises(ValueError):
        f.backward(state, {f.output: np.ones((1, 3), np.float32)}, [x])


def test_several_outputs_where_one_is_needed():
    x = C.input_variable(1)
    c = C.combine([x + 1, x * 2])
    with pytest.raises(ValueError, match="2 outputs"):
        c.output
    with pytest.raises(ValueError, match="grad_root"):
        c.grad({x: [[1]]}, wrt=[x])


def test_replace_placeholders_errors():
    p = C.placeholder()
    x = C.input_variable(1)
    f = p + x
    with pytest.raises(ValueError, match="not a placeholder"):
        f.replace_placeholders({x: C.input_variable(1)})
    with pytest.raises(ValueError, match="not a placeholder of this function"):
        f.replace_placeholders({C.placeholder(): x})
    with pytest.raises(TypeError):
        f.replace_placeholders([(p, x)])
    with pytest.raises(TypeError):
        f.replace_placeholders({p: None})
    g = C.placeholder() * C.placeholder()
    with pytest.raises(ValueError, match="2 placeholders"):
        g.replace_placeholder(x)


def test_clone_errors():
    x = C.input_variable(1)
    f = x + 1
    with pytest.raises(ValueError):
        f.clone('deep')
    with pytest.raises(TypeError):
        f.clone('share', {x: 'y'})


def test_parameter_and_constant_value_errors():
    p = C.parameter((2, 3))
    with pytest.raises(ValueError, match=r"\(3, 2\)"):
        p.value = np.ones((3, 2))
    x = C.input_variable(2)
    with pytest.raises(ValueError):
        x.value
    with pytest.raises(ValueError):
        C.constant([1, 2, 3], shape=(2,))


def test_block_errors():
    pa, pb = C.placeholder(), C.placeholder()
    x = C.input_variable(1)
    with pytest.raises(ValueError, match="block_arguments_map"):
        C.as_block(pa + pb, [(pa, x)], 'Incomplete')
    with pytest.raises(ValueError, match="placeholders"):
        C.as_block(pa + pb, [(pa, x), (pb, x), (x, x)], 'BadKey')
    with pytest.raises(TypeError):
        C.as_block(pa + pb, [pa, pb], 'NotPairs')


def test_dynamic_axes_errors():
    with pytest.raises(ValueError, match="at most two"):
        C.input_variable(2, dynamic_axes=[C.Axis.default_batch_axis(), C.Axis('a'), C.Axis('b')])
    with pytest.raises(TypeError):
        C.input_variable(2, dynamic_axes=[C.Axis(0)])
    a = C.sequence.input_variable(2, sequence_axis=C.Axis('a'))
    b = C.sequence.input_variable(2, sequence_axis=C.Axis('b'))
    with pytest.raises(ValueError, match="dynamic axes"):
        a + b


def test_grad_without_variables_that_need_gradients():
    x = C.input_variable(1)
    with pytest.raises(ValueError, match="needs_gradient"):
        (x * 2).grad({x: [[1]]})


def test_argument_count_in_calls():
    f = C.Function(lambda a, b: a * b)
    with pytest.raises(TypeError, match="expected 2 arguments"):
        f(C.input_variable(1))


def test_bad_shapes():
    with pytest.raises(TypeError, match="shape"):
        C.input_variable('abc')
    with pytest.raises(TypeError, match="shape"):
        C.input_variable(2.5)
    with pytest.raises(ValueError, match="dimension"):
        C.input_variable((-5,))
    with pytest.raises(ValueError):
        C.parameter((-5, 3))
    with pytest.raises(ValueError):
        C.NDMask((-2, 3))


def test_empty_batches_are_not_an_error():
    x = C.input_variable(3, needs_gradient=True)
    f = C.tanh(C.times(x, np.ones((3, 2), np.float32)))
    e = np.zeros((0, 3), np.float32)
    assert f.eval({x: e}).shape == (0, 2)
    assert f.grad({x: e}, wrt=[x]).shape == (0, 3)
    s = C.sequence.input_variable(3)
    out = (s * 2).eval({s: [np.zeros((0, 3)), np.ones((2, 3))]})
    assert [o.shape for o in out] == [(0, 3), (2, 3)]


def test_engine_errors_carry_the_native_call_stack():
    # as CNTK's: the message, then '[CALL STACK]' and the frames where the engine raised it
    with pytest.raises(ValueError) as e:
        C.device.gpu(99999)
    msg = str(e.value)
    assert msg.startswith("DeviceDescriptor.gpu(99999)") and '\n\n[CALL STACK]\n    > ' in msg
    assert 'DeviceDescriptor::gpu' in msg
    with pytest.raises(ValueError) as e:
        C.io.MinibatchSource(C.io.CTFDeserializer("", streams={}))
    assert 'no streams' in str(e.value) and '[CALL STACK]' in str(e.value)
