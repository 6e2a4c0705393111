"""The ATIS slot tagger (CNTK's language-understanding recipe): embedding 150, LSTM 300, dense 129 per
token; Adam; minibatches of up to 70 tokens; one epoch of 36,000 tokens of atis.train.ctf."""
import os

import numpy as np

from .common import ROOT, CNTKStep, tf_setup, torch_glorot, torch_glorot_lstm, torch_setup

NAME = 'atis'
TITLE = ("ATIS slot tagger: embedding 943x150, LSTM 300, dense 129 per token, Adam lr 0.003, minibatches of "
         "<= 70 tokens, one epoch of 36,000 tokens of atis.train.ctf")
VOCAB, SLOTS, EMBED, HIDDEN = 943, 129, 150, 300
MB_TOKENS, EPOCH_TOKENS = 70, 36000
LR = 0.003
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
    lengths = np.array([len(q) for q, _ in batch])
    x = np.zeros((len(batch), lengths.max()), np.int64)
    y = np.full((len(batch), lengths.max()), -100, np.int64)
    for i, (q, s) in enumerate(batch):
        x[i, :len(q)] = q
        y[i, :len(s)] = s
    return x, y, lengths


class OpenCNTK:
    def __init__(self, data):
        import cntk as C
        from cntk.layers import LSTM, Dense, Embedding, Recurrence, Sequential
        self.C, self.data = C, data
        C.cntk_py.set_fixed_random_seed(1)
        x = C.sequence.input_variable(VOCAB, is_sparse=True)
        y = C.sequence.input_variable(SLOTS, is_sparse=True)
        z = Sequential([Embedding(EMBED), Recurrence(LSTM(HIDDEN)), Dense(SLOTS)])(x)
        loss = C.cross_entropy_with_softmax(z, y)
        learner = C.adam(z.parameters, C.learning_parameter_schedule_per_sample(LR), momentum=0.9,
                         variance_momentum=0.999, epsilon=1e-7)
        self.step = CNTKStep(C.Trainer(z, (loss, C.classification_error(z, y)), [learner]), [x, y])

    def batch(self, s):
        b = self.data.get(s)
        return (self.C.Value.one_hot([q.tolist() for q, _ in b], VOCAB),
                self.C.Value.one_hot([t.tolist() for _, t in b], SLOTS))


class PyTorch:
    def __init__(self, data):
        torch = torch_setup()
        nn = torch.nn
        self.torch, self.data = torch, data

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(VOCAB, EMBED)
                self.lstm = nn.LSTM(EMBED, HIDDEN, batch_first=True)
                self.out = nn.Linear(HIDDEN, SLOTS)

            def forward(self, x, lengths):
                packed = nn.utils.rnn.pack_padded_sequence(self.embed(x), lengths, batch_first=True,
                                                           enforce_sorted=False)
                h, _ = self.lstm(packed)
                h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True)
                return self.out(h)

        self.model = Model()
        torch_glorot(self.model)
        torch_glorot_lstm(self.model.lstm)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=LR, eps=1e-7)
        self.loss_fn = nn.CrossEntropyLoss(reduction='sum', ignore_index=-100)

    def batch(self, s):
        return padded(self.data.get(s))

    def step(self, x, y, lengths):
        torch = self.torch
        out = self.model(torch.from_numpy(x), torch.from_numpy(lengths))
        loss = self.loss_fn(out.reshape(-1, SLOTS), torch.from_numpy(y).reshape(-1))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return float(loss.item()) / int(lengths.sum())


class TensorFlow:
    def __init__(self, data):
        tf, keras = tf_setup()
        L = keras.layers
        self.data = data
        # Index 0 is padding (mask_zero), so the words are shifted by one.
        model = keras.Sequential([keras.Input((None,), dtype='int64'),
                                  L.Embedding(VOCAB + 1, EMBED, mask_zero=True, embeddings_initializer='glorot_uniform'),
                                  L.LSTM(HIDDEN, return_sequences=True, recurrent_initializer='glorot_uniform',
                                         unit_forget_bias=False),
                                  L.Dense(SLOTS)])
        opt = keras.optimizers.Adam(learning_rate=LR, epsilon=1e-7)
        ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction='sum')

        @tf.function(reduce_retracing=True)
        def step(x, y, w):
            with tf.GradientTape() as tape:
                loss = ce(y, model(x, training=True), sample_weight=w)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        self.tf_step = step

    def batch(self, s):
        x, y, lengths = padded(self.data.get(s))
        mask = (y >= 0)
        return x + mask, np.where(mask, y, 0), mask.astype(np.float32)

    def step(self, x, y, w):
        return float(self.tf_step(x, y, w)) / float(w.sum())
