"""Example of a user-defined model for the agents.

When the predefined :class:`~.models.Models` do not fit, write a function with
the signature ``(shape_of_inputs, number_of_outputs, loss_function=None,
use_placeholder_for_input=False)`` returning the same dict as the predefined
builders, and name it (``module.function``) as ``QRepresentation`` or
``PolicyRepresentation`` in the agent's config file.
"""

import numpy as np

import cntk as C


def conv_dqn(shape_of_inputs,
             number_of_outputs,
             loss_function=None,
             use_placeholder_for_input=False):
    """The convolutional Q network of the DQN Nature paper (Mnih et al. 2015).

    Expects stacked 8-bit frames, e.g. ``(4, 84, 84)`` from
    :class:`~.preprocessing.AtariPreprocessing`.
    """
    inputs = C.ops.placeholder(shape=shape_of_inputs) \
        if use_placeholder_for_input \
        else C.ops.input_variable(shape=shape_of_inputs, dtype=np.float32)
    outputs = C.ops.input_variable(shape=(number_of_outputs,), dtype=np.float32)

    # Pixels in [0, 255] are brought to roughly [-0.5, 0.5].
    scaled = (inputs - 128) / 256
    with C.layers.default_options(activation=C.ops.relu):
        q = C.layers.Sequential([
            C.layers.Convolution((8, 8), 32, strides=4),
            C.layers.Convolution((4, 4), 64, strides=2),
            C.layers.Convolution((3, 3), 64, strides=2),
            C.layers.Dense((512,)),
            C.layers.Dense(number_of_outputs, activation=None)
        ])(scaled)

    loss_function = loss_function or C.losses.squared_error
    return {'inputs': inputs, 'outputs': outputs, 'f': q,
            'loss': loss_function(q, outputs)}
