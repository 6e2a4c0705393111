"""Toolkit-neutral description of a network, filled by a source adapter and
turned into CNTK functions by :mod:`.cntkinstance`.

Shapes (``tensor``) are per sample, channels first: ``[C, H, W]``.
"""

from enum import Enum


class CntkParameters(object):
    """Base of the per-operation settings."""


class CntkConvolutionParameters(CntkParameters):
    """Convolution: ``output`` channels, ``kernel``/``stride``/``dilation``
    as [h, w], ``auto_pad``, ``need_bias`` and ``group`` count."""

    def __init__(self):
        self.output = 0
        self.stride = [0, 0]
        self.kernel = [0, 0]
        self.auto_pad = False
        self.scale_setting = [1, 1]
        self.bias_setting = [1, 1]
        self.need_bias = True
        self.dilation = [1, 1]
        self.group = 1


class CntkPoolingParameters(CntkParameters):
    """Pooling: ``kernel``/``stride`` as [h, w], ``auto_pad`` and
    ``pooling_type`` (0 max, 1 average)."""

    def __init__(self):
        self.stride = [0, 0]
        self.kernel = [0, 0]
        self.auto_pad = False
        self.pooling_type = 0


class CntkBatchNormParameters(CntkParameters):
    """Batch normalization settings."""

    def __init__(self):
        self.spatial = 2
        self.norm_time_const = 0
        self.blend_time_const = 0
        self.epsilon = 0.00001
        self.scale_setting = [1, 1]
        self.bias_setting = [1, 1]


class CntkDenseParameters(CntkParameters):
    """Fully connected layer: ``num_output``; ``transpose`` when the stored
    weights are ``[num_output, inputs]`` (Caffe's default) rather than
    ``[inputs, num_output]``."""

    def __init__(self):
        self.num_output = 0
        self.scale_setting = [1, 1]
        self.bias_setting = [1, 1]
        self.transpose = False


class CntkSpliceParameters(CntkParameters):
    """Concatenation along ``axis`` (counted with the batch axis as 0)."""

    def __init__(self):
        self.axis = 1


class CntkLRNParameters(CntkParameters):
    """Local response normalization across channels."""

    def __init__(self):
        self.kernel_size = 5
        self.alpha = 1
        self.beta = 5
        self.k = 1


class CntkPSROIPoolingParameters(CntkParameters):
    """Position-sensitive ROI pooling (R-FCN)."""

    def __init__(self):
        self.group_size = 1
        self.out_channel = 1


class CntkLayerType(Enum):
    """Operations the converter can instantiate; the member names are the
    :class:`~.cntkinstance.ApiSetup` methods that build them."""
    relu = 1
    convolution = 2
    pooling = 3
    batch_norm = 4
    plus = 5
    dense = 6
    splice = 7
    classification_error = 10
    cross_entropy_with_softmax = 11
    dropout = 12
    lrn = 13
    psroi_pooling = 14
    softmax = 15
    unknown = 100


class CntkTensorDefinition(object):
    """A tensor: its ``tensor`` shape and its ``data`` (flat values)."""

    def __init__(self):
        self.tensor = [0]
        self.data = []


class CntkLayersDefinition(object):
    """One operation: names of its ``inputs`` and ``outputs``, its
    ``op_type``/``op_name``/``parameters``, its output shape ``tensor`` and
    its learned values ``parameter_tensor`` (list of tensor definitions)."""

    def __init__(self):
        self.inputs = []
        self.outputs = []
        self.op_name = None
        self.parameters = None
        self.op_type = CntkLayerType.unknown
        self.tensor = []
        self.parameter_tensor = []


class CntkSolver(object):
    """Training settings carried over from the source (informational)."""

    def __init__(self):
        self.learning_rate = None
        self.max_epoch = None
        self.adjust_interval = None
        self.decrease_factor = None
        self.upper_limit = None
        self.minibatch_size = None
        self.weight_decay = None
        self.dropout = None
        self.number_to_show_result = None
        self.grad_update_type = None
        self.momentum = None


class CntkModelDescription(object):
    """A whole network: its inputs (``data_provider``), its layers by name
    (``cntk_layers``) and their names in topological order
    (``cntk_sorted_layers``)."""

    def __init__(self):
        self.data_provider = []
        self.cntk_layers = {}
        self.cntk_sorted_layers = []
        self.model_name = 'Untitled'
        self.solver = None
