"""Function.attributes shows convolution and slice attributes as CNTK's Python API did."""
import numpy as np

import cntk as C


def test_convolution_attributes_are_expanded_to_the_kernel_rank():
    x = C.input_variable((1, 5, 5))
    k = C.constant(np.ones((1, 2, 2), np.float32))
    a = C.convolution(k, x, auto_padding=[False, True], strides=2).root_function.attributes
    assert a['autoPadding'] == [False, False, True]     # the first value repeats to the left
    assert a['sharing'] == [True, True, True]
    assert a['strides'] == (2, 2, 2) and a['dilation'] == (1, 1, 1)
    assert a['lowerPad'] == (0, 0, 0) and a['upperPad'] == (0, 0, 0)
    assert a['kernelShape'] == (1, 2, 2) and a['outputShape'] == (0,)
    assert a['transpose'] is False and a['sequential'] is False and 'reductionRank' not in a
    t = C.convolution_transpose(k, x, output_shape=(1, 6, 6), auto_padding=[False]).root_function.attributes
    assert t['transpose'] is True and t['outputShape'] == (1, 6, 6) and t['sequential'] is False


def test_slice_axes_are_cntk_axis_tuples():
    x = C.input_variable((2, 3))
    a = C.slice(x, 0, 1, 2).root_function.attributes
    assert a == {'axis': ('ordered', 'static', 1), 'beginIndex': 1, 'endIndex': 2, 'sliceStrides': 1}
    a = C.slice(x, [0, -1], [1, 0], [2, 2]).root_function.attributes
    assert a['axisVec'] == [('ordered', 'static', 1), ('ordered', 'static', 0)]
