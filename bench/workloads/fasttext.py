"""Keras' imdb_fasttext shape on synthetic data: unigram and bigram ids (1,200,000), embedding 50,
global average pooling, sigmoid output; Adam; sequences of 400 ids; batch 32."""
import numpy as np

from .common import ArrayData, CNTKStep, TFStep, TorchStep, tf_setup, torch_glorot, torch_setup

NAME = 'fasttext'
TITLE = ("fastText (Keras imdb_fasttext, bigrams): embedding 1,200,000x50, global average pooling, dense 1 sigmoid, "
         "Adam lr 1e-3, length 400, batch 32, synthetic data")
BATCH = 32
EPOCH_STEPS = 782
MEASURE_STEPS = 20
WARMUP_STEPS = 3
VOCAB, EMBED, LENGTH = 1200000, 50, 400
LR = 1e-3


def make_data():
    rng = np.random.default_rng(0)
    x = rng.integers(0, VOCAB, (1600, LENGTH))
    y = ((x < 6000).sum(1) > 1).astype(np.float32)
    return ArrayData([x, y], BATCH)


class OpenCNTK:
    def __init__(self, data):
        import cntk as C
        from cntk.layers import Dense, Embedding
        self.C, self.data = C, data
        C.cntk_py.set_fixed_random_seed(1)
        x = C.sequence.input_variable(VOCAB, is_sparse=True)
        y = C.input_variable(1)
        h = C.sequence.reduce_sum(Embedding(EMBED)(x)) / LENGTH  # every sequence has LENGTH ids
        z = Dense(1, activation=C.sigmoid)(h)
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
                self.out = nn.Linear(EMBED, 1)

            def forward(self, x):
                return self.out(self.embed(x).mean(1))[:, 0]

        model = Model()
        torch_glorot(model)
        self.step = TorchStep(model, nn.BCEWithLogitsLoss(), torch.optim.Adam(model.parameters(), lr=LR, eps=1e-7))


class TensorFlow:
    def __init__(self, data):
        tf, keras = tf_setup()
        L = keras.layers
        self.data = data
        model = keras.Sequential([keras.Input((LENGTH,), dtype='int64'),
                                  L.Embedding(VOCAB, EMBED, embeddings_initializer='glorot_uniform'),
                                  L.GlobalAveragePooling1D(), L.Dense(1)])
        self.step = TFStep(model, keras.losses.BinaryCrossentropy(from_logits=True),
                           keras.optimizers.Adam(learning_rate=LR, epsilon=1e-7))

    def batch(self, s):
        x, y = self.data.get(s)
        return x, y[:, None]
