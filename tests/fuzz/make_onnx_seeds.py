"""Writes seed ONNX models for `make fuzz-onnx` (OpenCNTK's writer and a few hand-built graphs)."""
import sys

import numpy as np

import cntk as C
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
x = C.input_variable(4, name='x')
W = C.parameter((4, 3), init=C.glorot_uniform(seed=1), name='W')
C.tanh(C.times(x, W) + 1).save(out + '/dense.onnx', format=C.ModelFormat.ONNX)
s = C.sequence.input_variable(3, name='s')
(C.abs(s) * 2).save(out + '/seq.onnx', format=C.ModelFormat.ONNX)
nodes = [helper.make_node('Shape', ['a'], ['sh']), helper.make_node('Reshape', ['a', 'sh'], ['r']),
         helper.make_node('Add', ['r', 'c'], ['y'])]
g = helper.make_graph(nodes, 'g', [helper.make_tensor_value_info('a', TensorProto.FLOAT, ['n', 2])],
                      [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)],
                      [numpy_helper.from_array(np.ones(2, np.float32), 'c')])
open(out + '/shape.onnx', 'wb').write(helper.make_model(g).SerializeToString())
