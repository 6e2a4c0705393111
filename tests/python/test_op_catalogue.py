"""Op conformance, driven by the catalogue: every op that cntk.cntk_py.registered_ops()
lists has a forward check against a NumPy reference and, for each input with a gradient
rule, a float64 central-difference gradient check (inputs whose gradient is zero by
definition are checked to get exactly zero). A new op without cases fails here.

The cases are in op_catalogue/ (one module per op family); checks that existing tests already do are named
there and verified to exist and to declare the op (op_harness.covers_op)."""
import importlib

import numpy as np
import pytest

import cntk as C
from op_harness import gradcheck
from seq_harness import as_sequences, seq_gradcheck
from op_catalogue import CASES, Covered, RULE, ZERO, NONE, find_op

OPS = sorted(C.cntk_py.registered_ops())


def _schema_kinds(op):
    """The gradient kind ('rule', 'zero', 'none') of each input that the engine's op schema declares."""
    return [inp['gradient'] for inp in C.cntk_py.op_schema(op)['inputs']]


def _has_sequences(fn, args):
    return len(fn.output.dynamic_axes) > 1 or any(isinstance(d, list) for d in args.values())


def _dense(y):
    return y.toarray() if hasattr(y, 'toarray') else y


def _check_forward(built):
    fn, args = built.fn, built.args
    got = _dense(fn.eval(args))
    if callable(built.expected):
        built.expected(got)
        return
    if isinstance(built.expected, list):
        got = as_sequences(got)
        assert len(got) == len(built.expected)
        for g, e in zip(got, built.expected):
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(e, np.float64),
                                       rtol=built.rtol, atol=built.atol)
    else:
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(built.expected, np.float64),
                                   rtol=built.rtol, atol=built.atol)


def _leaf(built, node, i):
    """The leaf whose gradient checks input i of the op: the input itself, or what the
    case names for it."""
    v = built.wrt.get(i, node.inputs[i])
    if not (v in built.args or v.is_parameter):
        pytest.fail("%s: input %d (%s) is neither an argument nor a parameter; name a leaf for its "
                    "gradient check in the case's wrt" % (node.op_name, i, v))
    return v


def _gradient(fn, args, v, seed):
    """The gradient to v of sum(w * fn(args)), w standard normal, and w."""
    rng = np.random.RandomState(seed)
    state, outs = fn.forward(args, [fn.output], keep_for_backward=[fn.output])
    y = outs[fn.output]
    w = ([rng.standard_normal(np.shape(s)) for s in y] if isinstance(y, list)
         else rng.standard_normal(np.shape(_dense(y))))
    g = _dense(fn.backward(state, {fn.output: w}, [v])[v])
    return g, w


def _check_zero_gradient(fn, args, v):
    g, _ = _gradient(fn, args, v, seed=1)
    for part in (g if isinstance(g, list) else [g]):
        np.testing.assert_array_equal(np.asarray(_dense(part)), 0, err_msg="gradient to %s" % v)


def _check_zero_inputs(built, op, kinds):
    node = find_op(built.fn, op)
    for i, kind in enumerate(kinds):
        if kind == ZERO:
            _check_zero_gradient(built.fn, built.args, _leaf(built, node, i))


def _run_case(case):
    built = case.build(np.random.RandomState(0))
    node = find_op(built.fn, case.op)
    kinds = case.kinds(len(node.inputs))
    assert len(kinds) == len(node.inputs), \
        "case %s declares %d gradient kinds for %s's %d inputs" % (case.label, len(kinds), case.op, len(node.inputs))
    _check_forward(built)
    for i, kind in enumerate(kinds):
        if kind == NONE:
            continue
        v = _leaf(built, node, i)
        if kind == ZERO:
            _check_zero_gradient(built.fn, built.args, v)
            continue
        if i in built.grad_ref:
            g, w = _gradient(built.fn, built.args, v, seed=2)
            np.testing.assert_allclose(np.asarray(g), built.grad_ref[i](w), rtol=built.grad_rtol,
                                       atol=built.grad_atol, err_msg="gradient to input %d of %s" % (i, case.op))
            continue
        check = seq_gradcheck if _has_sequences(built.fn, built.args) else gradcheck
        check(built.fn, built.args, wrt=[v], eps=built.eps, rtol=built.grad_rtol, atol=built.grad_atol)


def _function_named(ref):
    module, name = ref.split('::')
    fn = getattr(importlib.import_module(module), name, None)
    assert fn is not None, "%s does not exist" % ref
    return fn


def _check_covered(entry):
    if entry.zeros is not None:
        _check_zero_inputs(entry.zeros(np.random.RandomState(0)), entry.op, entry.grads)
    fwd = _function_named(entry.forward)
    assert entry.op in getattr(fwd, 'covers_ops', {}), "%s does not declare a check of %s" % (entry.forward, entry.op)
    assert 'forward' in fwd.covers_ops[entry.op], "%s does not check %s's forward value" % (entry.forward, entry.op)
    needed = ['gradient:%d' % i if k == RULE else 'zero:%d' % i for i, k in enumerate(entry.grads)
              if k == RULE or (k == ZERO and entry.zeros is None)]
    if needed:
        assert entry.gradients, "%s: no gradient check named for %s" % (entry.op, needed)
        refs = [entry.gradients] if isinstance(entry.gradients, str) else list(entry.gradients)
        declared = set()
        for ref in refs:
            declared |= getattr(_function_named(ref), 'covers_ops', {}).get(entry.op, set())
        missing = [n for n in needed if n not in declared]
        assert not missing, "%s do not declare %s's checks %s" % (refs, entry.op, missing)


@pytest.mark.parametrize('op', OPS)
def test_op_conforms(op):
    entries = CASES.get(op)
    assert entries, "op %s has no conformance case in op_catalogue/" % op
    for entry in entries:
        if isinstance(entry, Covered):
            _check_covered(entry)
        else:
            _run_case(entry)
    schema = _schema_kinds(op)
    for entry in entries:
        # A case may build the op without its optional trailing inputs.
        mine = list(entry.kinds(len(schema)) if getattr(entry, 'variadic', False) else entry.grads)
        assert mine == schema[:len(mine)] and len(mine) <= len(schema), \
            "%s: the table says its inputs' gradients are %s, the op schema %s" % (op, mine, schema)


def test_every_case_names_a_registered_op():
    assert sorted(set(CASES) - set(OPS)) == []
