"""Keras' imdb_bidirectional_lstm shape on synthetic data: vocabulary 20,000, embedding 128,
bidirectional LSTM 64, dropout 0.5, sigmoid output; Adam; sequences of 100 tokens; batch 32."""
import numpy as np

from .common import (ArrayData, CNTKStep, Params, TFStep, TorchStep, cntk_dense, cntk_embedding, cntk_load_lstm,
                     cntk_setup, keras_dense_values, keras_lstm_values, maybe, tf_setup, torch_dense, torch_embedding,
                     torch_lstm, torch_setup)

NAME = 'bilstm'
TITLE = ("BiLSTM (Keras imdb_bidirectional_lstm): embedding 20000x128, BiLSTM 64, dropout 0.5, dense 1 sigmoid, "
         "Adam lr 1e-3, length 100, batch 32, synthetic data")
BATCH = 32
EPOCH_STEPS = 782  # 25,000 reviews
MEASURE_STEPS = 40
WARMUP_STEPS = 5
VOCAB, EMBED, HIDDEN, LENGTH = 20000, 128, 64, 100
BF16 = True  # the bfloat16 columns (products and recurrences carry the step)
OPTIMIZER = ('adam', dict(lr=1e-3, eps=1e-7))
# The loss starts at ln 2 and moves by 20% in 20 steps; the three agree within 4e-5.
CHECK_RTOL = 2e-4


def make_data():
    rng = np.random.default_rng(0)
    x = rng.integers(0, VOCAB, (3200, LENGTH))
    y = ((x < 200).sum(1) > 1).astype(np.float32)  # depends on rare tokens: learnable
    return ArrayData([x, y], BATCH)


def make_params(data):
    P = Params()
    P.embedding('embed', VOCAB, EMBED)
    P.lstm('fwd', EMBED, HIDDEN)
    P.lstm('bwd', EMBED, HIDDEN)
    P.dense('out', 2 * HIDDEN, 1)
    return P


class OpenCNTK:
    def __init__(self, data, P=None, dropout=True, config=None):
        P = make_params(data) if P is None else P  # bench/distributed.py and dnnl_layouts.py build it alone
        C = cntk_setup()
        from cntk.layers import LSTM, Dropout, Recurrence
        self.C, self.data = C, data
        x = C.sequence.input_variable(VOCAB, is_sparse=True)
        y = C.input_variable(1)
        e = cntk_embedding(P, 'embed')(x)
        fwd = Recurrence(LSTM(HIDDEN))(e)
        bwd = Recurrence(LSTM(HIDDEN), go_backwards=True)(e)
        cntk_load_lstm(fwd, P, 'fwd')
        cntk_load_lstm(bwd, P, 'bwd')
        h = C.splice(C.sequence.last(fwd), C.sequence.first(bwd))
        if dropout:
            h = Dropout(0.5)(h)
        z = cntk_dense(C, P, 'out', C.sigmoid)(h)
        loss = C.binary_cross_entropy(z, y)
        self.step = CNTKStep(C, z, loss, C.binary_cross_entropy(z, y), [x, y], OPTIMIZER)

    def batch(self, s):
        x, y = self.data.get(s)
        return self.C.Value.one_hot(x.tolist(), VOCAB), y[:, None]


class PyTorch:
    def __init__(self, data, P, dropout=True, config=None):
        torch = torch_setup()
        nn = torch.nn
        self.data = data

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch_embedding(torch, P, 'embed')
                self.lstm = torch_lstm(torch, P, ['fwd', 'bwd'])
                self.drop = nn.Dropout(0.5) if dropout else nn.Identity()
                self.out = torch_dense(torch, P, 'out')

            def forward(self, x):
                _, (h, _) = self.lstm(self.embed(x))
                return self.out(self.drop(torch.cat([h[0], h[1]], 1)))[:, 0]

        self.step = TorchStep(torch, Model(), nn.BCEWithLogitsLoss(), OPTIMIZER, config or {})


class TensorFlow:
    def __init__(self, data, P, dropout=True, config=None):
        tf, keras = tf_setup()
        L = keras.layers
        self.data = data
        embed, bi, out = L.Embedding(VOCAB, EMBED), L.Bidirectional(L.LSTM(HIDDEN)), L.Dense(1)
        model = keras.Sequential([keras.Input((LENGTH,), dtype='int64'), embed, bi] + maybe(L.Dropout(0.5), dropout)
                                 + [out])
        embed.set_weights([P['embed.E']])
        bi.set_weights(keras_lstm_values(P, 'fwd') + keras_lstm_values(P, 'bwd'))
        out.set_weights(keras_dense_values(P, 'out'))
        self.step = TFStep(tf, keras, model, keras.losses.BinaryCrossentropy(from_logits=True), OPTIMIZER, config or {})

    def batch(self, s):
        x, y = self.data.get(s)
        return x, y[:, None]
