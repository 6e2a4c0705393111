"""Keras' imdb_fasttext shape on synthetic data: unigram and bigram ids (1,200,000), embedding 50,
global average pooling, sigmoid output; Adam; sequences of 400 ids; batch 32."""
import numpy as np

from .common import (ArrayData, CNTKStep, Params, TFStep, TorchStep, cntk_dense, cntk_embedding, cntk_setup,
                     keras_dense_values, tf_setup, torch_dense, torch_embedding, torch_setup)

NAME = 'fasttext'
TITLE = ("fastText (Keras imdb_fasttext, bigrams): embedding 1,200,000x50, global average pooling, dense 1 sigmoid, "
         "Adam lr 1e-3, length 400, batch 32, synthetic data")
BATCH = 32
EPOCH_STEPS = 782
MEASURE_STEPS = 20
WARMUP_STEPS = 3
VOCAB, EMBED, LENGTH = 1200000, 50, 400
OPTIMIZER = ('adam', dict(lr=1e-3, eps=1e-7))
# The loss stays near ln 2 for many steps, so a relative tolerance must be small to mean anything; the three
# agree within 3e-6 over 20 steps.
CHECK_EARLY = (5, 1e-5)
CHECK_RTOL = 2e-5


def make_data():
    rng = np.random.default_rng(0)
    x = rng.integers(0, VOCAB, (1600, LENGTH))
    y = ((x < 6000).sum(1) > 1).astype(np.float32)
    return ArrayData([x, y], BATCH)


def make_params(data):
    P = Params()
    P.embedding('embed', VOCAB, EMBED)
    P.dense('out', EMBED, 1)
    return P


class OpenCNTK:
    def __init__(self, data, P=None, dropout=True, config=None):
        P = make_params(data) if P is None else P  # bench/distributed.py and dnnl_layouts.py build it alone
        C = cntk_setup()
        self.C, self.data = C, data
        x = C.sequence.input_variable(VOCAB, is_sparse=True)
        y = C.input_variable(1)
        h = C.sequence.reduce_sum(cntk_embedding(P, 'embed')(x)) / LENGTH  # every sequence has LENGTH ids
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
                self.out = torch_dense(torch, P, 'out')

            def forward(self, x):
                return self.out(self.embed(x).mean(1))[:, 0]

        self.step = TorchStep(torch, Model(), nn.BCEWithLogitsLoss(), OPTIMIZER, config or {})


class TensorFlow:
    def __init__(self, data, P, dropout=True, config=None):
        tf, keras = tf_setup()
        L = keras.layers
        self.data = data
        embed, out = L.Embedding(VOCAB, EMBED), L.Dense(1)
        model = keras.Sequential([keras.Input((LENGTH,), dtype='int64'), embed, L.GlobalAveragePooling1D(), out])
        embed.set_weights([P['embed.E']])
        out.set_weights(keras_dense_values(P, 'out'))
        self.step = TFStep(tf, keras, model, keras.losses.BinaryCrossentropy(from_logits=True), OPTIMIZER, config or {})

    def batch(self, s):
        x, y = self.data.get(s)
        return x, y[:, None]
