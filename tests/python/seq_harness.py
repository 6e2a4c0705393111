"""Checks for graphs over sequences of different lengths: outputs as per-sequence
arrays, and a float64 finite-difference gradient check whose inputs are lists of
per-sequence arrays (the padding never enters the check)."""
import numpy as np


def as_sequences(y, lengths=None):
    """A list of per-sequence arrays from what eval returned (a list, or a padded
    array when all sequences have one length)."""
    if isinstance(y, list):
        return [np.asarray(s) for s in y]
    y = np.asarray(y)
    return [y[i] if lengths is None else y[i][:lengths[i]] for i in range(y.shape[0])]


def random_sequences(rng, lengths, shape, dtype=np.float64):
    return [rng.standard_normal((n,) + tuple(shape)).astype(dtype) for n in lengths]


def _weighted(fn, args, weights):
    y = as_sequences(fn.eval(args, outputs=[fn.output]))
    return float(sum(np.sum(a * w) for a, w in zip(y, weights)))


def _copy(value):
    if isinstance(value, list):
        return [np.array(v, dtype=np.float64) for v in value]
    return np.array(value, dtype=np.float64)


def seq_gradcheck(fn, args, wrt=None, eps=1e-6, rtol=1e-5, atol=1e-8, seed=0):
    """Compares the gradients of sum(w * fn(args)) (w random, one array per output
    sequence) with central differences, for each variable in `wrt` (default: every
    argument and every parameter). Sequence arguments are lists of arrays."""
    out = fn.output
    if wrt is None:
        wrt = list(args.keys()) + list(fn.parameters)
    rng = np.random.RandomState(seed)
    state, outs = fn.forward(args, [out], keep_for_backward=[out])
    y = as_sequences(outs[out])
    weights = [rng.standard_normal(a.shape) for a in y]
    root = weights if isinstance(outs[out], list) else np.stack(weights)
    analytic = fn.backward(state, {out: root}, wrt)
    for v in wrt:
        is_param = v.is_parameter or v.is_constant
        base = np.array(v.value, dtype=np.float64) if is_param else _copy(args[v])
        pieces = base if isinstance(base, list) else [base]

        def put(new_pieces, v=v, is_param=is_param, ragged=isinstance(base, list)):
            val = new_pieces if ragged else new_pieces[0]
            if is_param:
                v.value = val
            else:
                args[v] = val
        got = analytic[v]
        got_pieces = [np.asarray(g, dtype=np.float64) for g in (got if isinstance(got, list) else
                                                                 (as_sequences(got) if isinstance(base, list)
                                                                  else [got]))]
        for k, piece in enumerate(pieces):
            numeric = np.zeros_like(piece)
            for idx in np.ndindex(*piece.shape):
                trial = [p.copy() for p in pieces]
                trial[k][idx] += eps
                put(trial)
                f_plus = _weighted(fn, args, weights)
                trial[k][idx] -= 2 * eps
                put(trial)
                f_minus = _weighted(fn, args, weights)
                numeric[idx] = (f_plus - f_minus) / (2 * eps)
            put([p.copy() for p in pieces])
            g = got_pieces[k].reshape(numeric.shape) if got_pieces[k].size == numeric.size else got_pieces[k]
            np.testing.assert_allclose(g, numeric, rtol=rtol, atol=atol,
                                       err_msg="gradient mismatch for %s (piece %d)" % (v, k))
    return analytic
