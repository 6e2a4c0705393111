"""Keras' cifar10_cnn on synthetic 32x32x3 data: conv32-conv32-pool-drop-conv64-conv64-pool-drop,
dense 512, dense 10; RMSprop lr 1e-4; batch 32."""
import numpy as np

from .common import (ArrayData, CNTKStep, Params, TFStep, TorchStep, cntk_conv, cntk_dense, cntk_setup,
                     keras_conv_values, keras_dense_values, maybe, one_hot_batch, synthetic_images, tf_setup,
                     torch_conv, torch_dense, torch_setup)

NAME = 'cifar_cnn'
TITLE = ("CIFAR ConvNet (Keras cifar10_cnn): conv32(same)-conv32-pool-drop.25-conv64(same)-conv64-pool-drop.25-"
         "dense512-drop.5-dense10, RMSprop lr 1e-4, batch 32, synthetic 32x32x3")
BATCH = 32
EPOCH_STEPS = 1563  # 50,000 images
MEASURE_STEPS = 50
WARMUP_STEPS = 10
BF16 = True  # the bfloat16 columns (products and convolutions carry the step)
OPTIMIZER = ('rmsprop', dict(lr=1e-4, rho=0.9))
CONVS = [('c0', 3, 32, True), ('c1', 32, 32, False), ('c2', 32, 64, True), ('c3', 64, 64, False)]  # same padding?
FLAT = (64, 6, 6)


def make_data():
    x, y = synthetic_images(6400, (3, 32, 32), 10)
    return ArrayData([x, y], BATCH)


def make_params(data):
    P = Params()
    for name, c_in, c_out, _ in CONVS:
        P.conv(name, c_in, c_out, 3)
    P.dense('d0', int(np.prod(FLAT)), 512)
    P.dense('d1', 512, 10)
    return P


class OpenCNTK:
    def __init__(self, data, P=None, dropout=True, config=None):
        P = make_params(data) if P is None else P  # bench/distributed.py and dnnl_layouts.py build it alone
        C = cntk_setup()
        from cntk.layers import Dropout, MaxPooling, Sequential
        self.data = data
        x = C.input_variable((3, 32, 32))
        y = C.input_variable(10)
        layers = []
        for i, (name, _, _, same) in enumerate(CONVS):
            layers.append(cntk_conv(C, P, name, pad=same, activation=C.relu))
            if i % 2:
                layers += [MaxPooling((2, 2), strides=(2, 2))] + maybe(Dropout(0.25), dropout)
        layers += ([cntk_dense(C, P, 'd0', C.relu, in_shape=FLAT)] + maybe(Dropout(0.5), dropout) +
                   [cntk_dense(C, P, 'd1')])
        z = Sequential(layers)(x)
        self.step = CNTKStep(C, z, C.cross_entropy_with_softmax(z, y), C.classification_error(z, y), [x, y], OPTIMIZER)
        self.eye = np.eye(10, dtype=np.float32)

    batch = one_hot_batch


class PyTorch:
    def __init__(self, data, P, dropout=True, config=None):
        torch = torch_setup()
        nn = torch.nn
        self.data = data
        layers = []
        for i, (name, _, _, same) in enumerate(CONVS):
            layers += [torch_conv(torch, P, name, padding=1 if same else 0), nn.ReLU()]
            if i % 2:
                layers += [nn.MaxPool2d(2)] + maybe(nn.Dropout(0.25), dropout)
        layers += [nn.Flatten(), torch_dense(torch, P, 'd0'), nn.ReLU()] + maybe(nn.Dropout(0.5), dropout) + \
            [torch_dense(torch, P, 'd1')]
        self.step = TorchStep(torch, nn.Sequential(*layers), nn.CrossEntropyLoss(), OPTIMIZER, config or {}, conv=True)


class TensorFlow:
    def __init__(self, data, P, dropout=True, config=None):
        tf, keras = tf_setup()
        L = keras.layers
        x, y = data.arrays
        self.data = ArrayData([np.ascontiguousarray(x.transpose(0, 2, 3, 1)), y], BATCH)
        convs = [L.Conv2D(c_out, 3, padding='same' if same else 'valid', activation='relu')
                 for _, _, c_out, same in CONVS]
        dense = [L.Dense(512, activation='relu'), L.Dense(10)]
        layers = [keras.Input((32, 32, 3))]
        for i, conv in enumerate(convs):
            layers.append(conv)
            if i % 2:
                layers += [L.MaxPooling2D(2)] + maybe(L.Dropout(0.25), dropout)
        layers += [L.Flatten(), dense[0]] + maybe(L.Dropout(0.5), dropout) + [dense[1]]
        model = keras.Sequential(layers)
        for conv, (name, _, _, _) in zip(convs, CONVS):
            conv.set_weights(keras_conv_values(P, name))
        dense[0].set_weights(keras_dense_values(P, 'd0', hwc=FLAT[1:] + FLAT[:1]))
        dense[1].set_weights(keras_dense_values(P, 'd1'))
        self.step = TFStep(tf, keras, model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                           OPTIMIZER, config or {})
