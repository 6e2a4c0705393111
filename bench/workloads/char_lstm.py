"""Keras' lstm_text_generation: an LSTM of 128 over 40-character windows (step 3) of a real English
text, one-hot characters, dense softmax over the characters; RMSprop lr 0.01; batch 128."""
import numpy as np

from .common import (cntk_plain_rmsprop, ArrayData, CNTKStep, TFStep, TorchStep, english_text, tf_setup, torch_glorot,
                     torch_glorot_lstm, torch_setup)

NAME = 'char_lstm'
TITLE = ("char LSTM (Keras lstm_text_generation): LSTM 128 over 40-character one-hot windows, dense softmax, "
         "RMSprop lr 0.01, batch 128, Debian's license texts (/usr/share/common-licenses)")
BATCH = 128
MAXLEN, STEP, HIDDEN = 40, 3, 128
LR, RHO = 0.01, 0.9
MEASURE_STEPS = 40
WARMUP_STEPS = 5
EPOCH_STEPS = None  # set by make_data


def make_data():
    global EPOCH_STEPS
    text = english_text()
    chars = sorted(set(text))
    ids = np.searchsorted(np.array(chars), np.array(list(text)))
    starts = np.arange(0, len(text) - MAXLEN, STEP)
    x = ids[starts[:, None] + np.arange(MAXLEN)]
    y = ids[starts + MAXLEN]
    EPOCH_STEPS = -(-len(starts) // BATCH)
    data = ArrayData([x, y], BATCH)
    data.num_chars = len(chars)
    return data


class OpenCNTK:
    def __init__(self, data):
        import cntk as C
        from cntk.layers import LSTM, Dense, Recurrence
        self.C, self.data, self.n = C, data, data.num_chars
        C.cntk_py.set_fixed_random_seed(1)
        x = C.sequence.input_variable(self.n, is_sparse=True)
        y = C.input_variable(self.n)
        z = Dense(self.n)(C.sequence.last(Recurrence(LSTM(HIDDEN))(x)))
        loss = C.cross_entropy_with_softmax(z, y)
        learner = cntk_plain_rmsprop(C, z.parameters, LR, RHO)
        self.step = CNTKStep(C.Trainer(z, (loss, C.classification_error(z, y)), [learner]), [x, y])
        self.eye = np.eye(self.n, dtype=np.float32)

    def batch(self, s):
        x, y = self.data.get(s)
        return self.C.Value.one_hot(x.tolist(), self.n), self.eye[y]


class PyTorch:
    def __init__(self, data):
        torch = torch_setup()
        nn = torch.nn
        self.data, n = data, data.num_chars

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(n, HIDDEN, batch_first=True)
                self.out = nn.Linear(HIDDEN, n)

            def forward(self, x):
                _, (h, _) = self.lstm(x)
                return self.out(h[0])

        model = Model()
        torch_glorot(model)
        torch_glorot_lstm(model.lstm)
        self.eye = torch.eye(n)

        def prepare(x, y):
            return self.eye[torch.from_numpy(x)], torch.from_numpy(y)  # one-hot characters, as Keras' example

        opt = torch.optim.RMSprop(model.parameters(), lr=LR, alpha=RHO, eps=1e-7)
        self.step = TorchStep(model, nn.CrossEntropyLoss(), opt, prepare)


class TensorFlow:
    def __init__(self, data):
        tf, keras = tf_setup()
        L = keras.layers
        self.data, n = data, data.num_chars
        self.eye = np.eye(n, dtype=np.float32)
        model = keras.Sequential([keras.Input((MAXLEN, n)),
                                  L.LSTM(HIDDEN, recurrent_initializer='glorot_uniform', unit_forget_bias=False),
                                  L.Dense(n)])
        self.step = TFStep(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                           keras.optimizers.RMSprop(learning_rate=LR, rho=RHO, epsilon=1e-7))

    def batch(self, s):
        x, y = self.data.get(s)
        return self.eye[x], y
