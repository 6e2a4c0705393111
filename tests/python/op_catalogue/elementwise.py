"""Elementwise ops, unary and binary. Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from op_harness import f64_input
import test_ops_elementwise as elementwise_tests
from op_catalogue.common import add, away_from, Built, case, Case, F64, RULE, uniform, ZERO


# ------------------------------------------------------------------ elementwise, unary
# The references are test_ops_elementwise's tables (float32 there, float64 here).

_UNARY_OPS = {'negate': 'Negate', 'sigmoid': 'StableSigmoid', 'tanh': 'Tanh', 'relu': 'ReLU',
              'exp': 'Exp', 'log': 'Log', 'sqrt': 'Sqrt', 'abs': 'Abs', 'reciprocal': 'Reciprocal',
              'sin': 'Sin', 'cos': 'Cos', 'tan': 'Tan', 'asin': 'Asin', 'acos': 'Acos', 'atan': 'Atan',
              'sinh': 'Sinh', 'cosh': 'Cosh', 'asinh': 'Asinh', 'atanh': 'Atanh', 'elu': 'ELU',
              'selu': 'SELU', 'leaky_relu': 'LeakyReLU', 'hard_sigmoid': 'HardSigmoid', 'erf': 'Erf'}


def _unary(fn, ref, dom):
    def build(rng):
        x = f64_input((2, 3))
        d = away_from(uniform(rng, dom[0], dom[1], (2, 2, 3)), [0.0, 2.5, -2.5])
        return Built(fn(x), {x: d}, ref(d))
    return build


for _name, _fn, _ref, _dom in elementwise_tests.UNARY:
    if _name in _UNARY_OPS:
        add(Case(_UNARY_OPS[_name], (RULE,), _unary(_fn, _ref, _dom), label=_name))


@case('StraightThrough', (RULE,))
def straight_through(rng):
    # CNTK's straight-through estimator: sign as value (0 counts as positive), the
    # gradient passed through where |x| <= 1.
    x = f64_input(4)
    d = away_from(uniform(rng, -2, 2, (2, 4)), [0.0, 1.0, -1.0])
    return Built(C.straight_through_impl(x), {x: d}, np.where(d >= 0, 1.0, -1.0),
                 grad_ref={0: lambda w: np.where(np.abs(d) <= 1, w, 0.0)})


@case('Floor', (ZERO,))
def floor(rng):
    x = f64_input(4)
    d = uniform(rng, -3, 3, (2, 4))
    return Built(C.floor(x), {x: d}, np.floor(d))


@case('Not', (ZERO,))
def element_not(rng):
    x = f64_input(4)
    d = np.array([[0., 1., -2., 0.], [3., 0., 0., 0.5]])
    return Built(C.element_not(x), {x: d}, (d == 0).astype(F64))


# ------------------------------------------------------------------ elementwise, binary

_BINARY_OPS = {'plus': 'Plus', 'minus': 'Minus', 'element_times': 'ElementTimes',
               'element_divide': 'ElementDivide', 'pow': 'Pow', 'log_add_exp': 'LogPlus'}


def _binary(fn, ref):
    def build(rng):
        # Broadcasting: a batch of (2, 3) against a (3,) without batch axis.
        a, b = f64_input((2, 3)), f64_input((3,), batch=False)
        da, db = uniform(rng, 0.5, 2, (2, 2, 3)), uniform(rng, 0.5, 2, (3,))
        return Built(fn(a, b), {a: da, b: db}, ref(da, db))
    return build


for _name, _fn, _ref in elementwise_tests.BINARY:
    if _name in _BINARY_OPS:
        add(Case(_BINARY_OPS[_name], (RULE, RULE), _binary(_fn, _ref), label=_name))


def _comparison(fn, ref):
    def build(rng):
        a, b = f64_input(4), f64_input(4)
        da = np.array([[0., 1., 2., 3.], [-1., 0., 0.5, 2.]])
        db = np.array([[0., 2., 2., 0.], [-1., 1., 0.5, 0.]])
        return Built(fn(a, b), {a: da, b: db}, ref(da, db).astype(F64))
    return build


for _op, _fn, _ref in [('Equal', C.equal, np.equal), ('NotEqual', C.not_equal, np.not_equal),
                       ('Less', C.less, np.less), ('LessEqual', C.less_equal, np.less_equal),
                       ('Greater', C.greater, np.greater), ('GreaterEqual', C.greater_equal, np.greater_equal),
                       ('And', C.element_and, np.logical_and), ('Or', C.element_or, np.logical_or),
                       ('Xor', C.element_xor, np.logical_xor)]:
    add(Case(_op, (ZERO, ZERO), _comparison(_fn, _ref), label=_fn.__name__))


@case('Select', (ZERO, RULE, RULE))
def element_select(rng):
    c, a, b = f64_input(3), f64_input(3), f64_input(3)
    dc = np.array([[1., 0., 2.], [0., 0., -1.]])
    da, db = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    return Built(C.element_select(c, a, b), {c: dc, a: da, b: db}, np.where(dc != 0, da, db))


@case('Clip', (RULE, ZERO, ZERO))
def clip(rng):
    x, lo, hi = f64_input(4), f64_input(4), f64_input(4)
    dx = np.array([[-2.0, -0.3, 0.4, 3.0], [0.1, 1.5, -1.5, 0.0]])
    dlo, dhi = np.full((2, 4), -1.0), np.full((2, 4), 1.0)
    return Built(C.clip(x, lo, hi), {x: dx, lo: dlo, hi: dhi}, np.clip(dx, -1, 1))
