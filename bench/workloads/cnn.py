"""Keras' mnist_cnn on Fashion-MNIST: conv 3x3x32 relu, conv 3x3x64 relu, max-pool 2x2, dropout 0.25,
dense 128 relu, dropout 0.5, dense 10; Adadelta; batch 128."""
import numpy as np

from .common import one_hot_batch, ArrayData, CNTKStep, TFStep, TorchStep, fashion_mnist, tf_setup, torch_glorot, torch_setup

NAME = 'cnn'
TITLE = ("CNN (Keras mnist_cnn): conv3x3x32-conv3x3x64-maxpool2-dropout.25-dense128-dropout.5-dense10, "
         "Adadelta lr 1.0 rho 0.95 eps 1e-6, batch 128, Fashion-MNIST")
BATCH = 128
EPOCH_STEPS = 469
MEASURE_STEPS = 40
WARMUP_STEPS = 5
LR, RHO, EPS = 1.0, 0.95, 1e-6


def make_data():
    x, y = fashion_mnist()
    return ArrayData([x.reshape(-1, 1, 28, 28), y], BATCH)


class OpenCNTK:
    def __init__(self, data):
        import cntk as C
        from cntk.layers import Convolution2D, Dense, Dropout, MaxPooling, Sequential
        self.data = data
        C.cntk_py.set_fixed_random_seed(1)
        x = C.input_variable((1, 28, 28))
        y = C.input_variable(10)
        z = Sequential([Convolution2D((3, 3), 32, activation=C.relu, pad=False),
                        Convolution2D((3, 3), 64, activation=C.relu, pad=False),
                        MaxPooling((2, 2), strides=(2, 2)), Dropout(0.25),
                        Dense(128, activation=C.relu), Dropout(0.5), Dense(10)])(x)
        loss = C.cross_entropy_with_softmax(z, y)
        learner = C.adadelta(z.parameters, C.learning_parameter_schedule(LR), rho=RHO, epsilon=EPS,
                             minibatch_size=C.learners.IGNORE)
        self.step = CNTKStep(C.Trainer(z, (loss, C.classification_error(z, y)), [learner]), [x, y])
        self.eye = np.eye(10, dtype=np.float32)

    batch = one_hot_batch


class PyTorch:
    def __init__(self, data):
        torch = torch_setup()
        nn = torch.nn
        self.data = data
        model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Dropout(0.25), nn.Flatten(), nn.Linear(64 * 12 * 12, 128), nn.ReLU(),
                              nn.Dropout(0.5), nn.Linear(128, 10))
        torch_glorot(model)
        opt = torch.optim.Adadelta(model.parameters(), lr=LR, rho=RHO, eps=EPS)
        self.step = TorchStep(model, nn.CrossEntropyLoss(), opt)


class TensorFlow:
    def __init__(self, data):
        tf, keras = tf_setup()
        L = keras.layers
        x, y = data.arrays
        self.data = ArrayData([np.ascontiguousarray(x.transpose(0, 2, 3, 1)), y], BATCH)  # Keras: NHWC
        model = keras.Sequential([keras.Input((28, 28, 1)), L.Conv2D(32, 3, activation='relu'),
                                  L.Conv2D(64, 3, activation='relu'), L.MaxPooling2D(2), L.Dropout(0.25),
                                  L.Flatten(), L.Dense(128, activation='relu'), L.Dropout(0.5), L.Dense(10)])
        opt = keras.optimizers.Adadelta(learning_rate=LR, rho=RHO, epsilon=EPS)
        self.step = TFStep(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True), opt)
