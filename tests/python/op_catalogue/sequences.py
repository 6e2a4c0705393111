"""Sequence ops. Cases of the op conformance table (op_catalogue/__init__.py)."""

import numpy as np

import cntk as C
from op_harness import f64_input
from seq_harness import random_sequences
from op_catalogue.common import Built, case, F64, LENGTHS, RULE, seq_input, ZERO
from op_catalogue.nn import _softmax


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
