"""Python-defined ops (cntk.ops.functions.UserFunction), output_variable and custom_proxy_op."""
import numpy as np
import pytest

import cntk as C
from cntk.ops.functions import UserFunction, native_user_function, register_native_user_function
from op_harness import gradcheck, f64_input, covers_op


class MySigmoid(UserFunction):
    """CNTK's documented example: a sigmoid with its own forward and backward."""

    def __init__(self, arg, name='MySigmoid'):
        super(MySigmoid, self).__init__([arg], name=name)
        self.forward_calls = 0
        self.backward_calls = 0

    def forward(self, argument, device=None, outputs_to_retain=None):
        self.forward_calls += 1
        sigmoid_x = 1 / (1 + np.exp(-argument))
        return sigmoid_x, sigmoid_x

    def backward(self, state, root_gradients):
        self.backward_calls += 1
        sigmoid_x = state
        return root_gradients * sigmoid_x * (1 - sigmoid_x)

    def infer_outputs(self):
        return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]


class MyPlus(UserFunction):
    """Two inputs: backward fills the `variables` dict."""

    def __init__(self, arg1, arg2, name='f1'):
        super(MyPlus, self).__init__([arg1, arg2], name=name)

    def infer_outputs(self):
        return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]

    def clone(self, cloned_inputs):
        return MyPlus(cloned_inputs[0], cloned_inputs[1])

    def forward(self, arguments, device=None, outputs_to_retain=None):
        assert len(self.inputs) == 2
        return None, arguments[0] + arguments[1]

    def backward(self, state, root_gradients, variables):
        for v in variables:
            variables[v] = root_gradients


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


@covers_op('UserFunction', 'forward')
def test_user_sigmoid_forward():
    x = C.input_variable(3)
    f = MySigmoid(x)
    assert isinstance(f, C.Function)
    assert f.is_composite and f.root_function.op_name.endswith('MySigmoid')
    assert f.name == 'MySigmoid' and f.output.shape == (3,) and f.arguments == (x,)
    data = np.array([[-1.0, 0.0, 2.0], [0.5, 1.0, -3.0]], np.float32)
    np.testing.assert_allclose(f.eval({x: data}), _sigmoid(data), rtol=1e-6)
    assert f.forward_calls == 1  # the instance's attributes are reachable through the Function


def test_user_function_composes_and_differentiates():
    x = C.input_variable(3, needs_gradient=True)
    f = C.plus(MySigmoid(C.element_times(x, 2.0)), 1)
    data = np.array([[-1.0, 0.0, 2.0]], np.float32)
    np.testing.assert_allclose(f.eval({x: data}), _sigmoid(2 * data) + 1, rtol=1e-6)
    g = f.grad({x: data})
    s = _sigmoid(2 * data)
    np.testing.assert_allclose(g, 2 * s * (1 - s), rtol=1e-5)


@covers_op('UserFunction', 'gradient:0')
def test_user_function_gradcheck_float64():
    x = f64_input((2, 3), name='x')
    w = C.parameter((2, 3), init=np.linspace(-1, 1, 6).reshape(2, 3), dtype=np.float64)
    f = MySigmoid(x * w) * 3
    data = np.random.RandomState(0).standard_normal((4, 2, 3))
    gradcheck(f, {x: data})


def test_multiple_inputs_and_gradients():
    x = C.input_variable(2, needs_gradient=True, name='x')
    y = C.input_variable(2, needs_gradient=True, name='y')
    f = C.user_function(MyPlus(x, y))
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([[5, 6], [7, 8]], np.float32)
    np.testing.assert_allclose(f.eval({x: a, y: b}), a + b)
    grads = f.grad({x: a, y: b}, wrt=[x, y])
    np.testing.assert_allclose(grads[x], np.ones_like(a))
    np.testing.assert_allclose(grads[y], np.ones_like(b))


def test_sequences_and_parameters_as_inputs():
    # CNTK's example: a sequence input plus a constant, then a parameter added.
    dim = 4
    p = C.parameter(shape=(dim,), init=10, name='p')
    i = C.sequence.input_variable(dim, needs_gradient=True, name='i_var')
    m = C.user_function(MyPlus(i, C.constant(3)))
    z = m + p
    seqs = [np.random.rand(3, dim).astype(np.float32), np.random.rand(3, dim).astype(np.float32)]
    result = z.eval({i: seqs})  # sequences of one length reach forward as one array
    for r, s in zip(result, seqs):
        np.testing.assert_allclose(r, s + 13, rtol=1e-6)
    # no data input at all: a parameter and a constant
    z2 = C.user_function(MyPlus(p, C.constant(3))) + 0
    np.testing.assert_allclose(z2.eval(), np.full(dim, 13.0))


class MyPlusNoGradientToRight(UserFunction):
    def __init__(self, arg1, arg2):
        super(MyPlusNoGradientToRight, self).__init__([arg1, arg2])

    def infer_outputs(self):
        return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]

    def forward(self, arguments, device=None, outputs_to_retain=None):
        return None, [a0 + a1 for a0, a1 in zip(*arguments)]

    def backward(self, state, root_gradients, variables):
        variables[self.inputs[0]] = root_gradients


def test_sequences_of_different_lengths_come_as_lists():
    x = C.sequence.input_variable(2, needs_gradient=True, name='x')
    y = C.sequence.input_variable(2, name='y')
    op = MyPlusNoGradientToRight(x, y)
    xd = [np.ones((2, 2), np.float32), np.arange(6, dtype=np.float32).reshape(3, 2)]
    yd = [np.full((2, 2), 2, np.float32), np.ones((3, 2), np.float32)]
    result = op.eval({x: xd, y: yd})
    assert len(result) == 2
    for r, a, b in zip(result, xd, yd):
        np.testing.assert_allclose(r, a + b)
    g = op.grad({x: xd, y: yd}, wrt=[x])
    for gi, a in zip(g, xd):
        np.testing.assert_allclose(gi, np.ones_like(a))


def test_gradient_left_unset_is_zero():
    x = C.sequence.input_variable(2, needs_gradient=True, name='x')
    y = C.sequence.input_variable(2, needs_gradient=True, name='y')
    op = MyPlusNoGradientToRight(x, y)
    xd = [np.array([[1., 2.], [3., 4.]], np.float32)]
    yd = [np.array([[5., 6.], [7., 8.]], np.float32)]
    grads, result = op.grad({x: xd, y: yd}, [x, y], [op.output])
    np.testing.assert_allclose(grads[x][0], np.ones((2, 2)))
    np.testing.assert_allclose(grads[y][0], np.zeros((2, 2)))
    np.testing.assert_allclose(result[0], xd[0] + yd[0])


class TwoOutputs(UserFunction):
    def __init__(self, arg1, arg2):
        super(TwoOutputs, self).__init__([arg1, arg2])

    def infer_outputs(self):
        i = self.inputs[0]
        return [C.output_variable(i.shape, i.dtype, i.dynamic_axes),
                C.output_variable(i.shape, i.dtype, i.dynamic_axes)]

    def forward(self, arguments, outputs, device=None, outputs_to_retain=None):
        a0, a1 = arguments
        outputs[self.outputs[0]] = a0 + 2 * a1
        outputs[self.outputs[1]] = 2 * a0 + a1

    def backward(self, state, root_gradients, variables):
        r0, r1 = root_gradients[self.outputs[0]], root_gradients[self.outputs[1]]
        if self.inputs[0] in variables:
            variables[self.inputs[0]] = r0 + 2 * r1
        if self.inputs[1] in variables:
            variables[self.inputs[1]] = 2 * r0 + r1


def test_multiple_outputs():
    x = C.input_variable(2, needs_gradient=True, name='x')
    y = C.input_variable(2, needs_gradient=True, name='y')
    op = TwoOutputs(x, y)
    assert len(op.outputs) == 2
    a = np.array([[1., 2.]], np.float32)
    b = np.array([[5., 6.]], np.float32)
    result = op.eval({x: a, y: b})
    np.testing.assert_allclose(result[op.outputs[0]], a + 2 * b)
    np.testing.assert_allclose(result[op.outputs[1]], 2 * a + b)
    total = op.outputs[0] + op.outputs[1]
    grads = total.grad({x: a, y: b}, [x, y])
    np.testing.assert_allclose(grads[x], [[3., 3.]])
    np.testing.assert_allclose(grads[y], [[3., 3.]])


class ValueSquare(UserFunction):
    """as_numpy=False: forward and backward see Values."""

    def __init__(self, arg):
        super(ValueSquare, self).__init__([arg], as_numpy=False)

    def infer_outputs(self):
        return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]

    def forward(self, argument, device=None, outputs_to_retain=None):
        assert isinstance(argument, C.Value)
        a = argument.asarray()
        return a, C.NDArrayView.from_dense(a * a)

    def backward(self, state, root_gradients):
        assert isinstance(root_gradients, C.Value)
        return C.NDArrayView.from_dense(2 * state * root_gradients.asarray())


def test_as_numpy_false():
    x = C.input_variable(3, needs_gradient=True)
    f = ValueSquare(x)
    data = np.array([[1., -2., 3.]], np.float32)
    np.testing.assert_allclose(f.eval({x: data}), data ** 2)
    np.testing.assert_allclose(f.grad({x: data}), 2 * data)


def test_trained_inside_a_model():
    np.random.seed(1)
    x = C.input_variable(2)
    t = C.input_variable(1)
    W = C.parameter((2, 1), init=C.glorot_uniform(seed=1))
    b = C.parameter(1, init=0.0)
    sig = MySigmoid(C.times(x, W) + b)
    z = C.times(sig, C.parameter((1, 1), init=1.0))
    loss = C.squared_error(z, t)
    trainer = C.Trainer(z, (loss, loss), [C.sgd(z.parameters, C.learning_parameter_schedule(0.5))])
    data = np.random.rand(64, 2).astype(np.float32)
    target = (data[:, :1] > data[:, 1:]).astype(np.float32)
    losses = []
    for _ in range(60):
        trainer.train_minibatch({x: data, t: target})
        losses.append(trainer.previous_minibatch_loss_average)
    assert losses[-1] < 0.8 * losses[0]
    assert sig.forward_calls >= 60 and sig.backward_calls == 60


def test_clone_graph_with_user_function():
    x = C.input_variable(3)
    f = MySigmoid(x) + C.parameter(3, init=1.0)
    data = np.array([[0.5, -1.0, 2.0]], np.float32)
    for method in ('share', 'clone', 'freeze'):
        g = f.clone(method)
        np.testing.assert_allclose(g.eval({g.arguments[0]: data}), _sigmoid(data) + 1, rtol=1e-6)
    # substituting the input, through a call
    y = C.input_variable(3)
    h = f(y)
    assert h.arguments == (y,)
    np.testing.assert_allclose(h.eval({y: data}), _sigmoid(data) + 1, rtol=1e-6)
    # a user-defined clone
    p = C.user_function(MyPlus(x, C.constant(3))) * 2
    q = p.clone('share')
    np.testing.assert_allclose(q.eval({q.arguments[0]: data}), (data + 3) * 2)


def test_placeholder_input_bound_later():
    ph = C.placeholder()
    m = MyPlus(ph, C.constant(3))
    z = m + 1
    x = C.input_variable(4)
    z.replace_placeholder(x)
    assert z.output.shape == (4,)
    data = np.arange(4, dtype=np.float32).reshape(1, 4)
    np.testing.assert_allclose(z.eval({x: data}), data + 4)


class Failing(UserFunction):
    def __init__(self, arg):
        super(Failing, self).__init__([arg])

    def infer_outputs(self):
        return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]

    def forward(self, argument, device=None, outputs_to_retain=None):
        raise KeyError("the user's forward failed on purpose")


def test_errors_in_forward_surface_as_python_exceptions():
    x = C.input_variable(2)
    f = Failing(x) + 1
    with pytest.raises(KeyError, match="failed on purpose"):
        f.eval({x: np.ones((1, 2), np.float32)})
    # the engine is still usable afterwards
    np.testing.assert_allclose((x + 1).eval({x: np.ones((1, 2), np.float32)}), [[2., 2.]])


def test_forward_must_return_state_and_output():
    class NoPair(MySigmoid):
        def forward(self, argument, device=None, outputs_to_retain=None):
            return argument
    x = C.input_variable(2)
    with pytest.raises(TypeError, match=r"\(state, output\)"):
        NoPair(x).eval({x: np.ones((1, 2), np.float32)})


def test_infer_outputs_wrong_type():
    class BadInfer(MySigmoid):
        def infer_outputs(self):
            return self.inputs[0].shape
    with pytest.raises(TypeError, match="infer_outputs must return a list of output variables"):
        BadInfer(C.input_variable(2))

    class BadItem(MySigmoid):
        def infer_outputs(self):
            return [(2,)]
    with pytest.raises(TypeError, match="item 0 is tuple"):
        BadItem(C.input_variable(2))


def test_init_must_call_base():
    class NoSuper(MySigmoid):
        def __init__(self, arg):
            pass
    with pytest.raises(TypeError, match="must call UserFunction.__init__"):
        NoSuper(C.input_variable(2))


def test_output_variable():
    v = C.output_variable((2, 3), np.float64, [C.Axis.default_batch_axis()], name='o')
    assert v.is_output and v.shape == (2, 3) and v.dtype == np.float64 and v.name == 'o'
    assert v.needs_gradient
    assert not C.output_variable(2, np.float32, [], needs_gradient=False).needs_gradient
    with pytest.raises(RuntimeError):
        v.owner  # no function owns it yet


def test_custom_proxy_op():
    x = C.input_variable(3)
    y = C.input_variable(3)
    f = C.custom_proxy_op('MyCustomOp', (5,), np.float32, x, y, name='proxy')
    assert f.root_function.op_name == 'MyCustomOp'
    assert f.name == 'proxy'
    assert f.output.shape == (5,) and f.output.dtype == np.float32
    assert f.output.dynamic_axes == x.dynamic_axes
    with pytest.raises(NotImplementedError, match="MyCustomOp"):
        f.eval({x: np.ones((1, 3), np.float32), y: np.ones((1, 3), np.float32)})


def test_native_user_functions_are_not_supported():
    with pytest.raises(NotImplementedError, match="UserFunction"):
        register_native_user_function('MyOp', 'mylib', 'create')
    with pytest.raises(NotImplementedError, match="not supported"):
        native_user_function('MyOp', [C.input_variable(1)])


class NoGradientOutput(MyPlus):
    def infer_outputs(self):
        i = self.inputs[0]
        return [C.output_variable(i.shape, i.dtype, i.dynamic_axes, needs_gradient=False)]

    def backward(self, state, root_gradients, variables):
        raise ValueError("backward must not be called for an output without gradients")


def test_output_without_gradient_stops_backward():
    x = C.input_variable(2, needs_gradient=True)
    op = NoGradientOutput(x, C.constant(1.0, shape=(2,)))
    assert not op.output.needs_gradient
    g = (op + x).grad({x: np.ones((1, 2), np.float32)}, wrt=[x])
    np.testing.assert_allclose(g, [[1., 1.]])


def test_errors_in_backward_surface_as_python_exceptions():
    class BadBackward(MySigmoid):
        def backward(self, state, root_gradients):
            raise ArithmeticError("backward failed on purpose")
    x = C.input_variable(2, needs_gradient=True)
    with pytest.raises(ArithmeticError, match="failed on purpose"):
        BadBackward(x).grad({x: np.ones((1, 2), np.float32)})


class CountingPlus(MyPlus):
    forward_calls = 0
    backward_calls = 0

    def forward(self, arguments, device=None, outputs_to_retain=None):
        type(self).forward_calls += 1
        return super(CountingPlus, self).forward(arguments, device, outputs_to_retain)

    def backward(self, state, root_gradients, variables):
        type(self).backward_calls += 1
        return super(CountingPlus, self).backward(state, root_gradients, variables)


def test_trainer_backpropagates_into_inputs_that_need_gradients():
    # As in CNTK, a training step also reaches inputs declared with needs_gradient.
    x = C.input_variable(2, needs_gradient=True)
    p = C.parameter((2,), init=1.0)
    z = CountingPlus(x, C.constant(1.0, shape=(2,))) + p
    trainer = C.Trainer(z, (z + 0, z + 0), [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    trainer.train_minibatch({x: np.ones((1, 2), np.float32)})
    assert CountingPlus.forward_calls == CountingPlus.backward_calls == 1


def test_errors_in_infer_outputs_are_runtime_errors():
    class BadInfer(MySigmoid):
        def infer_outputs(self):
            return self.no_such_attribute
    with pytest.raises(RuntimeError, match="no_such_attribute"):
        BadInfer(C.input_variable(2))


class Scaled(UserFunction):
    """A user function with state that a saved model keeps."""

    def __init__(self, arg, factor=2.0, name='scaled'):
        super(Scaled, self).__init__([arg], name=name)
        self.factor = factor

    def infer_outputs(self):
        return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]

    def forward(self, argument, device=None, outputs_to_retain=None):
        return None, argument * self.factor

    def backward(self, state, root_gradients):
        return root_gradients * self.factor

    def serialize(self):
        return {'factor': self.factor}

    @staticmethod
    def deserialize(inputs, name, state):
        return Scaled(inputs[0], state['factor'], name)


def test_saving_and_loading_python_user_functions(tmp_path):
    x = C.input_variable(2)
    z = Scaled(x, 3.0) + 1
    path = str(tmp_path / 'udf.model')
    z.save(path)
    loaded = C.load_model(path)
    data = np.array([[1, 2]], np.float32)
    np.testing.assert_allclose(loaded.eval({loaded.arguments[0]: data}), [[4, 7]])
    found = loaded.find_by_name('scaled')
    assert found.serialize() == {'class': 'Scaled', 'module': __name__, 'op_name': Scaled._op_name(),
                                 'state': {'factor': 3.0}, 'version': 1}
    # Setting an attribute of the user function's instance through its Function.
    found.factor = 5.0
    np.testing.assert_allclose(found.eval({loaded.arguments[0]: data}), [[5, 10]])


def test_udf_deserialize_callback_replaces_the_static_deserialize(tmp_path):
    x = C.input_variable(1)
    z = Scaled(x, 2.0, name='s')
    path = str(tmp_path / 'udf_cb.model')
    z.save(path)
    op_name = 'test_user_function.Scaled.callback'

    class Renamed(Scaled):
        @property
        def op_name(self):
            return op_name
    Renamed(x).save(path)
    C.Function.register_udf_deserialize_callback(op_name, lambda inputs, name, state: Scaled(inputs[0], 10.0, name))
    with pytest.raises(ValueError):
        C.Function.register_udf_deserialize_callback(op_name, lambda *args: None)
    loaded = C.Function.load(path)
    np.testing.assert_allclose(loaded.eval({loaded.arguments[0]: np.ones((1, 1), np.float32)}), [[10]])


def test_errors_in_user_methods_are_runtime_errors_of_their_own_type_too():
    # CNTK reports them as RuntimeErrors; Python code may expect the original type.
    x = C.input_variable(2)
    f = Failing(x) + 1
    with pytest.raises(RuntimeError, match="failed on purpose"):
        f.eval({x: np.ones((1, 2), np.float32)})
    with pytest.raises(KeyError):
        f.eval({x: np.ones((1, 2), np.float32)})


class PassSecond(UserFunction):
    """Two outputs over placeholders: the count is known before the shapes."""

    def __init__(self, a, b, name='pass'):
        super(PassSecond, self).__init__([a, b], name=name)

    def infer_outputs(self):
        return [C.output_variable(i.shape, i.dtype, i.dynamic_axes) for i in self.inputs]

    def forward(self, arguments, outputs, device=None, outputs_to_retain=None):
        for o, a in zip(outputs, arguments):
            outputs[o] = a
        return None

    def backward(self, state, root_gradients, variables):
        for v in variables:
            variables[v] = root_gradients[self.outputs[self.inputs.index(v)]]


def test_user_function_over_placeholders_and_inside_a_block():
    @C.BlockFunction('Pass', 'pass')
    def block(a, b):
        return PassSecond(a, b)
    assert len(block.outputs) == 2
    x = C.sequence.input_variable(2, needs_gradient=True)
    f = C.combine([block(C.sequence.past_value(x), x).outputs[1]])
    data = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    g = f.grad({x: data}, wrt=[x])
    np.testing.assert_allclose(np.asarray(g).reshape(3, 2), np.ones((3, 2)))
