"""Crosstalk: named watch points for exchanging and comparing values across
toolkits.

A script registers variables under names (:meth:`Crosstalk.watch`); it can then
write their current values into a working directory (:meth:`Crosstalk.fetch`
with ``save=True``), overwrite them from there (:meth:`Crosstalk.assign` with
``load=True``) or compare them with what is stored (:meth:`Crosstalk.compare`).
A model ported from another toolkit is checked by saving its parameters and
activations there and loading/comparing them here (``crosstalk_cntk``).

Values are stored as ``<pass>_<name>.npy`` for a NumPy array and as
``<pass>_<name>.pkl`` (pickle) for anything else. Structured parameters
(convolution, RNN, embedding) are exchanged in a toolkit-neutral form, the
``*Args`` records below, whose layout is described by the ``*Attr`` records.
"""

import os
import pickle
from collections import namedtuple

import numpy as np

_VarInfo = namedtuple('_VarInfo', 'var type attr')
_FuncInfo = namedtuple('_FuncInfo', 'setter getter')


class Conv2DAttr(namedtuple('Conv2DAttr', 'filter_shape num_filters')):
    """Layout of a 2-D convolution over a single input channel.

    ``filter_shape``: the (height, width) of a filter; ``num_filters``: the
    number of output channels.
    """


class Conv2DArgs(namedtuple('Conv2DArgs', 'W b')):
    """Values of a 2-D convolution whose output is laid out NCHW.

    ``W``: filters of shape ``(num_filters,) + filter_shape``; ``b``: bias of
    shape ``(num_filters,)``, or None.
    """


class RnnAttr(namedtuple('RnnAttr', 'bidirectional op_type input_dim hidden_dim forget_bias')):
    """Layout of a recurrent layer.

    ``bidirectional`` (only True is supported), ``op_type`` (only 'lstm' is
    supported), ``input_dim``, ``hidden_dim`` and ``forget_bias`` (the constant
    some toolkits add to the forget gate).
    """


class RnnArgs(namedtuple('RnnArgs', 'fw_W fw_H fw_b bw_W bw_H bw_b')):
    """Values of a bidirectional recurrent layer, per direction (fw/bw).

    ``W``: input projection ``(input_dim, gates * hidden_dim)``; ``H``: hidden
    projection ``(hidden_dim, gates * hidden_dim)``; ``b``: bias
    ``(gates * hidden_dim,)``. LSTM gates are stacked in the order input,
    candidate (memory), forget, output.
    """


class EmbedAttr(namedtuple('EmbedAttr', 'dict input_dim')):
    """Layout of an embedding: ``dict`` lists the vocabulary, word ``dict[i]``
    owning row i; ``input_dim`` is the vocabulary size. Embeddings are exchanged
    as ``{word: vector}`` so that toolkits may number the words differently."""


def _isclose(a, b, rtol, atol, equal_nan):
    return bool(np.isclose(a, b, rtol, atol, equal_nan).all())


def _compare_list_to_ndarray(list_value, ndarray_value, rtol, atol, equal_nan):
    """Compare sequences given as a list of ``[len_i, ...]`` arrays with a
    padded ``[batch, max_len, ...]`` array; the padding is ignored."""
    if ndarray_value.shape[0] != len(list_value):
        raise ValueError('crosstalk: batch sizes differ ({0} vs {1})'
                         .format(ndarray_value.shape[0], len(list_value)))
    if ndarray_value.shape[2:] != list_value[0].shape[1:]:
        raise ValueError('crosstalk: sample shapes differ ({0} vs {1})'
                         .format(ndarray_value.shape[2:], list_value[0].shape[1:]))
    for index, sequence in enumerate(list_value):
        padded = ndarray_value[index][:sequence.shape[0]]
        if not _isclose(padded, sequence, rtol, atol, equal_nan):
            error = ((padded - sequence) ** 2).reshape(sequence.shape[0], -1).sum(axis=1)
            print('crosstalk: mismatch in sequence {0} at step {1}'
                  .format(index, int(np.argmax(error))))
            return False
    return True


def _is_array_list(value):
    return isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value)


class Crosstalk(object):
    """Toolkit-independent registry of watched variables.

    A toolkit binding subclasses it and registers, per variable type, a getter
    ``getter(var, attr) -> value`` and a setter ``setter(var, value, attr)``
    (:meth:`register_funcs`).
    """

    def __init__(self):
        self.funcs = {}
        self.work_dir = None
        self.reset()

    def reset(self):
        """Forget the watched variables and restart the pass count; registered
        getters/setters are kept."""
        self.vars = {}
        self.passes = 0

    def set_workdir(self, dir):
        """Use directory ``dir`` (created if missing) for saved values."""
        self.work_dir = dir
        os.makedirs(dir, exist_ok=True)

    def next_pass(self):
        """Start a new pass, so that later saves do not overwrite earlier ones."""
        self.passes += 1

    def watch(self, var, name, var_type=None, attr=None):
        """Watch ``var`` under the unique ``name``.

        Args:
            var: the toolkit's variable (or any object a registered getter and
                setter understand).
            name (str): unique name, also the base name of its saved files.
            var_type: key of the getter/setter to use; derived from ``var``
                when None.
            attr: layout record (:class:`Conv2DAttr`, :class:`RnnAttr`,
                :class:`EmbedAttr`) passed to the getter and setter.
        """
        if name in self.vars:
            raise ValueError('crosstalk: a variable named {0} is already watched'.format(name))
        self.vars[name] = _VarInfo(var, self._default_type(var) if var_type is None
                                   else var_type, attr)

    def _default_type(self, var):
        """Getter/setter key of a variable watched without ``var_type``."""
        return type(var)

    def register_funcs(self, var_type, setter=None, getter=None):
        """Use ``setter``/``getter`` for variables of type ``var_type``."""
        self.funcs[var_type] = _FuncInfo(setter, getter)

    def _funcs_for(self, var_type):
        # Exact key first; for classes, fall back to the nearest registered base.
        if var_type in self.funcs:
            return self.funcs[var_type]
        for base in getattr(var_type, '__mro__', ())[1:]:
            if base in self.funcs:
                return self.funcs[base]
        raise KeyError('crosstalk: no getter/setter registered for {0}'.format(var_type))

    def _get(self, name):
        var, var_type, attr = self.vars[name]
        getter = self._funcs_for(var_type).getter
        if getter is None:
            raise ValueError('crosstalk: values of {0} cannot be read'.format(name))
        return getter(var, attr)

    def _get_filename(self, name):
        if self.work_dir is None:
            raise ValueError('crosstalk: call set_workdir() first')
        return os.path.join(self.work_dir, '{0}_{1}'.format(self.passes, name))

    def load_raw_value(self, name):
        """Value saved under ``name`` in the current pass (array or pickled object)."""
        base = self._get_filename(name)
        if os.path.exists(base + '.npy'):
            return np.load(base + '.npy')
        if os.path.exists(base + '.pkl'):
            with open(base + '.pkl', 'rb') as f:
                return pickle.load(f)
        raise FileNotFoundError('crosstalk: nothing saved for {0} ({1}.npy/.pkl)'
                                .format(name, base))

    def fetch(self, name, save=False):
        """Current value of the variable watched as ``name``; with ``save``,
        also write it to the working directory."""
        value = self._get(name)
        if save:
            base = self._get_filename(name)
            is_array = type(value) == np.ndarray
            # Drop a file of the other format left by an earlier save of this
            # name, which load_raw_value would otherwise find first.
            stale = base + ('.pkl' if is_array else '.npy')
            if os.path.exists(stale):
                os.remove(stale)
            if is_array:
                np.save(base + '.npy', value)
            else:
                with open(base + '.pkl', 'wb') as f:
                    pickle.dump(value, f)
        return value

    def assign(self, name, value=None, load=False, load_name=None):
        """Set the variable watched as ``name``.

        Args:
            value: the new value, of the same type as :meth:`fetch` returns.
            load (bool): take the value saved in the working directory instead
                (``value`` must then be None).
            load_name (str): with ``load``, the saved name to read if it differs.
        """
        if load and value is not None:
            raise ValueError('crosstalk: assign takes either a value or load=True, not both')
        var, var_type, attr = self.vars[name]
        if load:
            value = self.load_raw_value(load_name or name)
        else:
            current = self.fetch(name)
            if type(current) != type(value):
                raise TypeError('crosstalk: cannot assign a {0} to {1}, which holds a {2}'
                                .format(type(value), name, type(current)))
        setter = self._funcs_for(var_type).setter
        if setter is None:
            raise ValueError('crosstalk: {0} cannot be assigned'.format(name))
        setter(var, value, attr)

    def compare(self, name, compare_name=None, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Whether the current value of ``name`` matches the saved one (of
        ``compare_name`` if given), element-wise as :func:`numpy.isclose`.

        Arrays, lists of per-sequence arrays (also against a padded array) and
        dicts of arrays can be compared.
        """
        value = self._get(name)
        expected = self.load_raw_value(compare_name or name)
        if isinstance(value, np.ndarray):
            if isinstance(expected, np.ndarray):
                return _isclose(expected, value, rtol, atol, equal_nan)
            if _is_array_list(expected):
                return _compare_list_to_ndarray(expected, value, rtol, atol, equal_nan)
        elif _is_array_list(value):
            if isinstance(expected, np.ndarray):
                return _compare_list_to_ndarray(value, expected, rtol, atol, equal_nan)
            if not _is_array_list(expected) or len(expected) != len(value):
                raise ValueError('crosstalk: {0}: saved value has another length or type'
                                 .format(name))
            return all(_isclose(e, v, rtol, atol, equal_nan) for e, v in zip(expected, value))
        elif isinstance(value, dict):
            if not isinstance(expected, dict) or expected.keys() != value.keys():
                raise ValueError('crosstalk: {0}: saved dict has other keys'.format(name))
            return all(_isclose(expected[k], value[k], rtol, atol, equal_nan) for k in value)
        raise TypeError('crosstalk: can only compare arrays, lists of arrays and dicts '
                        'of arrays, got {0} and {1}'.format(type(value), type(expected)))

    def load(self, names):
        """Assign every watched variable in ``names`` from the working directory."""
        for name in names:
            if name in self.vars:
                self.assign(name, load=True)

    def save(self, names):
        """Save every watched variable in ``names`` to the working directory."""
        for name in names:
            if name in self.vars:
                self.fetch(name, save=True)

    def save_all(self):
        """Save all watched variables."""
        self.save(list(self.vars))
