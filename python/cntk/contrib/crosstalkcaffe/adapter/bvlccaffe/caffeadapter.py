"""Reading a Caffe network (``.prototxt``) and its weights (``.caffemodel``)
into the toolkit-neutral model description."""

import math
import os
import sys
import time

import numpy as np
from google.protobuf import text_format

from cntk.contrib.crosstalkcaffe.adapter import baseadapter
from cntk.contrib.crosstalkcaffe.unimodel import cntkmodel
from . import caffeimpl


def _format_to_list(target, rank, default_pad=0):
    """A Caffe size setting (a number, or a repeated field of 0, 1 or ``rank``
    values) as a list of ``rank`` numbers."""
    if isinstance(target, int):
        return [target] * rank
    values = list(target)
    if len(values) == rank:
        return values
    return [values[0] if values else default_pad] * rank


def _setup_convolution_parameters(parameters, input_tensor, is_ceil_pad=False):
    """(kernel, strides, output [h, w], padded?, dilation) of a convolution or
    pooling over an input of shape ``[C, H, W]``. Caffe rounds the output size
    down for convolution and up for pooling (``is_ceil_pad``)."""
    kernel = _format_to_list(parameters.kernel_size, 2)
    kernel = [parameters.kernel_h or kernel[0], parameters.kernel_w or kernel[1]]
    strides = _format_to_list(parameters.stride, 2, 1)
    strides = [parameters.stride_h or strides[0], parameters.stride_w or strides[1]]
    pads = _format_to_list(parameters.pad, 2, 0)
    pads = [parameters.pad_h or pads[0], parameters.pad_w or pads[1]]
    dilation = [1, 1]
    if len(getattr(parameters, 'dilation', ())):
        dilation = _format_to_list(parameters.dilation, 2)
    rounding = math.ceil if is_ceil_pad else math.floor
    output = []
    for size, k, s, p, d in zip(input_tensor[1:], kernel, strides, pads, dilation):
        extent = (k - 1) * d + 1
        output.append(int(rounding(float(size + 2 * p - extent) / s + 1)))
    # CNTK pads automatically (symmetrically) instead of by explicit amounts.
    return kernel, strides, output, bool(pads[0] or pads[1]), dilation


class SetupCaffeParameters(object):
    """Per CNTK layer type (same method names): fill a layer definition's
    ``parameters`` and output shape ``tensor`` from the Caffe layer's
    parameter message and its inputs' definitions."""

    @staticmethod
    def default(caffe_parameters, inputs_info, cntk_layer_def, tensor_check=True):
        """Shape-preserving layers: the output has the inputs' (common) shape."""
        if not tensor_check:
            cntk_layer_def.parameters = cntkmodel.CntkParameters()
            return
        shape = list(inputs_info[0].tensor)
        for info in inputs_info:
            if list(info.tensor) != shape:
                raise ValueError('layer {0}: inputs of different shapes {1} and {2}'
                                 .format(cntk_layer_def.op_name, shape, list(info.tensor)))
        cntk_layer_def.tensor = shape
        if not cntk_layer_def.parameters:
            cntk_layer_def.parameters = cntkmodel.CntkParameters()

    @staticmethod
    def convolution(caffe_parameters, inputs_info, cntk_layer_def):
        params = cntk_layer_def.parameters = cntkmodel.CntkConvolutionParameters()
        kernel, strides, output, pad, dilation = \
            _setup_convolution_parameters(caffe_parameters, inputs_info[0].tensor)
        params.output = caffe_parameters.num_output
        params.need_bias = caffe_parameters.bias_term
        params.group = caffe_parameters.group
        params.kernel = kernel
        params.stride = strides
        params.auto_pad = pad
        params.dilation = dilation
        cntk_layer_def.tensor = [caffe_parameters.num_output] + output

    @staticmethod
    def pooling(caffe_parameters, inputs_info, cntk_layer_def):
        params = cntk_layer_def.parameters = cntkmodel.CntkPoolingParameters()
        input_shape = inputs_info[0].tensor
        if caffe_parameters.global_pooling:
            kernel, strides, output, pad = list(input_shape[1:3]), [1, 1], [1, 1], False
        else:
            kernel, strides, output, pad, _ = _setup_convolution_parameters(
                caffe_parameters, input_shape, is_ceil_pad=True)
        params.kernel = kernel
        params.stride = strides
        params.auto_pad = pad
        params.pooling_type = caffe_parameters.pool
        cntk_layer_def.tensor = [input_shape[0]] + list(output)

    @staticmethod
    def batch_norm(caffe_parameters, inputs_info, cntk_layer_def):
        cntk_layer_def.parameters = cntkmodel.CntkBatchNormParameters()
        cntk_layer_def.parameters.epsilon = caffe_parameters.eps
        SetupCaffeParameters.default(caffe_parameters, inputs_info, cntk_layer_def)

    @staticmethod
    def dense(caffe_parameters, inputs_info, cntk_layer_def):
        params = cntk_layer_def.parameters = cntkmodel.CntkDenseParameters()
        # Caffe's default layout is [num_output, inputs], the transpose of CNTK's.
        params.transpose = not caffe_parameters.transpose
        params.num_output = caffe_parameters.num_output
        cntk_layer_def.tensor = [caffe_parameters.num_output]

    @staticmethod
    def splice(caffe_parameters, inputs_info, cntk_layer_def):
        params = cntk_layer_def.parameters = cntkmodel.CntkSpliceParameters()
        params.axis = caffe_parameters.axis if caffe_parameters is not None else 1
        if params.axis != 1:
            raise NotImplementedError('layer {0}: only concatenation along channels '
                                      '(axis 1) is supported'.format(cntk_layer_def.op_name))
        shape = list(inputs_info[0].tensor)
        for info in inputs_info:
            if list(info.tensor[1:]) != shape[1:]:
                raise ValueError('layer {0}: inputs {1} and {2} cannot be concatenated'
                                 .format(cntk_layer_def.op_name, shape, list(info.tensor)))
        shape[0] = sum(info.tensor[0] for info in inputs_info)
        cntk_layer_def.tensor = shape

    @staticmethod
    def relu(caffe_parameters, inputs_info, cntk_layer_def):
        SetupCaffeParameters.default(caffe_parameters, inputs_info, cntk_layer_def)

    @staticmethod
    def plus(caffe_parameters, inputs_info, cntk_layer_def):
        SetupCaffeParameters.default(caffe_parameters, inputs_info, cntk_layer_def)

    @staticmethod
    def dropout(caffe_parameters, inputs_info, cntk_layer_def):
        SetupCaffeParameters.default(caffe_parameters, inputs_info, cntk_layer_def)

    @staticmethod
    def softmax(caffe_parameters, inputs_info, cntk_layer_def):
        SetupCaffeParameters.default(caffe_parameters, inputs_info, cntk_layer_def)

    @staticmethod
    def lrn(caffe_parameters, inputs_info, cntk_layer_def):
        params = cntk_layer_def.parameters = cntkmodel.CntkLRNParameters()
        # Caffe gives the whole window; CNTK builds it from the half-width.
        params.kernel_size = (caffe_parameters.local_size + 1) / 2
        params.alpha = caffe_parameters.alpha
        params.beta = caffe_parameters.beta
        params.k = caffe_parameters.k
        SetupCaffeParameters.default(caffe_parameters, inputs_info, cntk_layer_def)

    @staticmethod
    def psroi_pooling(caffe_parameters, inputs_info, cntk_layer_def):
        params = cntk_layer_def.parameters = cntkmodel.CntkPSROIPoolingParameters()
        params.group_size = caffe_parameters.group_size
        params.out_channel = caffe_parameters.output_dim
        cntk_layer_def.tensor = [caffe_parameters.output_dim, caffe_parameters.group_size,
                                 caffe_parameters.group_size]

    @staticmethod
    def cross_entropy_with_softmax(caffe_parameters, inputs_info, cntk_layer_def):
        SetupCaffeParameters.default(caffe_parameters, inputs_info[:1], cntk_layer_def)
        cntk_layer_def.tensor = [1]

    @staticmethod
    def classification_error(caffe_parameters, inputs_info, cntk_layer_def):
        SetupCaffeParameters.default(caffe_parameters, inputs_info[:1], cntk_layer_def)
        cntk_layer_def.tensor = [1]


#: Caffe layers with no CNTK layer of their own. A Scale layer after batch
#: normalization is folded into it (its values become the normalization's
#: scale and shift).
NEGLECT_LAYERS = ['Scale']


class CaffeAdapter(baseadapter.Adapter):
    """Adapter for BVLC Caffe: the network comes from the prototxt
    (``source_solver.model_path``), the weights from the caffemodel
    (``source_solver.weights_path``)."""

    def __init__(self):
        self._raw_net = None
        self._raw_solver = None
        self._uni_model = None
        self._source_solver = None
        self._caffe_pb2 = None

    def load_model(self, global_conf):
        self._source_solver = global_conf.source_solver
        model_path = self._source_solver.model_path
        if not model_path or not os.path.exists(model_path):
            raise FileNotFoundError('Caffe network description not found: {0}'.format(model_path))
        resolver = caffeimpl.CaffeResolver()
        self._caffe_pb2 = resolver.caffepb
        self._raw_solver = resolver.solver()
        self._raw_net = resolver.net()
        with open(model_path, 'r') as f:
            text_format.Parse(f.read(), self._raw_net, allow_unknown_field=True)
        if not self._raw_net.layer:
            raise NotImplementedError('{0}: no "layer" entries; networks in the old (V1) '
                                      '"layers" format must first be upgraded with Caffe\'s '
                                      'upgrade_net_proto_text'.format(model_path))

        sys.stdout.write('Start loading model: {0}\n'.format(model_path))
        self._uni_model = cntkmodel.CntkModelDescription()
        self._uni_model.model_name = os.path.splitext(model_path)[0]
        self._adapt_data_provider()
        self._adapt_net()
        weights_path = self._source_solver.weights_path
        if not weights_path or not os.path.exists(weights_path):
            raise FileNotFoundError('Caffe weights not found: {0}'.format(weights_path))
        self._adapt_parameter_data()
        sys.stdout.write('Finished model loading\n')
        return self._uni_model

    def adapt_solver(self):
        """Carry the training settings of the Caffe solver over (informational)."""
        solver = self._uni_model.solver = cntkmodel.CntkSolver()
        caffe_solver = self._raw_solver
        iters_per_epoch = getattr(self._source_solver, 'iters_per_epoch', None)
        if iters_per_epoch:
            solver.adjust_interval = int(caffe_solver.stepsize / iters_per_epoch + 0.5)
            solver.max_epoch = int(caffe_solver.max_iter / iters_per_epoch + 0.5)
        solver.learning_rate = caffe_solver.base_lr
        solver.decrease_factor = caffe_solver.gamma
        solver.momentum = caffe_solver.momentum
        solver.weight_decay = caffe_solver.weight_decay
        solver.number_to_show_result = caffe_solver.display

    def _add_input(self, name, dims):
        provider = cntkmodel.CntkLayersDefinition()
        provider.op_name = name
        provider.tensor = [int(d) for d in dims[1:]]  # without the batch axis
        self._uni_model.data_provider.append(provider)

    def _adapt_data_provider(self):
        net = self._raw_net
        # Inputs declared at the network level (older deploy files).
        for i, name in enumerate(net.input):
            if i < len(net.input_shape):
                self._add_input(name, net.input_shape[i].dim)
            elif len(net.input_dim) >= 4 * (i + 1):
                self._add_input(name, net.input_dim[4 * i:4 * (i + 1)])
        # Input layers.
        for layer in net.layer:
            if layer.type != 'Input' or not self._inclusive_layer(layer):
                continue
            for i, top in enumerate(layer.top):
                shapes = layer.input_param.shape
                self._add_input(top, shapes[i if i < len(shapes) else 0].dim)

    def _adapt_net(self):
        model = self._uni_model
        # Blob name -> definition of what currently produces it.
        producers = {p.op_name: p for p in model.data_provider}
        for layer in self._raw_net.layer:
            if layer.type == 'Input' or not self._inclusive_layer(layer):
                continue
            cntk_type = self._get_layer_type(layer)
            if cntk_type is None:
                self._check_neglected_layer(layer, producers)
                producers[layer.top[0]] = producers[layer.bottom[0]]
                continue
            inputs_info = [producers[bottom] for bottom in layer.bottom]
            definition = self._setup_cntk_layer_def(cntk_type, layer, inputs_info)
            if len(layer.top) > 1:
                raise NotImplementedError('layer {0}: only single-output layers are supported'
                                          .format(layer.name))
            producers[layer.top[0]] = definition
            model.cntk_layers[layer.name] = definition
            model.cntk_sorted_layers.append(layer.name)

    def _check_neglected_layer(self, layer, producers):
        if layer.type == 'Scale':
            source = producers[layer.bottom[0]]
            if source.op_type != cntkmodel.CntkLayerType.batch_norm:
                raise NotImplementedError('layer {0}: a Scale layer is only supported right '
                                          'after BatchNorm'.format(layer.name))

    def _read_blobs(self):
        """[(layer name, [flat float arrays])] of the caffemodel."""
        resolver = caffeimpl.CaffeResolver()
        if resolver.runtime():
            caffe = resolver.caffe
            net = caffe.Net(self._source_solver.model_path, self._source_solver.weights_path,
                            caffe.TEST)
            return [(name, [np.asarray(b.data).reshape(-1) for b in blobs])
                    for name, blobs in net.params.items()]
        weights = resolver.net()
        with open(self._source_solver.weights_path, 'rb') as f:
            weights.MergeFromString(f.read())

        def values(blob):
            return np.asarray(blob.data if len(blob.data) else blob.double_data, dtype=np.float32)
        return [(layer.name, [values(b) for b in layer.blobs])
                for layer in weights.layer if len(layer.blobs)]

    def _adapt_parameter_data(self):
        start = time.time()
        blobs = self._read_blobs()
        sys.stdout.write('Read the weights in {0:.1f}s\n'.format(time.time() - start))
        layers = list(self._raw_net.layer)
        index_of = {layer.name: i for i, layer in enumerate(layers)}
        for name, values in blobs:
            target = self._uni_model.cntk_layers.get(name)
            if target is None:
                position = index_of.get(name)
                if position is None:
                    sys.stderr.write('Ignoring the weights of {0}, which is not in the '
                                     'network\n'.format(name))
                    continue
                layer = layers[position]
                previous = layers[position - 1] if position > 0 else None
                if layer.type != 'Scale' or previous is None or previous.type != 'BatchNorm':
                    raise NotImplementedError('weights of layer {0} ({1}) cannot be placed'
                                              .format(name, layer.type))
                # The Scale's gamma and beta follow the normalization's tensors.
                target = self._uni_model.cntk_layers[previous.name]
            for value in values:
                tensor = cntkmodel.CntkTensorDefinition()
                tensor.tensor = [len(value)]
                tensor.data = value
                target.parameter_tensor.append(tensor)

    def _get_layer_type(self, raw_layer):
        """CNTK type of a Caffe layer; None for a neglected layer."""
        key = raw_layer.type
        if key == 'Eltwise':
            operation = self._get_layer_parameters(raw_layer).operation
            enum = self._caffe_pb2.EltwiseParameter.EltwiseOp.DESCRIPTOR
            key = 'Eltwise_' + enum.values_by_number[operation].name
        if key in caffeimpl.CAFFE_LAYER_WRAPPER:
            return caffeimpl.CAFFE_LAYER_WRAPPER[key]
        if raw_layer.type in NEGLECT_LAYERS:
            return None
        raise NotImplementedError('layer {0}: Caffe layer type {1} is not supported'
                                  .format(raw_layer.name, key))

    @staticmethod
    def _get_layer_parameters(raw_layer):
        """The layer's ``<type>_param`` message (e.g. ``convolution_param`` for
        ``Convolution``); its defaults when not set; None if there is none."""
        wanted = raw_layer.type.lower() + 'param'
        for field in raw_layer.DESCRIPTOR.fields:
            if field.name.lower().replace('_', '') == wanted:
                return getattr(raw_layer, field.name)
        return None

    def _setup_cntk_layer_def(self, cntk_layer_type, raw_layer, inputs_info):
        definition = cntkmodel.CntkLayersDefinition()
        definition.op_name = raw_layer.name
        definition.op_type = cntk_layer_type
        definition.inputs = [info.op_name for info in inputs_info]
        definition.outputs = [raw_layer.name]
        getattr(SetupCaffeParameters, cntk_layer_type.name)(
            self._get_layer_parameters(raw_layer), inputs_info, definition)
        return definition

    def _inclusive_layer(self, raw_layer):
        """Whether the layer belongs to the phase being converted."""
        wanted = self._source_solver.phase
        if wanted is None:
            return True
        phase = wanted
        if len(raw_layer.include):
            phase = raw_layer.include[0].phase
        if len(raw_layer.exclude):
            phase = 1 - raw_layer.exclude[0].phase
        return phase == wanted
