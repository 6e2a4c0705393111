"""Caffe layer types the converter knows, and access to Caffe's protobuf types."""

from cntk.contrib.crosstalkcaffe.unimodel.cntkmodel import CntkLayerType

#: Caffe layer type -> CNTK layer type. Eltwise layers are keyed
#: ``Eltwise_<operation>``.
CAFFE_LAYER_WRAPPER = {
    'Convolution': CntkLayerType.convolution,
    'BatchNorm': CntkLayerType.batch_norm,
    'ReLU': CntkLayerType.relu,
    'Pooling': CntkLayerType.pooling,
    'Eltwise_SUM': CntkLayerType.plus,
    'InnerProduct': CntkLayerType.dense,
    'Softmax': CntkLayerType.softmax,
    'Concat': CntkLayerType.splice,
    'SoftmaxWithLoss': CntkLayerType.cross_entropy_with_softmax,
    'Accuracy': CntkLayerType.classification_error,
    'Dropout': CntkLayerType.dropout,
    'LRN': CntkLayerType.lrn,
    'PSROIPooling': CntkLayerType.psroi_pooling,
}


def singleton(class_):
    """Class decorator: every call returns the same, first-made instance."""
    instances = {}

    def get_instance(*args, **kwargs):
        if class_ not in instances:
            instances[class_] = class_(*args, **kwargs)
        return instances[class_]
    return get_instance


@singleton
class CaffeResolver(object):
    """Caffe's message types: pycaffe's when ``caffe`` is importable (its
    runtime then also reads weights and validates), otherwise this package's
    own description of them (:mod:`.caffe_proto`).

    Attributes:
        caffe: the ``caffe`` module, or None.
        caffepb: the module holding the message classes.
        net: the ``NetParameter`` class.
        solver: the ``SolverParameter`` class.
    """

    def __init__(self):
        try:
            import caffe
            self.caffe = caffe
            self.caffepb = caffe.proto.caffe_pb2
        except ImportError:
            from . import caffe_proto
            self.caffe = None
            self.caffepb = caffe_proto
        self.net = self.caffepb.NetParameter
        self.solver = self.caffepb.SolverParameter

    def runtime(self):
        """Whether the Caffe runtime (pycaffe) is available."""
        return self.caffe is not None
