"""Feed-forward layers: Dense, Embedding, Dropout, Activation, LayerNormalization, Label."""
import numpy as np

from .. import _cntk
from ..default_options import default_override_or, get_default_override
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
    scale = Parameter((), init=initial_scale, name='scale')
    bias = Parameter((), init=initial_bias, name='bias')

    def layer_norm(x):
        mean = reduce_mean(x)
        centered = minus(x, mean)
        std = sqrt(plus(reduce_mean(element_times(centered, centered)), epsilon))
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
