"""Elementwise ops: NumPy-reference forward and float64 gradient checks."""
import math

import numpy as np
import pytest

import cntk as C
from op_harness import check_forward, gradcheck, f64_input

UNARY = [
    # name, cntk function, numpy reference, input domain (low, high)
    ('negate', C.negate, np.negative, (-2, 2)),
    ('sigmoid', C.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (-3, 3)),
    ('tanh', C.tanh, np.tanh, (-2, 2)),
    ('relu', C.relu, lambda x: np.maximum(x, 0), (-2, 2)),
    ('exp', C.exp, np.exp, (-2, 2)),
    ('log', C.log, np.log, (0.5, 3)),
    ('sqrt', C.sqrt, np.sqrt, (0.5, 3)),
    ('square', C.square, np.square, (-2, 2)),
    ('abs', C.abs, np.abs, (-2, 2)),
    ('reciprocal', C.reciprocal, lambda x: 1 / x, (0.5, 2)),
    ('sin', C.sin, np.sin, (-2, 2)),
    ('cos', C.cos, np.cos, (-2, 2)),
    ('tan', C.tan, np.tan, (-1, 1)),
    ('asin', C.asin, np.arcsin, (-0.8, 0.8)),
    ('acos', C.acos, np.arccos, (-0.8, 0.8)),
    ('atan', C.atan, np.arctan, (-2, 2)),
    ('sinh', C.sinh, np.sinh, (-2, 2)),
    ('cosh', C.cosh, np.cosh, (-2, 2)),
    ('asinh', C.asinh, np.arcsinh, (-2, 2)),
    ('atanh', C.atanh, np.arctanh, (-0.8, 0.8)),
    ('erf', C.erf, np.vectorize(math.erf), (-2.5, 2.5)),
    ('elu', C.elu, lambda x: np.where(x > 0, x, np.exp(x) - 1), (-2, 2)),
    ('selu', C.selu, lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1)), (-2, 2)),
    ('leaky_relu', C.leaky_relu, lambda x: np.where(x > 0, x, 0.01 * x), (-2, 2)),
    ('softplus', C.softplus, lambda x: np.log1p(np.exp(x)), (-2, 2)),
    ('softsign', C.softsign, lambda x: x / (1 + np.abs(x)), (-2, 2)),
    ('hard_sigmoid', C.hard_sigmoid, lambda x: np.clip(0.2 * x + 0.5, 0, 1), (-2, 2)),
]


def _data(shape, lo, hi, batch=2):
    x = np.random.uniform(lo, hi, size=(batch,) + shape)
    # Keep finite differences away from kinks at 0 and +-2.5 (hard_sigmoid).
    x = np.where(np.abs(x) < 0.05, 0.3, x)
    x = np.where(np.abs(np.abs(x) - 2.5) < 0.05, 2.0, x)
    return x


@pytest.mark.parametrize('name,op,ref,dom', UNARY, ids=[u[0] for u in UNARY])
def test_unary_forward_float32(name, op, ref, dom):
    x = C.input_variable((2, 3))
    data = _data((2, 3), *dom).astype(np.float32)
    check_forward(op(x), {x: data}, ref(data.astype(np.float64)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('name,op,ref,dom', UNARY, ids=[u[0] for u in UNARY])
def test_unary_gradient(name, op, ref, dom):
    x = f64_input((2, 3))
    gradcheck(op(x), {x: _data((2, 3), *dom)})


BINARY = [
    ('plus', C.plus, np.add),
    ('minus', C.minus, np.subtract),
    ('element_times', C.element_times, np.multiply),
    ('element_divide', C.element_divide, np.divide),
    ('pow', C.pow, np.power),
    ('log_add_exp', C.log_add_exp, np.logaddexp),
    ('element_max', C.element_max, np.maximum),
    ('element_min', C.element_min, np.minimum),
]

SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 1), (1, 3)), ((4, 2, 3), (2, 1))]


@pytest.mark.parametrize('name,op,ref', BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize('sa,sb', SHAPES)
def test_binary_broadcast_forward_and_gradient(name, op, ref, sa, sb):
    a, b = f64_input(sa), f64_input(sb, batch=False)
    da = np.random.uniform(0.5, 2, size=(2,) + sa)
    db = np.random.uniform(0.5, 2, size=sb) + 0.01  # no ties for max/min
    f = op(a, b)
    # Static shapes broadcast NumPy-style; the batch axis stays in front.
    rank = max(len(sa), len(sb))
    check_forward(f, {a: da, b: db}, ref(da.reshape((2,) + (1,) * (rank - len(sa)) + sa), db))
    gradcheck(f, {a: da, b: db})


@pytest.mark.parametrize('name,op,ref', [
    ('less', C.less, np.less), ('equal', C.equal, np.equal), ('greater', C.greater, np.greater),
    ('greater_equal', C.greater_equal, np.greater_equal), ('not_equal', C.not_equal, np.not_equal),
    ('less_equal', C.less_equal, np.less_equal),
    ('element_and', C.element_and, np.logical_and), ('element_or', C.element_or, np.logical_or),
    ('element_xor', C.element_xor, np.logical_xor)])
def test_comparison_and_logic(name, op, ref):
    a, b = C.input_variable(4), C.input_variable(4)
    da = np.array([[0, 1, 2, 3]], np.float32)
    db = np.array([[0, 2, 2, 0]], np.float32)
    check_forward(op(a, b), {a: da, b: db}, ref(da, db).astype(np.float32))
    # Zero gradient by definition.
    a64 = f64_input(4)
    g = op(a64, 1.0).grad({a64: da.astype(np.float64)}, wrt=[a64])
    np.testing.assert_array_equal(g, 0)


def test_not_floor_ceil_round():
    x = C.input_variable(4)
    d = np.array([[-1.5, -0.5, 0.5, 2.0]], np.float32)
    check_forward(C.element_not(x), {x: d}, (d == 0).astype(np.float32))
    check_forward(C.floor(x), {x: d}, np.floor(d))
    check_forward(C.ceil(x), {x: d}, np.ceil(d))
    check_forward(C.round(x), {x: d}, np.floor(d + 0.5))


def test_select_and_clip_gradients():
    c, a, b = f64_input(3), f64_input(3), f64_input(3)
    dc = np.array([[1, 0, 1]], np.float64)
    da, db = np.random.randn(1, 3), np.random.randn(1, 3)
    f = C.element_select(c, a, b)
    check_forward(f, {c: dc, a: da, b: db}, np.where(dc != 0, da, db))
    gradcheck(f, {c: dc, a: da, b: db}, wrt=[a, b])
    x = f64_input(4)
    dx = np.array([[-2.0, -0.3, 0.4, 3.0]])
    f = C.clip(x, -1.0, 1.0)
    check_forward(f, {x: dx}, np.clip(dx, -1, 1))
    gradcheck(f, {x: dx}, wrt=[x])


def test_param_relu():
    alpha = C.parameter((3,), init=np.array([0.1, 0.2, 0.3]), dtype=np.float64)
    x = f64_input(3)
    d = np.array([[-1.0, 0.5, -2.0]])
    f = C.param_relu(alpha, x)
    check_forward(f, {x: d}, np.where(d > 0, d, np.array([0.1, 0.2, 0.3]) * d))
    gradcheck(f, {x: d})


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_cntk_edge_values_of_log_sqrt_reciprocal(dtype):
    # CNTK clips log at 1e-37 (log gives -85.1, its gradient exp(85.1)), reads a negative
    # argument of sqrt as 0 and gives reciprocal(0) = 0.
    x = C.input_variable(3, dtype=dtype, needs_gradient=True)
    d = np.array([[0.0, -0.1, 2.0]], dtype)
    log = C.log(x)
    np.testing.assert_allclose(log.eval({x: d}), [[-85.1, -85.1, np.log(2.0)]], rtol=1e-6)
    np.testing.assert_allclose(log.grad({x: d}, wrt=[x]), [[np.exp(85.1), np.exp(85.1), 0.5]], rtol=1e-5)
    np.testing.assert_allclose(C.sqrt(x).eval({x: d}), [[0, 0, np.sqrt(2.0)]], rtol=1e-6)
    np.testing.assert_allclose(C.reciprocal(x).eval({x: d}), [[0, -10, 0.5]], rtol=1e-6)
    np.testing.assert_allclose(C.reciprocal(x).grad({x: d}, wrt=[x]), [[0, -100, -0.25]], rtol=1e-6)


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_rectifier_gradients_at_zero_are_one(dtype):
    # CNTK selects the scaled branch only where x < 0.
    x = C.input_variable(2, dtype=dtype, needs_gradient=True)
    d = np.array([[0.0, -1.0]], dtype)
    alpha = C.constant(np.full(2, 0.5, dtype))
    scale, scale_alpha = 1.0507009873554805, 1.7580993408473766
    for f, g in ((C.leaky_relu(x), [1, 0.01]), (C.param_relu(alpha, x), [1, 0.5]),
                 (C.selu(x), [scale, scale_alpha * np.exp(-1.0)])):
        np.testing.assert_allclose(f.grad({x: d}, wrt=[x]), [g], rtol=1e-6)


def test_straight_through():
    x = f64_input(4)
    d = np.array([[-2.0, -0.5, 0.5, 2.0]])
    f = C.straight_through_impl(x)
    check_forward(f, {x: d}, np.where(d >= 0, 1.0, -1.0))
    state, _ = f.forward({x: d}, keep_for_backward=[f.output])
    g = f.backward(state, {f.output: np.ones_like(d)}, [x])[x]
    np.testing.assert_array_equal(g, [[0, 1, 1, 0]])


def test_operators():
    x = C.input_variable(3)
    d = np.array([[1.0, 2.0, 4.0]], np.float32)
    np.testing.assert_allclose((x + 1).eval({x: d}), d + 1)
    np.testing.assert_allclose((1 - x).eval({x: d}), 1 - d)
    np.testing.assert_allclose((x * x).eval({x: d}), d * d)
    np.testing.assert_allclose((2 / x).eval({x: d}), 2 / d)
    np.testing.assert_allclose((-x).eval({x: d}), -d)
    np.testing.assert_allclose(abs(-x).eval({x: d}), d)
    np.testing.assert_allclose((x < 2).eval({x: d}), d < 2)
    np.testing.assert_allclose((x >= 2).eval({x: d}), d >= 2)
    np.testing.assert_allclose((x ** 2).eval({x: d}), d ** 2)
