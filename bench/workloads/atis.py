"""The ATIS slot tagger (CNTK's language-understanding recipe): embedding 150, LSTM 300, dense 129 per
token; Adam; minibatches of up to 70 tokens; one epoch of 36,000 tokens of atis.train.ctf."""
import os

import numpy as np

from .common import (ROOT, CNTKStep, Params, TorchStep, cntk_dense, cntk_embedding, cntk_load_lstm, cntk_setup,
                     keras_dense_values, keras_lstm_values, keras_optimizer, tf_apply, tf_function, tf_setup,
                     torch_dense, torch_embedding, torch_lstm, torch_setup)

NAME = 'atis'
TITLE = ("ATIS slot tagger: embedding 943x150, LSTM 300, dense 129 per token, Adam lr 0.003, minibatches of "
         "<= 70 tokens, one epoch of 36,000 tokens of atis.train.ctf")
VOCAB, SLOTS, EMBED, HIDDEN = 943, 129, 150, 300
MB_TOKENS, EPOCH_TOKENS = 70, 36000
# The mean loss per token in all three (the original recipe's per-sample rate on a summed gradient is, for
# Adam, the same update up to epsilon's scale).
BF16 = True  # the bfloat16 columns (products and recurrences carry the step)
OPTIMIZER = ('adam', dict(lr=0.003, eps=1e-7))
SKIP_COLUMNS = {'tensorflow_xla': 'minibatch shapes differ from step to step (whole sequences of up to 70 tokens): '
                                  'XLA compiles again for each new shape'}
BATCH = MB_TOKENS
MEASURE_STEPS = None  # set by make_data: one epoch
EPOCH_STEPS = None
WARMUP_STEPS = 30
ATIS = os.path.join(ROOT, '..', 'shared', 'data', 'atis', 'atis.train.ctf')


def read_ctf(path):
    """(query ids, slot ids) per sequence from ATIS' CTF file (streams S0 and S2; one token per line)."""
    seqs, cur, last = [], None, None
    with open(path) as f:
        for line in f:
            seq_id, rest = line.split('|', 1)
            if seq_id.strip() != last:
                last = seq_id.strip()
                cur = ([], [])
                seqs.append(cur)
            for field in rest.split('|'):
                name, _, vals = field.strip().partition(' ')
                if name == 'S0':
                    cur[0].append(int(vals.split(':')[0]))
                elif name == 'S2':
                    cur[1].append(int(vals.split(':')[0]))
    return [(np.array(q), np.array(s)) for q, s in seqs]


class AtisData:
    """Minibatches of whole sequences (shuffled with a fixed seed), each up to 70 tokens."""

    def __init__(self):
        if not os.path.exists(ATIS):
            raise RuntimeError('%s not found' % ATIS)
        seqs = read_ctf(ATIS)
        order = np.random.default_rng(1000).permutation(len(seqs))
        self.batches, cur, n, total = [], [], 0, 0
        i = 0
        while total < EPOCH_TOKENS:
            q, s = seqs[order[i % len(seqs)]]
            i += 1
            if cur and n + len(q) > MB_TOKENS:
                self.batches.append(cur)
                total += n
                cur, n = [], 0
            cur.append((q, s))
            n += len(q)

    def get(self, step):
        return self.batches[step % len(self.batches)]


def make_data():
    global MEASURE_STEPS, EPOCH_STEPS
    data = AtisData()
    MEASURE_STEPS = EPOCH_STEPS = len(data.batches)
    return data


def padded(batch):
    """Ids, slots (-100 past a sequence's end) and lengths, padded to the longest sequence."""
    lengths = np.array([len(q) for q, _ in batch])
    x = np.zeros((len(batch), lengths.max()), np.int64)
    y = np.full((len(batch), lengths.max()), -100, np.int64)
    for i, (q, s) in enumerate(batch):
        x[i, :len(q)] = q
        y[i, :len(s)] = s
    return x, y, lengths


def make_params(data):
    P = Params()
    P.embedding('embed', VOCAB, EMBED)
    P.lstm('lstm', EMBED, HIDDEN)
    P.dense('out', HIDDEN, SLOTS)
    return P


class OpenCNTK:
    def __init__(self, data, P=None, dropout=True, config=None):
        P = make_params(data) if P is None else P  # bench/distributed.py and dnnl_layouts.py build it alone
        C = cntk_setup()
        from cntk.layers import LSTM, Recurrence
        self.C, self.data = C, data
        x = C.sequence.input_variable(VOCAB, is_sparse=True)
        y = C.sequence.input_variable(SLOTS, is_sparse=True)
        h = Recurrence(LSTM(HIDDEN))(cntk_embedding(P, 'embed')(x))
        cntk_load_lstm(h, P, 'lstm')
        z = cntk_dense(C, P, 'out')(h)
        self.step = CNTKStep(C, z, C.cross_entropy_with_softmax(z, y), C.classification_error(z, y), [x, y], OPTIMIZER)

    def batch(self, s):
        b = self.data.get(s)
        return (self.C.Value.one_hot([q.tolist() for q, _ in b], VOCAB),
                self.C.Value.one_hot([t.tolist() for _, t in b], SLOTS))


class PyTorch:
    """Padded sequences, not packed ones: PyTorch's LSTM runs oneDNN's RNN primitive only on a padded batch, and
    for a forward LSTM the outputs within each sequence do not depend on the padding after it, whose loss is
    masked (ignore_index), so the update is the same."""

    def __init__(self, data, P, dropout=True, config=None):
        torch = torch_setup()
        nn = torch.nn
        self.data = data

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch_embedding(torch, P, 'embed')
                self.lstm = torch_lstm(torch, P, ['lstm'])
                self.out = torch_dense(torch, P, 'out')

            def forward(self, x):
                h, _ = self.lstm(self.embed(x))
                return self.out(h).reshape(-1, SLOTS)

        def prepare(x, y, lengths):
            return torch.from_numpy(x), torch.from_numpy(y).reshape(-1)

        self.step = TorchStep(torch, Model(), nn.CrossEntropyLoss(ignore_index=-100), OPTIMIZER, config or {}, prepare)

    def batch(self, s):
        return padded(self.data.get(s))


class TensorFlow:
    def __init__(self, data, P, dropout=True, config=None):
        tf, keras = tf_setup()
        L = keras.layers
        self.data = data
        ids, mask = keras.Input((None,), dtype='int64'), keras.Input((None,), dtype='bool')
        embed, lstm, out = L.Embedding(VOCAB, EMBED), L.LSTM(HIDDEN, return_sequences=True), L.Dense(SLOTS)
        model = keras.Model([ids, mask], out(lstm(embed(ids), mask=mask)))
        embed.set_weights([P['embed.E']])
        lstm.set_weights(keras_lstm_values(P, 'lstm'))
        out.set_weights(keras_dense_values(P, 'out'))
        opt = keras_optimizer(keras, OPTIMIZER)
        ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction='sum')

        @tf_function(tf, config or {}, reduce_retracing=True)
        def step(x, m, y, w):
            with tf.GradientTape() as tape:
                loss = ce(y, model([x, m], training=True), sample_weight=w) / tf.reduce_sum(w)
            tf_apply(tf, opt, tape.gradient(loss, model.trainable_variables), model.trainable_variables)
            return loss

        self.tf_step = step
        self.count = int(model.count_params())
        self.step = self

    def batch(self, s):
        x, y, lengths = padded(self.data.get(s))
        w = y >= 0
        return x, w, np.where(w, y, 0), w.astype(np.float32)

    def __call__(self, x, m, y, w):
        return float(self.tf_step(x, m, y, w))
