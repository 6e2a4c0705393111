"""CNTK side of crosstalk: getters and setters for CNTK variables.

``instance`` is the ready-made :class:`CNTKCrosstalk` scripts use. Watched
objects are handled by kind:

* a :class:`~cntk.variables.Parameter`: its value;
* :data:`DictParameterType`: a dict of parameters, as a dict of values;
* a :class:`~cntk.ops.functions.Function` or an output
  :class:`~cntk.variables.Variable`: its value on the data given to
  :meth:`CNTKCrosstalk.set_data` (read-only);
* :class:`~cntk.contrib.crosstalk.Conv2DAttr`: a convolution function's
  parameters as :class:`~cntk.contrib.crosstalk.Conv2DArgs`;
* :class:`~cntk.contrib.crosstalk.RnnAttr`: a bidirectional LSTM, either a
  splice of two ``Recurrence(LSTM)`` or an ``optimized_rnnstack``, as
  :class:`~cntk.contrib.crosstalk.RnnArgs`;
* :class:`~cntk.contrib.crosstalk.EmbedAttr`: an embedding matrix as
  ``{word: vector}``.
"""

import numpy as np

import cntk as C
from cntk.contrib import crosstalk as cstk

#: ``var_type`` for watching a dict of parameters as one variable.
DictParameterType = 'DictParameter'


def find_func_param(func, name=None, shape=None, allow_not_found=False):
    """The parameter of ``func`` with the given name or shape.

    A function with a single parameter returns it regardless. Raises if none
    or several match (returns None when none matches and ``allow_not_found``).
    """
    params = func.parameters
    if len(params) == 1:
        return params[0]
    found = [p for p in params if (shape and p.shape == shape) or name == p.name]
    if not found:
        if allow_not_found:
            return None
        raise ValueError('crosstalk: no parameter named {0!r} or shaped {1} in {2}'
                         .format(name, shape, func))
    if len(found) > 1:
        raise ValueError('crosstalk: several parameters named {0!r} or shaped {1} in {2}'
                         .format(name, shape, func))
    return found[0]


def _parameter_setter(p, raw_value, attr=None):
    raw_value = np.asarray(raw_value)
    if p.shape != raw_value.shape:
        raise ValueError('crosstalk: parameter {0} has shape {1}, the value {2}'
                         .format(p.name, p.shape, raw_value.shape))
    p.value = raw_value


def _parameter_getter(p, attr=None):
    return p.value


def _dict_parameter_setter(params, raw_value, attr=None):
    if params.keys() != raw_value.keys():
        raise ValueError('crosstalk: keys differ: {0} vs {1}'
                         .format(sorted(params), sorted(raw_value)))
    for key, p in params.items():
        _parameter_setter(p, raw_value[key])


def _dict_parameter_getter(params, attr=None):
    return {key: p.value for key, p in params.items()}


def _function_getter(data):
    def get(f, attr=None):
        return f.eval(data)
    return get


def _variable_getter(data):
    def get(v, attr=None):
        # Evaluate just this output of its owner (which may have several).
        return C.combine([v]).eval(data)
    return get


# Convolution: CNTK holds the filters as (num_filters, channels=1, h, w) and the
# bias as (num_filters, 1, 1); the exchanged form drops the singleton axes.

def _conv2d_filter(f, attr):
    return find_func_param(f, shape=(attr.num_filters, 1) + tuple(attr.filter_shape))


def _conv2d_bias(f, attr, allow_not_found):
    return find_func_param(f, shape=(attr.num_filters, 1, 1),
                           allow_not_found=allow_not_found)


def _conv2d_getter(f, attr):
    W = _conv2d_filter(f, attr).value
    bias = _conv2d_bias(f, attr, allow_not_found=True)
    return cstk.Conv2DArgs(W=W[:, 0, :, :],
                           b=None if bias is None else bias.value.reshape(-1))


def _conv2d_setter(f, raw_value, attr):
    W = _conv2d_filter(f, attr)
    _parameter_setter(W, np.reshape(raw_value.W, W.shape))
    if raw_value.b is not None:
        b = _conv2d_bias(f, attr, allow_not_found=False)
        _parameter_setter(b, np.reshape(raw_value.b, b.shape))


# Recurrent layers.

_GATES = {'lstm': 4, 'gru': 3}


def _gate_count(op_type):
    if op_type not in _GATES:
        raise NotImplementedError('crosstalk: RNN type {0!r} is not supported'.format(op_type))
    return _GATES[op_type]


def _swap_middle_gates(a):
    """Exchange the 2nd and 3rd gate blocks along the last axis.

    cuDNN stacks LSTM gates as (input, forget, candidate, output), CNTK's LSTM
    layer (and the exchanged form) as (input, candidate, forget, output); the
    swap converts either way.
    """
    i, g1, g2, o = np.split(np.asarray(a), 4, axis=-1)
    return np.concatenate((i, g2, g1, o), axis=-1)


def _cudnn_sections(attr):
    """Sizes of the blocks of an optimized_rnnstack's flat weights (one layer):
    each direction's W and R matrices, then each direction's two biases."""
    gates_hidden = _gate_count(attr.op_type) * attr.hidden_dim
    directions = 2 if attr.bidirectional else 1
    matrices = [gates_hidden * attr.input_dim, gates_hidden * attr.hidden_dim] * directions
    biases = [gates_hidden, gates_hidden] * directions
    return matrices + biases


def _cudnn_rnn_getter(param, attr):
    sizes = _cudnn_sections(attr)
    fw_W, fw_R, bw_W, bw_R, fw_bW, fw_bR, bw_bW, bw_bR = \
        np.split(param.value.reshape(-1), np.cumsum(sizes)[:-1])
    gates_hidden = _gate_count(attr.op_type) * attr.hidden_dim

    def matrix(m):  # cuDNN keeps [gates*hidden, in]; exchanged is [in, gates*hidden]
        return _swap_middle_gates(m.reshape(gates_hidden, -1).T)

    # cuDNN has separate input and recurrent biases; only their sum matters.
    return cstk.RnnArgs(fw_W=matrix(fw_W), fw_H=matrix(fw_R), fw_b=_swap_middle_gates(fw_bW + fw_bR),
                        bw_W=matrix(bw_W), bw_H=matrix(bw_R), bw_b=_swap_middle_gates(bw_bW + bw_bR))


def _cudnn_rnn_setter(param, raw_value, attr):
    def matrix(m):
        return _swap_middle_gates(m).T.reshape(-1)

    def bias(b):
        return _swap_middle_gates(b).reshape(-1)

    flat = np.concatenate((
        matrix(raw_value.fw_W), matrix(raw_value.fw_H),
        matrix(raw_value.bw_W), matrix(raw_value.bw_H),
        bias(raw_value.fw_b), np.zeros(np.size(raw_value.fw_b)),
        bias(raw_value.bw_b), np.zeros(np.size(raw_value.bw_b))))
    _parameter_setter(param, flat.reshape(param.shape).astype(param.dtype))


def _birnn_parameters(f):
    """RnnArgs of parameters of ``splice(forward_recurrence, backward_recurrence)``."""
    root = f.root_function
    if root.op_name != 'Splice':
        raise NotImplementedError('crosstalk: a bidirectional RNN must be a Splice of the '
                                  'forward and backward recurrences, got {0}'.format(root.op_name))
    fw, bw = root.inputs[0].owner, root.inputs[1].owner
    return cstk.RnnArgs(fw_W=find_func_param(fw, name='W'),
                        fw_H=find_func_param(fw, name='H'),
                        fw_b=find_func_param(fw, name='b'),
                        bw_W=find_func_param(bw, name='W'),
                        bw_H=find_func_param(bw, name='H'),
                        bw_b=find_func_param(bw, name='b'))


def _uses_fused_rnn(f):
    # optimized_rnnstack keeps all of its weights in one flat parameter.
    return len(f.parameters) == 1


def _rnn_getter(f, attr):
    if not attr.bidirectional:
        raise NotImplementedError('crosstalk: only bidirectional RNNs are supported')
    if _uses_fused_rnn(f):
        return _cudnn_rnn_getter(f.parameters[0], attr)
    return cstk.RnnArgs(*(p.value for p in _birnn_parameters(f)))


def _rnn_setter(f, raw_value, attr):
    if not attr.bidirectional:
        raise NotImplementedError('crosstalk: only bidirectional RNNs are supported')
    if _uses_fused_rnn(f):
        _cudnn_rnn_setter(f.parameters[0], raw_value, attr)
        return
    for p, value in zip(_birnn_parameters(f), raw_value):
        _parameter_setter(p, value)


# Embeddings.

def _embed_getter(p, attr):
    value = p.value
    return {attr.dict[i]: value[i, :] for i in range(attr.input_dim)}


def _embed_setter(p, raw_value, attr):
    rows = [None] * attr.input_dim
    for word, vector in raw_value.items():
        rows[attr.dict.index(word)] = vector
    if any(r is None for r in rows):
        raise ValueError('crosstalk: the embedding value misses words of the dictionary')
    _parameter_setter(p, np.asarray(rows))


class CNTKCrosstalk(cstk.Crosstalk):
    """Crosstalk for CNTK graphs (see the module documentation)."""

    def __init__(self):
        super(CNTKCrosstalk, self).__init__()
        self.register_funcs(C.variables.Parameter, setter=_parameter_setter, getter=_parameter_getter)
        self.register_funcs(DictParameterType, setter=_dict_parameter_setter,
                            getter=_dict_parameter_getter)
        self.register_funcs(cstk.Conv2DAttr, setter=_conv2d_setter, getter=_conv2d_getter)
        self.register_funcs(cstk.RnnAttr, setter=_rnn_setter, getter=_rnn_getter)
        self.register_funcs(cstk.EmbedAttr, setter=_embed_setter, getter=_embed_getter)

    def _default_type(self, var):
        # Parameters and other variables share one Python class in the
        # binding, so the kind is asked of the object itself.
        if isinstance(var, C.ops.functions.Function):
            return C.ops.functions.Function
        if isinstance(var, C.variables.Variable):
            return C.variables.Parameter if var.is_parameter else C.variables.Variable
        return type(var)

    def set_data(self, data):
        """Use ``data`` (``eval`` arguments) to evaluate watched functions and
        variables."""
        self.register_funcs(C.ops.functions.Function, getter=_function_getter(data))
        self.register_funcs(C.variables.Variable, getter=_variable_getter(data))

    def is_param(self, name):
        """Whether the variable watched as ``name`` holds parameters (as
        opposed to computed values)."""
        return self.vars[name].type not in (C.ops.functions.Function, C.variables.Variable)

    def load_all_params(self):
        """Assign all watched parameters from the working directory."""
        self.load([n for n in self.vars if self.is_param(n)])

    def save_all_params(self):
        """Save all watched parameters to the working directory."""
        self.save([n for n in self.vars if self.is_param(n)])


instance = CNTKCrosstalk()
