"""Ready-made networks approximating Q(s, .) or the unnormalized log-policy.

Every builder returns a dict with four entries:

* ``'inputs'``: the observation variable (an input, or a placeholder that the
  caller binds later with ``replace_placeholder``),
* ``'outputs'``: an input variable for the regression/classification targets,
* ``'f'``: the network output, one value per action,
* ``'loss'``: ``loss_function(f, outputs)``, squared error when none is given.

Policy-gradient agents pass ``cross_entropy_with_softmax`` as the loss, so that
``f`` is read as the logits of the policy.
"""

import ast

import numpy as np

import cntk as C


def _observation_variable(shape_of_inputs, use_placeholder_for_input):
    if use_placeholder_for_input:
        return C.ops.placeholder(shape=shape_of_inputs)
    return C.ops.input_variable(shape=shape_of_inputs, dtype=np.float32)


def _relu_stack(widths):
    """Dense ReLU layers of the given widths (identity when there are none)."""
    return C.layers.Sequential(
        [C.layers.Dense(width, activation=C.ops.relu) for width in widths])


def _package(inputs, outputs, f, loss_function):
    loss = (C.losses.squared_error if loss_function is None else loss_function)(f, outputs)
    return {'inputs': inputs, 'outputs': outputs, 'f': f, 'loss': loss}


class Models:
    """Namespace of the predefined network builders."""

    @staticmethod
    def feedforward_network(shape_of_inputs,
                            number_of_outputs,
                            model_hidden_layers,
                            loss_function=None,
                            use_placeholder_for_input=False):
        """Fully connected ReLU network with a linear output layer.

        Args:
            shape_of_inputs (tuple): shape of one observation.
            number_of_outputs (int): output width, normally the number of actions.
            model_hidden_layers (str): Python literal list of hidden layer widths,
                e.g. ``'[64, 32]'`` (as written in the agent's config file).
            loss_function: ``loss(f, targets)``; squared error if None.
            use_placeholder_for_input (bool): make ``inputs`` a placeholder.
        """
        inputs = _observation_variable(shape_of_inputs, use_placeholder_for_input)
        outputs = C.ops.input_variable(shape=(number_of_outputs,), dtype=np.float32)
        hidden = ast.literal_eval(model_hidden_layers)
        f = C.layers.Sequential([
            _relu_stack(hidden),
            C.layers.Dense(number_of_outputs, activation=None)])(inputs)
        return _package(inputs, outputs, f, loss_function)

    @staticmethod
    def dueling_network(shape_of_inputs,
                        number_of_outputs,
                        model_hidden_layers,
                        loss_function=None,
                        use_placeholder_for_input=False):
        """Dueling architecture (Wang et al. 2016, arXiv:1511.06581).

        A shared trunk feeds a state-value head V and an advantage head A; the
        output is ``Q = V + A - mean(A)``, the mean making the split identifiable.

        Args:
            model_hidden_layers (str): ``'[s1, ..., [v1, ...], [a1, ...]]'``: the
                leading integers are the shared trunk's widths, the two trailing
                lists those of the value and advantage heads. ``None`` entries
                are ignored, so ``'[None, [3], [None]]'`` has no trunk layers.

            The other arguments are as for :meth:`feedforward_network`.
        """
        inputs = _observation_variable(shape_of_inputs, use_placeholder_for_input)
        outputs = C.ops.input_variable(shape=(number_of_outputs,), dtype=np.float32)
        shared, value_widths, advantage_widths = \
            Models._parse_dueling_network_structure(model_hidden_layers)
        trunk = _relu_stack(shared)(inputs)
        value = C.layers.Sequential([
            _relu_stack(value_widths), C.layers.Dense(1, activation=None)])(trunk)
        advantage = C.layers.Sequential([
            _relu_stack(advantage_widths),
            C.layers.Dense(number_of_outputs, activation=None)])(trunk)
        q = value + advantage - C.ops.reduce_mean(advantage, axis=0)
        return _package(inputs, outputs, q, loss_function)

    @staticmethod
    def _parse_dueling_network_structure(hidden_layers_str):
        """Split a dueling structure string into (shared, value, advantage) lists."""
        layers = ast.literal_eval(hidden_layers_str)
        if not (isinstance(layers, list) and len(layers) > 2
                and isinstance(layers[-2], list) and isinstance(layers[-1], list)):
            raise ValueError('Invalid dueling network structure "{0}": expected '
                             '"[shared..., [value...], [advantage...]]"'
                             .format(hidden_layers_str))
        return tuple(Models._remove_none_elements_from_list(part)
                     for part in (layers[:-2], layers[-2], layers[-1]))

    @staticmethod
    def _remove_none_elements_from_list(value_list):
        return [e for e in value_list if e is not None]
