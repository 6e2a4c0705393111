"""Keras' mnist_mlp on Fashion-MNIST: 784-512-512-10, relu, dropout 0.2, RMSprop, batch 128."""
import numpy as np

from .common import (ArrayData, CNTKStep, Params, TFStep, TorchStep, cntk_dense, cntk_setup, fashion_mnist,
                     keras_dense_values, maybe, one_hot_batch, tf_setup, torch_dense, torch_setup, training_flops)

NAME = 'mlp'
TITLE = "MLP 784-512-512-10 (Keras mnist_mlp), relu, dropout 0.2, RMSprop lr 1e-3, batch 128, Fashion-MNIST"
BATCH = 128
EPOCH_STEPS = 469
MEASURE_STEPS = 100
WARMUP_STEPS = 50
BF16 = True  # the bfloat16 columns (products and convolutions carry the step)
OPTIMIZER = ('rmsprop', dict(lr=1e-3, rho=0.9))
# Measured: a 1e-7 relative change of the initial weights moves PyTorch's and TensorFlow's own loss by 2.4e-3
# at step 19 (RMSProp's normalized steps amplify rounding), OpenCNTK's by up to 7e-2 for 1e-5.
CHECK_RTOL = 1e-2
DIMS = [784, 512, 512, 10]


def step_flops():
    """FLOPs of a step's three matrix products, forward and backward (the report's GFLOP/s)."""
    return training_flops([(BATCH * a * b, i > 0) for i, (a, b) in enumerate(zip(DIMS[:-1], DIMS[1:]))])


def make_data():
    x, y = fashion_mnist()
    return ArrayData([x.reshape(-1, 784), y], BATCH)


def make_params(data):
    P = Params()
    for i, (a, b) in enumerate(zip(DIMS[:-1], DIMS[1:])):
        P.dense('d%d' % i, a, b)
    return P


class OpenCNTK:
    def __init__(self, data, P=None, dropout=True, config=None):
        P = make_params(data) if P is None else P  # bench/distributed.py and dnnl_layouts.py build it alone
        C = cntk_setup()
        from cntk.layers import Dropout, Sequential
        self.data = data
        x = C.input_variable(784)
        y = C.input_variable(10)
        z = Sequential([cntk_dense(C, P, 'd0', C.relu)] + maybe(Dropout(0.2), dropout) +
                       [cntk_dense(C, P, 'd1', C.relu)] + maybe(Dropout(0.2), dropout) + [cntk_dense(C, P, 'd2')])(x)
        self.step = CNTKStep(C, z, C.cross_entropy_with_softmax(z, y), C.classification_error(z, y), [x, y], OPTIMIZER)
        self.eye = np.eye(10, dtype=np.float32)

    batch = one_hot_batch


class PyTorch:
    def __init__(self, data, P, dropout=True, config=None):
        torch = torch_setup()
        nn = torch.nn
        self.data = data
        model = nn.Sequential(torch_dense(torch, P, 'd0'), nn.ReLU(), *maybe(nn.Dropout(0.2), dropout),
                              torch_dense(torch, P, 'd1'), nn.ReLU(), *maybe(nn.Dropout(0.2), dropout),
                              torch_dense(torch, P, 'd2'))
        self.step = TorchStep(torch, model, nn.CrossEntropyLoss(), OPTIMIZER, config or {})


class TensorFlow:
    def __init__(self, data, P, dropout=True, config=None):
        tf, keras = tf_setup()
        self.data = data
        L = keras.layers
        dense = [L.Dense(512, activation='relu'), L.Dense(512, activation='relu'), L.Dense(10)]
        model = keras.Sequential([keras.Input((784,)), dense[0]] + maybe(L.Dropout(0.2), dropout) +
                                 [dense[1]] + maybe(L.Dropout(0.2), dropout) + [dense[2]])
        for i, d in enumerate(dense):
            d.set_weights(keras_dense_values(P, 'd%d' % i))
        self.step = TFStep(tf, keras, model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                           OPTIMIZER, config or {})
