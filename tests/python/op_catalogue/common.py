"""The vocabulary of the case table of the op conformance test (test_op_catalogue.py): for every op of
cntk.cntk_py.registered_ops(), how to build it from Python, the NumPy reference of its
forward value, and the gradient kind of each of its inputs (in the order of the op's own
`inputs`):

- 'rule': the op computes a gradient; checked against float64 central differences,
- 'zero': the gradient is zero by definition (piecewise constant, integer-valued, labels);
  checked to be exactly zero,
- 'none': no gradient is defined for it (constants, states, evaluation criteria).

A `Case` builds its graph in `build(rng)` and returns a `Built`. Where an existing test
already does a check exactly, a `Covered` entry names it as 'module::function'; that
function carries `op_harness.covers_op` for the op (the conformance test checks both).
"""
import numpy as np

import cntk as C

RULE, ZERO, NONE = 'rule', 'zero', 'none'
F64 = np.float64


class Built:
    """fn: the function (one output is checked: fn.output); args: its arguments' data;
    expected: the reference output (array, list of per-sequence arrays, or a callable that
    asserts on the output); wrt: input index -> the leaf a gradient check perturbs, where
    the op's input is not itself an argument or parameter; grad_ref: input index -> a
    function of the root gradient giving the expected gradient, for ops whose gradient is
    by definition not the derivative of their value (straight-through estimators)."""

    def __init__(self, fn, args, expected, wrt=None, rtol=1e-7, atol=1e-9, grad_rtol=1e-5,
                 grad_atol=1e-7, eps=1e-6, grad_ref=None):
        self.fn, self.args, self.expected, self.wrt = fn, args, expected, dict(wrt or {})
        self.grad_ref = dict(grad_ref or {})
        self.rtol, self.atol = rtol, atol
        self.grad_rtol, self.grad_atol, self.eps = grad_rtol, grad_atol, eps


class Case:
    def __init__(self, op, grads, build, variadic=False, label=''):
        self.op, self.grads, self.build, self.variadic = op, tuple(grads), build, variadic
        self.label = label or getattr(build, '__name__', op)

    def kinds(self, n_inputs):
        """The gradient kind of each of n_inputs inputs (a variadic op repeats its last)."""
        if self.variadic and n_inputs > len(self.grads):
            return self.grads + (self.grads[-1],) * (n_inputs - len(self.grads))
        return self.grads[:n_inputs] if self.variadic else self.grads


class Covered:
    """Checks done by existing test functions ('module::function'; `gradients` may name
    several). `zeros` (optional)
    builds the op for the checks of its 'zero' inputs that the named tests do not do: a
    Built whose `expected` is None."""

    def __init__(self, op, grads, forward, gradients=None, zeros=None):
        self.op, self.grads, self.forward, self.gradients = op, tuple(grads), forward, gradients
        self.zeros = zeros


CASES = {}


def add(entry):
    CASES.setdefault(entry.op, []).append(entry)
    return entry


def case(op, grads, variadic=False):
    def register(build):
        add(Case(op, grads, build, variadic))
        return build
    return register


def covered(op, grads, forward, gradients=None, zeros=None):
    add(Covered(op, grads, forward, gradients, zeros))


def uniform(rng, lo, hi, shape):
    return rng.uniform(lo, hi, size=shape)


def away_from(x, points, gap=0.05, to=0.3):
    """Moves values within `gap` of a kink to a smooth place, for finite differences."""
    for p in points:
        x = np.where(np.abs(x - p) < gap, p + to, x)
    return x


def seq_input(shape, name=''):
    return C.sequence.input_variable(shape, dtype=F64, name=name)


LENGTHS = [3, 1, 2]
