"""Shared checks for op tests: a NumPy-reference forward check and a float64
finite-difference gradient check driven through Function.forward/backward."""
import numpy as np

import cntk as C


def check_forward(fn, args, expected, rtol=1e-5, atol=1e-6):
    """fn.eval(args) equals `expected` (a NumPy reference result)."""
    got = fn.eval(args)
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=rtol, atol=atol)
    return got


def _eval_weighted(fn, args, weights):
    out = fn.output
    y = np.asarray(fn.eval(args, outputs=[out]))
    return float(np.sum(y * weights))


def gradcheck(fn, args, wrt=None, eps=1e-6, rtol=1e-4, atol=1e-7, seed=0):
    """Checks the gradients of sum(w * fn(args)) (w random) with respect to `wrt`
    (default: every input in `args` and every parameter) against central differences.

    Run it on float64 graphs: inputs created with dtype=np.float64, parameters too.
    """
    out = fn.output
    if wrt is None:
        wrt = list(args.keys()) + list(fn.parameters)
    rng = np.random.RandomState(seed)
    state, outs = fn.forward(args, [out], keep_for_backward=[out])
    y = np.asarray(outs[out])
    weights = rng.standard_normal(y.shape)
    analytic = fn.backward(state, {out: weights}, wrt)
    for v in wrt:
        if v.is_parameter or v.is_constant:
            base = np.array(v.value, dtype=np.float64)

            def setter(val, v=v):
                v.value = val
        else:
            base = np.array(args[v], dtype=np.float64)

            def setter(val, v=v):
                args[v] = val
        numeric = np.zeros_like(base)
        for idx in np.ndindex(*base.shape):
            plus = base.copy()
            plus[idx] += eps
            setter(plus)
            f_plus = _eval_weighted(fn, args, weights)
            minus = base.copy()
            minus[idx] -= eps
            setter(minus)
            f_minus = _eval_weighted(fn, args, weights)
            numeric[idx] = (f_plus - f_minus) / (2 * eps)
        setter(base)
        got = np.asarray(analytic[v], dtype=np.float64).reshape(base.shape)
        np.testing.assert_allclose(got, numeric, rtol=rtol, atol=atol,
                                   err_msg="gradient mismatch for %s of %s" % (v, fn.root_function.op_name))
    return analytic


def f64_input(shape, batch=True, name=''):
    """A float64 input variable (with a batch axis unless batch=False)."""
    axes = [C.Axis.default_batch_axis()] if batch else []
    return C.input_variable(shape, dtype=np.float64, dynamic_axes=axes, name=name)


def covers_op(op, *checks):
    """Declares which of `op`'s conformance checks the decorated test does, for the
    catalogue's conformance test (test_op_catalogue.py): 'forward' (the value against a
    NumPy reference), 'gradient:i' (input i against float64 central differences, or a
    reference where the op's gradient is by definition not the value's derivative),
    'zero:i' (input i gets exactly zero)."""
    def mark(test):
        test.__dict__.setdefault('covers_ops', {}).setdefault(op, set()).update(checks)
        return test
    return mark
