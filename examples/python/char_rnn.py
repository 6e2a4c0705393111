"""A character-level LSTM language model that writes text (CNTK's CharacterLM example).

The model reads a text one character at a time (one-hot over the characters
the text uses) through two stacked LSTMs of 256 and predicts the next
character with a softmax. Training: windows of 100 characters as in CNTK's
char_rnn (16 of them side by side in each minibatch, each starting from a zero
state), gradients clipped per sample at 5 by truncation as there; Adam with a
step size of 0.002 instead of CNTK's momentum SGD,
which needs many epochs before its samples look like words. After training it samples text from the model.

Text: a real English text from a Debian package: the license texts of
base-files (/usr/share/common-licenses), lower-cased. --text FILE reads another.
"""
import argparse
import os
import sys
import time

import numpy as np

import cntk as C
from cntk.layers import LSTM, Dense, For, Recurrence, Sequential

HIDDEN_DIM = 256
NUM_LAYERS = 2
SEQ_LENGTH = 100  # characters per window: how far back the gradient flows
SEQUENCES_PER_MINIBATCH = 16
LEARNING_RATE = 0.002
CLIPPING_THRESHOLD_PER_SAMPLE = 5.0
LICENSES = '/usr/share/common-licenses'


def english_text(folder=LICENSES):
    """The license texts of Debian's base-files (every regular file in `folder`), joined, lower-cased."""
    if not os.path.isdir(folder):
        raise IOError("english_text: %s is not a folder (Debian's base-files installs it)" % folder)
    parts = []
    for name in sorted(os.listdir(folder)):
        p = os.path.join(folder, name)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, encoding='utf-8', errors='replace') as f:
                parts.append(f.read())
    if not parts:
        raise IOError("english_text: no text files in %s" % folder)
    return '\n'.join(parts).lower()


class CharData:
    """A text as character ids, its alphabet, and windows of it for training."""

    def __init__(self, text):
        if len(text) < 2:
            raise ValueError("CharData: the text needs at least two characters, it has %d" % len(text))
        self.text = text
        self.chars = sorted(set(text))
        self.char_to_ix = {c: i for i, c in enumerate(self.chars)}
        self.ids = np.array([self.char_to_ix[c] for c in text], dtype=np.int64)

    @property
    def vocab_size(self):
        return len(self.chars)

    def windows(self, rng, count, length):
        """`count` random windows: (inputs, targets) as lists of id lists, the targets one character ahead."""
        length = min(length, len(self.ids) - 1)
        starts = rng.randint(0, len(self.ids) - length, size=count)
        xs = [self.ids[s:s + length].tolist() for s in starts]
        ys = [self.ids[s + 1:s + length + 1].tolist() for s in starts]
        return xs, ys

    def encode(self, text):
        unknown = sorted(set(c for c in text if c not in self.char_to_ix))
        if unknown:
            raise ValueError("the text %r has characters outside the model's alphabet: %r" % (text, unknown))
        return [self.char_to_ix[c] for c in text]

    def decode(self, ids):
        return ''.join(self.chars[i] for i in ids)


def create_model(vocab_size, hidden_dim=HIDDEN_DIM, num_layers=NUM_LAYERS):
    """num_layers stacked LSTMs over the one-hot characters, then a dense layer of one score per character."""
    return Sequential([
        For(range(num_layers), lambda: Recurrence(LSTM(hidden_dim))),
        Dense(vocab_size),
    ])


def sample(model, features, data, length, prime_text='', temperature=1.0, context=SEQ_LENGTH, rng=None):
    """Writes `length` characters (the prime text included): each next character is drawn from the model's
    softmax (sharpened by 1/temperature) given the last `context` characters written. With temperature 0
    the most likely character is taken."""
    if length <= 0:
        raise ValueError("sample: length must be positive, got %r" % (length,))
    if temperature < 0:
        raise ValueError("sample: temperature must not be negative, got %r" % (temperature,))
    rng = rng if rng is not None else np.random.RandomState(0)
    ids = data.encode(prime_text) if prime_text else [int(rng.randint(data.vocab_size))]
    ids = ids[:length]
    while len(ids) < length:
        window = ids[-context:]
        scores = model.eval({features: C.Value.one_hot([window], data.vocab_size)})[0][-1].astype(np.float64)
        if temperature == 0:
            nxt = int(np.argmax(scores))
        else:
            scores = scores / temperature
            p = np.exp(scores - scores.max())
            p /= p.sum()
            nxt = int(rng.choice(data.vocab_size, p=p))
        ids.append(nxt)
    return data.decode(ids)


def train(data, num_minibatches=1000, seq_length=SEQ_LENGTH, sequences_per_minibatch=SEQUENCES_PER_MINIBATCH,
          hidden_dim=HIDDEN_DIM, num_layers=NUM_LAYERS, sample_every=0, sample_length=200, verbose=True, seed=1):
    """Trains the model for `num_minibatches` minibatches of random windows. Returns a dict: model,
    features, losses (per minibatch, per character), seconds."""
    C.cntk_py.set_fixed_random_seed(seed)
    rng = np.random.RandomState(seed)
    features = C.sequence.input_variable(data.vocab_size, is_sparse=True, name='chars')
    labels = C.sequence.input_variable(data.vocab_size, is_sparse=True, name='next_chars')
    z = create_model(data.vocab_size, hidden_dim, num_layers)(features)
    loss = C.cross_entropy_with_softmax(z, labels)
    error = C.classification_error(z, labels)
    # Adam with its step size as given whatever the minibatch size (minibatch_size=IGNORE); gradients clipped
    # per sample as CNTK's char_rnn did.
    learner = C.adam(z.parameters, C.learning_parameter_schedule(LEARNING_RATE), momentum=C.momentum_schedule(0.9),
                     gradient_clipping_threshold_per_sample=CLIPPING_THRESHOLD_PER_SAMPLE,
                     gradient_clipping_with_truncation=True, minibatch_size=C.learners.IGNORE)
    writers = [C.logging.ProgressPrinter(freq=100, tag='Training')] if verbose else []
    trainer = C.Trainer(z, (loss, error), [learner], writers)
    if verbose:
        print("text has %d characters, %d distinct" % (len(data.ids), data.vocab_size))
        C.logging.log_number_of_parameters(z)
        print()
    losses = []
    start = time.time()
    for i in range(num_minibatches):
        xs, ys = data.windows(rng, sequences_per_minibatch, seq_length)
        trainer.train_minibatch({features: C.Value.one_hot(xs, data.vocab_size),
                                 labels: C.Value.one_hot(ys, data.vocab_size)})
        losses.append(trainer.previous_minibatch_loss_average)
        if sample_every and (i + 1) % sample_every == 0:
            print(repr(sample(z, features, data, sample_length, rng=rng)))
    seconds = time.time() - start
    if verbose and num_minibatches:
        trainer.summarize_training_progress()
    return dict(model=z, features=features, losses=losses, seconds=seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--minibatches', type=int, default=1000, help='training minibatches')
    parser.add_argument('--seq-length', type=int, default=SEQ_LENGTH, help='characters per window')
    parser.add_argument('--sequences', type=int, default=SEQUENCES_PER_MINIBATCH, help='windows per minibatch')
    parser.add_argument('--hidden', type=int, default=HIDDEN_DIM, help='LSTM size')
    parser.add_argument('--layers', type=int, default=NUM_LAYERS, help='stacked LSTMs')
    parser.add_argument('--sample-every', type=int, default=500, help='print a sample every N minibatches (0: never)')
    parser.add_argument('--length', type=int, default=300, help='characters to write after training')
    parser.add_argument('--prime', default='the ', help='text the sample starts with')
    parser.add_argument('--temperature', type=float, default=0.8)
    parser.add_argument('--text', default=None, help='train on this text file instead of the license texts')
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args(argv)
    for name in ('minibatches', 'seq_length', 'sequences', 'hidden', 'layers', 'length'):
        if getattr(args, name) <= 0:
            parser.error('--%s must be positive' % name.replace('_', '-'))
    if args.text:
        with open(args.text, encoding='utf-8', errors='replace') as f:
            text = f.read()
    else:
        text = english_text()
    data = CharData(text)
    result = train(data, args.minibatches, args.seq_length, args.sequences, args.hidden, args.layers,
                   sample_every=args.sample_every)
    print("trained %d minibatches in %.1f s" % (args.minibatches, result['seconds']))
    text = sample(result['model'], result['features'], data, args.length, prime_text=args.prime.lower(),
                  temperature=args.temperature, rng=np.random.RandomState(args.seed))
    print(text)
    result['sample'] = text
    return result


if __name__ == '__main__':
    main()
