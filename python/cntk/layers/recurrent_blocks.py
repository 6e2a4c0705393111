"""The step functions of recurrent layers: LSTM, GRU and RNNStep (CNTK 2.7's
cntk.layers.blocks), for use inside Recurrence(), Fold() and friends.

Each returns a block Function from (previous state..., input) to the new state,
following CNTK's equations: the gates are stacked along the last axis of one
projection (LSTM order: input gate, cell input, forget gate, output gate; GRU:
update gate, reset gate, candidate), with an optional Stabilizer on every
state-related projection and an optional projection of the output (cell_shape).

Parameters are float32 unless `default_options(dtype=np.float64)` says otherwise.
"""
import warnings

import numpy as np

from ..default_options import default_override_or, get_default_override
from ..initializer import glorot_uniform
from ..internal import sanitize_shape
from ..ops import times, slice, sigmoid, tanh, plus, minus, element_times
from ..variables import Parameter
from .blocks import _INFERRED, _initializer_for, Stabilizer, layer

# The shapes of the state variables of the step functions made here, by uid:
# Recurrence() needs them to start a loop whose state is not known yet.
_STATE_SHAPES = {}
# The same by the uid of the block's recurrent weight H, which every call of the block
# shares: a step function that wraps a call of one (an LSTM whose input is spliced with
# attention, as in CNTK's sequence-to-sequence models) has the block's state shapes.
_STATE_SHAPES_BY_WEIGHT = {}


def _state_shapes(step_function):
    """The state shapes of a step function made by LSTM/GRU/RNNStep, or of one whose
    outputs are those of a call of such a block, else None."""
    shapes = _STATE_SHAPES.get(getattr(step_function, 'uid', None))
    if shapes is not None or not hasattr(step_function, 'outputs'):
        return shapes
    found = []
    for out in step_function.outputs:
        owner = out.owner
        if owner is None or not owner.is_block:
            return None
        cell = next((_STATE_SHAPES_BY_WEIGHT[p.uid] for p in owner.parameters if p.uid in _STATE_SHAPES_BY_WEIGHT),
                    None)
        index = next((i for i, o in enumerate(owner.outputs) if o == out), None)
        if cell is None or index is None or index >= len(cell):
            return None
        found.append(cell[index])
    return found


def _param_dtype(layer_function):
    return get_default_override(layer_function, dtype=default_override_or(np.float32))


def _recurrent_block(kind, shape, cell_shape, activation, use_peepholes, init, init_bias,
                     enable_self_stabilization, dtype, name):
    has_projection = cell_shape is not None
    shape = sanitize_shape(shape)
    cell_shape = sanitize_shape(cell_shape) if cell_shape is not None else shape
    if len(shape) != 1 or len(cell_shape) != 1:
        raise ValueError("%s: shape and cell_shape must be vectors (rank-1 tensors), got %s and %s"
                         % (kind, shape, cell_shape))
    dim = cell_shape[0]
    stacked = (dim * {'RNNStep': 1, 'GRU': 3, 'LSTM': 4}[kind],)
    stacked_h = (dim * {'RNNStep': 1, 'GRU': 2, 'LSTM': 4}[kind],)
    w_init = _initializer_for(init, output_rank=1)

    def param(shp, initializer, pname):
        return Parameter(shp, init=initializer, dtype=dtype, name=pname)

    b = param(stacked, init_bias, 'b')
    W = param(_INFERRED + stacked, w_init, 'W')
    H = param(shape + stacked_h, w_init, 'H')
    H1 = param(shape + cell_shape, w_init, 'H1') if kind == 'GRU' else None
    peep_init = _initializer_for(init, output_rank=1)
    Ci = param(cell_shape, peep_init, 'Ci') if use_peepholes else None
    Cf = param(cell_shape, peep_init, 'Cf') if use_peepholes else None
    Co = param(cell_shape, peep_init, 'Co') if use_peepholes else None
    Wmr = param(cell_shape + shape, w_init, 'P') if has_projection else None

    # Each use of a stabilizer gets its own instance (its own scale).
    Sdh = Stabilizer(enable_self_stabilization=enable_self_stabilization, name='dh_stabilizer')
    Sdc = Stabilizer(enable_self_stabilization=enable_self_stabilization, name='dc_stabilizer')
    Sct = Stabilizer(enable_self_stabilization=enable_self_stabilization, name='c_stabilizer')
    Sht = Stabilizer(enable_self_stabilization=enable_self_stabilization, name='P_stabilizer')

    def gate(t, k):
        return slice(t, -1, k * dim, (k + 1) * dim)

    def project(ht):
        return times(Sht(ht), Wmr) if has_projection else ht

    def lstm(dh, dc, x):
        dhs = Sdh(dh)
        dcs = Sdc(dc)
        proj4 = plus(plus(b, times(x, W)), times(dhs, H))

        def peep(z, c, C):
            return plus(z, element_times(C, c)) if use_peepholes else z
        it = sigmoid(peep(gate(proj4, 0), dcs, Ci))
        bit = element_times(it, activation(gate(proj4, 1)))
        ft = sigmoid(peep(gate(proj4, 2), dcs, Cf))
        bft = element_times(ft, dc)
        ct = plus(bft, bit)
        ot = sigmoid(peep(gate(proj4, 3), Sct(ct), Co))
        ht = element_times(ot, activation(ct))
        return (project(ht), ct)

    def gru(dh, x):
        dhs = Sdh(dh)
        projx3 = plus(b, times(x, W))
        projh2 = times(dhs, H)
        zt = sigmoid(plus(gate(projx3, 0), gate(projh2, 0)))
        rt = sigmoid(plus(gate(projx3, 1), gate(projh2, 1)))
        ct = activation(plus(gate(projx3, 2), times(element_times(dhs, rt), H1)))
        ht = plus(element_times(minus(1, zt), ct), element_times(zt, dhs))
        return project(ht)

    def rnn_step(dh, x):
        dhs = Sdh(dh)
        ht = activation(plus(plus(times(x, W), times(dhs, H)), b))
        return project(ht)

    f = layer(kind, {'LSTM': lstm, 'GRU': gru, 'RNNStep': rnn_step}[kind], name)
    _STATE_SHAPES[f.uid] = [shape, cell_shape] if kind == 'LSTM' else [shape]
    _STATE_SHAPES_BY_WEIGHT[H.uid] = _STATE_SHAPES[f.uid]
    return f


def LSTM(shape, cell_shape=None, activation=default_override_or(tanh), use_peepholes=default_override_or(False),
         init=default_override_or(glorot_uniform()), init_bias=default_override_or(0),
         enable_self_stabilization=default_override_or(False), name=''):
    """One step of an LSTM: a function (prev_h, prev_c, x) -> (h, c) for Recurrence().

    `cell_shape` gives the cell a size of its own, projected to `shape` for h;
    `use_peepholes` adds the cell-to-gate connections; `enable_self_stabilization`
    puts a Stabilizer on the state-related projections."""
    activation = get_default_override(LSTM, activation=activation)
    use_peepholes = get_default_override(LSTM, use_peepholes=use_peepholes)
    init = get_default_override(LSTM, init=init)
    init_bias = get_default_override(LSTM, init_bias=init_bias)
    enable_self_stabilization = get_default_override(LSTM, enable_self_stabilization=enable_self_stabilization)
    return _recurrent_block('LSTM', shape, cell_shape, activation, use_peepholes, init, init_bias,
                            enable_self_stabilization, _param_dtype(LSTM), name)


def GRU(shape, cell_shape=None, activation=default_override_or(tanh), init=default_override_or(glorot_uniform()),
        init_bias=default_override_or(0), enable_self_stabilization=default_override_or(False), name=''):
    """One step of a GRU: a function (prev_h, x) -> h for Recurrence()."""
    activation = get_default_override(GRU, activation=activation)
    init = get_default_override(GRU, init=init)
    init_bias = get_default_override(GRU, init_bias=init_bias)
    enable_self_stabilization = get_default_override(GRU, enable_self_stabilization=enable_self_stabilization)
    return _recurrent_block('GRU', shape, cell_shape, activation, False, init, init_bias,
                            enable_self_stabilization, _param_dtype(GRU), name)


def RNNStep(shape, cell_shape=None, activation=default_override_or(sigmoid),
            init=default_override_or(glorot_uniform()), init_bias=default_override_or(0),
            enable_self_stabilization=default_override_or(False), name=''):
    """One step of a plain RNN: (prev_h, x) -> activation(x @ W + prev_h @ H + b)."""
    activation = get_default_override(RNNStep, activation=activation)
    init = get_default_override(RNNStep, init=init)
    init_bias = get_default_override(RNNStep, init_bias=init_bias)
    enable_self_stabilization = get_default_override(RNNStep, enable_self_stabilization=enable_self_stabilization)
    return _recurrent_block('RNNStep', shape, cell_shape, activation, False, init, init_bias,
                            enable_self_stabilization, _param_dtype(RNNStep), name)


def RNNUnit(shape, cell_shape=None, activation=default_override_or(sigmoid),
            init=default_override_or(glorot_uniform()), init_bias=default_override_or(0),
            enable_self_stabilization=default_override_or(False), name=''):
    """The deprecated name of RNNStep (CNTK 2.7 keeps it for old scripts): the same step
    function, with its defaults read from default_options_for(RNNUnit, ...). Warns with a
    DeprecationWarning."""
    activation = get_default_override(RNNUnit, activation=activation)
    init = get_default_override(RNNUnit, init=init)
    init_bias = get_default_override(RNNUnit, init_bias=init_bias)
    enable_self_stabilization = get_default_override(RNNUnit, enable_self_stabilization=enable_self_stabilization)
    warnings.warn("RNNUnit is a deprecated name of RNNStep and will be removed; use RNNStep(...), which is the "
                  "same layer", DeprecationWarning, stacklevel=2)
    return _recurrent_block('RNNStep', shape, cell_shape, activation, False, init, init_bias,
                            enable_self_stabilization, _param_dtype(RNNUnit), name)


__all__ = ['LSTM', 'GRU', 'RNNStep', 'RNNUnit']
