"""Instantiation of a :class:`~.cntkmodel.CntkModelDescription` as CNTK functions.

:class:`ApiSetup` has one builder per :class:`~.cntkmodel.CntkLayerType`
(same name): ``ApiSetup.<type>(layer_definition, inputs)`` returns the CNTK
function of that layer applied to ``inputs`` (CNTK variables or functions),
initialized from the layer's ``parameter_tensor`` values when there are any.
Learned values are expected in Caffe's layouts (see each builder).
"""

from collections import OrderedDict

import numpy as np

import cntk
from cntk import ops
from cntk.internal import sanitize_input
from cntk.ops.functions import BlockFunction


def _tensor_data(layer, index):
    return np.asarray(layer.parameter_tensor[index].data, dtype=np.float32)


def _dilate(kernel, dilation):
    """Spread a kernel's taps ``dilation`` apart, zeros in between, so that a
    plain convolution computes the dilated one."""
    if all(d == 1 for d in dilation):
        return kernel
    spatial = kernel.shape[-len(dilation):]
    expanded = [(k - 1) * d + 1 for k, d in zip(spatial, dilation)]
    dilated = np.zeros(kernel.shape[:-len(dilation)] + tuple(expanded), dtype=kernel.dtype)
    taps = (Ellipsis,) + tuple(slice(None, None, d) for d in dilation)
    dilated[taps] = kernel
    return dilated


class BlockApiSetup(object):
    """Layers built as CNTK blocks from several primitive operations."""

    @staticmethod
    def convolution(output, kernel, stride, pad, kernel_init, bias_init, group, dilation, name):
        """Convolution over ``[C, H, W]`` inputs, grouped and dilated like Caffe's.

        Args:
            output (int): number of output channels.
            kernel (list): filter size [h, w].
            stride (list): [h, w] strides.
            pad (bool): pad so that every input position is covered.
            kernel_init (np.ndarray or None): filters ``[output, C/group, h, w]``.
            bias_init (np.ndarray or None): bias ``[output, 1, 1]``; None for no bias.
            group (int): number of channel groups convolved separately.
            dilation (list): [h, w] dilation.
            name (str): block name; parameters are named ``<name>.W``,
                ``<name>.<group>.W`` and ``<name>.b``.
        """
        group = int(group)

        def filters(init, channels_out, param_name):
            if init is None:
                # Without learned values the input depth is inferred.
                shape = (channels_out, cntk.InferredDimension) + tuple(
                    (k - 1) * d + 1 for k, d in zip(kernel, dilation))
                return ops.parameter(shape=shape, init=cntk.glorot_uniform(), name=param_name)
            init = _dilate(np.asarray(init, dtype=np.float32), dilation)
            return ops.parameter(shape=init.shape, init=init, name=param_name)

        if group == 1:
            weights = [filters(kernel_init, output, '{0}.W'.format(name))]
        elif kernel_init is None:
            raise ValueError('convolution {0}: grouped convolution needs its filter values'
                             .format(name))
        else:
            weights = [filters(init, output // group, '{0}.{1}.W'.format(name, i))
                       for i, init in enumerate(np.split(kernel_init, group))]
        bias = None
        if bias_init is not None:
            bias_init = np.asarray(bias_init, dtype=np.float32).reshape(output, 1, 1)
            bias = ops.parameter(shape=bias_init.shape, init=bias_init, name='{0}.b'.format(name))

        def convolve(w, x):
            # No striding or padding along the channel axis.
            return ops.convolution(w, x, strides=(1,) + tuple(stride),
                                   auto_padding=[False, pad, pad])

        @BlockFunction('Convolution', name)
        def _convolution(x):
            if group == 1:
                y = convolve(weights[0], x)
            else:
                # The block's argument has no shape yet; the filters know
                # each group's input depth.
                width = weights[0].shape[1]
                y = ops.splice(*[convolve(w, ops.slice(x, 0, i * width, (i + 1) * width))
                                 for i, w in enumerate(weights)], axis=0)
            return y if bias is None else y + bias
        return _convolution

    @staticmethod
    def linear(output_shape, input_shape, scale_init, bias_init, name):
        """Fully connected layer ``x @ sc + b`` over all input axes.

        Args:
            output_shape (tuple): ``(num_output,)``.
            input_shape (tuple): shape of one input sample.
            scale_init (np.ndarray): weights ``input_shape + output_shape``.
            bias_init (np.ndarray): bias, ``output_shape`` (or a single value).
            name (str): block name; parameters are ``<name>.sc`` and ``<name>.b``.
        """
        sc = ops.parameter(shape=tuple(input_shape) + tuple(output_shape),
                           init=scale_init, name='{0}.sc'.format(name))
        b = ops.parameter(shape=tuple(output_shape), init=bias_init, name='{0}.b'.format(name))

        @BlockFunction('linear', name)
        def _linear(x):
            return ops.times(x, sc) + b
        return _linear

    @staticmethod
    def lrn(k, n, alpha, beta, name):
        """Caffe's cross-channel LRN as a block named ``name``: a window of
        ``2n - 1`` channels (``n - 1`` on each side), normalizing by
        ``(k + alpha / (2n - 1) * sum of squares) ** beta``."""
        @BlockFunction('lrn', name)
        def _lrn(x):
            return ops.local_response_normalization(x, int(n - 1), k, alpha, beta)
        return _lrn


class ApiSetup(object):
    """Builders of CNTK functions from layer definitions (see module doc)."""

    @staticmethod
    def convolution(cntk_layer, inputs):
        """Convolution; tensors: filters ``[out, in/group, h, w]``, then bias."""
        x = sanitize_input(inputs[0])
        params = cntk_layer.parameters
        kernel_init = bias_init = None
        if cntk_layer.parameter_tensor:
            kernel_shape = (params.output, x.shape[0] // params.group) + tuple(params.kernel)
            kernel_init = _tensor_data(cntk_layer, 0).reshape(kernel_shape)
        if params.need_bias:
            bias_init = _tensor_data(cntk_layer, 1) if cntk_layer.parameter_tensor \
                else np.zeros(params.output, dtype=np.float32)
        return BlockApiSetup.convolution(
            params.output, params.kernel, stride=params.stride, pad=params.auto_pad,
            kernel_init=kernel_init, bias_init=bias_init, group=params.group,
            dilation=params.dilation, name=cntk_layer.op_name)(x)

    @staticmethod
    def batch_norm(cntk_layer, inputs):
        """Spatial batch normalization in inference form.

        Tensors as Caffe stores them: accumulated mean, accumulated variance
        and the accumulation scale (a one-element tensor dividing both), then
        optionally the scale and shift of a following ``Scale`` layer.
        """
        x = sanitize_input(inputs[0])
        channels = (x.shape[0],)
        scale, shift, mean, variance = 1, 0, 0, 1
        tensors = cntk_layer.parameter_tensor
        if tensors:
            if len(tensors) < 3:
                raise ValueError('batch_norm {0}: needs mean, variance and scale factor tensors'
                                 .format(cntk_layer.op_name))
            factor = float(np.asarray(tensors[2].data).reshape(-1)[0])
            factor = 1.0 / factor if factor != 0 else 0.0
            mean = _tensor_data(cntk_layer, 0) * factor
            variance = _tensor_data(cntk_layer, 1) * factor
            if len(tensors) == 5:
                scale, shift = _tensor_data(cntk_layer, 3), _tensor_data(cntk_layer, 4)
        name = cntk_layer.op_name

        def parameter(init, suffix):
            return ops.parameter(channels, init=init, name='{0}.{1}'.format(name, suffix))
        return ops.batch_normalization(
            x, parameter(scale, 'scale'), parameter(shift, 'bias'), parameter(mean, 'mean'),
            parameter(variance, 'var'), True, use_cudnn_engine=False,
            epsilon=cntk_layer.parameters.epsilon, running_count=ops.constant(0), name=name)

    @staticmethod
    def pooling(cntk_layer, inputs):
        """Max or average pooling, rounding the output size up as Caffe does."""
        params = cntk_layer.parameters
        kind = ops.AVG_POOLING if params.pooling_type else ops.MAX_POOLING
        return ops.pooling(sanitize_input(inputs[0]), kind, tuple(params.kernel),
                           strides=tuple(params.stride), auto_padding=[params.auto_pad],
                           ceil_out_dim=True, name=cntk_layer.op_name)

    @staticmethod
    def relu(cntk_layer, inputs):
        return ops.relu(sanitize_input(inputs[0]), name=cntk_layer.op_name)

    @staticmethod
    def dense(cntk_layer, inputs):
        """Fully connected layer; tensors: weights, then bias.

        Caffe stores the weights ``[num_output, inputs]`` unless its
        ``transpose`` option is set (``parameters.transpose`` says which).
        """
        x = sanitize_input(inputs[0])
        outputs = cntk_layer.parameters.num_output
        scale_shape = tuple(x.shape) + (outputs,)
        bias_shape = (outputs,)
        if cntk_layer.parameter_tensor:
            if len(cntk_layer.parameter_tensor) != 2:
                raise ValueError('dense {0}: expected two tensors (weights, bias), got {1}'
                                 .format(cntk_layer.op_name, len(cntk_layer.parameter_tensor)))
            scale_init = _tensor_data(cntk_layer, 0)
            if cntk_layer.parameters.transpose:
                scale_init = scale_init.reshape(outputs, -1).T
            scale_init = np.ascontiguousarray(scale_init.reshape(scale_shape))
            bias_init = _tensor_data(cntk_layer, 1).reshape(-1)
            if bias_init.size == 1:
                bias_init = np.full(bias_shape, bias_init[0], dtype=np.float32)
            bias_init = bias_init.reshape(bias_shape)
        else:
            scale_init, bias_init = cntk.glorot_uniform(), 0
        return BlockApiSetup.linear(bias_shape, tuple(x.shape), scale_init, bias_init,
                                    cntk_layer.op_name)(x)

    @staticmethod
    def plus(cntk_layer, inputs):
        return ops.plus(sanitize_input(inputs[0]), sanitize_input(inputs[1]),
                        name=cntk_layer.op_name)

    @staticmethod
    def dropout(cntk_layer, inputs):
        # Caffe's deploy networks keep dropout layers; they are inactive in
        # inference, and the rate does not matter then.
        return ops.dropout(sanitize_input(inputs[0]), name=cntk_layer.op_name)

    @staticmethod
    def lrn(cntk_layer, inputs):
        params = cntk_layer.parameters
        return BlockApiSetup.lrn(params.k, params.kernel_size, params.alpha, params.beta,
                                 cntk_layer.op_name)(sanitize_input(inputs[0]))

    @staticmethod
    def splice(cntk_layer, inputs):
        """Concatenation along the channel axis."""
        return ops.splice(*inputs, axis=0, name=cntk_layer.op_name)

    @staticmethod
    def softmax(cntk_layer, inputs):
        return ops.softmax(sanitize_input(inputs[0]), name=cntk_layer.op_name)

    @staticmethod
    def cross_entropy_with_softmax(cntk_layer, inputs):
        return ops.cross_entropy_with_softmax(sanitize_input(inputs[0]),
                                              sanitize_input(inputs[1]), name=cntk_layer.op_name)

    @staticmethod
    def classification_error(cntk_layer, inputs):
        return ops.classification_error(sanitize_input(inputs[0]),
                                        sanitize_input(inputs[1]), name=cntk_layer.op_name)

    @staticmethod
    def psroi_pooling(cntk_layer, inputs):
        raise NotImplementedError('layer {0}: position-sensitive ROI pooling has no CNTK '
                                  'operation to convert to'.format(cntk_layer.op_name))


class CntkApiInstance(object):
    """The CNTK network of a model description.

    Args:
        cntk_uni_model (:class:`~.cntkmodel.CntkModelDescription`): the network.
        global_conf (:class:`~..utils.globalconf.GlobalConf`): configuration;
            ``model_solver.cntk_tensor`` (``{input name: shape}``) overrides the
            network's inputs, ``model_solver.cntk_model_path`` is where
            :meth:`export_model` writes.
    """

    def __init__(self, cntk_uni_model, global_conf):
        self._functions = OrderedDict()
        self._output = None
        self._model_solver = global_conf.model_solver
        self._source_solver = global_conf.source_solver
        self.instance_input(cntk_uni_model.data_provider)
        self.instance_functions(cntk_uni_model.cntk_sorted_layers, cntk_uni_model.cntk_layers)

    def instance_input(self, data_providers):
        """Create the input variables, named as the network's inputs."""
        shapes = self._model_solver.cntk_tensor
        if shapes is None:
            shapes = OrderedDict((d.op_name, d.tensor) for d in data_providers)
        for name, shape in shapes.items():
            self._functions[name] = ops.input_variable(tuple(int(s) for s in shape), name=name)

    def instance_functions(self, cntk_sorted_layers, cntk_layers):
        """Build every layer in order; layers whose result no other layer uses
        become the outputs of the model."""
        unused = OrderedDict()
        for layer_name in cntk_sorted_layers:
            layer = cntk_layers[layer_name]
            for input_name in layer.inputs:
                unused.pop(input_name, None)
            inputs = [self._functions[name] for name in layer.inputs]
            self._functions[layer.op_name] = getattr(ApiSetup, layer.op_type.name)(layer, inputs)
            unused[layer.op_name] = self._functions[layer.op_name]
        self._output = ops.combine(list(unused.values()), name='outputs')

    def export_model(self):
        """Save the model to ``model_solver.cntk_model_path``."""
        self._output.save(self._model_solver.cntk_model_path)

    def get_model(self):
        """The model: a combination of all its outputs."""
        return self._output

    def get_functions(self):
        """``{name: function}`` of the inputs and of every layer."""
        return self._functions
