"""convert_optimized_rnnstack: rewrites the optimized_rnnstack ops of a model into
Recurrence compositions of LSTM / RNNStep cells (and, for GRU, a step function with
cuDNN's GRU equations) that hold the same weights, for engines and tools without the
fused op.

The weight layout read here is the one src/kernels/cpu/rnn_stack.h documents: all
layers' and directions' matrices W [G*H, in] and R [G*H, H], then all their bias pairs
bW, bR [G*H]. The cells of cntk.layers compute x @ W + h @ H + b with gates stacked
along columns, so the matrices are transposed and the two biases summed; LSTM's gates
go from cuDNN's order (i, f, g, o) to the layers' (i, g, f, o).
"""
import numpy as np

from .. import ops as _ops
from ..default_options import default_options
from ..layers.recurrent_blocks import LSTM, RNNStep
from ..layers.sequence import Recurrence
from ..ops.functions import CloneMethod, Function
from ..variables import Parameter
from .converter import convert

_GATES = {'lstm': 4, 'gru': 3, 'rnnTanh': 1, 'rnnReLU': 1}


def _is_stack(node):
    return isinstance(node, Function) and node.root_function.op_name == 'OptimizedRNNStack'


def _split_weights(flat, recurrent_op, input_size, hidden, num_layers, bidirectional):
    """[(W, R, bW, bR) per direction] per layer, in cuDNN's orientation."""
    g, dirs = _GATES[recurrent_op], 2 if bidirectional else 1
    gh = g * hidden
    pos, layers, inp = 0, [], input_size
    for _ in range(num_layers):
        layer = []
        for _ in range(dirs):
            W = flat[pos:pos + gh * inp].reshape(gh, inp)
            pos += gh * inp
            R = flat[pos:pos + gh * hidden].reshape(gh, hidden)
            pos += gh * hidden
            layer.append([W, R])
        layers.append(layer)
        inp = dirs * hidden
    for layer in layers:
        for mats in layer:
            mats += [flat[pos:pos + gh], flat[pos + gh:pos + 2 * gh]]
            pos += 2 * gh
    if pos != flat.size:
        raise ValueError("convert_optimized_rnnstack: the weights have %d values, the stack needs %d"
                         % (flat.size, pos))
    return layers


def _lstm_gate_order(a, hidden):
    """cuDNN's (i, f, g, o) blocks along the last axis -> the LSTM layer's (i, g, f, o)."""
    i, f, g, o = (a[..., k * hidden:(k + 1) * hidden] for k in range(4))
    return np.ascontiguousarray(np.concatenate([i, g, f, o], axis=-1))


def _set(param, value):
    param.value = np.ascontiguousarray(value, dtype=param.dtype)


def _gru_step(hidden, W, R, bW, bR, dtype):
    """cuDNN's GRU as a step function (h, x) -> h: the reset gate scales the recurrent
    candidate term after its product, R_n h + bR_n (the GRU layer of cntk.layers applies
    it to h before the product, a different cell)."""
    H = hidden
    pW = Parameter(W.shape, init=np.asarray(W, dtype=dtype), dtype=dtype, name='W')
    pR = Parameter(R.shape, init=np.asarray(R, dtype=dtype), dtype=dtype, name='H')
    pbW = Parameter(bW.shape, init=np.asarray(bW, dtype=dtype), dtype=dtype, name='b')
    pbR = Parameter(bR.shape, init=np.asarray(bR, dtype=dtype), dtype=dtype, name='b_recurrent')

    @Function
    def gru(h, x):
        gx = _ops.plus(_ops.times(x, pW), pbW)
        gr = _ops.plus(_ops.times(h, pR), pbR)

        def part(t, k):
            return _ops.slice(t, -1, k * H, (k + 1) * H)
        r = _ops.sigmoid(_ops.plus(part(gx, 0), part(gr, 0)))
        z = _ops.sigmoid(_ops.plus(part(gx, 1), part(gr, 1)))
        n = _ops.tanh(_ops.plus(part(gx, 2), _ops.element_times(r, part(gr, 2))))
        return _ops.plus(_ops.element_times(_ops.minus(1, z), n), _ops.element_times(z, h))
    return gru


def _direction(x, recurrent_op, hidden, mats, go_backwards, dtype, name, full_state=False):
    """One layer-direction as a Recurrence over x; with full_state, its outputs are the
    states over the sequence (h, and c for LSTM)."""
    W, R, bW, bR = mats
    if recurrent_op == 'gru':
        # Leading [in, 3H] / [H, 3H] orientation for x @ W and h @ R.
        step = _gru_step(hidden, W.T, R.T, bW, bR, dtype)
        # A zero initial state of the state's shape, which a plain step function does not declare.
        zero = _ops.constant(np.zeros(hidden, dtype=dtype))
        return Recurrence(step, go_backwards=go_backwards, initial_state=zero, name=name)(x)
    # Every option that changes the cell is given, so a caller's default_options cannot.
    with default_options(dtype=dtype):
        if recurrent_op == 'lstm':
            step = LSTM(hidden, activation=_ops.tanh, use_peepholes=False, enable_self_stabilization=False, name=name)
        else:
            step = RNNStep(hidden, activation=_ops.relu if recurrent_op == 'rnnReLU' else _ops.tanh,
                           enable_self_stabilization=False, name=name)
    out = Recurrence(step, go_backwards=go_backwards, return_full_state=full_state and recurrent_op == 'lstm')(x)
    # The cell's own parameters (those of `out` also include the layers feeding x).
    params = {p.name: p for p in step.parameters}
    if sorted(params) != ['H', 'W', 'b']:
        raise RuntimeError("convert_optimized_rnnstack: unexpected parameters %s in the %s cell"
                           % (sorted(params), recurrent_op))
    Wt, Rt, b = W.T, R.T, bW + bR
    if recurrent_op == 'lstm':
        Wt, Rt, b = _lstm_gate_order(Wt, hidden), _lstm_gate_order(Rt, hidden), _lstm_gate_order(b, hidden)
    _set(params['W'], Wt)
    _set(params['H'], Rt)
    _set(params['b'], b)
    return out


def _from_optimized_rnnstack(stack):
    """The Recurrence composition equal to one OptimizedRNNStack function, over its input."""
    f = stack.root_function
    attrs = f.attributes
    hidden, num_layers = int(attrs['hiddenSize']), int(attrs['numLayers'])
    bidirectional, recurrent_op = bool(attrs['bidirectional']), attrs['recurrentOp']
    if recurrent_op not in _GATES:
        raise ValueError('convert_optimized_rnnstack: unsupported recurrent_op value "%s"' % recurrent_op)
    x, weights = f.inputs[0], f.inputs[1]
    if any(d < 0 for d in weights.shape) or any(d < 0 for d in x.shape):
        raise ValueError("convert_optimized_rnnstack: the stack's weights are not initialized yet (their shape "
                         "%s is still inferred)" % (weights.shape,))
    dtype = np.float64 if weights.dtype == np.float64 else np.float32
    flat = np.asarray(weights.value, dtype=np.float64).reshape(-1)
    input_size = x.shape[0] if len(x.shape) else 1
    layers = _split_weights(flat, recurrent_op, input_size, hidden, num_layers, bidirectional)
    name = f.name or 'optimized_rnnstack'
    full_state = bool(attrs.get('returnFullState', False))
    out = x
    finals = []  # per layer and direction: its Recurrence's outputs and direction

    def run(layer_in, mats, backwards, label):
        r = _direction(layer_in, recurrent_op, hidden, mats, backwards, dtype, label, full_state)
        finals.append((r, backwards))
        return r.outputs[0]
    for k, layer in enumerate(layers):
        if bidirectional:
            fw = run(out, layer[0], False, '%s_fw%d' % (name, k))
            bw = run(out, layer[1], True, '%s_bw%d' % (name, k))
            out = _ops.splice(fw, bw).output
        else:
            out = run(out, layer[0], False, '%s_%d' % (name, k))
    if not full_state:
        return _ops.combine([out])
    # The final states (see optimized_rnnstack): the forward direction's last item, the
    # backward one's first, stacked as rows layer * D + direction.
    stacked = []
    for s in range(2 if recurrent_op == 'lstm' else 1):
        rows = []
        for r, backwards in finals:
            final = (_ops.sequence.first if backwards else _ops.sequence.last)(r.outputs[s])
            rows.append(_ops.reshape(final, (1, hidden)))
        stacked.append((_ops.splice(*rows, axis=0) if len(rows) > 1 else rows[0]).output)
    return _ops.combine([out] + stacked)


def convert_optimized_rnnstack(cudnn_model):
    '''
    Converts a model that contains optimized_rnnstack ops into one built from
    Recurrence layers (LSTM and RNNStep cells; GRU as a step function with cuDNN's GRU
    equations) holding the same weights, so that it runs where the fused op does not.
    Stacks that share one weight parameter become compositions that share parameters.
    The original model is left as it is.

    Args:
        cudnn_model: a model (Function) that contains optimized_rnnstack ops

    Returns:
        the converted model (a new Function whose arguments are new variables of the same
        shapes and names)
    '''
    first = {}  # weights uid -> (converted function, the input it was built on)

    def converter(stack):
        weights = stack.root_function.inputs[1]
        key = weights.uid
        if key in first:
            converted, old_input = first[key]
            return converted.clone(CloneMethod.share, {old_input: stack.root_function.inputs[0]})
        converted = _from_optimized_rnnstack(stack)
        first[key] = (converted, stack.root_function.inputs[0])
        return converted

    return convert(cudnn_model, _is_stack, converter)
