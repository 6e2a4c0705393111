"""Keras' imdb_bidirectional_lstm shape on synthetic data: vocabulary 20,000, embedding 128,
bidirectional LSTM 64, dropout 0.5, sigmoid output; Adam; sequences of 100 tokens; batch 32."""
import numpy as np

from .common import ArrayData, CNTKStep, TFStep, TorchStep, tf_setup, torch_glorot, torch_glorot_lstm, torch_setup

NAME = 'bilstm'
TITLE = ("BiLSTM (Keras imdb_bidirectional_lstm): embedding 20000x128, BiLSTM 64, dropout 0.5, dense 1 sigmoid, "
         "Adam lr 1e-3, length 100, batch 32, synthetic data")
BATCH = 32
EPOCH_STEPS = 782  # 25,000 reviews
MEASURE_STEPS = 40
WARMUP_STEPS = 5
VOCAB, EMBED, HIDDEN, LENGTH = 20000, 128, 64, 100
LR = 1e-3


def make_data():
    rng = np.random.default_rng(0)
    x = rng.integers(0, VOCAB, (3200, LENGTH))
    y = ((x < 200).sum(1) > 1).astype(np.float32)  # depends on rare tokens: learnable
    return ArrayData([x, y], BATCH)


class OpenCNTK:
    def __init__(self, data):
        import cntk as C
        from cntk.layers import LSTM, Dense, Dropout, Embedding, Recurrence
        self.C, self.data = C, data
        C.cntk_py.set_fixed_random_seed(1)
        x = C.sequence.input_variable(VOCAB, is_sparse=True)
        y = C.input_variable(1)
        e = Embedding(EMBED)(x)
        fwd = C.sequence.last(Recurrence(LSTM(HIDDEN))(e))
        bwd = C.sequence.first(Recurrence(LSTM(HIDDEN), go_backwards=True)(e))
        z = Dense(1, activation=C.sigmoid)(Dropout(0.5)(C.splice(fwd, bwd)))
        loss = C.binary_cross_entropy(z, y)
        learner = C.adam(z.parameters, C.learning_parameter_schedule(LR), momentum=0.9, variance_momentum=0.999,
                         epsilon=1e-7, minibatch_size=C.learners.IGNORE)
        self.step = CNTKStep(C.Trainer(z, (loss, C.binary_cross_entropy(z, y)), [learner]), [x, y])

    def batch(self, s):
        x, y = self.data.get(s)
        return self.C.Value.one_hot(x.tolist(), VOCAB), y[:, None]


class PyTorch:
    def __init__(self, data):
        torch = torch_setup()
        nn = torch.nn
        self.data = data

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(VOCAB, EMBED)
                self.lstm = nn.LSTM(EMBED, HIDDEN, batch_first=True, bidirectional=True)
                self.drop = nn.Dropout(0.5)
                self.out = nn.Linear(2 * HIDDEN, 1)

            def forward(self, x):
                _, (h, _) = self.lstm(self.embed(x))
                return self.out(self.drop(torch.cat([h[0], h[1]], 1)))[:, 0]

        model = Model()
        torch_glorot(model)
        torch_glorot_lstm(model.lstm)
        opt = torch.optim.Adam(model.parameters(), lr=LR, eps=1e-7)
        self.step = TorchStep(model, nn.BCEWithLogitsLoss(), opt)


class TensorFlow:
    def __init__(self, data):
        tf, keras = tf_setup()
        L = keras.layers
        self.data = data
        model = keras.Sequential([keras.Input((LENGTH,), dtype='int64'), L.Embedding(VOCAB, EMBED,
                                  embeddings_initializer='glorot_uniform'),
                                  L.Bidirectional(L.LSTM(HIDDEN, recurrent_initializer='glorot_uniform',
                                                         unit_forget_bias=False)),
                                  L.Dropout(0.5), L.Dense(1)])
        self.step = TFStep(model, keras.losses.BinaryCrossentropy(from_logits=True),
                           keras.optimizers.Adam(learning_rate=LR, epsilon=1e-7))

    def batch(self, s):
        x, y = self.data.get(s)
        return x, y[:, None]
