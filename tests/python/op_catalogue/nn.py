"""Softmax, casts, identities and other nn ops. Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from op_harness import f64_input
from op_catalogue.common import Built, case, covered, F64, NONE, RULE, ZERO


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
