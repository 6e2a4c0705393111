"""Feed-forward layers: Dense, Embedding, Dropout, Activation, LayerNormalization, Label."""
import numpy as np

from .. import _cntk
from ..default_options import default_override_or, get_default_override, is_default_override
from ..initializer import glorot_uniform
from ..internal import sanitize_shape
from ..ops import (times, plus, element_times, reduce_mean, minus, sqrt, alias, combine)
from ..variables import Parameter, Constant
from .blocks import _INFERRED, _initializer_for, identity, layer


def Dense(shape, activation=default_override_or(identity), init=default_override_or(glorot_uniform()),
          input_rank=None, map_rank=None, bias=default_override_or(True), init_bias=default_override_or(0), name=''):
    """A fully connected layer: activation(x @ W + b).

    With neither `input_rank` nor `map_rank`, W projects the whole input (all of its static
    axes), so an input of shape (64, 12, 12) gets a (64, 12, 12, *shape) weight.
    `input_rank=r` projects only the last r axes; `map_rank=m` keeps the first m axes as map axes.
    """
    activation = get_default_override(Dense, activation=activation)
    init = get_default_override(Dense, init=init)
    bias = get_default_override(Dense, bias=bias)
    init_bias = get_default_override(Dense, init_bias=init_bias)
    output_shape = sanitize_shape(shape)
    if input_rank is not None and map_rank is not None:
        raise ValueError("Dense: input_rank and map_rank cannot both be given")
    if input_rank is not None:
        infer_input_rank_to_map = -1
        input_shape = _INFERRED * input_rank
    elif map_rank is not None:
        infer_input_rank_to_map = map_rank
        input_shape = _INFERRED
    else:
        infer_input_rank_to_map = 0  # all axes of the input are projected
        input_shape = _INFERRED
    output_rank = len(output_shape)
    W = Parameter(input_shape + output_shape, init=_initializer_for(init, output_rank=output_rank), name='W')
    b = Parameter(output_shape, init=init_bias, name='b') if bias else None

    def dense(x):
        r = times(x, W, output_rank=output_rank, infer_input_rank_to_map=infer_input_rank_to_map)
        if b is not None:
            r = plus(r, b)
        if activation is not None and activation is not identity:
            r = activation(r)
        return r
    return layer('Dense', dense, name)


def Embedding(shape=None, init=default_override_or(glorot_uniform()), weights=None, name=''):
    """A lookup table x @ E: with one-hot (or sparse) input, the rows of E selected by x.

    `weights` (a NumPy array of shape (vocabulary, *shape)) gives fixed embeddings (a Constant).
    """
    if weights is not None and not is_default_override(init):
        raise ValueError("Embedding: init and weights are mutually exclusive")
    if weights is not None:
        if shape is not None:
            raise ValueError("Embedding: give either shape or weights, not both")
        weights = np.asarray(weights)
        E = Constant(weights, name='E')
    else:
        if shape is None:
            raise ValueError("Embedding: needs a shape (or weights)")
        init = get_default_override(Embedding, init=init)
        shape = sanitize_shape(shape)
        E = Parameter(_INFERRED + shape, init=_initializer_for(init, output_rank=len(shape)), name='E')

    def embed(x):
        return times(x, E)
    return layer('Embedding', embed, name)


def Dropout(dropout_rate=None, keep_prob=None, seed=None, name=''):
    """Randomly zeroes a fraction `dropout_rate` of the input (training only), scaling the rest."""
    from ..ops import dropout
    if dropout_rate is None and keep_prob is None:
        raise ValueError("Dropout: give dropout_rate or keep_prob")
    if dropout_rate is not None and keep_prob is not None:
        raise ValueError("Dropout: give dropout_rate or keep_prob, not both")
    if keep_prob is not None:
        if not 0 < keep_prob <= 1:
            raise ValueError("Dropout: keep_prob must be in (0, 1]")
        dropout_rate = 1 - keep_prob
    kwargs = {} if seed is None else {'seed': seed}

    def drop(x):
        return dropout(x, dropout_rate=dropout_rate, **kwargs)
    return layer('Dropout', drop, name)


def Activation(activation=default_override_or(identity), name=''):
    """Applies `activation` elementwise."""
    activation = get_default_override(Activation, activation=activation)
    return layer('Activation', lambda x: activation(x), name)


def LayerNormalization(initial_scale=1, initial_bias=0, epsilon=default_override_or(0.00001), name=''):
    """Normalizes each sample to zero mean and unit variance over its static axes,
    then applies a learned scale and bias."""
    epsilon = get_default_override(LayerNormalization, epsilon=epsilon)
    # One scale and one bias per input element, their shape inferred from the input (as CNTK).
    scale = Parameter(_INFERRED, init=initial_scale, name='scale')
    bias = Parameter(_INFERRED, init=initial_bias, name='bias')

    def layer_norm(x):
        mean = reduce_mean(x)
        centered = minus(x, mean)
        # CNTK adds epsilon to the standard deviation, not to the variance.
        std = sqrt(reduce_mean(element_times(centered, centered)))
        if epsilon != 0:
            std = plus(std, epsilon)
        from ..ops import element_divide
        return plus(element_times(element_divide(centered, std), scale), bias)
    return layer('LayerNormalization', layer_norm, name)


def Label(name):
    """Names its input: the output of `Label('out')(x)` can be found with find_by_name('out')."""
    if not name:
        raise ValueError("Label: needs a name")

    def label(x):
        return alias(x, name=name)
    from ..ops.functions import _from_python
    return _from_python(label)


__all__ = ['Dense', 'Embedding', 'Dropout', 'Activation', 'LayerNormalization', 'Label']


# ------------------------------------------------------------ BatchNormalization

def BatchNormalization(map_rank=default_override_or(None), init_scale=1,
                       normalization_time_constant=default_override_or(5000), blend_time_constant=0,
                       epsilon=default_override_or(0.00001), use_cntk_engine=default_override_or(False),
                       disable_regularization=default_override_or(False), name=''):
    """Batch normalization with a learned scale and bias per feature (per channel, the
    first axis, with ``map_rank=1``; per element of the input with ``map_rank=None``).

    In training the minibatch's statistics are used and running estimates are kept for
    inference (see ``cntk.ops.batch_normalization``). The layer exposes its parameters as
    ``.scale`` and ``.bias`` and the running estimates as ``.aggregate_mean``,
    ``.aggregate_variance`` and ``.aggregate_count``.
    """
    from ..ops import batch_normalization
    from .blocks import UntestedBranchError
    map_rank = get_default_override(BatchNormalization, map_rank=map_rank)
    normalization_time_constant = get_default_override(BatchNormalization,
                                                       normalization_time_constant=normalization_time_constant)
    epsilon = get_default_override(BatchNormalization, epsilon=epsilon)
    use_cntk_engine = get_default_override(BatchNormalization, use_cntk_engine=use_cntk_engine)
    disable_regularization = get_default_override(BatchNormalization, disable_regularization=disable_regularization)
    if map_rank is not None and map_rank != 1:
        raise UntestedBranchError("BatchNormalization map_rank can only be 1 or None for now")
    scale = Parameter(_INFERRED, init=init_scale, name='scale')
    bias = Parameter(_INFERRED, init=0, name='bias')
    run_mean = Constant(0, shape=_INFERRED, name='aggregate_mean')  # updated by the op, not by learners
    run_variance = Constant(0, shape=_INFERRED, name='aggregate_variance')
    run_count = Constant(0, shape=(), name='aggregate_count')

    def batch_normalize(x):
        return batch_normalization(x, scale, bias, run_mean, run_variance, running_count=run_count,
                                   spatial=map_rank == 1, normalization_time_constant=normalization_time_constant,
                                   blend_time_constant=blend_time_constant, epsilon=epsilon,
                                   use_cudnn_engine=not use_cntk_engine, disable_regularization=disable_regularization)
    return layer('BatchNormalization', batch_normalize, name)


__all__ += ['BatchNormalization']
# ------------------------------------------------------- convolution and pooling layers

def _conv_tuple(filter_shape, value, what):
    """A per-axis layer option as a tuple of len(filter_shape) values (a scalar repeats)."""
    if isinstance(value, (list, tuple)):
        value = tuple(value)
        if len(value) != len(filter_shape):
            raise ValueError("%s %r must be a scalar or have as many elements as filter_shape %r"
                             % (what, value, filter_shape))
        return value
    return (value,) * len(filter_shape)


def _filter_shape(filter_shape, what):
    shape = sanitize_shape(filter_shape)
    if not shape:
        raise ValueError("%s: filter_shape must not be empty" % what)
    return shape


def _insert_leading_axis(x):
    from ..ops import reshape
    return reshape(x, (1,), begin_axis=0, end_axis=0)


def _drop_leading_axis(x):
    from ..ops import reshape
    return reshape(x, (), begin_axis=0, end_axis=1)


def Convolution(filter_shape, num_filters=None, sequential=False, activation=default_override_or(identity),
                init=default_override_or(glorot_uniform()), pad=default_override_or(False), strides=1, sharing=True,
                bias=default_override_or(True), init_bias=default_override_or(0), reduction_rank=1,
                transpose_weight=False, dilation=1, groups=1, max_temp_mem_size_in_samples=0,
                op_name='Convolution', name=''):
    """A convolution layer: activation(convolution(W, x) + b).

    `filter_shape` is the spatial extent (e.g. (3, 3)); the input is (C, H, W) (or (H, W)
    with ``reduction_rank=0``). W has shape (num_filters, C/groups, *filter_shape), its
    input depth inferred from the first input; b has shape (num_filters, 1, ...).
    ``num_filters=None`` gives one output map without a depth axis. `pad`, `strides`,
    `dilation` are a scalar or one value per spatial axis.

    With ``sequential=True`` filter_shape[0] runs along the sequence axis, as in CNTK 2.7's
    layer: each step sees a window of its neighbours in its own sequence (zeros beyond the
    ends), so a padded result keeps the input's sequence axis and lengths, and an unpadded
    one drops filter_shape[0] - 1 steps. The sequence axis takes no stride or dilation here
    (SequentialConvolution does).
    """
    return _convolution_layer(filter_shape, num_filters, 'window' if sequential else None, activation, init, pad,
                              strides, sharing, bias, init_bias, reduction_rank, transpose_weight, dilation, groups,
                              max_temp_mem_size_in_samples, op_name, name, Convolution)


def SequentialConvolution(filter_shape, num_filters=None, activation=default_override_or(identity),
                          init=default_override_or(glorot_uniform()), pad=default_override_or(False), strides=1,
                          sharing=True, bias=default_override_or(True), init_bias=default_override_or(0),
                          reduction_rank=1, transpose_weight=False, dilation=1, groups=1,
                          max_temp_mem_size_in_samples=0, op_name='Convolution', name=''):
    """A convolution layer over the sequence axis too, through ``convolution(...,
    sequential=True)``: filter_shape[0] (and the first entry of `pad`, `strides`,
    `dilation`) is for the sequence axis. The result is a sequence on a new sequence axis
    whose lengths follow from each input length (see ops.convolution). W has shape
    (num_filters, C, *filter_shape); b has (num_filters, 1, ...) for the static axes.
    """
    return _convolution_layer(filter_shape, num_filters, 'op', activation, init, pad, strides, sharing, bias,
                              init_bias, reduction_rank, transpose_weight, dilation, groups,
                              max_temp_mem_size_in_samples, op_name, name, SequentialConvolution)


def _sequence_window(x, k, axis=1):
    """Each step with its k - 1 neighbours stacked along `axis` (zeros beyond the sequence's
    ends), the step itself at (k - 1) // 2, as CNTK's layer windows it."""
    from ..ops import splice
    from ..ops.sequence import past_value, future_value
    lpad = (k - 1) // 2
    shifted = [past_value(x, time_step=-t) if t < 0 else x if t == 0 else future_value(x, time_step=t)
               for t in range(-lpad, k - lpad)]
    return splice(*shifted, axis=axis) if k > 1 else x


def _convolution_layer(filter_shape, num_filters, sequential, activation, init, pad, strides, sharing, bias,
                       init_bias, reduction_rank, transpose_weight, dilation, groups, max_temp_mem_size_in_samples,
                       op_name, name, defaults_of):
    """Convolution and SequentialConvolution; `sequential` is None, 'window' (the sequence
    axis by a window of neighbouring steps) or 'op' (the op's sequential convolution)."""
    from ..axis import Axis
    from ..ops import convolution, reshape
    from ..ops.sequence import slice as sequence_slice
    activation = get_default_override(defaults_of, activation=activation)
    init = get_default_override(defaults_of, init=init)
    pad = get_default_override(defaults_of, pad=pad)
    bias = get_default_override(defaults_of, bias=bias)
    init_bias = get_default_override(defaults_of, init_bias=init_bias)
    filter_shape = _filter_shape(filter_shape, op_name)
    strides = _conv_tuple(filter_shape, strides, 'strides')
    sharing = _conv_tuple(filter_shape, sharing, 'sharing')
    pad = _conv_tuple(filter_shape, pad, 'pad')
    dilation = _conv_tuple(filter_shape, dilation, 'dilation')
    if reduction_rank not in (0, 1):
        raise NotImplementedError("%s: reduction_rank must be 0 or 1" % op_name)
    if transpose_weight:
        raise NotImplementedError("%s: transpose_weight=True is not supported" % op_name)
    if not all(sharing):
        raise NotImplementedError("%s: sharing must be True; a separate kernel per position is not supported "
                                  "(nor is it in CNTK 2.7)" % op_name)
    if sequential == 'window' and (strides[0] != 1 or dilation[0] != 1):
        raise NotImplementedError("%s: sequential=True windows the sequence axis with stride and dilation 1, "
                                  "as CNTK 2.7's layer does; use SequentialConvolution for strides %r, dilation %r"
                                  % (op_name, strides, dilation))
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError("%s: groups must be a positive integer, got %r" % (op_name, groups))
    num_filters = sanitize_shape(num_filters) if num_filters is not None else ()
    if len(num_filters) > 1:
        raise ValueError("%s: num_filters must be an int or None" % op_name)
    if groups > 1 and (not num_filters or num_filters[0] % groups):
        raise ValueError("%s: num_filters must be divisible by groups=%d" % (op_name, groups))
    if groups > 1 and reduction_rank == 0:
        raise ValueError("%s: a grouped convolution needs input channels (reduction_rank=1)" % op_name)
    emulate_out_depth = num_filters == ()
    out_shape = (1,) if emulate_out_depth else num_filters
    # Without an input depth (reduction_rank 0) the input gets one, as CNTK's layer does.
    in_depth = (1,) if reduction_rank == 0 else _INFERRED
    if isinstance(init, np.ndarray) and reduction_rank == 0:
        # As CNTK: the array is (num_filters, *filter_shape); the kernel gets the emulated depths.
        if init.shape != num_filters + filter_shape:
            raise ValueError("%s: the initial value has the shape %s, not num_filters + filter_shape = %s"
                             % (op_name, init.shape, num_filters + filter_shape))
        W = Parameter(out_shape + in_depth + filter_shape, init=init.reshape(out_shape + in_depth + filter_shape),
                      name='W')
    elif isinstance(init, np.ndarray):
        if init.shape[-len(filter_shape):] != filter_shape:
            raise ValueError("%s: the initial value of shape %s does not end in filter_shape %s"
                             % (op_name, init.shape, filter_shape))
        W = Parameter(init.shape, init=init, name='W')
    else:
        W = Parameter(out_shape + in_depth + filter_shape,
                      init=_initializer_for(init, output_rank=-len(out_shape), filter_rank=len(filter_shape)),
                      name='W')
    # the op's sequential result has no static axis for the sequence; the window's has one until removed
    bias_rank = len(filter_shape) - (sequential == 'op')
    b = Parameter(out_shape + (1,) * bias_rank, init=init_bias, name='b') if bias else None
    k_seq = filter_shape[0]

    def convolve(x):
        if reduction_rank == 0:
            x = _insert_leading_axis(x)
        auto_padding = pad
        if sequential == 'window':
            if len(filter_shape) == 1:
                # As CNTK's layer: the window along a new last axis, after any axes of the item
                # (an audio sample of shape (1,) gives (1, 1, k), which the kernel (1, k) fits).
                x = _sequence_window(reshape(x, (1,), begin_axis=Axis.new_leading_axis()), k_seq, axis=-1)
            else:
                x = _sequence_window(reshape(x, (1,), begin_axis=1, end_axis=1), k_seq)  # (C, k, M...)
            auto_padding = (False,) + tuple(pad[1:])  # the window is exactly the kernel's extent
        r = convolution(W, x, strides=strides, sharing=[True], auto_padding=auto_padding, dilation=dilation,
                        groups=groups, max_temp_mem_size_in_samples=max_temp_mem_size_in_samples,
                        sequential=sequential == 'op')
        if sequential == 'window' and not pad[0]:
            lpad = (k_seq - 1) // 2
            r = sequence_slice(r, lpad, -(k_seq - 1 - lpad))  # the steps whose window lies inside
        if b is not None:
            r = plus(r, b)
        if sequential == 'window':
            r = reshape(r, (), begin_axis=1, end_axis=2)  # the window's axis, reduced to 1
        if emulate_out_depth:
            r = _drop_leading_axis(r)
        if activation is not None and activation is not identity:
            r = activation(r)
        return r
    return layer(op_name, convolve, name)


def _check_rank(filter_shape, rank, what):
    if len(sanitize_shape(filter_shape)) != rank:
        raise ValueError("%s: filter_shape must have %d element%s, got %r"
                         % (what, rank, 's' if rank > 1 else '', filter_shape))


def Convolution1D(filter_shape, num_filters=None, activation=default_override_or(identity),
                  init=default_override_or(glorot_uniform()), pad=default_override_or(False), strides=1,
                  bias=default_override_or(True), init_bias=default_override_or(0), reduction_rank=1, dilation=1,
                  name=''):
    """Convolution with a 1-D filter_shape (see Convolution)."""
    _check_rank(filter_shape, 1, 'Convolution1D')
    return Convolution(filter_shape, num_filters, activation=get_default_override(Convolution1D, activation=activation),
                       init=get_default_override(Convolution1D, init=init),
                       pad=get_default_override(Convolution1D, pad=pad), strides=strides,
                       bias=get_default_override(Convolution1D, bias=bias),
                       init_bias=get_default_override(Convolution1D, init_bias=init_bias),
                       reduction_rank=reduction_rank, dilation=dilation, op_name='Convolution1D', name=name)


def Convolution2D(filter_shape, num_filters=None, activation=default_override_or(identity),
                  init=default_override_or(glorot_uniform()), pad=default_override_or(False), strides=1,
                  bias=default_override_or(True), init_bias=default_override_or(0), reduction_rank=1, dilation=1,
                  groups=1, name=''):
    """Convolution with a 2-D filter_shape (see Convolution)."""
    _check_rank(filter_shape, 2, 'Convolution2D')
    return Convolution(filter_shape, num_filters, activation=get_default_override(Convolution2D, activation=activation),
                       init=get_default_override(Convolution2D, init=init),
                       pad=get_default_override(Convolution2D, pad=pad), strides=strides,
                       bias=get_default_override(Convolution2D, bias=bias),
                       init_bias=get_default_override(Convolution2D, init_bias=init_bias),
                       reduction_rank=reduction_rank, dilation=dilation, groups=groups, op_name='Convolution2D',
                       name=name)


def Convolution3D(filter_shape, num_filters=None, activation=default_override_or(identity),
                  init=default_override_or(glorot_uniform()), pad=default_override_or(False), strides=1,
                  bias=default_override_or(True), init_bias=default_override_or(0), reduction_rank=1, dilation=1,
                  groups=1, name=''):
    """Convolution with a 3-D filter_shape (see Convolution)."""
    _check_rank(filter_shape, 3, 'Convolution3D')
    return Convolution(filter_shape, num_filters, activation=get_default_override(Convolution3D, activation=activation),
                       init=get_default_override(Convolution3D, init=init),
                       pad=get_default_override(Convolution3D, pad=pad), strides=strides,
                       bias=get_default_override(Convolution3D, bias=bias),
                       init_bias=get_default_override(Convolution3D, init_bias=init_bias),
                       reduction_rank=reduction_rank, dilation=dilation, groups=groups, op_name='Convolution3D',
                       name=name)


def ConvolutionTranspose(filter_shape, num_filters=None, activation=default_override_or(identity),
                         init=default_override_or(glorot_uniform()), pad=default_override_or(False), strides=1,
                         sharing=True, bias=default_override_or(True), init_bias=default_override_or(0),
                         output_shape=None, reduction_rank=1, dilation=1, max_temp_mem_size_in_samples=0,
                         op_name='ConvolutionTranspose', name=''):
    """A transposed-convolution ("deconvolution") layer: activation(convolution_transpose(W, x) + b).

    W has shape (C, num_filters, *filter_shape), C inferred from the input (C, H, W);
    `output_shape` (spatial) fixes the output size where the strides leave it ambiguous.
    """
    from ..ops import convolution_transpose
    activation = get_default_override(ConvolutionTranspose, activation=activation)
    init = get_default_override(ConvolutionTranspose, init=init)
    pad = get_default_override(ConvolutionTranspose, pad=pad)
    bias = get_default_override(ConvolutionTranspose, bias=bias)
    init_bias = get_default_override(ConvolutionTranspose, init_bias=init_bias)
    filter_shape = _filter_shape(filter_shape, op_name)
    strides = _conv_tuple(filter_shape, strides, 'strides')
    sharing = _conv_tuple(filter_shape, sharing, 'sharing')
    pad = _conv_tuple(filter_shape, pad, 'pad')
    dilation = _conv_tuple(filter_shape, dilation, 'dilation')
    if reduction_rank not in (0, 1):
        raise NotImplementedError("%s: reduction_rank must be 0 or 1" % op_name)
    if not all(sharing):
        raise NotImplementedError("%s: sharing must be True; a separate kernel per position is not supported "
                                  "(nor is it in CNTK 2.7)" % op_name)
    num_filters = sanitize_shape(num_filters) if num_filters is not None else ()
    if len(num_filters) > 1:
        raise ValueError("%s: num_filters must be an int or None" % op_name)
    emulate_out_depth = num_filters == ()
    out_shape = (1,) if emulate_out_depth else num_filters
    in_depth = (1,) if reduction_rank == 0 else _INFERRED
    if isinstance(init, np.ndarray):
        W = Parameter(init.shape, init=init, name='W')
    else:
        W = Parameter(in_depth + out_shape + filter_shape,
                      init=_initializer_for(init, output_rank=-len(out_shape), filter_rank=len(filter_shape)),
                      name='W')
    b = Parameter(out_shape + (1,) * len(filter_shape), init=init_bias, name='b') if bias else None

    def deconvolve(x):
        if reduction_rank == 0:
            x = _insert_leading_axis(x)
        r = convolution_transpose(W, x, strides=strides, sharing=[True], auto_padding=pad, output_shape=output_shape,
                                  dilation=dilation, max_temp_mem_size_in_samples=max_temp_mem_size_in_samples)
        if b is not None:
            r = plus(r, b)
        if emulate_out_depth:
            r = _drop_leading_axis(r)
        if activation is not None and activation is not identity:
            r = activation(r)
        return r
    return layer(op_name, deconvolve, name)


def _transpose_nd(rank):
    def make(filter_shape, num_filters=None, activation=default_override_or(identity),
             init=default_override_or(glorot_uniform()), pad=default_override_or(False), strides=1,
             bias=default_override_or(True), init_bias=default_override_or(0), output_shape=None, reduction_rank=1,
             dilation=1, name=''):
        what = 'ConvolutionTranspose%dD' % rank
        _check_rank(filter_shape, rank, what)
        return ConvolutionTranspose(filter_shape, num_filters,
                                    activation=get_default_override(make, activation=activation),
                                    init=get_default_override(make, init=init), pad=get_default_override(make, pad=pad),
                                    strides=strides, bias=get_default_override(make, bias=bias),
                                    init_bias=get_default_override(make, init_bias=init_bias),
                                    output_shape=output_shape, reduction_rank=reduction_rank, dilation=dilation,
                                    op_name=what, name=name)
    make.__name__ = make.__qualname__ = 'ConvolutionTranspose%dD' % rank
    make.__doc__ = "ConvolutionTranspose with a %d-D filter_shape (see ConvolutionTranspose)." % rank
    return make


ConvolutionTranspose1D = _transpose_nd(1)
ConvolutionTranspose2D = _transpose_nd(2)
ConvolutionTranspose3D = _transpose_nd(3)


def _pooling_layer(pooling_type, op_name, filter_shape, strides, pad, name):
    from ..ops import pooling
    filter_shape = _filter_shape(filter_shape, op_name)
    strides = _conv_tuple(filter_shape, strides, 'strides')
    pad = _conv_tuple(filter_shape, pad, 'pad')

    def pool(x):
        return pooling(x, pooling_type, filter_shape, strides=strides, auto_padding=pad)
    return layer(op_name, pool, name)


def MaxPooling(filter_shape, strides=1, pad=default_override_or(False), name=''):
    """Max pooling over windows of `filter_shape` (the trailing axes of the input)."""
    from ..ops import MAX_POOLING
    pad = get_default_override(MaxPooling, pad=pad)
    return _pooling_layer(MAX_POOLING, 'MaxPooling', filter_shape, strides, pad, name)


def AveragePooling(filter_shape, strides=1, pad=default_override_or(False), name=''):
    """Average pooling over windows of `filter_shape` (padding excluded from the average)."""
    from ..ops import AVG_POOLING
    pad = get_default_override(AveragePooling, pad=pad)
    return _pooling_layer(AVG_POOLING, 'AveragePooling', filter_shape, strides, pad, name)


def _global_pooling(pooling_type, op_name, name):
    from ..ops._prim import prim

    def pool(x):
        # An empty window pools all axes but the first (the channels): (C, H, W) -> (C, 1, 1).
        return prim('Pooling', [x], {'poolingType': pooling_type, 'poolingWindowShape': [],
                                     'autoPadding': [False]})
    return layer(op_name, pool, name)


def GlobalMaxPooling(name=''):
    """Max over all axes but the channels: (C, H, W) -> (C, 1, 1)."""
    from ..ops import MAX_POOLING
    return _global_pooling(MAX_POOLING, 'GlobalMaxPooling', name)


def GlobalAveragePooling(name=''):
    """Average over all axes but the channels: (C, H, W) -> (C, 1, 1)."""
    from ..ops import AVG_POOLING
    return _global_pooling(AVG_POOLING, 'GlobalAveragePooling', name)


def MaxUnpooling(filter_shape, strides=1, pad=False, name=''):
    """Max unpooling (two inputs: the pooled values and the pooling's input), mirroring MaxPooling."""
    from ..ops import unpooling, MAX_UNPOOLING
    filter_shape = _filter_shape(filter_shape, 'MaxUnpooling')
    strides = _conv_tuple(filter_shape, strides, 'strides')
    pad = _conv_tuple(filter_shape, pad, 'pad')

    def unpool(x, y):
        return unpooling(x, y, MAX_UNPOOLING, filter_shape, strides=strides, auto_padding=pad)
    return layer('MaxUnpooling', unpool, name)


__all__ += ['Convolution', 'SequentialConvolution', 'Convolution1D', 'Convolution2D', 'Convolution3D',
            'ConvolutionTranspose',
            'ConvolutionTranspose1D', 'ConvolutionTranspose2D', 'ConvolutionTranspose3D', 'MaxPooling',
            'AveragePooling', 'GlobalMaxPooling', 'GlobalAveragePooling', 'MaxUnpooling']
