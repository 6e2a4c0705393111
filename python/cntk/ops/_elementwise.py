"""Elementwise math, activations, comparisons and logic."""
import numpy as np

from . import associative_multi_arg
from ._prim import prim

__all__ = [
    'plus', 'minus', 'element_times', 'element_divide', 'pow', 'log_add_exp', 'element_max', 'element_min',
    'less', 'equal', 'greater', 'greater_equal', 'not_equal', 'less_equal',
    'negate', 'exp', 'log', 'sqrt', 'square', 'abs', 'reciprocal', 'floor', 'ceil', 'round',
    'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'asinh', 'atanh', 'erf',
    'relu', 'sigmoid', 'tanh', 'elu', 'selu', 'leaky_relu', 'param_relu', 'softplus', 'softsign', 'hard_sigmoid',
    'straight_through_impl', 'element_and', 'element_or', 'element_xor', 'element_not', 'element_select', 'clip',
]


def plus(left, right, name=''):
    """Elementwise sum with broadcasting."""
    return prim('Plus', [left, right], {}, name)


def minus(left, right, name=''):
    """Elementwise difference with broadcasting."""
    return prim('Minus', [left, right], {}, name)


def element_times(left, right, name=''):
    """Elementwise product with broadcasting."""
    return prim('ElementTimes', [left, right], {}, name)


def element_divide(left, right, name=''):
    """Elementwise quotient with broadcasting."""
    return prim('ElementDivide', [left, right], {}, name)


def pow(base, exponent, name=''):
    """`base ** exponent` elementwise."""
    return prim('Pow', [base, exponent], {}, name)


def log_add_exp(left, right, name=''):
    """log(exp(left) + exp(right)), computed stably."""
    return prim('LogPlus', [left, right], {}, name)


@associative_multi_arg
def element_max(left, right, name=''):
    """Elementwise maximum of two or more operands."""
    return element_select(greater_equal(left, right), left, right, name=name)


@associative_multi_arg
def element_min(left, right, name=''):
    """Elementwise minimum of two or more operands."""
    return element_select(less_equal(left, right), left, right, name=name)


def less(left, right, name=''):
    """1 where left < right, else 0."""
    return prim('Less', [left, right], {}, name)


def equal(left, right, name=''):
    """1 where left == right, else 0."""
    return prim('Equal', [left, right], {}, name)


def greater(left, right, name=''):
    """1 where left > right, else 0."""
    return prim('Greater', [left, right], {}, name)


def greater_equal(left, right, name=''):
    """1 where left >= right, else 0."""
    return prim('GreaterEqual', [left, right], {}, name)


def not_equal(left, right, name=''):
    """1 where left != right, else 0."""
    return prim('NotEqual', [left, right], {}, name)


def less_equal(left, right, name=''):
    """1 where left <= right, else 0."""
    return prim('LessEqual', [left, right], {}, name)


def negate(x, name=''):
    """-x."""
    return prim('Negate', [x], {}, name)


def exp(x, name=''):
    return prim('Exp', [x], {}, name)


def log(x, name=''):
    return prim('Log', [x], {}, name)


def sqrt(x, name=''):
    return prim('Sqrt', [x], {}, name)


def square(x, name=''):
    """x * x."""
    return element_times(x, x, name=name)


def abs(x, name=''):
    return prim('Abs', [x], {}, name)


def reciprocal(x, name=''):
    """1 / x."""
    return prim('Reciprocal', [x], {}, name)


def floor(arg, name=''):
    """Largest integer not greater than arg (zero gradient)."""
    return prim('Floor', [arg], {}, name)


def ceil(arg, name=''):
    """Smallest integer not less than arg: -floor(-arg)."""
    return negate(floor(negate(arg)), name=name)


def round(arg, name=''):
    """Nearest integer, halves rounded up (CNTK: floor(arg + 0.5))."""
    return floor(plus(arg, 0.5), name=name)


def sin(x, name=''):
    return prim('Sin', [x], {}, name)


def cos(x, name=''):
    return prim('Cos', [x], {}, name)


def tan(x, name=''):
    return prim('Tan', [x], {}, name)


def asin(x, name=''):
    return prim('Asin', [x], {}, name)


def acos(x, name=''):
    return prim('Acos', [x], {}, name)


def atan(x, name=''):
    return prim('Atan', [x], {}, name)


def sinh(x, name=''):
    return prim('Sinh', [x], {}, name)


def cosh(x, name=''):
    return prim('Cosh', [x], {}, name)


def asinh(x, name=''):
    return prim('Asinh', [x], {}, name)


def atanh(x, name=''):
    return prim('Atanh', [x], {}, name)


def erf(x, name=''):
    """The Gauss error function, elementwise (an OpenCNTK addition: CNTK 2.7 has none; ONNX's Erf)."""
    return prim('Erf', [x], {}, name)


def relu(x, name=''):
    """max(x, 0)."""
    return prim('ReLU', [x], {}, name)


def sigmoid(x, name=''):
    """1 / (1 + exp(-x)), computed stably."""
    return prim('StableSigmoid', [x], {}, name)


def tanh(x, name=''):
    return prim('Tanh', [x], {}, name)


def elu(x, alpha=1.0, name=''):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    return prim('ELU', [x], {'alpha': float(alpha)}, name)


def selu(x, scale=1.0507009873554804934193349852946, alpha=1.6732632423543772848170429916717, name=''):
    """scale * (x for x > 0, alpha * (exp(x) - 1) otherwise)."""
    return prim('SELU', [x], {'gamma': float(scale), 'alpha': float(alpha)}, name)


def leaky_relu(x, alpha=0.01, name=''):
    """x for x > 0, alpha * x otherwise."""
    return prim('LeakyReLU', [x], {'alpha': float(alpha)}, name)


def param_relu(alpha, x, name=''):
    """PReLU: alpha * x for x < 0, x otherwise, with a learnable (parameter) alpha.

    As CNTK, the scaled branch is taken only where x < 0: at 0 the gradient is 1.
    """
    return element_select(less(x, 0), element_times(alpha, x), x, name=name)


def softplus(x, steepness=1, name=''):
    """log(1 + exp(steepness * x)) / steepness."""
    if steepness == 1:
        return log_add_exp(0, x, name=name)
    return element_divide(log_add_exp(0, element_times(x, float(steepness))), float(steepness), name=name)


def softsign(x, name=''):
    """x / (1 + |x|)."""
    return element_divide(x, plus(1, abs(x)), name=name)


def hard_sigmoid(x, alpha=0.2, beta=0.5, name=''):
    """max(0, min(1, alpha * x + beta))."""
    return prim('HardSigmoid', [x], {'alpha': float(alpha), 'beta': float(beta)}, name)


def straight_through_impl(x, name=''):
    """Sign in the forward pass, the identity gradient (inside [-1, 1]) in the backward pass."""
    return prim('StraightThrough', [x], {}, name)


def element_and(x, y, name=''):
    """Logical and: 1 where both are non-zero."""
    return prim('And', [x, y], {}, name)


def element_or(x, y, name=''):
    """Logical or: 1 where either is non-zero."""
    return prim('Or', [x, y], {}, name)


def element_xor(x, y, name=''):
    """Logical xor: 1 where exactly one is non-zero."""
    return prim('Xor', [x, y], {}, name)


def element_not(x, name=''):
    """Logical not: 1 where x is zero."""
    return prim('Not', [x], {}, name)


def element_select(flag, value_if_true, value_if_false, name=''):
    """value_if_true where flag is non-zero, value_if_false elsewhere."""
    return prim('Select', [flag, value_if_true, value_if_false], {}, name)


def clip(x, min_value, max_value, name=''):
    """x limited to [min_value, max_value]."""
    return prim('Clip', [x, min_value, max_value], {}, name)
