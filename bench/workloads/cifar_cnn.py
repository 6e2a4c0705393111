"""Keras' cifar10_cnn on synthetic 32x32x3 data: conv32-conv32-pool-drop-conv64-conv64-pool-drop,
dense 512, dense 10; RMSprop lr 1e-4; batch 32."""
import numpy as np

from .common import (one_hot_batch, cntk_plain_rmsprop, ArrayData, CNTKStep, TFStep, TorchStep, synthetic_images, tf_setup, torch_glorot,
                     torch_setup)

NAME = 'cifar_cnn'
TITLE = ("CIFAR ConvNet (Keras cifar10_cnn): conv32(same)-conv32-pool-drop.25-conv64(same)-conv64-pool-drop.25-"
         "dense512-drop.5-dense10, RMSprop lr 1e-4, batch 32, synthetic 32x32x3")
BATCH = 32
EPOCH_STEPS = 1563  # 50,000 images
MEASURE_STEPS = 100
WARMUP_STEPS = 10
LR, RHO = 1e-4, 0.9


def make_data():
    x, y = synthetic_images(6400, (3, 32, 32), 10)
    return ArrayData([x, y], BATCH)


class OpenCNTK:
    def __init__(self, data):
        import cntk as C
        from cntk.layers import Convolution2D, Dense, Dropout, MaxPooling, Sequential
        self.data = data
        C.cntk_py.set_fixed_random_seed(1)
        x = C.input_variable((3, 32, 32))
        y = C.input_variable(10)
        z = Sequential([Convolution2D((3, 3), 32, activation=C.relu, pad=True),
                        Convolution2D((3, 3), 32, activation=C.relu, pad=False),
                        MaxPooling((2, 2), strides=(2, 2)), Dropout(0.25),
                        Convolution2D((3, 3), 64, activation=C.relu, pad=True),
                        Convolution2D((3, 3), 64, activation=C.relu, pad=False),
                        MaxPooling((2, 2), strides=(2, 2)), Dropout(0.25),
                        Dense(512, activation=C.relu), Dropout(0.5), Dense(10)])(x)
        loss = C.cross_entropy_with_softmax(z, y)
        learner = cntk_plain_rmsprop(C, z.parameters, LR, RHO)
        self.step = CNTKStep(C.Trainer(z, (loss, C.classification_error(z, y)), [learner]), [x, y])
        self.eye = np.eye(10, dtype=np.float32)

    batch = one_hot_batch


class PyTorch:
    def __init__(self, data):
        torch = torch_setup()
        nn = torch.nn
        self.data = data
        model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Dropout(0.25),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),
                              nn.Linear(64 * 6 * 6, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, 10))
        torch_glorot(model)
        opt = torch.optim.RMSprop(model.parameters(), lr=LR, alpha=RHO, eps=1e-7)
        self.step = TorchStep(model, nn.CrossEntropyLoss(), opt)


class TensorFlow:
    def __init__(self, data):
        tf, keras = tf_setup()
        L = keras.layers
        x, y = data.arrays
        self.data = ArrayData([np.ascontiguousarray(x.transpose(0, 2, 3, 1)), y], BATCH)
        model = keras.Sequential([keras.Input((32, 32, 3)),
                                  L.Conv2D(32, 3, padding='same', activation='relu'), L.Conv2D(32, 3, activation='relu'),
                                  L.MaxPooling2D(2), L.Dropout(0.25),
                                  L.Conv2D(64, 3, padding='same', activation='relu'), L.Conv2D(64, 3, activation='relu'),
                                  L.MaxPooling2D(2), L.Dropout(0.25), L.Flatten(),
                                  L.Dense(512, activation='relu'), L.Dropout(0.5), L.Dense(10)])
        opt = keras.optimizers.RMSprop(learning_rate=LR, rho=RHO, epsilon=1e-7)
        self.step = TFStep(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True), opt)
