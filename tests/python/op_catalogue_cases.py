"""The case table of the op conformance test (test_op_catalogue.py): for every op of
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
from op_harness import f64_input
from seq_harness import random_sequences
import test_ops_elementwise as elementwise_tests

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


# ------------------------------------------------------------------ linear algebra

@case('Times', (RULE, RULE))
def times(rng):
    x = f64_input((2, 3))
    w = C.parameter((3, 4), init=rng.standard_normal((3, 4)), dtype=F64)
    d = rng.standard_normal((2, 2, 3))
    return Built(C.times(x, w), {x: d}, d @ w.value)


@case('Times', (RULE, RULE))
def times_output_rank_2(rng):
    # A (3, 2) x (2, 4, 2) product with output_rank 2: the left operand's last axis
    # against the right's first.
    x = f64_input(3)
    w = C.parameter((3, 4, 2), init=rng.standard_normal((3, 4, 2)), dtype=F64)
    d = rng.standard_normal((2, 3))
    return Built(C.times(x, w, output_rank=2), {x: d}, np.einsum('bi,ijk->bjk', d, w.value))


# ------------------------------------------------------------------ reductions

def _reduce(fn, ref, axis):
    def build(rng):
        x = f64_input((3, 4))
        d = rng.standard_normal((2, 3, 4))
        return Built(fn(x, axis=axis), {x: d}, ref(d, axis=axis + 1, keepdims=True))
    return build


def _np_log_sum_exp(d, axis, keepdims):
    m = d.max(axis=axis, keepdims=True)
    return np.log(np.exp(d - m).sum(axis=axis, keepdims=keepdims)) + (m if keepdims else m.squeeze(axis))


for _fn, _ref, _axis in [(C.reduce_sum, np.sum, 1), (C.reduce_mean, np.mean, 0), (C.reduce_max, np.max, 1),
                         (C.reduce_min, np.min, 0), (C.reduce_prod, np.prod, 1),
                         (C.reduce_log_sum_exp, _np_log_sum_exp, 1)]:
    add(Case('ReduceElements', (RULE,), _reduce(_fn, _ref, _axis), label=_fn.__name__))


@case('ReduceElements', (RULE,))
def argmax(rng):
    # Integer-valued: the gradient check sees zeros on both sides.
    x = f64_input((3, 4))
    d = rng.standard_normal((2, 3, 4))
    return Built(C.argmax(x, axis=1), {x: d}, np.argmax(d, axis=2)[..., None].astype(F64))


@case('ReduceElements', (RULE,))
def sequence_reduce_sum(rng):
    x = seq_input(2)
    d = random_sequences(rng, LENGTHS, (2,))
    return Built(C.sequence.reduce_sum(x), {x: d}, [s.sum(axis=0) for s in d])


# ------------------------------------------------------------------ movement

@case('Reshape', (RULE,))
def reshape(rng):
    x = f64_input((2, 3))
    d = rng.standard_normal((2, 2, 3))
    return Built(C.reshape(x, (3, 2)), {x: d}, d.reshape(2, 3, 2))


@case('Slice', (RULE,))
def slice_(rng):
    x = f64_input((3, 5))
    d = rng.standard_normal((2, 3, 5))
    return Built(C.slice(x, [0, 1], [1, 0], [3, 5], [1, 2]), {x: d}, d[:, 1:3, 0:5:2])


@case('Splice', (RULE,), variadic=True)
def splice(rng):
    a, b = f64_input((2, 3)), f64_input((2, 2))
    w = C.parameter((2, 1), init=rng.standard_normal((2, 1)), dtype=F64)
    da, db = rng.standard_normal((2, 2, 3)), rng.standard_normal((2, 2, 2))
    return Built(C.splice(a, b, w, axis=1), {a: da, b: db},
                 np.concatenate([da, db, np.broadcast_to(w.value, (2, 2, 1))], axis=2))


@case('TransposeAxes', (RULE,))
def transpose(rng):
    x = f64_input((2, 3, 4))
    d = rng.standard_normal((2, 2, 3, 4))
    return Built(C.transpose(x, (2, 0, 1)), {x: d}, d.transpose(0, 3, 1, 2))


@case('Squeeze', (RULE,))
def squeeze(rng):
    x = f64_input((2, 1, 3))
    d = rng.standard_normal((2, 2, 1, 3))
    return Built(C.squeeze(x), {x: d}, d.reshape(2, 2, 3))


@case('Pad', (RULE,))
def pad_reflect(rng):
    x = f64_input((3, 4))
    d = rng.standard_normal((2, 3, 4))
    return Built(C.pad(x, pattern=[(1, 1), (2, 1)], mode=C.ops.REFLECT_PAD), {x: d},
                 np.pad(d, [(0, 0), (1, 1), (2, 1)], mode='reflect'))


@case('Pad', (RULE,))
def pad_constant(rng):
    x = f64_input((2, 3))
    d = rng.standard_normal((2, 2, 3))
    return Built(C.pad(x, pattern=[(1, 0), (0, 2)], mode=C.ops.CONSTANT_PAD, constant_value=1.5),
                 {x: d}, np.pad(d, [(0, 0), (1, 0), (0, 2)], constant_values=1.5))


@case('Pad', (RULE,))
def pad_symmetric(rng):
    x = f64_input((3, 4))
    d = rng.standard_normal((2, 3, 4))
    return Built(C.pad(x, pattern=[(2, 0), (1, 2)], mode=C.ops.SYMMETRIC_PAD), {x: d},
                 np.pad(d, [(0, 0), (2, 0), (1, 2)], mode='symmetric'))


@case('Reshape', (RULE,))
def reshape_axis_range(rng):
    # Only axes [1, 3) are reshaped.
    x = f64_input((2, 3, 4))
    d = rng.standard_normal((2, 2, 3, 4))
    return Built(C.reshape(x, (12,), begin_axis=1, end_axis=3), {x: d}, d.reshape(2, 2, 12))


@case('TransposeAxes', (RULE,))
def swapaxes(rng):
    x = f64_input((2, 3, 4))
    d = rng.standard_normal((2, 2, 3, 4))
    return Built(C.swapaxes(x, 0, 2), {x: d}, d.swapaxes(1, 3))


@case('Splice', (RULE,), variadic=True)
def splice_new_axis(rng):
    a, b = f64_input((2, 3)), f64_input((2, 3))
    da, db = rng.standard_normal((2, 2, 3)), rng.standard_normal((2, 2, 3))
    return Built(C.splice(a, b, axis=C.Axis.new_leading_axis()), {a: da, b: db}, np.stack([da, db], axis=1))


@case('Gather', (ZERO, RULE))
def gather_axis(rng):
    idx = f64_input(2)
    ref = C.parameter((3, 4), init=rng.standard_normal((3, 4)), dtype=F64)
    di = np.array([[3., 0.], [1., 1.]])
    return Built(C.gather(ref, idx, axis=1), {idx: di},
                 np.stack([ref.value[:, i.astype(int)] for i in di]))


@case('OneHot', (ZERO,))
def one_hot_axis(rng):
    x = f64_input((2, 3))
    d = np.array([[[0., 2., 1.], [1., 1., 0.]]])
    return Built(C.one_hot(x, 3, axis=0), {x: d}, np.moveaxis(np.eye(3)[d.astype(int)], -1, 1))


@case('Gather', (ZERO, RULE))
def gather(rng):
    # CNTK's gather(reference, indices) holds the indices first among its inputs.
    idx = f64_input(3)
    ref = C.parameter((4, 2), init=rng.standard_normal((4, 2)), dtype=F64)
    di = np.array([[0., 3., 1.], [2., 2., 0.]])
    return Built(C.gather(ref, idx), {idx: di}, ref.value[di.astype(int)])


@case('OneHot', (ZERO,))
def one_hot(rng):
    x = f64_input(3)
    d = np.array([[0., 4., 2.], [1., 1., 3.]])
    return Built(C.one_hot(x, 5), {x: d}, np.eye(5)[d.astype(int)])


@case('TopK', (RULE,))
def top_k(rng):
    x = f64_input(6)
    d = rng.standard_normal((2, 6))
    values = C.top_k(x, 3).outputs[0]
    return Built(C.combine([values]), {x: d}, -np.sort(-d, axis=1)[:, :3])


@case('TopK', (RULE,))
def top_k_indices(rng):
    x = f64_input(6)
    d = rng.standard_normal((2, 6))
    indices = C.top_k(x, 2).outputs[1]
    return Built(C.combine([indices]), {x: d}, np.argsort(-d, axis=1)[:, :2].astype(F64), wrt={0: x})


# ------------------------------------------------------------------ nn

def _softmax(d, axis):
    e = np.exp(d - d.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@case('Softmax', (RULE,))
def softmax(rng):
    x = f64_input((2, 4))
    d = rng.standard_normal((2, 2, 4))
    # CNTK's softmax without an axis normalizes over all static axes.
    return Built(C.softmax(x), {x: d}, _softmax(d.reshape(2, 8), 1).reshape(2, 2, 4))


@case('LogSoftmax', (RULE,))
def log_softmax(rng):
    x = f64_input((2, 4))
    d = rng.standard_normal((2, 2, 4))
    return Built(C.log_softmax(x, axis=0), {x: d}, np.log(_softmax(d, 1)))


@case('Hardmax', (ZERO,))
def hardmax(rng):
    x = f64_input(5)
    d = rng.standard_normal((2, 5))
    return Built(C.hardmax(x), {x: d}, np.eye(5)[np.argmax(d, axis=1)])


@case('Cast', (RULE,))
def cast(rng):
    # float64 -> float32 -> float64; finite differences with a step float32 resolves.
    x = f64_input(4)
    d = rng.standard_normal((2, 4))
    f = C.cast(C.cast(x, np.float32), np.float64)
    return Built(f, {x: d}, d.astype(np.float32).astype(F64), wrt={0: x}, eps=1e-2, grad_rtol=1e-4,
                 grad_atol=1e-5)


@case('ConstantOp', (ZERO,))
def ones_like(rng):
    x = f64_input((2, 3))
    d = rng.standard_normal((2, 2, 3))
    return Built(C.ones_like(x), {x: d}, np.ones_like(d))


@case('ConstantOp', (ZERO,))
def zeros_like(rng):
    x = f64_input((2, 3))
    d = rng.standard_normal((2, 2, 3))
    return Built(C.zeros_like(x), {x: d}, np.zeros_like(d))


@case('EyeLikeOp', (ZERO,))
def eye_like(rng):
    x = f64_input((3, 4), batch=False)
    d = rng.standard_normal((3, 4))
    return Built(C.eye_like(x), {x: d}, np.eye(3, 4))


@case('StopGradient', (ZERO,))
def stop_gradient(rng):
    x = f64_input(3)
    d = rng.standard_normal((2, 3))
    return Built(C.stop_gradient(x), {x: d}, d)


@case('NoOp', (RULE,))
def alias(rng):
    x = f64_input(3)
    d = rng.standard_normal((2, 3))
    return Built(C.alias(x), {x: d}, d)


@case('Pass', (RULE,))
def pass_(rng):
    # Pass arises from CNTK v1 models (a PassNode); the engine builds it as a primitive.
    from cntk.ops._prim import prim
    x = f64_input(3)
    d = rng.standard_normal((2, 3))
    return Built(prim('Pass', [x], {}, ''), {x: d}, d)


@case('DependsOn', (RULE, ZERO), variadic=True)
def depends_on(rng):
    # The ONNX reader's: graph inputs no output reads stay arguments through it.
    from cntk.ops._prim import prim
    x, y = f64_input(3), f64_input(2)
    d, e = rng.standard_normal((2, 3)), rng.standard_normal((2, 2))
    return Built(prim('DependsOn', [x, y], {}, ''), {x: d, y: e}, d)


@case('Combine', (RULE,), variadic=True)
def combine(rng):
    x = f64_input(3)
    d = rng.standard_normal((2, 3))
    return Built(C.combine([C.tanh(x)]), {x: d}, np.tanh(d), wrt={0: x})


@case('Assign', (NONE, RULE))
def assign(rng):
    # The value is the new value; the gradient goes to it (CNTK's AssignNode), none to the
    # parameter assigned to.
    ref = C.parameter((3,), init=np.zeros(3), dtype=F64)
    x = f64_input(3, batch=False)
    d = rng.standard_normal(3)
    return Built(C.assign(ref, x), {x: d}, d)


covered('Dropout', (RULE,), forward='test_ops_nn::test_dropout_eval_is_identity',
        gradients='test_ops_nn::test_dropout_gradient_float64')


# ------------------------------------------------------------------ random

def _moments(mean, var, lo=None, hi=None, tol=0.05):
    def check(got):
        got = np.asarray(got)
        assert abs(got.mean() - mean) < tol * max(1.0, np.sqrt(var)), got.mean()
        assert abs(got.var() - var) < 2 * tol * max(1.0, var), got.var()
        if lo is not None:
            assert got.min() >= lo and got.max() <= hi
    return check


def _random(make, check):
    def build(rng):
        x = f64_input((100, 100), batch=False)
        fn = make(x)
        return Built(fn, {x: np.zeros((100, 100))}, check)
    return build


for _label, _make, _check in [
        ('uniform', lambda x: C.random.uniform((100, 100), dtype=F64, low=-1, high=3, seed=3),
         _moments(1, 16 / 12., -1, 3)),
        ('normal', lambda x: C.random.normal((100, 100), dtype=F64, mean=1, scale=2, seed=3), _moments(1, 4)),
        ('gumbel', lambda x: C.random.gumbel((100, 100), dtype=F64, loc=0, scale=1, seed=3),
         _moments(np.euler_gamma, np.pi ** 2 / 6)),
        ('bernoulli', lambda x: C.random.bernoulli((100, 100), dtype=F64, mean=0.3, seed=3), _moments(0.3, 0.21, 0, 1)),
        ('normal_like', lambda x: C.random.normal_like(x, mean=-1, scale=0.5, seed=3), _moments(-1, 0.25))]:
    # The *_like forms take the input whose shape they follow; the others have none.
    add(Case('RandomDistribution', (ZERO,) if _label.endswith('_like') else (), _random(_make, _check), label=_label))


def _sample_check(n_classes, num_samples, allow_duplicates):
    def check(got):
        got = np.asarray(got).reshape(num_samples, n_classes)
        assert set(np.unique(got)) <= {0.0, 1.0} and (got.sum(axis=1) == 1).all()  # one-hot rows
        if not allow_duplicates:
            assert (got.sum(axis=0) <= 1).all()
    return check


@case('RandomSample', (ZERO,))
def random_sample(rng):
    w = f64_input(6, batch=False)
    d = np.array([1., 2., 3., 1., 1., 2.])
    return Built(C.random_sample(w, 4, allow_duplicates=False, seed=5), {w: d}, _sample_check(6, 4, False))


def _frequencies(weights, n):
    def check(got):
        got = np.asarray(got).reshape(n, len(weights))
        assert (got.sum(axis=1) == 1).all()
        np.testing.assert_allclose(got.mean(axis=0), weights / weights.sum(), atol=0.03)
    return check


@case('RandomSample', (ZERO,))
def random_sample_with_duplicates(rng):
    w = f64_input(4, batch=False)
    d = np.array([1., 2., 3., 4.])
    return Built(C.random_sample(w, 3000, allow_duplicates=True, seed=9), {w: d}, _frequencies(d, 3000))


@case('RandomSampleInclusionFrequency', (ZERO,))
def random_sample_inclusion_frequency(rng):
    # With duplicates: num_samples * w / sum(w).
    w = f64_input(4, batch=False)
    d = np.array([1., 2., 3., 4.])
    return Built(C.random_sample_inclusion_frequency(w, 5, allow_duplicates=True), {w: d}, 5 * d / d.sum())


# ------------------------------------------------------------------ losses and metrics

@case('CrossEntropyWithSoftmax', (RULE, RULE))
def cross_entropy_with_softmax(rng):
    z, t = f64_input(4), f64_input(4)
    dz = rng.standard_normal((3, 4))
    dt = _softmax(rng.standard_normal((3, 4)), 1)
    return Built(C.cross_entropy_with_softmax(z, t), {z: dz, t: dt},
                 -np.sum(dt * np.log(_softmax(dz, 1)), axis=1, keepdims=True))


@case('ClassificationError', (ZERO, RULE))
def classification_error(rng):
    # CNTK's top-1 error is 1 - target . hardmax(output): linear in the target, whose
    # gradient is -hardmax(output); the output gets none.
    z, t = f64_input(4), f64_input(4)
    dz = rng.standard_normal((3, 4))
    dt = np.eye(4)[[1, np.argmax(dz[1]), 3]]
    return Built(C.classification_error(z, t), {z: dz, t: dt},
                 (np.argmax(dz, 1) != np.argmax(dt, 1)).astype(F64)[:, None])


@case('ClassificationError', (ZERO, RULE, NONE))
def classification_error_top_2(rng):
    # Top-N (N > 1) is piecewise constant in both; the gradient check sees zeros.
    z, t = f64_input(4), f64_input(4)
    dz = rng.standard_normal((3, 4))
    dt = np.eye(4)[[0, 1, 3]]
    top2 = np.argsort(-dz, axis=1)[:, :2]
    miss = [float(np.argmax(dt[i]) not in top2[i]) for i in range(3)]
    return Built(C.classification_error(z, t, topN=2), {z: dz, t: dt}, np.array(miss)[:, None])


@case('Logistic', (RULE, RULE))
def binary_cross_entropy(rng):
    p, t = f64_input(3), f64_input(3)
    dp, dt = uniform(rng, 0.1, 0.9, (2, 3)), uniform(rng, 0, 1, (2, 3))
    return Built(C.binary_cross_entropy(p, t), {p: dp, t: dt},
                 -np.sum(dt * np.log(dp) + (1 - dt) * np.log(1 - dp), axis=1, keepdims=True))


@case('Logistic', (RULE, RULE, RULE))
def weighted_binary_cross_entropy(rng):
    p, t, w = f64_input(3), f64_input(3), f64_input(3)
    dp, dt, dw = uniform(rng, 0.1, 0.9, (2, 3)), uniform(rng, 0, 1, (2, 3)), uniform(rng, 0.5, 2, (2, 3))
    return Built(C.weighted_binary_cross_entropy(p, t, w), {p: dp, t: dt, w: dw},
                 -np.sum(dw * (dt * np.log(dp) + (1 - dt) * np.log(1 - dp)), axis=1, keepdims=True))


covered('CosDistanceWithNegativeSamples', (RULE, RULE),
        forward='test_losses_sequence::test_cosine_distance_with_negative_samples_forward_and_gradient',
        gradients='test_losses_sequence::test_cosine_distance_with_negative_samples_forward_and_gradient')
covered('EditDistanceError', (NONE, NONE), forward='test_losses_sequence::test_edit_distance_error_unit_penalties')
def _ctc_zeros(rng):
    x = seq_input(3)
    y = C.sequence.input_variable(3, dtype=F64, sequence_axis=x.dynamic_axes[1])
    xd = random_sequences(rng, [4, 3], (3,))
    yd = [np.eye(3)[[0, 2, 1, 2]], np.eye(3)[[1, 2, 2]]]
    return Built(C.forward_backward(C.labels_to_graph(y), x, 2), {x: xd, y: yd}, None, wrt={0: y})


def _ranking_zeros(make):
    def build(rng):
        s, gain, group = f64_input(1), f64_input(1), f64_input(1)
        args = {s: rng.standard_normal((4, 1)), gain: np.array([[3.], [1.], [2.], [0.]]),
                group: np.array([[1.], [1.], [2.], [2.]])}
        return Built(make(s, gain, group), args, None)
    return build


def _nce_zeros(rng):
    x, y = f64_input(3), f64_input(6)
    w = C.parameter((6, 3), init=rng.standard_normal((6, 3)), dtype=F64)
    b = C.parameter((6, 1), init=0.1, dtype=F64)
    f = C.nce_loss(w, b, x, y, np.arange(6.) + 1, num_samples=3, seed=1)
    return Built(f, {x: rng.standard_normal((2, 3)), y: np.eye(6)[[1, 4]]}, None)


def _roi_zeros(rng):
    x, r = f64_input((2, 6, 7)), f64_input((2, 4))
    f = C.roipooling(x, r, C.MAX_POOLING, (2, 2), 1.0)
    return Built(f, {x: rng.standard_normal((1, 2, 6, 7)), r: np.array([[[0., 0., 3., 3.], [1., 1., 4., 5.]]])}, None)


covered('ForwardBackward', (ZERO, RULE),
        forward='test_losses_sequence::test_forward_backward_matches_brute_force_and_gradient',
        gradients='test_losses_sequence::test_forward_backward_matches_brute_force_and_gradient', zeros=_ctc_zeros)
# LambdaRank's gradient is by definition the lambdas, not the derivative of its value:
# the test compares it with a NumPy implementation of the lambdas.
covered('LambdaRank', (RULE, ZERO, ZERO), forward='test_losses::test_lambda_rank_value_and_gradient_against_reference',
        gradients='test_losses::test_lambda_rank_value_and_gradient_against_reference',
        zeros=_ranking_zeros(C.lambda_rank))
covered('NDCG', (ZERO, ZERO, ZERO), forward='test_metrics::test_ndcg_at_1_against_reference',
        zeros=_ranking_zeros(C.ndcg_at_1))
covered('NCE', (RULE, RULE, RULE, ZERO, NONE, NONE, NONE), forward='test_losses::test_nce_loss_is_unbiased',
        gradients='test_losses::test_nce_loss_gradient', zeros=_nce_zeros)
covered('LatticeSequenceWithSoftmax', (ZERO, RULE, ZERO, NONE),
        forward='test_lattice::test_mmi_value_and_gradient_match_path_enumeration',
        gradients=['test_lattice::test_gradient_is_minus_the_value_derivative_for_log_softmax_loglikelihoods',
                   'test_lattice::test_no_gradient_flows_to_loglikelihood_and_training_raises_the_criterion'])


@case('LabelsToGraph', (ZERO,))
def labels_to_graph(rng):
    # Its value is the labels themselves; ForwardBackward reads them as a graph.
    x = seq_input(3)
    d = [np.eye(3)[rng.randint(0, 3, n)] for n in LENGTHS]
    return Built(C.labels_to_graph(x), {x: d}, d)


# ------------------------------------------------------------------ normalization

covered('BatchNormalization', (RULE, RULE, RULE, NONE, NONE, NONE),
        forward='test_ops_norm::test_batch_normalization_training_and_running_statistics',
        gradients='test_ops_norm::test_batch_normalization_gradients_with_batch_statistics')
covered('LocalResponseNormalization', (RULE,), forward='test_ops_norm::test_local_response_normalization',
        gradients='test_ops_norm::test_local_response_normalization')


@case('Crop', (RULE, ZERO))
def crop_manual(rng):
    x, ref = f64_input((1, 4, 5)), f64_input((1, 2, 3))
    d = rng.standard_normal((2, 1, 4, 5))
    return Built(C.crop_manual(x, ref, 2, 1), {x: d, ref: np.zeros((2, 1, 2, 3))}, d[:, :, 1:3, 2:5])


# ------------------------------------------------------------------ convolution and pooling

def _np_conv_valid(x, w):
    """Cross-correlation of x (C, H, W) with w (O, C, kh, kw), no padding."""
    o, _, kh, kw = w.shape
    h, wd = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    y = np.zeros((o, h, wd))
    for i, j in np.ndindex(h, wd):
        y[:, i, j] = np.tensordot(w, x[:, i:i + kh, j:j + kw], axes=3)
    return y


@case('Convolution', (RULE, RULE))
def convolution(rng):
    x = f64_input((2, 4, 5))
    w = C.parameter((3, 2, 2, 3), init=rng.standard_normal((3, 2, 2, 3)) * 0.5, dtype=F64)
    d = rng.standard_normal((2, 2, 4, 5))
    f = C.convolution(w, x, auto_padding=[False])
    return Built(f, {x: d}, np.stack([_np_conv_valid(s, w.value) for s in d]))


@case('Convolution', (RULE, RULE))
def convolution_transpose(rng):
    # The transpose is the gradient of the convolution: scatter each input pixel times
    # the kernel.
    x = f64_input((3, 2, 2))
    w = C.parameter((3, 2, 2, 2), init=rng.standard_normal((3, 2, 2, 2)) * 0.5, dtype=F64)
    d = rng.standard_normal((2, 3, 2, 2))
    f = C.convolution_transpose(w, x, auto_padding=[False])
    want = np.zeros((2, 2, 3, 3))
    for b, i, j in np.ndindex(2, 2, 2):
        want[b, :, i:i + 2, j:j + 2] += np.tensordot(d[b, :, i, j], w.value, axes=1)
    return Built(f, {x: d}, want)


@case('ConvolutionSequenceShape', (ZERO, ZERO))
def convolution_sequence_shape(rng):
    # The op a convolution over the sequence axis takes its output lengths from: without
    # padding, L - 2 for a kernel of 3 steps, never below 0.
    x = seq_input((1, 3))
    w = C.parameter((2, 1, 3, 3), init=rng.standard_normal((2, 1, 3, 3)), dtype=F64)
    conv = C.convolution(w, x, sequential=True, auto_padding=[False])
    node = find_op(conv, 'ConvolutionSequenceShape')
    d = random_sequences(rng, [4, 1, 3], (1, 3))
    return Built(C.as_composite(node), {x: d}, np.array([[2.], [0.], [1.]]))


def _np_pool(x, k, s, reduce):
    c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    y = np.zeros((c, oh, ow))
    for i, j in np.ndindex(oh, ow):
        y[:, i, j] = reduce(x[:, i * s:i * s + k, j * s:j * s + k].reshape(c, -1), axis=1)
    return y


@case('Pooling', (RULE,))
def max_pooling(rng):
    x = f64_input((2, 4, 6))
    d = rng.standard_normal((2, 2, 4, 6))
    f = C.pooling(x, C.MAX_POOLING, (2, 2), strides=(2, 2))
    return Built(f, {x: d}, np.stack([_np_pool(s, 2, 2, np.max) for s in d]))


@case('Pooling', (RULE,))
def average_pooling(rng):
    x = f64_input((2, 5, 5))
    d = rng.standard_normal((2, 2, 5, 5))
    f = C.pooling(x, C.AVG_POOLING, (3, 3), strides=(1, 1))
    return Built(f, {x: d}, np.stack([_np_pool(s, 3, 1, np.mean) for s in d]))


@case('Unpooling', (RULE, ZERO))
def max_unpooling(rng):
    # Each value goes to the place of its window's maximum in the pooling input.
    x, u = f64_input((1, 4, 4)), f64_input((1, 2, 2))
    dx = rng.permutation(32).reshape(2, 1, 4, 4).astype(F64)
    du = rng.standard_normal((2, 1, 2, 2))
    want = np.zeros_like(dx)
    for b, i, j in np.ndindex(2, 2, 2):
        win = dx[b, 0, 2 * i:2 * i + 2, 2 * j:2 * j + 2]
        r, c = np.unravel_index(np.argmax(win), (2, 2))
        want[b, 0, 2 * i + r, 2 * j + c] = du[b, 0, i, j]
    f = C.unpooling(u, x, C.MAX_UNPOOLING, (2, 2), strides=(2, 2))
    return Built(f, {x: dx, u: du}, want)


covered('ROIPooling', (RULE, ZERO), forward='test_ops_conv::test_roipooling_forward_against_numpy',
        gradients='test_ops_conv::test_roipooling_gradient', zeros=_roi_zeros)


# ------------------------------------------------------------------ recurrences and user functions

covered('OptimizedRNNStack', (RULE, RULE), forward='test_optimized_rnnstack::test_forward_matches_numpy_model',
        gradients='test_optimized_rnnstack::test_gradients_float64')
covered('UserFunction', (RULE,), forward='test_user_function::test_user_sigmoid_forward',
        gradients='test_user_function::test_user_function_gradcheck_float64')


@case('PastValue', (RULE, RULE))
def past_value(rng):
    x = seq_input(2)
    init = C.parameter((), init=0.5, dtype=F64)
    d = random_sequences(rng, LENGTHS, (2,))
    want = [np.concatenate([np.full((1, 2), 0.5), s[:-1]]) for s in d]
    return Built(C.sequence.past_value(x, init), {x: d}, want)


@case('FutureValue', (RULE, RULE))
def future_value(rng):
    x = seq_input(2)
    init = C.parameter((), init=-0.25, dtype=F64)
    d = random_sequences(rng, LENGTHS, (2,))
    want = [np.concatenate([s[2:], np.full((min(2, len(s)), 2), -0.25)]) for s in d]
    return Built(C.sequence.future_value(x, init, time_step=2), {x: d}, want)


@case('PastValue', (RULE, RULE))
def recurrence_layer(rng):
    # A delay inside a loop: h_t = tanh(x_t + 0.5 h_{t-1}).
    x = seq_input(2)
    init = C.parameter((2,), init=np.array([0.3, -0.2]), dtype=F64)
    fn = C.layers.Recurrence(lambda h, v: C.tanh(v + 0.5 * h), initial_state=init)(x)
    d = random_sequences(rng, LENGTHS, (2,))
    want = []
    for s in d:
        h, out = np.array([0.3, -0.2]), []
        for v in s:
            h = np.tanh(v + 0.5 * h)
            out.append(h)
        want.append(np.array(out))
    return Built(fn, {x: d}, want, wrt={0: x})


# ------------------------------------------------------------------ sequences

@case('IsWithin', (ZERO,))
def is_first(rng):
    x = seq_input(2)
    d = random_sequences(rng, LENGTHS, (2,))
    return Built(C.sequence.is_first(x), {x: d}, [(np.arange(len(s)) == 0).astype(F64) for s in d])


@case('IsWithin', (ZERO,))
def is_last(rng):
    x = seq_input(2)
    d = random_sequences(rng, LENGTHS, (2,))
    return Built(C.sequence.is_last(x), {x: d}, [(np.arange(len(s)) == len(s) - 1).astype(F64) for s in d])


@case('ReduceElements', (RULE,))
def sequence_reduce_max(rng):
    x = seq_input(2)
    d = random_sequences(rng, LENGTHS, (2,))
    return Built(C.sequence.reduce_max(x), {x: d}, [s.max(axis=0) for s in d])


@case('LogSoftmax', (RULE,))
def sequence_log_softmax_step(rng):
    x = seq_input(3)
    d = random_sequences(rng, LENGTHS, (3,))
    return Built(C.log_softmax(x), {x: d}, [np.log(_softmax(s, 1)) for s in d])


@case('UnpackSequence', (RULE,))
def sequence_unpack_mask(rng):
    # The second output is the mask: 1 for each valid step.
    x = seq_input(2)
    d = random_sequences(rng, LENGTHS, (2,))
    mask = C.sequence.unpack(x, 0).outputs[1]
    want = np.array([[1., 1., 1.], [1., 0., 0.], [1., 1., 0.]])
    return Built(C.combine([mask]), {x: d}, want, wrt={0: x})


@case('ToSequence', (RULE, ZERO))
def to_sequence_with_lengths(rng):
    t, n = f64_input((3, 2)), f64_input(())
    d = rng.standard_normal((3, 3, 2))
    lengths = np.array([2., 3., 1.])
    return Built(C.to_sequence(t, n), {t: d, n: lengths}, [s[:int(k)] for s, k in zip(d, lengths)])


@case('PastValue', (RULE, RULE))
def past_value_from_a_state_sequence(rng):
    # time_step 2 with an initial state that is itself a batch: the first two steps take it.
    x = seq_input(2)
    s0 = f64_input(2)
    d = random_sequences(rng, LENGTHS, (2,))
    d0 = rng.standard_normal((3, 2))
    want = [np.concatenate([np.tile(v, (min(2, len(s)), 1)), s[:-2]]) for s, v in zip(d, d0)]
    return Built(C.sequence.past_value(x, s0, time_step=2), {x: d, s0: d0}, want)


@case('SequenceSlice', (RULE,))
def sequence_slice(rng):
    x = seq_input(2)
    d = random_sequences(rng, [4, 2, 3], (2,))
    return Built(C.sequence.slice(x, 1, -1), {x: d}, [s[1:-1] for s in d])


_COND = [np.array([[1.], [0.], [1.]]), np.array([[1.]]), np.array([[0.], [1.]])]


@case('Where', (ZERO,))
def where(rng):
    c = seq_input(1)
    d = [np.array([[0.], [1.], [1.]]), np.array([[2.]]), np.array([[1.], [0.], [0.], [1.]])]
    return Built(C.sequence.where(c), {c: d}, [np.array([1., 2.]), np.array([0., 0.]), np.array([0., 3.])])


@case('GatherPacked', (RULE, ZERO))
def sequence_gather(rng):
    x, c = seq_input(2), seq_input(1)
    d = random_sequences(rng, LENGTHS, (2,))
    return Built(C.sequence.gather(x, c), {x: d, c: _COND}, [s[k[:, 0] != 0] for s, k in zip(d, _COND)],
                 wrt={1: c})


@case('ScatterPacked', (RULE, ZERO, ZERO))
def sequence_scatter(rng):
    # scatter(gather(x, c), c) puts each kept step back in its place, zeros elsewhere.
    x, c = seq_input(2), seq_input(1)
    d = random_sequences(rng, LENGTHS, (2,))
    f = C.sequence.scatter(C.sequence.gather(x, c), c)
    return Built(f, {x: d, c: _COND}, [s * k for s, k in zip(d, _COND)], wrt={0: x, 1: c})


@case('ReconcileDynamicAxis', (RULE, ZERO))
def broadcast_as(rng):
    b, x = f64_input(2), seq_input(2)
    db = rng.standard_normal((3, 2))
    dx = random_sequences(rng, LENGTHS, (2,))
    return Built(C.sequence.broadcast_as(b, x), {b: db, x: dx},
                 [np.tile(v, (len(s), 1)) for v, s in zip(db, dx)])


@case('ToSequence', (RULE,))
def to_sequence(rng):
    t = f64_input((3, 2))
    d = rng.standard_normal((2, 3, 2))
    return Built(C.to_sequence(t), {t: d}, list(d))


@case('ToSequenceLike', (RULE, ZERO))
def to_sequence_like(rng):
    t, x = f64_input((3, 2)), seq_input(2)
    d = rng.standard_normal((2, 3, 2))
    dx = random_sequences(rng, [3, 3], (2,))
    return Built(C.to_sequence_like(t, x), {t: d, x: dx}, list(d))


@case('UnpackSequence', (RULE,))
def sequence_unpack(rng):
    x = seq_input(2)
    d = random_sequences(rng, LENGTHS, (2,))
    want = np.zeros((3, 3, 2))
    for i, s in enumerate(d):
        want[i, :len(s)] = s
    return Built(C.sequence.unpack(x, 0, no_mask_output=True), {x: d}, want)


@case('ToBatchAxis', (RULE,))
def to_batch(rng):
    x = f64_input((3, 2), batch=False)
    d = rng.standard_normal((3, 2))
    return Built(C.to_batch(x), {x: d}, d)


@case('UnpackBatchAxis', (RULE,))
def unpack_batch(rng):
    b = f64_input(2)
    d = rng.standard_normal((3, 2))
    return Built(C.unpack_batch(b), {b: d}, d)


def find_op(fn, op):
    """The first primitive function named `op` in fn's graph (block bodies included)."""
    seen, stack = set(), [fn.root_function]
    while stack:
        f = stack.pop().root_function  # an output's owner may come as a composite
        if f.uid in seen:
            continue
        seen.add(f.uid)
        if f.op_name == op:
            return f
        if f.is_block:
            stack.append(f.block_root)
        stack.extend(v.owner for v in f.inputs if v.is_output)
    raise AssertionError("no %s op in %s" % (op, fn))


# ------------------------------------------------------------------ attributes and axes

@case('ELU', (RULE,))
def elu_alpha(rng):
    x = f64_input(5)
    d = away_from(rng.standard_normal((2, 5)), [0.0])
    return Built(C.elu(x, alpha=0.7), {x: d}, np.where(d > 0, d, 0.7 * (np.exp(d) - 1)))


@case('LeakyReLU', (RULE,))
def leaky_relu_alpha(rng):
    x = f64_input(5)
    d = away_from(rng.standard_normal((2, 5)), [0.0])
    return Built(C.leaky_relu(x, alpha=0.2), {x: d}, np.where(d > 0, d, 0.2 * d))


@case('HardSigmoid', (RULE,))
def hard_sigmoid_alpha_beta(rng):
    x = f64_input(6)
    d = away_from(uniform(rng, -3, 3, (2, 6)), [-0.5 / 0.4, 0.5 / 0.4])
    return Built(C.hard_sigmoid(x, alpha=0.4, beta=0.5), {x: d}, np.clip(0.4 * d + 0.5, 0, 1))


@case('SELU', (RULE,))
def selu_scale_alpha(rng):
    x = f64_input(5)
    d = away_from(rng.standard_normal((2, 5)), [0.0])
    return Built(C.selu(x, scale=1.5, alpha=2.0), {x: d}, 1.5 * np.where(d > 0, d, 2.0 * (np.exp(d) - 1)))


@case('Clip', (RULE, ZERO, ZERO))
def clip_broadcast_bounds(rng):
    x = f64_input((2, 3))
    lo, hi = f64_input((3,), batch=False), f64_input((2, 1), batch=False)
    dx = rng.standard_normal((2, 2, 3)) * 2
    dlo, dhi = np.array([-1., -0.5, 0.]), np.array([[0.5], [1.5]])
    dx = away_from(away_from(dx, [-1., -0.5, 0.]), [0.5, 1.5])
    return Built(C.clip(x, lo, hi), {x: dx, lo: dlo, hi: dhi}, np.clip(dx, dlo, dhi))


@case('ReduceElements', (RULE,))
def reduce_sum_two_axes(rng):
    x = f64_input((2, 3, 4))
    d = rng.standard_normal((2, 2, 3, 4))
    return Built(C.reduce_sum(x, axis=(0, 2)), {x: d}, d.sum(axis=(1, 3), keepdims=True))


@case('ReduceElements', (RULE,))
def reduce_mean_all_axes(rng):
    x = f64_input((2, 3))
    d = rng.standard_normal((4, 2, 3))
    return Built(C.reduce_mean(x, axis=C.Axis.all_axes()), {x: d}, d.mean())


@case('ReduceElements', (RULE,))
def reduce_max_without_keepdims(rng):
    x = f64_input((3, 4))
    d = rng.standard_normal((2, 3, 4))
    return Built(C.reduce_max(x, axis=0, keepdims=False), {x: d}, d.max(axis=1))


@case('Slice', (RULE,))
def slice_negative(rng):
    x = f64_input((5, 3))
    d = rng.standard_normal((2, 5, 3))
    return Built(C.slice(x, 0, -3, -1), {x: d}, d[:, -3:-1])


@case('Squeeze', (RULE,))
def squeeze_one_axis(rng):
    x = f64_input((1, 3, 1))
    d = rng.standard_normal((2, 1, 3, 1))
    return Built(C.squeeze(x, axes=[2]), {x: d}, d.reshape(2, 1, 3))


@case('TopK', (RULE,))
def top_k_axis(rng):
    x = f64_input((5, 3))
    d = rng.standard_normal((2, 5, 3))
    values = C.top_k(x, 2, axis=0).outputs[0]
    return Built(C.combine([values]), {x: d}, -np.sort(-d, axis=1)[:, :2], wrt={0: x})


@case('Softmax', (RULE,))
def softmax_axis(rng):
    x = f64_input((2, 3, 4))
    d = rng.standard_normal((2, 2, 3, 4))
    return Built(C.softmax(x, axis=1), {x: d}, _softmax(d, 2))


@case('Times', (RULE, RULE))
def times_infer_input_rank_to_map(rng):
    # A (3,) x (2, 4) parameter per sample row: map rank 1 keeps the first axis of x.
    x = f64_input((2, 3))
    w = C.parameter((3, 4), init=rng.standard_normal((3, 4)), dtype=F64)
    d = rng.standard_normal((2, 2, 3))
    return Built(C.times(x, w, infer_input_rank_to_map=1), {x: d}, d @ w.value)


@case('SequenceSlice', (RULE,))
def sequence_slice_last(rng):
    x = seq_input(2)
    d = random_sequences(rng, [4, 2, 3], (2,))
    return Built(C.sequence.slice(x, -2, 0), {x: d}, [s[-2:] for s in d])


@case('Pow', (RULE, RULE))
def pow_negative_base_integer_exponent(rng):
    a, b = f64_input(4), f64_input(4)
    da = np.array([[-1.5, -0.7, 2.0, -2.0], [-0.5, 1.5, -1.2, 0.8]])
    db = np.array([[2., 3., 2., -1.], [3., 2., 2., 3.]])
    # The exponent's derivative a^b ln(a) has no value for a <= 0: CNTK's rule gives 0 there.
    safe = np.where(da > 0, da, 1.0)
    return Built(C.pow(a, b), {a: da, b: db}, np.power(da, db),
                 grad_ref={1: lambda w: np.where(da > 0, w * np.power(safe, db) * np.log(safe), 0.0)})


# ------------------------------------------------------------------ more forms

@case('ReduceElements', (RULE,))
def reduce_prod_one_axis(rng):
    x = f64_input((3, 2))
    d = rng.standard_normal((2, 3, 2))
    return Built(C.reduce_prod(x, axis=0), {x: d}, d.prod(axis=1, keepdims=True))


@case('GatherPacked', (RULE, ZERO))
def sequence_gather_to_an_empty_sequence(rng):
    x, c = seq_input(2), seq_input(1)
    d = random_sequences(rng, [3, 2], (2,))
    cond = [np.array([[0.], [1.], [1.]]), np.array([[0.], [0.]])]
    return Built(C.sequence.gather(x, c), {x: d, c: cond}, [d[0][1:], np.zeros((0, 2))], wrt={1: c})


@case('Splice', (RULE,), variadic=True)
def splice_of_sequences(rng):
    a, b = seq_input(2), seq_input(3)
    da = random_sequences(rng, LENGTHS, (2,))
    db = random_sequences(rng, LENGTHS, (3,))
    return Built(C.splice(a, b), {a: da, b: db}, [np.concatenate([p, q], 1) for p, q in zip(da, db)])


@case('Times', (RULE, RULE))
def times_of_sequences(rng):
    x = seq_input(3)
    w = C.parameter((3, 2), init=rng.standard_normal((3, 2)), dtype=F64)
    d = random_sequences(rng, LENGTHS, (3,))
    return Built(C.times(x, w), {x: d}, [s @ w.value for s in d])


@case('Hardmax', (ZERO,))
def hardmax_ties_take_the_first(rng):
    x = f64_input(4)
    d = np.array([[1., 3., 3., 0.], [2., 2., 2., 2.]])
    return Built(C.hardmax(x), {x: d}, np.array([[0., 1, 0, 0], [1., 0, 0, 0]]))


@case('FutureValue', (RULE, RULE))
def future_value_from_a_state_batch(rng):
    x, s0 = seq_input(2), f64_input(2)
    d = random_sequences(rng, LENGTHS, (2,))
    d0 = rng.standard_normal((3, 2))
    want = [np.concatenate([s[1:], v[None]]) for s, v in zip(d, d0)]
    return Built(C.sequence.future_value(x, s0), {x: d, s0: d0}, want)


@case('Pooling', (RULE,))
def average_pooling_padded(rng):
    # Auto padding: the average leaves the padding out.
    x = f64_input((1, 3, 3))
    d = rng.standard_normal((1, 1, 3, 3))
    want = np.zeros((1, 1, 3, 3))
    for i, j in np.ndindex(3, 3):
        want[0, 0, i, j] = d[0, 0, max(0, i - 1):i + 2, max(0, j - 1):j + 2].mean()
    return Built(C.pooling(x, C.AVG_POOLING, (3, 3), auto_padding=[False, True, True]), {x: d}, want)


@case('Pooling', (RULE,))
def max_pooling_padded(rng):
    x = f64_input((1, 3, 3))
    d = rng.standard_normal((1, 1, 3, 3))
    want = np.zeros((1, 1, 3, 3))
    for i, j in np.ndindex(3, 3):
        want[0, 0, i, j] = d[0, 0, max(0, i - 1):i + 2, max(0, j - 1):j + 2].max()
    return Built(C.pooling(x, C.MAX_POOLING, (3, 3), auto_padding=[False, True, True]), {x: d}, want)


@case('Convolution', (RULE, RULE))
def convolution_padding_and_strides(rng):
    x = f64_input((1, 5, 5))
    w = C.parameter((1, 1, 3, 3), init=rng.standard_normal((1, 1, 3, 3)), dtype=F64)
    d = rng.standard_normal((1, 1, 5, 5))
    # Auto padding of 1 on each side of the spatial axes, stride 2: windows at 0, 2, 4.
    p = np.pad(d[0, 0], 1)
    want = np.array([[np.sum(p[i:i + 3, j:j + 3] * w.value[0, 0]) for j in (0, 2, 4)] for i in (0, 2, 4)])
    f = C.convolution(w, x, strides=(1, 2, 2), auto_padding=[False, True, True])
    return Built(f, {x: d}, want[None, None])


@case('Convolution', (RULE, RULE))
def convolution_groups(rng):
    x = f64_input((4, 3, 3))
    w = C.parameter((2, 2, 2, 2), init=rng.standard_normal((2, 2, 2, 2)), dtype=F64)
    d = rng.standard_normal((1, 4, 3, 3))
    want = np.zeros((1, 2, 2, 2))
    for g in range(2):
        for i, j in np.ndindex(2, 2):
            want[0, g, i, j] = np.sum(d[0, 2 * g:2 * g + 2, i:i + 2, j:j + 2] * w.value[g])
    return Built(C.convolution(w, x, groups=2, auto_padding=[False]), {x: d}, want)


@case('Convolution', (RULE, RULE))
def convolution_dilation(rng):
    x = f64_input((1, 5, 5))
    w = C.parameter((1, 1, 2, 2), init=rng.standard_normal((1, 1, 2, 2)), dtype=F64)
    d = rng.standard_normal((1, 1, 5, 5))
    want = np.zeros((1, 1, 3, 3))
    for i, j in np.ndindex(3, 3):
        want[0, 0, i, j] = np.sum(d[0, 0, i:i + 3:2, j:j + 3:2] * w.value[0, 0])
    return Built(C.convolution(w, x, dilation=(1, 2, 2), auto_padding=[False]), {x: d}, want)


@case('LogPlus', (RULE, RULE))
def log_add_exp_of_large_values(rng):
    a, b = f64_input(3), f64_input(3)
    da = np.array([[800., -800., 0.]])
    db = np.array([[799., -801., 1000.]])
    return Built(C.log_add_exp(a, b), {a: da, b: db}, np.logaddexp(da, db), eps=1e-4)


@case('CrossEntropyWithSoftmax', (RULE, RULE))
def cross_entropy_with_softmax_axis(rng):
    z, tt = f64_input((3, 2)), f64_input((3, 2))
    dz = rng.standard_normal((2, 3, 2))
    dt = np.eye(3)[[[0, 2], [1, 1]]].transpose(0, 2, 1)
    sm = np.exp(dz) / np.exp(dz).sum(1, keepdims=True)
    return Built(C.cross_entropy_with_softmax(z, tt, axis=0), {z: dz, tt: dt},
                 -np.sum(dt * np.log(sm), axis=1, keepdims=True))
