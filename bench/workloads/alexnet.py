"""AlexNet (the convnet-benchmarks network, one-tower) at batch 16, 224x224x3: one forward+backward
and an SGD update per step, on synthetic data with 1000 classes."""
import numpy as np

from .common import (ArrayData, CNTKStep, Params, TFStep, TorchStep, cntk_conv, cntk_dense, cntk_setup,
                     keras_conv_values, keras_dense_values, one_hot_batch, synthetic_images, tf_setup, torch_conv,
                     torch_dense, torch_setup, training_flops)

NAME = 'alexnet'
TITLE = ("AlexNet (convnet-benchmarks): conv11x11/4x64-pool3/2-conv5x5x192-pool3/2-conv3x3x384-conv3x3x256-"
         "conv3x3x256-pool3/2-fc4096-fc4096-fc1000, SGD lr 0.01, batch 16, synthetic 224x224x3")
BATCH = 16
EPOCH_STEPS = None
MEASURE_STEPS = 3
WARMUP_STEPS = 2
BF16 = True  # the bfloat16 columns (products and convolutions carry the step)
OPTIMIZER = ('sgd', dict(lr=0.01))
# (filters, kernel, stride, same padding?, max-pool 3/2 after?)
CONVS = [(64, 11, 4, False, True), (192, 5, 1, True, True), (384, 3, 1, True, False), (256, 3, 1, True, False),
         (256, 3, 1, True, True)]
FLAT = (256, 5, 5)  # 224 -> 54 -> 26 -> 26 -> 12 -> 12 -> 5
DENSE = [4096, 4096, 1000]


def step_flops():
    """FLOPs of a step's convolutions and matrix products, forward and backward (the report's GFLOP/s)."""
    products, channels, size = [], 3, 224
    for i, (f, k, s, same, pool) in enumerate(CONVS):
        size = (size - 1) // s + 1 if same else (size - k) // s + 1
        products.append((BATCH * size * size * f * channels * k * k, i > 0))
        if pool:
            size = (size - 3) // 2 + 1
        channels = f
    assert (channels, size, size) == FLAT, (channels, size)
    n = int(np.prod(FLAT))
    for m in DENSE:
        products.append((BATCH * n * m, True))
        n = m
    return training_flops(products)


def make_data():
    x, y = synthetic_images(4 * BATCH, (3, 224, 224), 1000)
    return ArrayData([x, y], BATCH)


def make_params(data):
    P = Params()
    c = 3
    for i, (f, k, _, _, _) in enumerate(CONVS):
        P.conv('c%d' % i, c, f, k)
        c = f
    n = int(np.prod(FLAT))
    for i, m in enumerate(DENSE):
        P.dense('d%d' % i, n, m)
        n = m
    return P


class OpenCNTK:
    def __init__(self, data, P=None, dropout=True, config=None):
        P = make_params(data) if P is None else P  # bench/distributed.py and dnnl_layouts.py build it alone
        C = cntk_setup()
        from cntk.layers import MaxPooling, Sequential
        self.data = data
        layers = []
        for i, (f, k, s, same, pool) in enumerate(CONVS):
            layers.append(cntk_conv(C, P, 'c%d' % i, stride=s, pad=same, activation=C.relu))
            if pool:
                layers.append(MaxPooling((3, 3), strides=(2, 2)))
        layers += [cntk_dense(C, P, 'd0', C.relu, in_shape=FLAT), cntk_dense(C, P, 'd1', C.relu),
                   cntk_dense(C, P, 'd2')]
        x = C.input_variable((3, 224, 224))
        y = C.input_variable(1000)
        z = Sequential(layers)(x)
        self.step = CNTKStep(C, z, C.cross_entropy_with_softmax(z, y), C.classification_error(z, y), [x, y], OPTIMIZER)
        self.eye = np.eye(1000, dtype=np.float32)

    batch = one_hot_batch


class PyTorch:
    def __init__(self, data, P, dropout=True, config=None):
        torch = torch_setup()
        nn = torch.nn
        self.data = data
        layers = []
        for i, (f, k, s, same, pool) in enumerate(CONVS):
            layers += [torch_conv(torch, P, 'c%d' % i, stride=s, padding=k // 2 if same else 0), nn.ReLU()]
            if pool:
                layers.append(nn.MaxPool2d(3, 2))
        layers += [nn.Flatten(), torch_dense(torch, P, 'd0'), nn.ReLU(), torch_dense(torch, P, 'd1'), nn.ReLU(),
                   torch_dense(torch, P, 'd2')]
        self.step = TorchStep(torch, nn.Sequential(*layers), nn.CrossEntropyLoss(), OPTIMIZER, config or {}, conv=True)


class TensorFlow:
    def __init__(self, data, P, dropout=True, config=None):
        tf, keras = tf_setup()
        L = keras.layers
        x, y = data.arrays
        self.data = ArrayData([np.ascontiguousarray(x.transpose(0, 2, 3, 1)), y], BATCH)
        layers, convs = [keras.Input((224, 224, 3))], []
        for f, k, s, same, pool in CONVS:
            convs.append(L.Conv2D(f, k, strides=s, padding='same' if same else 'valid', activation='relu'))
            layers.append(convs[-1])
            if pool:
                layers.append(L.MaxPooling2D(3, 2))
        dense = [L.Dense(4096, activation='relu'), L.Dense(4096, activation='relu'), L.Dense(1000)]
        model = keras.Sequential(layers + [L.Flatten()] + dense)
        for i, conv in enumerate(convs):
            conv.set_weights(keras_conv_values(P, 'c%d' % i))
        for i, d in enumerate(dense):
            d.set_weights(keras_dense_values(P, 'd%d' % i, hwc=FLAT[1:] + FLAT[:1] if i == 0 else None))
        self.step = TFStep(tf, keras, model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                           OPTIMIZER, config or {})
