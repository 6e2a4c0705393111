"""Sequence criteria: CTC through labels_to_graph and forward_backward, against a
brute-force sum over all alignments, with float64 gradient checks."""
import itertools

import numpy as np
import pytest

import cntk as C
from test_ops_sequence import seq_gradcheck
from op_harness import covers_op

NUM_CLASSES, BLANK = 4, 3


def ctc_labels(tokens, frames, num_classes=NUM_CLASSES):
    """CNTK's per-frame label rows: 2 on a token's first frame, 1 on the frames after it."""
    rows = np.zeros((frames, num_classes))
    for t, k in enumerate(tokens):
        rows[t, k] = 2
    for t in range(len(tokens), frames):
        rows[t, tokens[-1]] = 1
    return rows


def collapse(path, blank=BLANK):
    out = []
    prev = None
    for k in path:
        if k != prev and k != blank:
            out.append(k)
        prev = k
    return out


def ctc_reference(scores, tokens, blank=BLANK):
    """-log p(tokens | scores) by enumerating every path of len(scores) frames."""
    logp = scores - scores.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    total = 0.0
    for path in itertools.product(range(scores.shape[1]), repeat=len(scores)):
        if collapse(path, blank) == list(tokens):
            total += np.exp(sum(logp[t, k] for t, k in enumerate(path)))
    return -np.log(total)


@covers_op('ForwardBackward', 'forward', 'gradient:1')
def test_forward_backward_matches_brute_force_and_gradient():
    rng = np.random.RandomState(0)
    tokens = [[0, 1], [2], [1, 1]]
    frames = [4, 2, 5]
    feats = [rng.standard_normal((n, NUM_CLASSES)) for n in frames]
    labels = [ctc_labels(t, n) for t, n in zip(tokens, frames)]
    x = C.sequence.input_variable(NUM_CLASSES, dtype=np.float64)
    y = C.sequence.input_variable(NUM_CLASSES, dtype=np.float64, sequence_axis=x.dynamic_axes[1])
    fb = C.forward_backward(C.labels_to_graph(y), x, BLANK)
    assert fb.shape == () and len(fb.output.dynamic_axes) == 0
    expected = sum(ctc_reference(f, t) for f, t in zip(feats, tokens))
    np.testing.assert_allclose(fb.eval({x: feats, y: labels}), expected, rtol=1e-10)
    seq_gradcheck(fb, {x: feats, y: labels}, [x], rtol=1e-5, atol=1e-7)


def test_forward_backward_trains():
    rng = np.random.RandomState(1)
    x = C.sequence.input_variable(2)
    y = C.sequence.input_variable(NUM_CLASSES, sequence_axis=x.dynamic_axes[1])
    w = C.parameter((2, NUM_CLASSES), init=C.glorot_uniform(seed=1))
    fb = C.forward_backward(C.labels_to_graph(y), C.times(x, w), BLANK)
    trainer = C.Trainer(fb, (fb, None), [C.sgd([w], C.learning_parameter_schedule(0.5))])
    feats = [rng.standard_normal((5, 2)).astype(np.float32) for _ in range(4)]
    labels = [ctc_labels([0, 1], 5).astype(np.float32) for _ in range(4)]
    losses = []
    for _ in range(20):
        trainer.train_minibatch({x: feats, y: labels})
        losses.append(trainer.previous_minibatch_loss_average)
    assert losses[-1] < losses[0]


def test_forward_backward_errors():
    x = C.sequence.input_variable(NUM_CLASSES, dtype=np.float64)
    y = C.sequence.input_variable(NUM_CLASSES, dtype=np.float64, sequence_axis=x.dynamic_axes[1])
    with pytest.raises(ValueError):
        C.forward_backward(C.labels_to_graph(y), x, NUM_CLASSES)
    with pytest.raises(ValueError, match="delayConstraint"):
        C.forward_backward(C.labels_to_graph(y), x, BLANK, delayConstraint=-2)
    with pytest.raises(TypeError):
        C.forward_backward(C.labels_to_graph(y), x, BLANK, delayConstraint=1.0)
    with pytest.raises(TypeError):
        C.forward_backward(C.labels_to_graph(y), x, 1.5)
    fb = C.forward_backward(C.labels_to_graph(y), x, BLANK)
    # Three tokens with a repeat need at least four frames.
    with pytest.raises(ValueError):
        fb.eval({x: [np.zeros((3, NUM_CLASSES))], y: [ctc_labels([1, 1, 2], 3)]})


# ------------------------------------------------------------ delayConstraint

def ctc_labels_at(tokens, frames, length, num_classes=NUM_CLASSES):
    """Label rows with token k's 2 on frame frames[k] and 1s on the frames up to the next token."""
    rows = np.zeros((length, num_classes))
    for k, (tok, f) in enumerate(zip(tokens, frames)):
        end = frames[k + 1] if k + 1 < len(frames) else length
        rows[f:end, tok] = 1
        rows[f, tok] = 2
    return rows


def alignment_states(path, blank=BLANK):
    """The position of each frame of a path in the extended label sequence
    (blank, l1, blank, l2, ..., blank): 2k - 1 on token k, 2k on the blank after it."""
    states, emitted, prev = [], 0, None
    for k in path:
        if k != blank:
            if k != prev:
                emitted += 1
            states.append(2 * emitted - 1)
        else:
            states.append(2 * emitted)
        prev = k
    return states


def delay_allows(states, frames, length, delay):
    """CNTK's delay rule on one alignment: for every token k but the last, the path may
    sit on token k until frame f_{k+1} + delay and on the blank before it until
    f_{k+1} + delay - 1 (f_{k+1}: the next token's reference frame)."""
    if delay == -1:
        return True
    for t, s in enumerate(states):
        if s % 2 == 1:                       # token k = (s + 1) / 2
            k = (s + 1) // 2
            limit = frames[k] + delay if k < len(frames) else length
        else:                                 # blank before token k = s / 2 + 1
            k = s // 2 + 1
            limit = frames[k] + delay - 1 if k < len(frames) else length
        if t > limit:
            return False
    return True


def ctc_delay_reference(scores, tokens, frames, delay, blank=BLANK):
    """-log p and its gradient (softmax - posterior) by enumerating every alignment."""
    logp = scores - scores.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    total, occupancy = 0.0, np.zeros_like(scores)
    for path in itertools.product(range(scores.shape[1]), repeat=len(scores)):
        if collapse(path, blank) != list(tokens):
            continue
        if not delay_allows(alignment_states(path, blank), frames, len(scores), delay):
            continue
        p = np.exp(sum(logp[t, k] for t, k in enumerate(path)))
        total += p
        for t, k in enumerate(path):
            occupancy[t, k] += p
    return -np.log(total), np.exp(logp) - occupancy / total


DELAY_CASES = [  # tokens, their reference frames, sequence length
    ([0, 1, 2], [0, 2, 3], 6),
    ([1, 1], [1, 3], 5),
    ([2, 0], [0, 1], 4),
]


@pytest.mark.parametrize("delay", [0, 1, 2, 100])
def test_forward_backward_delay_constraint_matches_brute_force(delay):
    rng = np.random.RandomState(delay)
    feats = [rng.standard_normal((n, NUM_CLASSES)) for _, _, n in DELAY_CASES]
    labels = [ctc_labels_at(t, f, n) for t, f, n in DELAY_CASES]
    x = C.sequence.input_variable(NUM_CLASSES, dtype=np.float64)
    y = C.sequence.input_variable(NUM_CLASSES, dtype=np.float64, sequence_axis=x.dynamic_axes[1])
    fb = C.forward_backward(C.labels_to_graph(y), x, BLANK, delayConstraint=delay)
    refs = [ctc_delay_reference(f, t, fr, delay) for f, (t, fr, _) in zip(feats, DELAY_CASES)]
    np.testing.assert_allclose(fb.eval({x: feats, y: labels}), sum(r[0] for r in refs), rtol=1e-10)
    grads = fb.grad({x: feats, y: labels}, wrt=[x])
    for got, (_, want) in zip(grads, refs):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
    seq_gradcheck(fb, {x: feats, y: labels}, [x], rtol=1e-5, atol=1e-7)
    # A constraint tightens the set of alignments: the loss is never below the unconstrained one.
    free = sum(ctc_reference(f, t) for f, (t, _, _) in zip(feats, DELAY_CASES))
    assert sum(r[0] for r in refs) >= free - 1e-12
    if delay == 100:
        np.testing.assert_allclose(sum(r[0] for r in refs), free, rtol=1e-12)


def test_forward_backward_delay_constraint_really_cuts_alignments():
    # Scores that favour emitting token 0 late: the delay limit must change the loss.
    tokens, frames, n = [0, 1], [0, 1], 5
    scores = np.zeros((n, NUM_CLASSES))
    scores[:3, BLANK] = 4.0
    scores[3, 0] = 4.0
    scores[4, 1] = 4.0
    x = C.sequence.input_variable(NUM_CLASSES, dtype=np.float64)
    y = C.sequence.input_variable(NUM_CLASSES, dtype=np.float64, sequence_axis=x.dynamic_axes[1])
    args = {x: [scores], y: [ctc_labels_at(tokens, frames, n)]}
    # Token 0 may be emitted until frame f_2 + D = 1 + D, the blank before it until D.
    losses = [C.forward_backward(C.labels_to_graph(y), x, BLANK, delayConstraint=d).eval(args)
              for d in (-1, 2, 1, 0)]
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-12)  # the favoured path still fits
    assert losses[1] < losses[2] < losses[3]
    for d, loss in zip((1, 0), losses[2:]):
        np.testing.assert_allclose(loss, ctc_delay_reference(scores, tokens, frames, d)[0], rtol=1e-10)


def test_forward_backward_delay_constraint_without_room_is_an_error():
    # Three 1s need blanks between them, so the third is reached at frame 4 at the earliest,
    # but delay 0 with the next token marked at frame 3 requires leaving it by frame 3.
    x = C.sequence.input_variable(NUM_CLASSES, dtype=np.float64)
    y = C.sequence.input_variable(NUM_CLASSES, dtype=np.float64, sequence_axis=x.dynamic_axes[1])
    tokens, frames = [1, 1, 1, 2], [0, 1, 2, 3]
    args = {x: [np.zeros((6, NUM_CLASSES))], y: [ctc_labels_at(tokens, frames, 6)]}
    assert np.isfinite(C.forward_backward(C.labels_to_graph(y), x, BLANK, delayConstraint=1).eval(args))
    fb = C.forward_backward(C.labels_to_graph(y), x, BLANK, delayConstraint=0)
    with pytest.raises(ValueError, match="delayConstraint 0"):
        fb.eval(args)


def test_forward_backward_delay_constraint_survives_save_and_load(tmp_path):
    x = C.sequence.input_variable(NUM_CLASSES, dtype=np.float64, name='x')
    y = C.sequence.input_variable(NUM_CLASSES, dtype=np.float64, sequence_axis=x.dynamic_axes[1], name='y')
    fb = C.forward_backward(C.labels_to_graph(y), x, BLANK, delayConstraint=1)
    path = str(tmp_path / 'ctc.model')
    fb.save(path)
    loaded = C.Function.load(path)
    tokens, frames, n = DELAY_CASES[0]
    feats = np.random.RandomState(3).standard_normal((n, NUM_CLASSES))
    by_name = {a.name: a for a in loaded.arguments}
    got = loaded.eval({by_name['x']: [feats], by_name['y']: [ctc_labels_at(tokens, frames, n)]})
    np.testing.assert_allclose(got, ctc_delay_reference(feats, tokens, frames, 1)[0], rtol=1e-10)


# ------------------------------------------- cosine_distance_with_negative_samples

def cosine_negative_reference(x, y, shift, n):
    def cos(a, b):
        return a @ b / np.sqrt((a @ a) * (b @ b))
    N = len(x)
    return np.array([[cos(x[j], y[j if k == 0 else (j + shift + k - 1) % N]) for k in range(n + 1)]
                     for j in range(N)])


def test_cosine_distance_with_negative_samples_cntk_example():
    qry = np.asarray([1., 1., 0., 0., 0., 1., 1., 0., 0., 0., 1., 1.], dtype=np.float32).reshape(3, 1, 4)
    doc = qry.copy()
    x = C.sequence.input_variable(shape=(4,))
    y = C.sequence.input_variable(shape=(4,))
    model = C.cosine_distance_with_negative_samples(x, y, shift=1, num_negative_samples=2)
    got = np.round(np.asarray(model.eval({x: qry, y: doc})), 4)
    np.testing.assert_allclose(got, [[[1., 0.5, 0.]], [[1., 0.5, 0.5]], [[1., 0., 0.5]]])


@covers_op('CosDistanceWithNegativeSamples', 'forward', 'gradient:0', 'gradient:1')
@pytest.mark.parametrize('shift,n', [(1, 2), (2, 3), (3, 1)])
def test_cosine_distance_with_negative_samples_forward_and_gradient(shift, n):
    rng = np.random.RandomState(shift)
    x = C.input_variable(3, dtype=np.float64)
    y = C.input_variable(3, dtype=np.float64)
    xd, yd = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    f = C.cosine_distance_with_negative_samples(x, y, shift, n)
    assert f.shape == (n + 1,)
    np.testing.assert_allclose(f.eval({x: xd, y: yd}), cosine_negative_reference(xd, yd, shift, n), rtol=1e-10)
    seq_gradcheck(f, {x: xd, y: yd}, [x, y])


def test_cosine_distance_with_negative_samples_arguments():
    x = C.input_variable(3)
    with pytest.raises(ValueError):
        C.cosine_distance_with_negative_samples(x, x, 0, 2)
    with pytest.raises(ValueError):
        C.cosine_distance_with_negative_samples(x, x, 1, 1.5)
    with pytest.raises(ValueError):
        C.cosine_distance_with_negative_samples(x, C.input_variable(4), 1, 1)


# ------------------------------------------------------------ edit_distance_error

def levenshtein(a, b):
    d = np.arange(len(b) + 1, dtype=float)
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return d[-1]


def labels_to_rows(labels, n=5):
    return np.eye(n)[labels]


@covers_op('EditDistanceError', 'forward')
def test_edit_distance_error_unit_penalties():
    x = C.sequence.input_variable(5)
    y = C.sequence.input_variable(5, sequence_axis=x.dynamic_axes[1])
    f = C.edit_distance_error(x, y)
    a = [[0, 1, 2, 3], [4, 4], [1, 2, 3]]
    b = [[0, 2, 2, 3], [1, 4], [3, 2, 1]]
    errors = sum(levenshtein(p, q) for p, q in zip(a, b))
    frames = sum(len(p) for p in a)
    got = f.eval({x: [labels_to_rows(p) for p in a], y: [labels_to_rows(q) for q in b]})
    np.testing.assert_allclose(got, errors * frames / frames, rtol=1e-6)
    assert C.edit_distance_error(x, y).output.dynamic_axes == ()


def test_edit_distance_error_squash_and_ignore():
    # CNTK's docstring example: s1 = "1-12-", s2 = "-11--122" with '-' ignored and
    # repeats merged compare "112" with "112": no errors.
    dash = 4
    s1, s2 = [1, dash, 1, 2, dash], [dash, 1, 1, dash, dash, 1, 2, 2]
    x = C.sequence.input_variable(5)
    y = C.sequence.input_variable(5, sequence_axis=x.dynamic_axes[1])
    f = C.edit_distance_error(x, y, squashInputs=True, tokensToIgnore=[dash])
    n = max(len(s1), len(s2))
    pad1, pad2 = s1 + [dash] * (n - len(s1)), s2 + [dash] * (n - len(s2))  # same length, ignored padding
    assert float(f.eval({x: [labels_to_rows(pad1)], y: [labels_to_rows(pad2)]})) == 0
    # Without squashing "1112" vs "1112" after dropping dashes... differs in count of ones.
    g = C.edit_distance_error(x, y, tokensToIgnore=[dash])
    got = float(g.eval({x: [labels_to_rows(pad1)], y: [labels_to_rows(pad2)]}))
    # divided by the labels of the second input, as CNTK
    np.testing.assert_allclose(got, levenshtein([1, 1, 2], [1, 1, 1, 2, 2]) * n / 5, rtol=1e-6)


def test_edit_distance_error_penalties_choose_the_alignment():
    x = C.sequence.input_variable(5)
    y = C.sequence.input_variable(5, sequence_axis=x.dynamic_axes[1])
    a, b = [[0, 1, 2]], [[1, 2, 3]]
    data = {x: [labels_to_rows(p) for p in a], y: [labels_to_rows(q) for q in b]}
    # Unit penalties: delete 0 and insert 3 (2 edits) beats three substitutions.
    np.testing.assert_allclose(C.edit_distance_error(x, y, 1, 1, 1).eval(data), 2.0)
    # Free substitutions: three of them (3 edits) cost nothing.
    np.testing.assert_allclose(C.edit_distance_error(x, y, 0, 1, 1).eval(data), 3.0)
    with pytest.raises(ValueError):
        C.edit_distance_error(x, y, tokensToIgnore=[-1])
    with pytest.raises(TypeError):
        C.edit_distance_error(x, y, subPen='a')
