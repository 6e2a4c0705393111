"""AlexNet (the convnet-benchmarks network, one-tower) at batch 16, 224x224x3: one forward+backward
and an SGD update per step, on synthetic data with 1000 classes."""
import numpy as np

from .common import (one_hot_batch, ArrayData, CNTKStep, TFStep, TorchStep, synthetic_images, tf_setup, torch_glorot,
                     torch_setup)

NAME = 'alexnet'
TITLE = ("AlexNet (convnet-benchmarks): conv11x11/4x64-pool3/2-conv5x5x192-pool3/2-conv3x3x384-conv3x3x256-"
         "conv3x3x256-pool3/2-fc4096-fc4096-fc1000, SGD lr 0.01, batch 16, synthetic 224x224x3")
BATCH = 16
EPOCH_STEPS = None
MEASURE_STEPS = 3
WARMUP_STEPS = 2
LR = 0.01
# (filters, kernel, stride, same padding?, max-pool 3/2 after?)
CONVS = [(64, 11, 4, False, True), (192, 5, 1, True, True), (384, 3, 1, True, False), (256, 3, 1, True, False),
         (256, 3, 1, True, True)]
FLAT = 256 * 5 * 5  # 224 -> 54 -> 26 -> 26 -> 12 -> 12 -> 5


def make_data():
    x, y = synthetic_images(4 * BATCH, (3, 224, 224), 1000)
    return ArrayData([x, y], BATCH)


class OpenCNTK:
    def __init__(self, data):
        import cntk as C
        from cntk.layers import Convolution2D, Dense, MaxPooling, Sequential
        self.data = data
        C.cntk_py.set_fixed_random_seed(1)
        layers = []
        for f, k, s, same, pool in CONVS:
            layers.append(Convolution2D((k, k), f, strides=(s, s), pad=same, activation=C.relu))
            if pool:
                layers.append(MaxPooling((3, 3), strides=(2, 2)))
        layers += [Dense(4096, activation=C.relu), Dense(4096, activation=C.relu), Dense(1000)]
        x = C.input_variable((3, 224, 224))
        y = C.input_variable(1000)
        z = Sequential(layers)(x)
        loss = C.cross_entropy_with_softmax(z, y)
        learner = C.sgd(z.parameters, C.learning_parameter_schedule(LR))
        self.step = CNTKStep(C.Trainer(z, (loss, C.classification_error(z, y)), [learner]), [x, y])
        self.eye = np.eye(1000, dtype=np.float32)

    batch = one_hot_batch


class PyTorch:
    def __init__(self, data):
        torch = torch_setup()
        nn = torch.nn
        self.data = data
        layers, c = [], 3
        for f, k, s, same, pool in CONVS:
            layers += [nn.Conv2d(c, f, k, stride=s, padding=k // 2 if same else 0), nn.ReLU()]
            if pool:
                layers.append(nn.MaxPool2d(3, 2))
            c = f
        layers += [nn.Flatten(), nn.Linear(FLAT, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                   nn.Linear(4096, 1000)]
        model = nn.Sequential(*layers)
        torch_glorot(model)
        self.step = TorchStep(model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=LR))


class TensorFlow:
    def __init__(self, data):
        tf, keras = tf_setup()
        L = keras.layers
        x, y = data.arrays
        self.data = ArrayData([np.ascontiguousarray(x.transpose(0, 2, 3, 1)), y], BATCH)
        layers = [keras.Input((224, 224, 3))]
        for f, k, s, same, pool in CONVS:
            layers.append(L.Conv2D(f, k, strides=s, padding='same' if same else 'valid', activation='relu'))
            if pool:
                layers.append(L.MaxPooling2D(3, 2))
        layers += [L.Flatten(), L.Dense(4096, activation='relu'), L.Dense(4096, activation='relu'), L.Dense(1000)]
        model = keras.Sequential(layers)
        self.step = TFStep(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                           keras.optimizers.SGD(learning_rate=LR))
