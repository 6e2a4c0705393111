"""Keras' mnist_mlp on Fashion-MNIST: 784-512-512-10, relu, dropout 0.2, RMSprop, batch 128."""
import numpy as np

from .common import one_hot_batch, cntk_plain_rmsprop, ArrayData, CNTKStep, TFStep, TorchStep, fashion_mnist, tf_setup, torch_glorot, torch_setup

NAME = 'mlp'
TITLE = "MLP 784-512-512-10 (Keras mnist_mlp), relu, dropout 0.2, RMSprop lr 1e-3, batch 128, Fashion-MNIST"
BATCH = 128
EPOCH_STEPS = 469
MEASURE_STEPS = 469
WARMUP_STEPS = 50
LR, RHO = 1e-3, 0.9


def make_data():
    x, y = fashion_mnist()
    return ArrayData([x.reshape(-1, 784), y], BATCH)


class OpenCNTK:
    def __init__(self, data):
        import cntk as C
        from cntk.layers import Dense, Dropout, Sequential
        self.data = data
        C.cntk_py.set_fixed_random_seed(1)
        x = C.input_variable(784)
        y = C.input_variable(10)
        z = Sequential([Dense(512, activation=C.relu), Dropout(0.2), Dense(512, activation=C.relu), Dropout(0.2),
                        Dense(10)])(x)
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
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Dropout(0.2), nn.Linear(512, 512), nn.ReLU(),
                              nn.Dropout(0.2), nn.Linear(512, 10))
        torch_glorot(model)
        opt = torch.optim.RMSprop(model.parameters(), lr=LR, alpha=RHO, eps=1e-7)
        self.step = TorchStep(model, nn.CrossEntropyLoss(), opt)


class TensorFlow:
    def __init__(self, data):
        tf, keras = tf_setup()
        self.data = data
        L = keras.layers
        model = keras.Sequential([keras.Input((784,)), L.Dense(512, activation='relu'), L.Dropout(0.2),
                                  L.Dense(512, activation='relu'), L.Dropout(0.2), L.Dense(10)])
        opt = keras.optimizers.RMSprop(learning_rate=LR, rho=RHO, epsilon=1e-7)
        self.step = TFStep(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True), opt)
