"""Keras' lstm_text_generation: an LSTM of 128 over 40-character windows (step 3) of a real English
text, one-hot characters, dense softmax over the characters; RMSprop lr 0.01; batch 128."""
import numpy as np

from .common import (ArrayData, CNTKStep, Params, TFStep, TorchStep, cntk_dense, cntk_load_lstm, cntk_setup,
                     english_text, keras_dense_values, keras_lstm_values, tf_setup, torch_dense, torch_lstm,
                     torch_setup)

NAME = 'char_lstm'
TITLE = ("char LSTM (Keras lstm_text_generation): LSTM 128 over 40-character one-hot windows, dense softmax, "
         "RMSprop lr 0.01, batch 128, Debian's license texts (/usr/share/common-licenses)")
BATCH = 128
MAXLEN, STEP, HIDDEN = 40, 3, 128
BF16 = True  # the bfloat16 columns (products and recurrences carry the step)
OPTIMIZER = ('rmsprop', dict(lr=0.01, rho=0.9))
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


def make_params(data):
    P = Params()
    P.lstm('lstm', data.num_chars, HIDDEN)
    P.dense('out', HIDDEN, data.num_chars)
    return P


class OpenCNTK:
    def __init__(self, data, P=None, dropout=True, config=None):
        P = make_params(data) if P is None else P  # bench/distributed.py and dnnl_layouts.py build it alone
        C = cntk_setup()
        from cntk.layers import LSTM, Recurrence
        self.C, self.data, self.n = C, data, data.num_chars
        x = C.sequence.input_variable(self.n, is_sparse=True)
        y = C.input_variable(self.n)
        h = Recurrence(LSTM(HIDDEN))(x)
        cntk_load_lstm(h, P, 'lstm')
        z = cntk_dense(C, P, 'out')(C.sequence.last(h))
        self.step = CNTKStep(C, z, C.cross_entropy_with_softmax(z, y), C.classification_error(z, y), [x, y], OPTIMIZER)
        self.eye = np.eye(self.n, dtype=np.float32)

    def batch(self, s):
        x, y = self.data.get(s)
        return self.C.Value.one_hot(x.tolist(), self.n), self.eye[y]


class PyTorch:
    def __init__(self, data, P, dropout=True, config=None):
        torch = torch_setup()
        nn = torch.nn
        self.data, n = data, data.num_chars

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = torch_lstm(torch, P, ['lstm'])
                self.out = torch_dense(torch, P, 'out')

            def forward(self, x):
                _, (h, _) = self.lstm(x)
                return self.out(h[0])

        self.eye = torch.eye(n)

        def prepare(x, y):
            return self.eye[torch.from_numpy(x)], torch.from_numpy(y)  # one-hot characters, as Keras' example

        self.step = TorchStep(torch, Model(), nn.CrossEntropyLoss(), OPTIMIZER, config or {}, prepare)


class TensorFlow:
    def __init__(self, data, P, dropout=True, config=None):
        tf, keras = tf_setup()
        L = keras.layers
        self.data, n = data, data.num_chars
        self.eye = np.eye(n, dtype=np.float32)
        lstm, out = L.LSTM(HIDDEN), L.Dense(n)
        model = keras.Sequential([keras.Input((MAXLEN, n)), lstm, out])
        lstm.set_weights(keras_lstm_values(P, 'lstm'))
        out.set_weights(keras_dense_values(P, 'out'))
        self.step = TFStep(tf, keras, model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                           OPTIMIZER, config or {})

    def batch(self, s):
        x, y = self.data.get(s)
        return self.eye[x], y
