"""Binarized convolutions (1-bit weights and activations).

Workflow: :func:`convert_to_binary_convolution` replaces the convolutions of a
trained model with :func:`binary_convolution` blocks, the result is fine-tuned
(gradients use the straight-through estimator), then
:func:`convert_to_native_binary_convolution` would swap in the native kernel
when the plug-in library is available. :func:`binarize_convolution` does all
three steps.
"""

import cntk as C
from cntk.contrib import netopt
from cntk.contrib.netopt.custom_convolution_ops import CustomMultibit

# Block names of the convolution layers of cntk.layers.
_CONVOLUTION_BLOCKS = ('Convolution', 'Convolution1D', 'Convolution2D', 'Convolution3D')


def _is_function(x):
    return isinstance(x, C.Function)


def _data_input(block):
    """The block's operand: its one input that is not a parameter or constant."""
    operands = [i for i in block.inputs if not (i.is_parameter or i.is_constant)]
    if len(operands) != 1:
        raise ValueError('{0} {1!r}: expected one data input, found {2}'
                         .format(block.op_name, block.name, len(operands)))
    return operands[0]


def _spatial(values, rank=2):
    """The last ``rank`` entries of a per-axis attribute (CNTK broadcasts a
    shorter list from its last entry)."""
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    values = [values[0]] * (rank - len(values)) + values
    return tuple(values[-rank:])


def binary_convolution(filter_shape,
                       num_filters=1,
                       channels=1,
                       init=C.glorot_uniform(),
                       pad=False,
                       strides=1,
                       name='BinaryConvolution'):
    """A 2-D convolution layer whose filters and inputs are binarized.

    Both the filters and the operand go through a 1-bit
    :func:`~.custom_convolution_ops.CustomMultibit` before the convolution.

    Args:
        filter_shape (tuple): filter (height, width).
        num_filters (int): number of output channels.
        channels (int): number of input channels.
        init: initializer of the filters (shape ``(num_filters, channels) +
            filter_shape``), or their values.
        pad (bool or tuple): pad spatially (per axis with a tuple).
        strides (int or tuple): spatial strides.
        name (str): op name of the block (``'BinaryConvolution'``).

    Returns:
        a function that applies the layer to an operand, as a block.
    """
    filter_shape = tuple(filter_shape)
    W = C.Parameter(shape=(num_filters, channels) + filter_shape, init=init, name='filter')
    pads = _spatial(pad, len(filter_shape))
    stride = _spatial(strides, len(filter_shape))

    def convolution(operand):
        operand_placeholder = C.placeholder(operand.shape, operand.dynamic_axes, name='operand')
        binarized = C.convolution(CustomMultibit(W, 1), CustomMultibit(operand_placeholder, 1),
                                  auto_padding=[False] + list(pads), strides=stride)
        return C.as_block(binarized, [(operand_placeholder, operand)], name)
    return convolution


def convert_to_binary_convolution(model, filter_function=None):
    """Replace the convolution layers of ``model`` with binary convolutions.

    Each convolution block of :mod:`cntk.layers` (selected by
    ``filter_function(block)`` when given) has its convolution replaced by a
    ``BinaryConvolution`` block with the same geometry; the block's other
    operations (bias, activation) are kept. The new filters are freshly
    initialized, so the model needs training afterwards.
    """
    def is_convolution_block(x):
        return (_is_function(x) and x.is_block and x.op_name in _CONVOLUTION_BLOCKS
                and (filter_function(x) if filter_function else True))

    def convert_block(block):
        operand = _data_input(block)

        def is_inner_convolution(x):
            return _is_function(x) and not x.is_block and x.op_name == 'Convolution'

        def binarize(convolution):
            W = next(i for i in convolution.inputs if i.is_parameter)
            attributes = convolution.attributes
            return binary_convolution(
                tuple(W.shape[2:]), num_filters=W.shape[0], channels=W.shape[1],
                strides=_spatial(attributes['strides'], len(W.shape) - 2),
                pad=_spatial(attributes['autoPadding'], len(W.shape) - 2),
                name='BinaryConvolution')(operand)

        # The block's contents, with the convolution swapped and the block's
        # placeholder thereby replaced by the real operand.
        return C.misc.convert(C.as_composite(block.block_root), is_inner_convolution, binarize)

    return C.misc.convert(model, is_convolution_block, convert_block)


def convert_to_native_binary_convolution(model):
    """Swap the ``BinaryConvolution`` blocks of ``model`` for the native
    binary convolution kernel (same parameters).

    Raises:
        RuntimeError: the native plug-in library is not available (it was an
            optional, separately built part of CNTK 2.7 and is not part of
            this package).
    """
    if not netopt.native_convolve_function_registered:
        raise RuntimeError('The native binary convolution library {0} is not available; '
                           'binary convolution blocks can only run as regular CNTK '
                           'operations.'.format(netopt.NATIVE_BINARY_CONVOLUTION_LIBRARY))

    def is_binary_block(x):
        return _is_function(x) and x.is_block and x.op_name == 'BinaryConvolution'

    def to_native(block):
        attributes = block.block_root.attributes
        filters, operand = block.inputs[0], block.inputs[1]
        native_attributes = {
            'stride': _spatial(attributes['strides'])[-1],
            'padding': _spatial(attributes['autoPadding'])[-1],
            'size': filters.shape[-1],
            'h': operand.shape[1],
            'w': operand.shape[2],
            'channels': operand.shape[0],
            'filters': filters.shape[0],
        }
        return C.ops.native_user_function('NativeBinaryConvolveFunction', list(block.inputs),
                                          native_attributes, 'NativeBinaryConvolution')

    return C.misc.convert(model, is_binary_block, to_native)


def binarize_convolution(model, train_function, filter_function=None):
    """Binarize the convolutions of ``model`` (those ``filter_function``
    selects), fine-tune the result with ``train_function(model)``, and return
    it with the native binary convolution kernel swapped in."""
    if train_function is None:
        raise ValueError('binarize_convolution: a train_function is needed to fine-tune '
                         'the binarized model')
    binarized = convert_to_binary_convolution(model, filter_function)
    train_function(binarized)
    return convert_to_native_binary_convolution(binarized)
