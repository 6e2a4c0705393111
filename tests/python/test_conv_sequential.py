"""Convolution along the sequence axis (sequential=True): ops.convolution, the Convolution
layer and SequentialConvolution, over minibatches of sequences of different lengths;
and the refusal of sharing=False."""
import numpy as np
import pytest

import cntk as C
from cntk.layers import Convolution, SequentialConvolution
from seq_harness import as_sequences, random_sequences, seq_gradcheck


def seq_input(shape, dtype=np.float64):
    return C.sequence.input_variable(shape, dtype=dtype)


def param(shape, seed, dtype=np.float64):
    return C.parameter(init=(np.random.RandomState(seed).standard_normal(shape) * 0.5).astype(dtype), dtype=dtype)


def axis_pads(n_in, k, s, d, autopad, lo, hi):
    """(out, lower pad) of one axis, as CNTK's geometry: auto padding centres the windows."""
    span = (k - 1) * d + 1
    if not autopad:
        return (n_in + lo + hi - span) // s + 1, lo
    out = (n_in - 1) // s + 1
    centre = (n_in - ((out - 1) * s + 1)) // 2
    return out, (span - 1) // 2 - centre


def np_conv(x, w, strides, autopad, dilation, lower=None, upper=None):
    """Cross-correlation of x (C, *S) with w (O, C, *k) under CNTK's per-axis geometry."""
    n = x.ndim - 1
    lower = lower or [0] * n
    upper = upper or [0] * n
    outs, los = zip(*[axis_pads(x.shape[1 + i], w.shape[2 + i], strides[i], dilation[i], autopad[i],
                                lower[i], upper[i]) for i in range(n)])
    y = np.zeros((w.shape[0],) + tuple(outs))
    for o_idx in np.ndindex(*outs):
        for tap in np.ndindex(*w.shape[2:]):
            pos = [o_idx[i] * strides[i] + tap[i] * dilation[i] - los[i] for i in range(n)]
            if all(0 <= pos[i] < x.shape[1 + i] for i in range(n)):
                y[(slice(None),) + o_idx] += w[(slice(None), slice(None)) + tap] @ x[(slice(None),) + tuple(pos)]
    return y


def np_sequential(seqs, w, strides, autopad, dilation, lower=None, upper=None, channels=True):
    """CNTK 2.7's sequential convolution: every sequence zero-padded to the longest, the
    sequence axis convolved as the first spatial axis, each result cut to its own length."""
    t_max = max(len(s) for s in seqs)
    out = []
    for s in seqs:
        padded = np.zeros((t_max,) + s.shape[1:])
        padded[:len(s)] = s
        x = np.moveaxis(padded, 0, 1) if channels else padded[None]
        y = np_conv(x, w if channels else w[:, None], strides, autopad, dilation, lower, upper)
        length, _ = axis_pads(len(s), w.shape[-x.ndim + 1], strides[0], dilation[0], autopad[0],
                              (lower or [0])[0], (upper or [0])[0])
        out.append(np.moveaxis(y, 1, 0)[:max(length, 0)])
    return out


def check_sequences(got, want, rtol=1e-10, atol=1e-10):
    got = as_sequences(got, [len(w) for w in want])
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


LENGTHS = (4, 1, 3)


@pytest.mark.parametrize('kw,geometry', [
    (dict(), dict(strides=(1, 1), autopad=(True, True), dilation=(1, 1))),
    (dict(auto_padding=[False, False, True]), dict(strides=(1, 1), autopad=(False, True), dilation=(1, 1))),
    (dict(strides=(2, 1)), dict(strides=(2, 1), autopad=(True, True), dilation=(1, 1))),
    (dict(dilation=(2, 1), auto_padding=[False, True, False]), dict(strides=(1, 1), autopad=(True, False),
                                                                   dilation=(2, 1))),
])
def test_sequential_convolution_matches_numpy(kw, geometry):
    x = seq_input((2, 5))
    w = param((3, 2, 3, 2), seed=1)
    y = C.convolution(w, x, sequential=True, **kw)
    assert len(y.dynamic_axes) == 2 and y.dynamic_axes[1].is_sequence_axis
    seqs = random_sequences(np.random.RandomState(2), LENGTHS, (2, 5))
    want = np_sequential(seqs, np.asarray(w.value), **geometry)
    assert y.shape == want[0].shape[1:]
    check_sequences(y.eval({x: seqs}), want)
    seq_gradcheck(y, {x: seqs}, wrt=[x, w])


def test_sequential_convolution_lengths_follow_each_sequence():
    # no padding along the sequence: L - 2 steps, and none for sequences shorter than the kernel
    x = seq_input((1, 4))
    w = param((1, 1, 3, 1), seed=3)
    y = C.convolution(w, x, sequential=True, auto_padding=[False])
    seqs = random_sequences(np.random.RandomState(4), (5, 2, 3), (1, 4))
    got = as_sequences(y.eval({x: seqs}))
    assert [len(g) for g in got] == [3, 0, 1]
    # a step sees only its own sequence: changing one sequence leaves the others' results alone
    changed = [s.copy() for s in seqs]
    changed[0][:] = 100.0
    again = as_sequences(y.eval({x: changed}))
    np.testing.assert_array_equal(again[2], got[2])
    # with auto padding and stride 2: ceil(L / 2) steps
    y2 = C.convolution(w, x, sequential=True, strides=(2, 1))
    assert [len(g) for g in as_sequences(y2.eval({x: seqs}))] == [3, 1, 2]


def test_sequential_convolution_padding_never_leaks_between_sequences():
    # the last step of a short sequence is convolved with zeros, not with the next steps of a longer one
    x = seq_input((1, 1))
    w = C.constant(np.ones((1, 1, 3, 1)))
    y = C.convolution(w, x, sequential=True)
    seqs = [np.arange(1.0, 6.0).reshape(5, 1, 1), np.array([10.0, 20.0]).reshape(2, 1, 1)]
    got = as_sequences(y.eval({x: seqs}))
    np.testing.assert_array_equal(got[0].ravel(), [3, 6, 9, 12, 9])
    np.testing.assert_array_equal(got[1].ravel(), [30, 30])


def test_sequential_convolution_without_channels_and_explicit_pads():
    x = seq_input((6,))
    w = param((2, 2, 3), seed=5)  # reduction_rank 0: (O, kT, kW)
    y = C.convolution(w, x, sequential=True, reduction_rank=0, auto_padding=[False], lower_pad=(1, 0),
                      upper_pad=(0, 0))
    seqs = random_sequences(np.random.RandomState(6), (3, 2, 5), (6,))
    want = np_sequential(seqs, np.asarray(w.value), strides=(1, 1), autopad=(False, False), dilation=(1, 1),
                         lower=[1, 0], upper=[0, 0], channels=False)
    assert [len(s) for s in want] == [3, 2, 5]
    check_sequences(y.eval({x: seqs}), want)
    seq_gradcheck(y, {x: seqs}, wrt=[x, w])


@pytest.mark.parametrize('attrs,lengths', [
    ({}, [5, 2, 1]),                                                       # auto padding: ceil(L / 1)
    ({'strides': [2, 1]}, [3, 1, 1]),                                      # ceil(L / 2)
    ({'autoPadding': [False]}, [3, 0, 0]),                                 # L - 2, never below 0
    ({'autoPadding': [False], 'lowerPad': [1, 0], 'upperPad': [2, 0]}, [6, 3, 2]),
    ({'autoPadding': [False], 'dilation': [2, 1]}, [1, 0, 0]),             # L - 4
    ({'autoPadding': [False], 'strides': [2, 1]}, [2, 0, 0]),              # floor((L - 3) / 2) + 1
])
def test_convolution_sequence_shape_op(attrs, lengths):
    # the op convolution(sequential=True) takes its output lengths from (CNTK's ConvolutionSequenceShape)
    from cntk.ops._prim import prim
    x = seq_input((2, 4))
    w = C.constant(np.zeros((3, 2, 3, 2)))
    f = prim('ConvolutionSequenceShape', [w, x], dict(attrs, reductionRank=1))
    assert f.shape == (1,) and len(f.dynamic_axes) == 1 and f.dynamic_axes[0].is_batch_axis
    seqs = random_sequences(np.random.RandomState(10), (5, 2, 1), (2, 4))
    np.testing.assert_array_equal(np.asarray(f.eval({x: seqs})).reshape(-1), lengths)


def test_sequential_convolution_saves_and_loads(tmp_path):
    x = seq_input((2, 5))
    w = param((3, 2, 3, 2), seed=11)
    y = C.convolution(w, x, sequential=True, strides=(2, 1))
    seqs = random_sequences(np.random.RandomState(12), LENGTHS, (2, 5))
    path = str(tmp_path / 'seqconv.model')
    y.save(path)
    z = C.load_model(path)
    # ToSequence(conv, StopGradient(ConvolutionSequenceShape(W, x)))
    lengths = z.root_function.inputs[1].owner.root_function
    assert z.root_function.op_name == 'ToSequence' and lengths.op_name == 'StopGradient'
    assert lengths.inputs[0].owner.root_function.op_name == 'ConvolutionSequenceShape'
    check_sequences(z.eval({z.arguments[0]: seqs}), as_sequences(y.eval({x: seqs})))


def test_sequential_convolution_errors():
    w = np.ones((2, 1, 3, 3), np.float32)
    with pytest.raises(ValueError, match='sequence axis'):
        C.convolution(w, C.input_variable((1, 5)), sequential=True)
    with pytest.raises(TypeError):
        C.convolution(w, C.sequence.input_variable((1, 5)), sequential='yes')


def test_sequential_convolution_layer():
    # SequentialConvolution: filter_shape[0] runs along the sequence axis
    x = seq_input((2, 6))
    with C.default_options(dtype=np.float64):
        layer = SequentialConvolution((3, 3), 4, pad=True, init=C.glorot_uniform(seed=1), init_bias=0.5)
    y = layer(x)
    assert layer.W.shape == (4, 2, 3, 3) and layer.b.shape == (4, 1)
    assert y.shape == (4, 6)
    seqs = random_sequences(np.random.RandomState(7), (5, 2), (2, 6))
    want = [s + 0.5 for s in np_sequential(seqs, np.asarray(layer.W.value), (1, 1), (True, True), (1, 1))]
    check_sequences(y.eval({x: seqs}), want)
    seq_gradcheck(y, {x: seqs}, wrt=[x, layer.W, layer.b])
    # strides along the sequence too, without padding
    with C.default_options(dtype=np.float64):
        layer2 = SequentialConvolution((2, 3), 3, strides=(2, 1), init=C.glorot_uniform(seed=2), bias=False)
    y2 = layer2(x)
    want2 = np_sequential(seqs, np.asarray(layer2.W.value), (2, 1), (False, False), (1, 1))
    check_sequences(y2.eval({x: seqs}), want2)


@pytest.mark.parametrize('pad', [True, False])
def test_convolution_layer_sequential(pad):
    # Convolution(sequential=True) windows the sequence (zeros beyond its ends) as CNTK 2.7's
    # layer does; padded, the result keeps the input's sequence axis and lengths
    x = seq_input((2, 5))
    with C.default_options(dtype=np.float64):
        layer = Convolution((3, 3), 4, sequential=True, pad=pad, init=C.glorot_uniform(seed=3), init_bias=0.25,
                            activation=C.tanh)
    y = layer(x)
    assert layer.W.shape == (4, 2, 3, 3)
    seqs = random_sequences(np.random.RandomState(8), (4, 3, 1) if pad else (4, 3), (2, 5))
    geometry = ((1, 1), (pad, pad), (1, 1))
    want = [np.tanh(s + 0.25) for s in np_sequential(seqs, np.asarray(layer.W.value), *geometry)]
    check_sequences(y.eval({x: seqs}), want)
    if pad:
        assert y.dynamic_axes == x.dynamic_axes
        s = (y + x[0:1] * 0).eval({x: seqs})   # same axis: combines with the input step by step
        check_sequences(s, want)
    seq_gradcheck(y, {x: seqs}, wrt=[x, layer.W])


def test_convolution_layer_sequential_scalar_items():
    # reduction_rank=0 and num_filters=None: scalar items in and out, e.g. a filtered signal per step
    x = seq_input((6,))
    with C.default_options(dtype=np.float64):
        layer = Convolution((2, 3), sequential=True, pad=True, reduction_rank=0, init=C.glorot_uniform(seed=4),
                            bias=False)
    y = layer(x)
    assert layer.W.shape == (1, 1, 2, 3) and y.shape == (6,)
    seqs = random_sequences(np.random.RandomState(13), (3, 2), (6,))
    want = [s[:, 0] for s in np_sequential([s[:, None] for s in seqs], np.asarray(layer.W.value), (1, 1),
                                           (True, True), (1, 1))]
    check_sequences(y.eval({x: seqs}), want)
    seq_gradcheck(y, {x: seqs}, wrt=[x, layer.W])


def test_convolution_layer_sequential_strides_are_refused():
    with pytest.raises(NotImplementedError, match='stride'):
        Convolution((3, 3), 4, sequential=True, strides=(2, 1))


def test_sharing_false_is_refused_with_the_reason():
    x = C.input_variable((3, 5, 5))
    w = np.ones((2, 3, 3, 3), np.float32)
    with pytest.raises(NotImplementedError, match='CNTK 2.7'):
        C.convolution(w, x, sharing=[False])
    with pytest.raises(NotImplementedError, match='axis 1'):
        C.convolution(w, x, sharing=[True, True, False])
    # the flag on the channel axis, or on an axis with one output position, changes nothing
    ref = C.convolution(w, x, auto_padding=[False])
    d = np.random.RandomState(9).standard_normal((1, 3, 5, 5)).astype(np.float32)
    same = C.convolution(w, x, sharing=[False, True, True], auto_padding=[False])
    np.testing.assert_array_equal(same.eval({x: d}), ref.eval({x: d}))
    one = C.convolution(np.ones((2, 3, 5, 3), np.float32), x, sharing=[True, False, True], auto_padding=[False])
    assert one.shape == (2, 1, 3)
    for layer in (Convolution, C.layers.ConvolutionTranspose):
        with pytest.raises(NotImplementedError, match='sharing'):
            layer((3, 3), 4, sharing=False)
