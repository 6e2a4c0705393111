"""Model files in CNTK's v2 format: Function.save / load_model / Function.load / Function.restore.

Round trips for every op family (identical outputs and gradients after save + load), CNTK's own
files from ../shared/data/cntk-files/v2, and bad files (truncated, corrupted, foreign)."""
import os
import re

import numpy as np
import pytest

import cntk as C
from cntk import _cntk
from op_harness import f64_input


def _reload(f, tmp_path, via='file'):
    if via == 'bytes':
        return C.load_model(_cntk.save_model_to_bytes(f))
    path = str(tmp_path / 'model.cntk')
    f.save(path)
    return C.load_model(path)


def _match(vars_a, vars_b):
    """Pairs the variables of an original and a loaded graph by uid (loading keeps uids)."""
    by_uid = {v.uid: v for v in vars_b}
    assert sorted(by_uid) == sorted(v.uid for v in vars_a)
    return {v: by_uid[v.uid] for v in vars_a}


def _assert_same_outputs_and_gradients(f, g, args, grads=True):
    args_g = {}
    amap = _match(f.arguments, g.arguments)
    for v, d in args.items():
        args_g[amap[v]] = d
    outs_f = f.outputs
    outs_g = [g.outputs[i] for i in range(len(outs_f))]
    for of, og in zip(outs_f, outs_g):
        assert tuple(of.shape) == tuple(og.shape)
        a = f.eval(args, outputs=[of])
        b = g.eval(args_g, outputs=[og])
        if isinstance(a, list):  # sequences of different lengths
            assert len(a) == len(b)
            for sa, sb in zip(a, b):
                np.testing.assert_array_equal(np.asarray(sa), np.asarray(sb))
        else:
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    if not grads:
        return
    out_f, out_g = f.outputs[0], g.outputs[0]
    wrt_f = [v for v in list(args) + list(f.parameters) if v.needs_gradient or v.is_parameter]
    pmap = _match(f.parameters, g.parameters)
    wrt_g = [amap[v] if v in amap else pmap[v] for v in wrt_f]
    state, outs = f.forward(args, [out_f], keep_for_backward=[out_f])
    y = outs[out_f]
    rng = np.random.RandomState(3)
    w = [rng.standard_normal(np.shape(s)) for s in y] if isinstance(y, list) else rng.standard_normal(np.shape(y))
    gf = f.backward(state, {out_f: w}, wrt_f)
    state, _ = g.forward(args_g, [out_g], keep_for_backward=[out_g])
    gg = g.backward(state, {out_g: w}, wrt_g)
    for vf, vg in zip(wrt_f, wrt_g):
        a, b = gf[vf], gg[vg]
        if isinstance(a, list):
            for sa, sb in zip(a, b):
                np.testing.assert_array_equal(np.asarray(sa), np.asarray(sb))
        else:
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _x(shape=(2, 3), needs_gradient=True, name='x'):
    return C.input_variable(shape, dtype=np.float64, needs_gradient=needs_gradient, name=name)


def _data(shape, batch=2, positive=False, seed=0):
    d = np.random.RandomState(seed).standard_normal((batch,) + tuple(shape))
    return np.abs(d) + 0.5 if positive else d


def _unary(op, positive=False, small=False):
    def build():
        x = _x()
        d = _data((2, 3), positive=positive)
        if small:
            d = np.clip(d, -0.9, 0.9) * 0.9
        return op(x), {x: d}
    return build


def _binary(op, positive=False):
    def build():
        x, y = _x(name='x'), _x(name='y')
        return op(x, y), {x: _data((2, 3), positive=positive), y: _data((2, 3), positive=positive, seed=1)}
    return build


def _dense():
    x = _x((4,))
    w = C.parameter((4, 3), dtype=np.float64, init=C.glorot_uniform(seed=1), name='W')
    b = C.parameter((3,), dtype=np.float64, init=0.5, name='b')
    return C.tanh(C.times(x, w) + b), {x: _data((4,))}


def _layers_dense():
    x = _x((4,))
    model = C.layers.Sequential([C.layers.Dense(5, activation=C.relu), C.layers.Dense(2)])
    return model(x), {x: _data((4,))}


def _as_block():
    x = _x((3,))
    p = C.placeholder()
    inner = C.sigmoid(p) * C.constant(2.0, dtype=np.float64) + C.parameter((3,), dtype=np.float64, init=0.25)
    return C.as_block(inner, [(p, x)], 'MyBlock', 'blk'), {x: _data((3,))}


def _combine():
    x = _x((3,))
    return C.combine([C.exp(x), C.sin(x)]), {x: _data((3,))}


def _reduce(op, **kw):
    def build():
        x = _x((2, 3, 4))
        return op(x, **kw), {x: _data((2, 3, 4))}
    return build


def _movement(fn, shape=(2, 3, 4)):
    def build():
        x = _x(shape)
        return fn(x), {x: _data(shape)}
    return build


def _gather():
    ref = C.parameter((5, 3), dtype=np.float64, init=C.glorot_uniform(seed=3))
    idx = C.input_variable((2,), dtype=np.float64, name='idx')
    return C.gather(ref, idx, axis=0), {idx: np.array([[0, 4], [2, 2]], dtype=np.float64)}


def _one_hot():
    x = C.input_variable((3,), dtype=np.float64, name='idx')
    return C.one_hot(x, 4, axis=0) * 2.0, {x: np.array([[0, 3, 1], [2, 2, 0]], dtype=np.float64)}


def _cos_negative():
    x, y = _x((4,), name='x'), C.input_variable((4,), dtype=np.float64, needs_gradient=True, name='y')
    f = C.cosine_distance_with_negative_samples(x, y, shift=1, num_negative_samples=2)
    return f, {x: _data((4,), batch=4), y: _data((4,), batch=4, seed=5)}


def _loss(op):
    def build():
        z, y = _x((5,), name='z'), C.input_variable((5,), dtype=np.float64, name='y')
        labels = np.eye(5)[[1, 3]]
        return op(z, y), {z: _data((5,)), y: labels}
    return build


def _sequence():
    x = C.sequence.input_variable((3,), dtype=np.float64, needs_gradient=True, name='s')
    w = C.parameter((3, 2), dtype=np.float64, init=C.glorot_uniform(seed=2))
    data = [np.random.RandomState(1).standard_normal((4, 3)), np.random.RandomState(2).standard_normal((2, 3))]
    return C.tanh(C.times(x, w)), {x: data}


# ------------------------------------------------ convolution, pooling, unpooling, ROI pooling
# Asymmetric per-axis attributes, so that an axis-order mistake in the file changes the result.

def _conv_input(shape=(2, 6, 7)):
    x = _x(shape)
    return x, {x: _data(shape)}


def _kernel(shape, seed=1, name='W'):
    return C.parameter(shape, dtype=np.float64, init=C.glorot_uniform(seed=seed), name=name)


def _convolution():
    x, args = _conv_input()
    f = C.convolution(_kernel((3, 2, 3, 2)), x, strides=(1, 2), auto_padding=[False, True, False],
                      dilation=(1, 2))
    return f, args


def _convolution_pads():
    x, args = _conv_input()
    f = C.convolution(_kernel((3, 2, 2, 3)), x, strides=(2, 1), auto_padding=[False],
                      lower_pad=(0, 1, 0), upper_pad=(0, 0, 2))
    return f, args


def _convolution_groups():
    x, args = _conv_input((4, 5, 6))
    return C.convolution(_kernel((6, 2, 3, 1)), x, groups=2, auto_padding=[False, False, True]), args


def _convolution_reduction_rank_0():
    x, args = _conv_input((5, 6))
    return C.convolution(_kernel((2, 3, 2)), x, reduction_rank=0, strides=(2, 1)), args


def _convolution_reduction_rank_0_auto_padding():
    x, args = _conv_input((5, 6))
    f = C.convolution(_kernel((3, 2, 3)), x, reduction_rank=0, strides=(1, 2), auto_padding=[False, True])
    return f, args


def _convolution_transpose_reduction_rank_0():
    x, args = _conv_input((3, 4))
    return C.convolution_transpose(_kernel((2, 3, 2)), x, reduction_rank=0, strides=(2, 1)), args


def _convolution_transpose():
    x, args = _conv_input((2, 4, 3))
    f = C.convolution_transpose(_kernel((2, 3, 3, 2)), x, strides=(2, 1), auto_padding=[False, True, False],
                                output_shape=(3, 8, 4))
    return f, args


def _pooling(kind, **kw):
    def build():
        x, args = _conv_input((2, 7, 6))
        return C.pooling(x, kind, (3, 2), **kw), args
    return build


def _unpooling():
    x, args = _conv_input((2, 6, 4))
    y = C.pooling(x, C.MAX_POOLING, (2, 2), (2, 1), auto_padding=[False, True])
    return C.unpooling(y * 2.0, x, C.MAX_UNPOOLING, (2, 2), (2, 1), auto_padding=[False, True]), args


def _roipooling():
    x, args = _conv_input((2, 8, 9))
    r = C.input_variable((2, 4), dtype=np.float64, name='rois')
    args[r] = np.array([[[0, 0, 7, 5], [2, 1, 8, 7]], [[1, 2, 6, 6], [0, 0, 8, 8]]], dtype=np.float64)
    return C.roipooling(x, r, C.MAX_POOLING, (2, 3), 0.5), args


def _layers_cnn():
    x, args = _conv_input((1, 8, 8))
    model = C.layers.Sequential([
        C.layers.Convolution2D((3, 3), 4, pad=True, activation=C.relu, init=C.glorot_uniform(seed=1)),
        C.layers.MaxPooling((2, 2), strides=(2, 2)),
        C.layers.Convolution((2, 3), 3, strides=(1, 2), init=C.glorot_uniform(seed=2)),
        C.layers.AveragePooling((2, 1), pad=True),
        C.layers.Dense(5, init=C.glorot_uniform(seed=3))])
    return model(x), args


# ------------------------------------------------ normalization

def _batch_normalization(spatial):
    def build():
        x, args = _conv_input((2, 3, 4))
        shape = (2,) if spatial else (2, 3, 4)
        rng = np.random.RandomState(5)
        scale = C.parameter(shape, dtype=np.float64, init=rng.uniform(0.5, 1.5, shape))
        bias = C.parameter(shape, dtype=np.float64, init=rng.standard_normal(shape))
        mean = C.constant(rng.standard_normal(shape) * 0.1, dtype=np.float64)
        var = C.constant(rng.uniform(0.5, 2.0, shape), dtype=np.float64)
        count = C.constant(7.0, shape=(), dtype=np.float64)
        f = C.batch_normalization(x, scale, bias, mean, var, spatial, normalization_time_constant=100,
                                  blend_time_constant=3, epsilon=1e-3, running_count=count)
        return f, args
    return build


def _layers_batch_norm():
    x, args = _conv_input((2, 3, 4))
    return C.layers.BatchNormalization(map_rank=1)(x), args


ROUND_TRIPS_NORM = {
    'batch_normalization': _batch_normalization(False),
    'batch_normalization_spatial': _batch_normalization(True),
    'layers_batch_normalization': _layers_batch_norm,
    'local_response_normalization': _movement(lambda x: C.local_response_normalization(x, 1, 1.0, 0.1, 0.75),
                                              shape=(4, 3, 3)),
    # a window (2 * 3 + 1) wider than the channels: CNTK cuts its kernel to the channels
    'local_response_normalization_wide': _movement(lambda x: C.local_response_normalization(x, 3, 2.0, 0.5, 0.6),
                                                   shape=(3, 2, 4)),
    'crop_manual': _movement(lambda x: C.crop_manual(x, C.slice(C.slice(x, 1, 0, 2), 2, 0, 3), 1, 2),
                             shape=(2, 4, 5)),
    'depth_to_space': _movement(lambda x: C.depth_to_space(x, 2), shape=(8, 2, 3)),
    'space_to_depth': _movement(lambda x: C.space_to_depth(x, 2), shape=(2, 4, 6)),
    'image_scaler': _movement(lambda x: C.image_scaler(x, 1.5, [0.5, -1.0]), shape=(2, 3, 4)),
    'mean_variance_normalization': _movement(lambda x: C.mean_variance_normalization(x, epsilon=1e-3),
                                             shape=(2, 3, 4)),
}


# ------------------------------------------------ sequence ops

def _seq(dim=3, name='s', lengths=(4, 2, 3), seed=1, **kw):
    x = C.sequence.input_variable((dim,), dtype=np.float64, needs_gradient=True, name=name, **kw)
    rng = np.random.RandomState(seed)
    return x, [rng.standard_normal((n, dim)) for n in lengths]


def _seq_case(fn, dim=3):
    def build():
        x, data = _seq(dim)
        return fn(x), {x: data}
    return build


def _gather_scatter():
    x, data = _seq()
    cond = C.greater(C.reduce_sum(x), 0)
    picked = C.sequence.gather(x, cond)
    return C.sequence.scatter(C.tanh(picked), cond) + x, {x: data}


def _to_sequence():
    x = C.input_variable((4, 3), dtype=np.float64, needs_gradient=True, name='padded')
    n = C.input_variable((), dtype=np.float64, name='lengths')
    seq = C.to_sequence(x, n)
    return C.sequence.reduce_sum(C.exp(seq)), {x: _data((4, 3)), n: np.array([4.0, 2.0])}


def _ctc():
    x, data = _seq(4, name='frames', lengths=(4, 3))
    y = C.sequence.input_variable(4, dtype=np.float64, sequence_axis=x.dynamic_axes[1], name='labels')
    w = _kernel((4, 4), seed=4)
    labels = [np.zeros((4, 4)), np.zeros((3, 4))]
    labels[0][0, 1], labels[0][1, 2], labels[0][2:, 2] = 2, 2, 1
    labels[1][0, 0], labels[1][1:, 0] = 2, 1
    return C.forward_backward(C.labels_to_graph(y), C.times(x, w), 3), {x: data, y: labels}


def _edit_distance():
    x = C.sequence.input_variable(4, dtype=np.float64, name='a')
    y = C.sequence.input_variable(4, dtype=np.float64, sequence_axis=x.dynamic_axes[1], name='b')
    a = [np.eye(4)[[0, 1, 2, 3]], np.eye(4)[[3, 3]]]
    b = [np.eye(4)[[0, 2, 2, 3]], np.eye(4)[[1, 3]]]
    return C.edit_distance_error(x, y, 1.0, 2.0, 1.5, True, [3]), {x: a, y: b}


def _recurrence(cell):
    def build():
        x, data = _seq(3)
        model = C.layers.Sequential([C.layers.Recurrence(cell(), go_backwards=cell is C.layers.GRU),
                                     C.layers.Dense(2, init=C.glorot_uniform(seed=7))])
        return model(x), {x: data}
    return build


def _lstm():
    return C.layers.LSTM(4, init=C.glorot_uniform(seed=3))


def _gru():
    return C.layers.GRU(4, init=C.glorot_uniform(seed=3))


def _rnn_step():
    return C.layers.RNNStep(4, init=C.glorot_uniform(seed=3))


def _fold():
    x, data = _seq(3)
    return C.layers.Fold(C.layers.GRU(4, init=C.glorot_uniform(seed=5)))(x), {x: data}


def _explicit_loop():
    x, data = _seq(3)
    p = C.placeholder()
    h = C.tanh(x * 0.5 + C.sequence.past_value(p, initial_state=0.25) * 0.8)
    h.replace_placeholders({p: h.output})
    return C.sequence.last(h) * 2.0, {x: data}


ROUND_TRIPS_SEQUENCE = {
    'sequence_where_gather_scatter': _gather_scatter,
    'sequence_where': _seq_case(lambda x: C.sequence.where(C.greater(C.reduce_sum(x), 0))),
    'sequence_slice': _seq_case(lambda x: C.sequence.slice(x, 1, -1)),
    'sequence_slice_from': _seq_case(lambda x: C.sequence.slice(x, 1, 0)),
    'sequence_slice_to': _seq_case(lambda x: C.sequence.slice(x, 0, 2)),
    'sequence_slice_negative': _seq_case(lambda x: C.sequence.slice(x, -2, -1)),
    'sequence_slice_tail': _seq_case(lambda x: C.sequence.slice(x, -2, 0)),
    'sequence_slice_head_to_end': _seq_case(lambda x: C.sequence.slice(x, 0, -1)),
    'sequence_slice_mixed': _seq_case(lambda x: C.sequence.slice(x, -3, 3)),
    'sequence_first_last': _seq_case(lambda x: C.sequence.first(x) * C.sequence.last(x)),
    'sequence_unpack': _seq_case(lambda x: C.sequence.unpack(x, 0.5, no_mask_output=True)),
    'sequence_reduce': _seq_case(lambda x: C.sequence.reduce_sum(x) + C.sequence.reduce_max(x)),
    'sequence_softmax': _seq_case(C.sequence.softmax),
    'sequence_broadcast_as': _seq_case(lambda x: C.sequence.broadcast_as(C.sequence.first(x), x) * x),
    'sequence_is_first_last': _seq_case(lambda x: x * C.sequence.is_first(x) + x * C.sequence.is_last(x) * 2.0),
    'to_sequence': _to_sequence,
    'past_value': _seq_case(lambda x: C.sequence.past_value(x, time_step=2, initial_state=0.5) * x),
    'future_value': _seq_case(lambda x: C.sequence.future_value(x) + x),
    'delay': _seq_case(lambda x: C.sequence.delay(x, -1) - C.sequence.delay(x, 1)),
    'forward_backward_ctc': _ctc,
    'edit_distance_error': _edit_distance,
    # recurrent loops: cycles through PastValue / FutureValue
    'recurrence_lstm': _recurrence(_lstm), 'recurrence_gru': _recurrence(_gru),
    'recurrence_rnn_step': _recurrence(_rnn_step), 'fold_gru': _fold, 'explicit_past_value_loop': _explicit_loop,
}


ROUND_TRIPS_CONV = {
    'convolution': _convolution, 'convolution_pads': _convolution_pads, 'convolution_groups': _convolution_groups,
    'convolution_reduction_rank_0': _convolution_reduction_rank_0, 'convolution_transpose': _convolution_transpose,
    'convolution_reduction_rank_0_auto_padding': _convolution_reduction_rank_0_auto_padding,
    'convolution_transpose_reduction_rank_0': _convolution_transpose_reduction_rank_0,
    'pooling_max': _pooling(C.MAX_POOLING, strides=(2, 1), auto_padding=[False, True]),
    'pooling_average': _pooling(C.AVG_POOLING, strides=(1, 2), auto_padding=[True, False], include_pad=True),
    'pooling_ceil': _pooling(C.MAX_POOLING, strides=(2, 2), ceil_out_dim=True),
    'unpooling': _unpooling, 'roipooling': _roipooling, 'layers_cnn': _layers_cnn,
}


ROUND_TRIPS = {
    # elementwise
    'plus': _binary(C.plus), 'minus': _binary(C.minus), 'element_times': _binary(C.element_times),
    'element_divide': _binary(C.element_divide, positive=True), 'pow': _binary(C.pow, positive=True),
    'log_add_exp': _binary(C.log_add_exp), 'element_max': _binary(C.element_max),
    'negate': _unary(C.negate), 'exp': _unary(C.exp), 'log': _unary(C.log, positive=True),
    'sqrt': _unary(C.sqrt, positive=True), 'abs': _unary(C.abs), 'reciprocal': _unary(C.reciprocal, positive=True),
    'floor': _unary(C.floor), 'sin': _unary(C.sin), 'cos': _unary(C.cos), 'tan': _unary(C.tan, small=True),
    'asin': _unary(C.asin, small=True), 'acos': _unary(C.acos, small=True), 'atan': _unary(C.atan),
    'sinh': _unary(C.sinh), 'cosh': _unary(C.cosh), 'asinh': _unary(C.asinh), 'atanh': _unary(C.atanh, small=True),
    'tanh': _unary(C.tanh), 'sigmoid': _unary(C.sigmoid), 'relu': _unary(C.relu), 'elu': _unary(C.elu),
    'selu': _unary(C.selu), 'leaky_relu': _unary(lambda x: C.leaky_relu(x, alpha=0.3)),
    'hard_sigmoid': _unary(lambda x: C.hard_sigmoid(x, alpha=0.3, beta=0.4)), 'softplus': _unary(C.softplus),
    'clip': _unary(lambda x: C.clip(x, -0.5, 0.5)),
    'select': _binary(lambda x, y: C.element_select(C.greater(x, y), x, y)),
    'comparisons': _binary(lambda x, y: C.equal(x, y) + C.less(x, y) * 2 + C.greater_equal(x, y) * 4 +
                           C.not_equal(x, y) * 8 + C.less_equal(x, y) * 16 + C.greater(x, y) * 32),
    'logical': _binary(lambda x, y: C.element_and(x, y) + C.element_or(x, y) * 2 + C.element_xor(x, y) * 4 +
                       C.element_not(x) * 8),
    # linear algebra, blocks, combine
    'times': _dense, 'layers_dense': _layers_dense, 'as_block': _as_block, 'combine': _combine,
    # reductions
    'reduce_sum': _reduce(C.reduce_sum, axis=1), 'reduce_mean': _reduce(C.reduce_mean, axis=(0, 2)),
    'reduce_max': _reduce(C.reduce_max, axis=-1), 'reduce_min': _reduce(C.reduce_min, axis=0),
    'reduce_prod': _reduce(C.reduce_prod, axis=2), 'reduce_log_sum_exp': _reduce(C.reduce_log_sum_exp, axis=1),
    'reduce_all_static': _reduce(C.reduce_sum), 'argmax': _reduce(C.argmax, axis=1),
    # movement
    'reshape': _movement(lambda x: C.reshape(x, (4, 6))),
    'reshape_range': _movement(lambda x: C.reshape(x, (12,), begin_axis=1)),
    'reshape_mid': _movement(lambda x: C.reshape(x, (6,), begin_axis=0, end_axis=2)),
    'reshape_inferred': _movement(lambda x: C.reshape(x, (-1, 2))),
    'slice': _movement(lambda x: C.slice(x, 1, 1, 3)),
    'slice_multi': _movement(lambda x: C.slice(x, [0, 2], [0, 1], [2, 4], [1, 2])),
    'slice_negative_axis': _movement(lambda x: C.slice(x, -1, 0, 2)),
    'splice': _movement(lambda x: C.splice(x, C.exp(x), axis=1)),
    'splice_new_axis': _movement(lambda x: C.splice(x, C.exp(x), axis=C.Axis.new_leading_axis())),
    'transpose': _movement(lambda x: C.transpose(x, (2, 0, 1))),
    'transpose_partial': _movement(lambda x: C.transpose(x, (1, 0))),
    'swapaxes': _movement(lambda x: C.swapaxes(x, 0, 2)),
    'pad': _movement(lambda x: C.pad(x, [(0, 1), (2, 0), (1, 1)], constant_value=0.5)),
    'pad_reflect': _movement(lambda x: C.pad(x, [(1, 1), (0, 2), (2, 0)], mode=C.ops.REFLECT_PAD)),
    'squeeze': _movement(lambda x: C.squeeze(x, axes=[1]), shape=(2, 1, 4)),
    'expand_dims': _movement(lambda x: C.expand_dims(x, 1)),
    'flatten': _movement(lambda x: C.flatten(x, axis=1)),
    'gather': _gather, 'one_hot': _one_hot,
    # nn
    'softmax': _movement(lambda x: C.softmax(x)), 'softmax_axis': _movement(lambda x: C.softmax(x, axis=1)),
    'log_softmax': _movement(lambda x: C.log_softmax(x, axis=0)), 'hardmax': _movement(C.hardmax),
    'top_k': _movement(lambda x: C.top_k(x, 2, axis=1)), 'cast': _movement(lambda x: C.cast(x, np.float32) * 1.0),
    'zeros_like': _movement(lambda x: x + C.zeros_like(x) + C.ones_like(x)),
    'stop_gradient': _movement(lambda x: C.stop_gradient(x) * x), 'dropout': _movement(lambda x: C.dropout(x, 0.5)),
    # losses and metrics
    'cross_entropy_with_softmax': _loss(C.cross_entropy_with_softmax),
    'squared_error': _loss(C.squared_error), 'classification_error': _loss(C.classification_error),
    'cosine_distance': _loss(C.cosine_distance),
    'cosine_distance_with_negative_samples': _cos_negative,
    'binary_cross_entropy': _loss(lambda z, y: C.binary_cross_entropy(C.sigmoid(z), y)),
    # dynamic axes
    'sequence': _sequence,
    **ROUND_TRIPS_CONV, **ROUND_TRIPS_NORM, **ROUND_TRIPS_SEQUENCE,
}

NO_GRADIENT = {'argmax', 'hardmax', 'floor', 'comparisons', 'logical', 'classification_error', 'one_hot', 'cast',
               'edit_distance_error', 'sequence_where'}


@pytest.mark.parametrize('case', sorted(ROUND_TRIPS))
def test_round_trip_outputs_and_gradients(case, tmp_path):
    f, args = ROUND_TRIPS[case]()
    f = f if f.is_composite else C.as_composite(f)
    g = _reload(f, tmp_path)
    _assert_same_outputs_and_gradients(f, g, args, grads=case not in NO_GRADIENT)


def _saved_functions(f):
    d = _cntk.dictionary_from_bytes(_cntk.save_model_to_bytes(f if f.is_composite else C.as_composite(f)))
    return d['primitive_functions']


def test_convolution_family_attributes_use_cntk_op_numbers_and_layout():
    """Per-axis ints are NDShapes in the file (reversed like every shape, read back here in NumPy
    order) and bool lists are in CNTK's (reversed) order."""
    x = _x((2, 7, 6))
    f = C.pooling(x, C.MAX_POOLING, (3, 2), strides=(2, 1), auto_padding=[False, True])
    (p,) = [p for p in _saved_functions(f) if p['op'] == 17]  # Pooling
    a = p['attributes']
    assert a['poolingWindowShape'] == (3, 2) and a['strides'] == (2, 1)
    assert a['autoPadding'] == [True, False]
    f = C.convolution(_kernel((3, 2, 3, 2)), x, strides=(1, 2), auto_padding=[False, True, False], dilation=(1, 2))
    (p,) = [p for p in _saved_functions(f) if p['op'] == 33]  # Convolution
    a = p['attributes']
    assert a['strides'] == (1, 2) and a['dilation'] == (1, 2) and a['autoPadding'] == [False, True, False]
    assert p['inputs'][0].startswith('Parameter')  # the kernel first, as in CNTK
    ops = {q['op'] for q in _saved_functions(C.unpooling(C.pooling(x, C.MAX_POOLING, (2, 2)), x, C.MAX_UNPOOLING,
                                                                   (2, 2)))}
    assert {17, 58} <= ops
    r = C.input_variable((2, 4), dtype=np.float64)
    assert 47 in {q['op'] for q in _saved_functions(C.roipooling(x, r, C.MAX_POOLING, (2, 3), 0.5))}


def test_batch_normalization_and_sequence_ops_use_cntk_op_numbers():
    x, _ = _batch_normalization(False)()
    assert 40 in {q['op'] for q in _saved_functions(x)}
    s = C.sequence.input_variable(3, dtype=np.float64)
    ops = {q['op'] for q in _saved_functions(C.sequence.past_value(s) + C.sequence.future_value(s))}
    assert {37, 38} <= ops
    ops = {q['op'] for q in _saved_functions(C.sequence.gather(s, C.greater(C.reduce_sum(s), 0)))}
    assert 13 in ops or 29 in ops  # Where / GatherPacked


def test_sequence_op_attributes_use_cntk_keys():
    f, _ = _edit_distance()
    (p,) = [p for p in _saved_functions(f) if p['op'] == 61]  # EditDistanceError
    a = p['attributes']
    assert (a['SubstitutionPenalty'], a['DeletionPenalty'], a['InsertionPenalty']) == (1.0, 2.0, 1.5)
    assert a['SquashInputs'] is True and list(a['TokensToIgnore']) == [3]
    assert not {'subPen', 'delPen', 'insPen', 'squashInputs', 'tokensToIgnore'} & set(a)
    f, _ = _ctc()
    (p,) = [p for p in _saved_functions(f) if p['op'] == 66]  # ForwardBackward
    assert p['attributes']['BlankTokenId'] == 3
    s = C.sequence.input_variable(3, dtype=np.float64)
    (p,) = [p for p in _saved_functions(C.sequence.unpack(s, 0.5, no_mask_output=True)) if p['op'] == 72]
    assert p['attributes']['sequenceUnpackPaddingValue'] == 0.5
    assert p['attributes']['sequenceUnpackSuppressMaskOutput'] is True
    x = C.input_variable((4, 3), dtype=np.float64)
    assert any(p['op'] == 70 and 'sequenceAxis' in p['attributes'] for p in _saved_functions(C.to_sequence(x)))


def test_recurrent_loop_is_saved_as_a_cycle_and_loads_as_one(tmp_path):
    f, args = _recurrence(_lstm)()
    g = _reload(f, tmp_path)
    delays = [q for q in C.logging.graph.depth_first_search(g, lambda n: isinstance(n, C.Function), depth=-1)
              if q.op_name == 'PastValue']
    assert delays
    # The loop is closed: the delay's input depends on the delay's own output.
    d = delays[0]
    seen = C.logging.graph.depth_first_search(d.inputs[0].owner, lambda n: isinstance(n, C.Function), depth=-1)
    assert any(q.uid == d.uid for q in seen)
    assert not g.placeholders


def test_round_trip_through_bytes_and_function_load(tmp_path):
    f, args = _dense()
    data = _cntk.save_model_to_bytes(f)
    assert isinstance(data, bytes) and len(data) > 0
    for model in (data, bytearray(data), memoryview(data)):
        _assert_same_outputs_and_gradients(f, C.Function.load(model), args)
    path = str(tmp_path / 'm.model')
    f.save(path)
    with open(path, 'rb') as fh:
        assert fh.read() == data
    _assert_same_outputs_and_gradients(f, C.ops.functions.load_model(path, device=C.cpu()), args)


def test_loaded_model_keeps_names_uids_and_structure(tmp_path):
    x = _x((4,), name='features')
    w = C.parameter((4, 3), dtype=np.float64, init=1.5, name='weights')
    f = C.relu(C.times(x, w), name='hidden')
    g = _reload(f, tmp_path)
    assert [a.name for a in g.arguments] == ['features']
    assert [p.name for p in g.parameters] == ['weights']
    assert g.parameters[0].uid == w.uid
    assert g.name == 'hidden' and g.root_function.op_name == 'ReLU'
    assert tuple(g.output.shape) == (3,)
    np.testing.assert_array_equal(g.parameters[0].value, w.value)


def test_float16_and_float32_parameters_round_trip(tmp_path):
    x = C.input_variable((3,), dtype=np.float32)
    v = np.array([[0.5, -1.25, 3.0]], dtype=np.float32)
    f = x + C.parameter((1, 3), dtype=np.float32, init=v)
    g = _reload(f, tmp_path)
    np.testing.assert_array_equal(g.parameters[0].value, v)
    c16 = C.constant(np.array([1.5, -2.0, 0.25], dtype=np.float16))
    h = _reload(C.cast(c16, np.float32) + x, tmp_path)
    assert h.constants[0].value.dtype == np.float16
    np.testing.assert_array_equal(h.constants[0].value, np.array([1.5, -2.0, 0.25], dtype=np.float16))


def test_random_state_survives_save(tmp_path):
    f = C.random.uniform((3, 4), dtype=np.float64, seed=7)
    g = _reload(C.as_composite(f), tmp_path)
    assert g.root_function.attributes['rngSeed'] == f.root_function.attributes['rngSeed']
    np.testing.assert_array_equal(np.asarray(f.eval()), np.asarray(g.eval()))


def test_restore_puts_saved_parameter_values_back(tmp_path):
    f, args = _dense()
    path = str(tmp_path / 'm.model')
    before = f.eval(args)
    f.save(path)
    for p in f.parameters:
        p.value = np.zeros(p.shape)
    assert not np.allclose(f.eval(args), before)
    f.restore(path)
    np.testing.assert_array_equal(f.eval(args), before)
    other, _ = _layers_dense()
    with pytest.raises(ValueError, match='parameter'):
        other.restore(path)


def test_save_rejects_other_formats_and_external_files(tmp_path):
    f, _ = _dense()
    with pytest.raises(ValueError, match='unknown model format'):
        f.save(str(tmp_path / 'm.x'), format='NoSuchFormat')
    with pytest.raises(NotImplementedError, match='external'):
        f.save(str(tmp_path / 'm'), use_external_files_to_store_parameters=True)
    with pytest.raises(TypeError):
        C.load_model(12)
    with pytest.raises(IOError, match='does not exist'):
        C.load_model(str(tmp_path / 'missing.model'))


def test_save_is_atomic_and_leaves_no_temp_files(tmp_path):
    f, args = _dense()
    path = tmp_path / 'm.model'
    path.write_bytes(b'old contents')
    f.save(str(path))
    assert os.listdir(str(tmp_path)) == ['m.model']
    _assert_same_outputs_and_gradients(f, C.load_model(str(path)), args)
    with pytest.raises(IOError, match='nonexistent_dir'):
        f.save(str(tmp_path / 'nonexistent_dir' / 'm.model'))


# ----------------------------------------------------------------- bad files

@pytest.fixture
def model_bytes():
    f, _ = _dense()
    return _cntk.save_model_to_bytes(f)


def test_truncated_file_names_the_file(tmp_path, model_bytes):
    for cut in (1, len(model_bytes) // 3, len(model_bytes) - 1):
        path = tmp_path / ('cut%d.model' % cut)
        path.write_bytes(model_bytes[:cut])
        with pytest.raises(IOError, match='cut%d.model' % cut):
            C.load_model(str(path))


def test_corrupted_and_foreign_files_raise_ioerror(tmp_path, model_bytes):
    rng = np.random.RandomState(0)
    for i in range(40):
        data = bytearray(model_bytes)
        for pos in rng.randint(0, len(data), size=4):
            data[pos] = rng.randint(0, 256)
        path = tmp_path / ('bad%d.model' % i)
        path.write_bytes(bytes(data))
        try:
            C.load_model(str(path))
        except (IOError, NotImplementedError) as e:
            assert 'bad%d.model' % i in str(e)
    for name, content in [('text.model', b'hello, this is not a model\n'), ('empty.model', b''),
                          ('zeros.model', b'\0' * 64), ('big.model', b'kntc' + b'\xff' * 12)]:
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(IOError, match=name):
            C.load_model(str(path))


def test_valid_dictionary_that_is_not_a_model(tmp_path):
    path = str(tmp_path / 'dict.bin')
    _cntk.save_dictionary({'type': 'Learner', 'sample_count': 3}, path)
    with pytest.raises(IOError, match="dict.bin: not a CNTK model"):
        C.load_model(path)
    _cntk.save_dictionary({'sample_count': 3}, path)
    with pytest.raises(IOError, match="dict.bin: not a CNTK model: the 'inputs' entry is missing"):
        C.load_model(path)
    with pytest.raises(IOError, match='<bytes>'):
        C.load_model(b'\x08\x01\x12\x02')


def test_dictionary_round_trip_keeps_every_value_type(tmp_path):
    values = np.arange(6, dtype=np.float64).reshape(2, 3)
    d = {'arr': C.NDArrayView.from_numpy(values), 'b': True, 'i': -3, 'n': 7, 'f': 0.25, 's': 'text', 'axis': C.Axis(1), 'dyn': C.Axis.default_batch_axis(),
         'all': C.Axis.all_static_axes(), 'list': [1, 'a', [2.5]], 'dict': {'k': {'deep': False}}, 'none': None}
    path = str(tmp_path / 'd.bin')
    _cntk.save_dictionary(d, path)
    back = _cntk.load_dictionary(path)
    for k in ('b', 'i', 'n', 'f', 's', 'list', 'dict', 'none'):
        assert back[k] == d[k], k
    assert back['axis'] == C.Axis(1) and back['dyn'] == C.Axis.default_batch_axis()
    assert back['all'] == C.Axis.all_static_axes()
    assert tuple(back['arr']._shape) == (2, 3)
    np.testing.assert_array_equal(back['arr'].to_numpy(), values)


# ------------------------------------------------------------- CNTK's files

def _v2(shared_data, name):
    path = os.path.join(shared_data, 'cntk-files', 'v2', name)
    if not os.path.exists(path):
        pytest.skip('%s is absent' % path)
    return path


def test_cntk_policy_network_loads_and_evaluates(shared_data):
    f = C.load_model(_v2(shared_data, 'initial_policy_network.model'))
    assert len(f.arguments) == 1
    x = f.arguments[0]
    assert tuple(x.shape) == (2,) and len(x.dynamic_axes) == 2
    assert len(f.parameters) == 4
    assert sorted(tuple(p.shape) for p in f.parameters) == [(2,), (2, 2), (2, 3), (3,)]
    data = [np.array([[0.5, -1.0], [2.0, 0.25]], dtype=np.float32)]
    out = f.eval({x: data})
    got = np.asarray(out[0] if isinstance(out, list) else out).reshape(-1, 3)
    # Two Dense blocks (relu, then linear) computed with the file's own parameters.
    params = {p.uid: np.asarray(p.value) for p in f.parameters}
    w1, b1 = params['Parameter5'], params['Parameter6']
    w2, b2 = params['Parameter49'], params['Parameter50']
    ref = np.maximum(data[0] @ w1 + b1, 0) @ w2 + b2
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    assert f.root_function.op_name == 'Dense' and f.root_function.is_block


def test_cntk_batch_norm_model_loads_and_evaluates(shared_data):
    path = _v2(shared_data, 'batch.norm.no.sample.count.v2.bin')
    f = C.load_model(path)
    assert f.root_function.op_name == 'ReLU'
    fns = C.logging.graph.depth_first_search(f, lambda n: isinstance(n, C.Function), depth=-1)
    assert {'Convolution', 'BatchNormalization'} <= {g.op_name for g in fns}
    bn = [g for g in fns if g.op_name == 'BatchNormalization'][0]
    # A file written before the running sample count existed: the count input is added, holding 0.
    assert len(bn.inputs) == 6 and float(np.asarray(bn.inputs[5].value)) == 0
    assert len(f.arguments) == 1
    x = f.arguments[0]
    assert tuple(x.shape) == (3, 5, 5) and len(x.dynamic_axes) == 2 and tuple(f.output.shape) == (16, 5, 5)
    rng = np.random.RandomState(0)
    data = [rng.standard_normal((2, 3, 5, 5)).astype(np.float32), rng.standard_normal((1, 3, 5, 5)).astype(np.float32)]
    out = f.eval({x: data})
    # NumPy: a 3x3 convolution padded by one, batch normalization with the running statistics, ReLU.
    conv = [g for g in fns if g.op_name == 'Convolution'][0]
    w = np.asarray(conv.inputs[0].value, dtype=np.float64)
    scale, bias, mean, var = [np.asarray(i.value, dtype=np.float64)[:, None, None] for i in bn.inputs[1:5]]
    eps = bn.attributes['epsilon']

    def reference(seq):
        padded = np.pad(seq.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
        y = np.zeros((len(seq), 16, 5, 5))
        for i in range(5):
            for j in range(5):
                y[:, :, i, j] = np.einsum('nckl,ockl->no', padded[:, :, i:i + 3, j:j + 3], w)
        return np.maximum((y - mean) / np.sqrt(var + eps) * scale + bias, 0)

    assert len(out) == 2
    for o, seq in zip(out, data):
        ref = reference(seq)
        np.testing.assert_allclose(o, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    # It saves and loads again with the same result.
    g = C.load_model(_cntk.save_model_to_bytes(f))
    for a, b in zip(out, g.eval({g.arguments[0]: data})):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('name', ['past.dictionary.proto.bin', 'future.dictionary.proto.bin',
                                  'v2.0.beta1.0.dictionary.proto.bin'])
def test_cntk_dictionary_files_parse(shared_data, name):
    d = _cntk.load_dictionary(_v2(shared_data, name))
    assert isinstance(d, dict) and len(d) > 0
    with open(_v2(shared_data, name), 'rb') as fh:
        assert _cntk.dictionary_from_bytes(fh.read()).keys() == d.keys()
    if name.startswith('future'):
        # Written by a later format version: its unknown value type loads empty, as in CNTK.
        assert d['Zombi'] is None and d['Vector'][6] is None
        assert d['Int'] == -9843


def test_cntk_past_dictionary_values(shared_data):
    d = _cntk.load_dictionary(_v2(shared_data, 'past.dictionary.proto.bin'))
    assert d['Bool'] is False and d['String'] == 'String' and d['None'] is None
    assert d['Int'] == -9843 and d['SizeT'] == 49308572
    assert abs(d['Double'] - 54669.6505046) < 1e-9
    assert d['NDShape'] == (19, 39467, 56516, 54)  # CNTK's [54, 56516, 39467, 19] in NumPy order


def test_cntk_learner_checkpoint_file_parses(shared_data):
    d = _cntk.load_dictionary(_v2(shared_data, 'learner.checkpoint.backcompat.bin'))
    assert d['type'] == 'Learner' and d['sample_count'] == 10 and d['minibatchCount'] == 10
    smoothed = {k: v for k, v in d.items() if k.startswith('Parameter')}
    assert len(smoothed) == 21
    assert tuple(smoothed['Parameter1']._shape) == (3, 50)


def test_sparse_and_sequence_inputs_keep_their_kind(tmp_path):
    s = C.sequence.input_variable(5, is_sparse=True, name='words')
    d = C.input_variable((2,), name='dense')
    f = C.combine([C.times(s, C.parameter((5, 2), init=0.5)), d * 2.0])
    g = _reload(f, tmp_path)
    by_name = {a.name: a for a in g.arguments}
    assert by_name['words'].is_sparse and not by_name['dense'].is_sparse
    assert len(by_name['words'].dynamic_axes) == 2 and len(by_name['dense'].dynamic_axes) == 1
    assert list(by_name['words'].dynamic_axes) == list(s.dynamic_axes)
    assert list(by_name['dense'].dynamic_axes) == [C.Axis.default_batch_axis()]


def test_python_user_functions_without_a_deserializer_do_not_load(tmp_path):
    from cntk.ops.functions import UserFunction

    class Twice(UserFunction):
        def __init__(self, arg):
            super(Twice, self).__init__([arg])

        def forward(self, argument, device=None, outputs_to_retain=None):
            return None, argument * 2

        def backward(self, state, root_gradients):
            return root_gradients * 2

        def infer_outputs(self):
            return [C.output_variable(self.inputs[0].shape, self.inputs[0].dtype, self.inputs[0].dynamic_axes)]

    x = C.input_variable(3)
    f = C.user_function(Twice(x))
    path = str(tmp_path / 'udf.model')
    f.save(path)
    # A class local to a function cannot be found again, and it has no deserialize.
    with pytest.raises(IOError, match='Twice'):
        C.load_model(path)


# ------------------------------------------------ ops that CNTK builds as blocks of its primitives

def _saved(f):
    return _cntk.dictionary_from_bytes(_cntk.save_model_to_bytes(f if f.is_composite else C.as_composite(f)))


def _block(d, op_name):
    """The block named `op_name` in a saved model and the ops of its composite (nested blocks entered)."""
    fns = {p['uid']: p for p in d['primitive_functions']}
    (b,) = [p for p in fns.values() if p['op'] == 57 and p['block_function_op_name'] == op_name]
    members, todo = [], [b['block_function_composite']['root']]
    stop = {u.rsplit('_Output_', 1)[0] for u in b['inputs']}
    while todo:
        u = todo.pop()
        if u not in fns or u in stop or any(m['uid'] == u for m in members):
            continue
        p = fns[u]
        members.append(p)
        todo += [i.rsplit('_Output_', 1)[0] for i in p['inputs'] if '_Output_' in i]
        if p['op'] == 57:
            todo.append(p['block_function_composite']['root'])
    return b, members


def _leaf(d, uid):
    (v,) = [v for v in d['inputs'] if v['uid'] == uid]
    return v


def test_local_response_normalization_is_saved_as_cntks_block():
    x = _x((5, 3, 4))
    d = _saved(C.local_response_normalization(x, 1, 2.0, 0.3, 0.75))
    assert not any(p['op'] == 93 for p in d['primitive_functions'])  # no CustomProxyOp
    b, members = _block(d, 'LocalResponseNormalization')
    a = b['attributes']
    assert (a['depthRadius'], a['bias'], a['alpha'], a['beta']) == (1, 2.0, 0.3, 0.75)
    # Square -> Reshape -> Convolution with a constant kernel -> Reshape -> Plus -> Log -> ElementTimes -> Exp,
    # then x / denominator as CNTK's ElementDivide block (ElementTimes of the reciprocal)
    ops = sorted(p['op'] for p in members)
    assert ops == sorted([21, 16, 33, 16, 19, 5, 21, 4, 57, 9, 21])
    (conv,) = [p for p in members if p['op'] == 33]
    kernel = _leaf(d, conv['inputs'][0])
    assert kernel['kind'] == 3 and kernel['shape'] == (1, 3, 1, 1)  # NumPy order of CNTK's {1, 1, 3, 1}
    np.testing.assert_allclose(np.asarray(kernel['value']), 0.3 / 3)
    assert 'reductionRank' not in conv['attributes']
    (inner,) = [p for p in members if p['op'] == 57]
    assert inner['block_function_op_name'] == 'ElementDivide'
    assert inner['inputs'][0] == b['block_function_composite_arguments_map_keys'][0]  # the operand's placeholder


def test_sequence_slice_and_is_first_last_are_saved_as_cntks_blocks():
    s = C.sequence.input_variable(3, dtype=np.float64)
    d = _saved(C.sequence.slice(s, 1, -1))
    assert not any(p['op'] == 93 for p in d['primitive_functions'])
    b, members = _block(d, 'Sequence::Slice')
    assert dict(b['attributes']) == {}  # CNTK's block has no attributes: the composite says it all
    ops = sorted(p['op'] for p in members)
    # (1 - IsWithin(+1)) * (1 - IsWithin(-1)), each IsWithin a delay of zeros like the operand,
    # then Where -> PackedIndex -> GatherPacked
    assert ops == sorted([50, 37, 20, 50, 38, 20, 21, 13, 28, 29])
    (where,) = [p for p in members if p['op'] == 13]
    assert where['attributes']['newSequenceAxisLengthAdditiveFactor'] == -2
    assert where['attributes']['newSequenceAxisLengthScalingFactor'] == 1
    assert {p['attributes']['offset'] for p in members if p['op'] in (37, 38)} == {1}
    for fn, name, delay in ((C.sequence.is_first, 'Sequence::IsFirst', 37),
                            (C.sequence.is_last, 'Sequence::IsLast', 38)):
        d = _saved(fn(s))
        b, members = _block(d, name)
        assert sorted(p['op'] for p in members) == sorted([50, delay])
        (dl,) = [p for p in members if p['op'] == delay]
        assert dl['attributes']['offset'] == 1
        assert np.asarray(_leaf(d, dl['inputs'][1])['value']) == 1.0  # the initial state
    b, members = _block(_saved(C.sequence.first(s)), 'Sequence::Slice')
    assert sorted(p['op'] for p in members) == sorted([50, 37, 13, 28, 29])


def test_convolution_reduction_rank_0_is_saved_as_cntks_block():
    x = _x((5, 6))
    d = _saved(C.convolution(_kernel((2, 3, 2)), x, reduction_rank=0, strides=(2, 1), auto_padding=[False, True]))
    b, members = _block(d, 'Convolution')
    assert dict(b['attributes']) == {}
    assert b['inputs'][0].startswith('Parameter')  # the kernel, then the argument
    assert sorted(p['op'] for p in members) == [16, 16, 33]
    (conv,) = [p for p in members if p['op'] == 33]
    a = conv['attributes']
    assert 'reductionRank' not in a
    assert a['strides'] == (1, 2, 1)  # CNTK appends the channel axis' stride (first in NumPy order)
    assert a['autoPadding'] == [True, False, False]  # in CNTK's order, the channel axis' entry last
    reshapes = [p for p in members if p['op'] == 16]
    assert all(r['attributes']['newShape'] == (1,) for r in reshapes)
    d = _saved(C.convolution_transpose(_kernel((2, 3, 2)), x, reduction_rank=0))
    _block(d, 'ConvolutionTranspose')


def test_cosine_distance_with_negative_samples_passes_constants_as_cntk_does(tmp_path):
    f, args = _cos_negative()
    d = _saved(f)
    (p,) = [p for p in d['primitive_functions'] if p['op'] == 67]
    assert len(p['inputs']) == 4 and 'shiftWindow' not in p['attributes']
    shift, count = (_leaf(d, u) for u in p['inputs'][2:])
    assert shift['kind'] == count['kind'] == 3 and shift['data_type'] == count['data_type'] == 1  # float constants
    assert (float(np.asarray(shift['value'])), float(np.asarray(count['value']))) == (1.0, 2.0)
    # (loading the earlier attribute form and refusing non-constants: tests/cpp/test_serialize.cpp)
    _assert_same_outputs_and_gradients(f, _reload(f, tmp_path), args)


def test_cntk_blocks_load_as_the_engine_ops(tmp_path):
    s = C.sequence.input_variable(3, dtype=np.float64)
    x = _x((4, 3, 3))
    cases = [(C.sequence.slice(s, -2, 3), 'SequenceSlice'), (C.sequence.is_last(s), 'IsWithin'),
             (C.local_response_normalization(x, 2, 1.0, 0.1, 0.5), 'LocalResponseNormalization'),
             (C.convolution(_kernel((2, 2, 2)), _x((5, 6), name='y'), reduction_rank=0), 'Convolution')]
    for f, op in cases:
        g = _reload(C.as_composite(f), tmp_path)
        assert g.root_function.op_name == op and not g.root_function.is_block
    attrs = _reload(C.as_composite(cases[0][0]), tmp_path).root_function.attributes
    assert (attrs['beginIndex'], attrs['endIndex']) == (-2, 3)


# CNTK 2.7's PrimitiveOpType numbers (Source/CNTKv2LibraryDll/PrimitiveOpType.h): the index is the number.
CNTK_OP_TYPES = [
    'Negate', 'Sigmoid', 'Tanh', 'ReLU', 'Exp', 'Log', 'Sqrt', 'Floor', 'Abs', 'Reciprocal', 'Softmax', 'Hardmax',
    'TransposeAxes', 'Where', 'Slice', 'Dropout', 'Reshape', 'Pooling', 'SumAll', 'Plus', 'Minus', 'ElementTimes',
    'Equal', 'NotEqual', 'Less', 'LessEqual', 'Greater', 'GreaterEqual', 'PackedIndex', 'GatherPacked',
    'ScatterPacked', 'Times', 'TransposeTimes', 'Convolution', 'SquaredError', 'CrossEntropyWithSoftmax',
    'ClassificationError', 'PastValue', 'FutureValue', 'ReduceElements', 'BatchNormalization', 'Clip', 'Select',
    'Splice', 'Combine', 'RandomSample', 'RandomSampleInclusionFrequency', 'ROIPooling', 'Logistic',
    'OptimizedRNNStack', 'ReconcileDynamicAxis', 'LogSoftmax', 'LogPlus', 'CosDistance', 'Sin', 'Cos', 'Pass',
    'Block', 'Unpooling', 'LambdaRank', 'NDCG', 'EditDistanceError', 'NoOp', 'LabelsToGraph', 'StopGradient', 'ELU',
    'ForwardBackward', 'CosDistanceWithNegativeSamples', 'OneHot', 'Pow', 'ToSequence', 'ToSequenceLike',
    'UnpackSequence', 'Assign', 'Gather', 'StableSigmoid', 'RandomDistribution', 'Sinh', 'Cosh', 'UnpackBatch',
    'ToBatch', 'Asin', 'Acos', 'Pad', 'Crop', 'Atanh', 'Asinh', 'TopK', 'Squeeze', 'ConstantOp',
    'LatticeSequenceWithSoftmax', 'Cast', 'EyeLikeOp', 'CustomProxyOp', 'StraightThrough', 'Tan', 'Atan',
    'ConvolutionSequenceShape']


def test_cntk_op_type_numbers_are_pinned():
    assert CNTK_OP_TYPES.index('StraightThrough') == 94 and CNTK_OP_TYPES.index('Tan') == 95
    assert CNTK_OP_TYPES.index('Atan') == 96 and CNTK_OP_TYPES.index('ConvolutionSequenceShape') == 97
    assert CNTK_OP_TYPES.index('Block') == 57 and CNTK_OP_TYPES.index('CustomProxyOp') == 93


@pytest.mark.parametrize('case', sorted(ROUND_TRIPS))
def test_every_op_written_has_cntks_number(case):
    """Each function in a saved model carries CNTK's PrimitiveOpType number for its op: the engine's
    op name for functions of the original graph, the op a composite written for CNTK names in its uid."""
    f, _ = ROUND_TRIPS[case]()
    f = f if f.is_composite else C.as_composite(f)
    names = {}
    for fn in C.logging.graph.depth_first_search(f, lambda n: isinstance(n, C.Function), depth=-1):
        names[fn.uid] = fn.op_name
    for p in _saved(f)['primitive_functions']:
        if p['op'] == 57:
            continue  # blocks: named by block_function_op_name
        if p['op'] == 93:
            assert 'opencntk_op' in p  # an engine op that CNTK lacks
            continue
        name = names.get(p['uid']) or re.match('[A-Za-z]+', p['uid']).group(0)
        assert 0 <= p['op'] < len(CNTK_OP_TYPES) and CNTK_OP_TYPES[p['op']] == name, (p['uid'], p['op'])


def test_custom_attributes_are_saved_with_the_function(tmp_path):
    root = 0 + C.input_variable(())
    root.custom_attributes = {'test': 'abc', 'dict': {'a': 1, 'b': 2}, 'list': [1, 2, 3]}
    path = str(tmp_path / 'custom.model')
    root.save(path)
    loaded = C.load_model(path)
    assert loaded.custom_attributes['test'] == 'abc'
    assert loaded.custom_attributes['dict'] == {'a': 1, 'b': 2}
    assert loaded.custom_attributes['list'] == [1, 2, 3]
    assert 'customAttributes' not in loaded.root_function.attributes
