"""The ATIS slot tagger: CNTK's language-understanding recipe.

Each word of an air-travel query (vocabulary 943) gets one of 129 slot labels
(B-fromloc.city_name, I-toloc.city_name, O, ...). The model embeds the words
(150), runs an LSTM of 300 over the query and projects every step onto the
labels; --bidirectional splices a forward and a backward LSTM instead.

Training follows CNTK 2.7's recipe: cross-entropy with softmax, classification
error as the metric, FSAdaGrad with per-sample learning rates 0.003 for two
epochs, 0.0015 for twelve, then 0.0003; momentum 0.9 per 70 samples (as a time
constant); gradients clipped per sample at 15 by truncation; minibatches of 70
words (whole queries); epochs of 36,000 words. After training it prints the
slot-label error on atis.test.ctf.

Data: atis.train.ctf / atis.test.ctf in CNTK Text Format (streams S0 query
words, S1 intent, S2 slot labels, all one-hot). They are looked for in
--data-dir, $ATIS_DIR, <repo>/../shared/data/atis and <repo>/data/atis.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

import cntk as C
from cntk.layers import LSTM, BatchNormalization, Dense, Embedding, Recurrence, Sequential, default_options

VOCAB_SIZE, NUM_LABELS, NUM_INTENTS = 943, 129, 26
EMB_DIM, HIDDEN_DIM = 150, 300
EPOCH_SIZE = 36000  # samples (words) per epoch: the unit of the learning-rate schedule
MINIBATCH_SIZE = 70  # words per minibatch
LR_PER_SAMPLE = [0.003] * 2 + [0.0015] * 12 + [0.0003]
MOMENTUM_PER_MINIBATCH = 0.9
CLIPPING_THRESHOLD_PER_SAMPLE = 15.0

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.normpath(os.path.join(_HERE, '..', '..'))


def find_data_dir(data_dir=None):
    """The first folder holding atis.train.ctf and atis.test.ctf, or None."""
    candidates = [data_dir] if data_dir else [os.environ.get('ATIS_DIR'),
                                               os.path.join(_REPO, '..', 'shared', 'data', 'atis'),
                                               os.path.join(_REPO, 'data', 'atis')]
    for d in candidates:
        if d and all(os.path.isfile(os.path.join(d, f)) for f in ('atis.train.ctf', 'atis.test.ctf')):
            return os.path.normpath(d)
    return None


def create_reader(path, is_training, max_sweeps=None):
    """A CTF reader over an ATIS file: training data shuffled and repeated forever, test data read
    once in file order."""
    if max_sweeps is None:
        max_sweeps = C.io.INFINITELY_REPEAT if is_training else 1
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
        query=C.io.StreamDef(field='S0', shape=VOCAB_SIZE, is_sparse=True),
        intent_labels=C.io.StreamDef(field='S1', shape=NUM_INTENTS, is_sparse=True),
        slot_labels=C.io.StreamDef(field='S2', shape=NUM_LABELS, is_sparse=True),
    )), randomize=is_training, max_sweeps=max_sweeps)


def create_model(bidirectional=False, batch_norm=False, emb_dim=EMB_DIM, hidden_dim=HIDDEN_DIM,
                 num_labels=NUM_LABELS):
    """Embedding -> LSTM over the query (or a forward and a backward LSTM, spliced) -> Dense per word.

    batch_norm: CNTK 2.7's test variant of the recipe: batch normalization after the embedding and after
    the recurrence, and recurrences that start from 0.1 instead of 0 (CNTK's ATIS tests train this
    variant; its one-epoch test error is the 3.2-3.5% CNTK reports)."""
    def recurrence():
        if bidirectional:
            # CNTK's example: both directions read the embedded query; their outputs are spliced per word.
            return [(Recurrence(LSTM(hidden_dim)), Recurrence(LSTM(hidden_dim), go_backwards=True)), C.splice]
        return [Recurrence(LSTM(hidden_dim))]

    embed = Embedding(emb_dim, name='embed')
    if not batch_norm:
        rec = recurrence()
        return Sequential([embed] + rec + [Dense(num_labels, name='out_projection')])
    with default_options(initial_state=0.1):
        rec = recurrence()
    return Sequential([embed, BatchNormalization()] + rec +
                      [BatchNormalization(), Dense(num_labels, name='out_projection')])


def create_criterion(model, vocab_size=VOCAB_SIZE, num_labels=NUM_LABELS):
    """(query, labels) -> (cross-entropy, classification error), one value per word."""
    query = C.sequence.input_variable(vocab_size, is_sparse=True, name='query')
    labels = C.sequence.input_variable(num_labels, is_sparse=True, name='slot_labels')
    z = model(query)
    loss = C.cross_entropy_with_softmax(z, labels)
    error = C.classification_error(z, labels)
    return query, labels, z, loss, error


def create_learner(parameters, epoch_size=EPOCH_SIZE, minibatch_size=MINIBATCH_SIZE):
    """FSAdaGrad with CNTK's ATIS schedule. The learning rates are per sample (the update scales with the
    words in the minibatch); the momentum time constant makes the momentum 0.9 over 70 words."""
    lr = C.learning_parameter_schedule_per_sample(LR_PER_SAMPLE, epoch_size=epoch_size)
    momentum = C.momentum_as_time_constant_schedule(minibatch_size / -math.log(MOMENTUM_PER_MINIBATCH))
    return C.fsadagrad(parameters, lr=lr, momentum=momentum,
                       gradient_clipping_threshold_per_sample=CLIPPING_THRESHOLD_PER_SAMPLE,
                       gradient_clipping_with_truncation=True)


def train(train_file, bidirectional=False, batch_norm=False, epochs=1, epoch_size=EPOCH_SIZE,
          minibatch_size=MINIBATCH_SIZE, progress_freq=100, progress_first=10, max_minibatches=None, verbose=True,
          seed=1):
    """Trains the tagger. Returns a dict: model, query and labels variables, the loss of every minibatch
    (`losses`), (loss, metric) per epoch (`epoch_summaries`), wall-clock and CPU seconds per epoch
    (`epoch_seconds`, `epoch_cpu_seconds`)."""
    C.cntk_py.set_fixed_random_seed(seed)
    reader = create_reader(train_file, is_training=True)
    model = create_model(bidirectional, batch_norm)
    query, labels, z, loss, error = create_criterion(model)
    learner = create_learner(z.parameters, epoch_size, minibatch_size)
    writers = [C.logging.ProgressPrinter(freq=progress_freq, first=progress_first, tag='Training',
                                         num_epochs=epochs)] if verbose else []
    trainer = C.Trainer(z, (loss, error), [learner], writers)
    if verbose:
        C.logging.log_number_of_parameters(z)
        print()

    input_map = {query: reader.streams.query, labels: reader.streams.slot_labels}
    losses, summaries, seconds, cpu_seconds = [], [], [], []
    t = 0
    n_minibatches = 0
    for epoch in range(epochs):
        start, cpu_start = time.time(), time.process_time()
        epoch_end = (epoch + 1) * epoch_size
        loss_sum = metric_sum = 0.0
        samples = 0
        while t < epoch_end:
            if max_minibatches is not None and n_minibatches >= max_minibatches:
                break
            # The reader packs whole queries up to the requested number of words; the last minibatch
            # of an epoch asks for only what is left of it.
            data = reader.next_minibatch(min(minibatch_size, epoch_end - t), input_map=input_map)
            trainer.train_minibatch(data)
            n = trainer.previous_minibatch_sample_count
            t += n
            samples += n
            n_minibatches += 1
            losses.append(trainer.previous_minibatch_loss_average)
            loss_sum += trainer.previous_minibatch_loss_average * n
            metric_sum += trainer.previous_minibatch_evaluation_average * n
        trainer.summarize_training_progress()
        seconds.append(time.time() - start)
        cpu_seconds.append(time.process_time() - cpu_start)
        summaries.append((loss_sum / max(samples, 1), metric_sum / max(samples, 1)))
        if max_minibatches is not None and n_minibatches >= max_minibatches:
            break
    return dict(model=z, query=query, labels=labels, losses=losses, epoch_summaries=summaries,
                epoch_seconds=seconds, epoch_cpu_seconds=cpu_seconds, trainer=trainer)


def evaluate(test_file, model, query, labels, minibatch_size=1000, verbose=True):
    """The slot-label error (fraction of words whose most likely label is wrong) on a CTF file."""
    reader = create_reader(test_file, is_training=False)
    error = C.classification_error(model, labels)
    writers = [C.logging.ProgressPrinter(tag='Evaluation')] if verbose else []
    evaluator = C.Evaluator(error, writers)
    input_map = {query: reader.streams.query, labels: reader.streams.slot_labels}
    errors = 0.0
    samples = 0
    while True:
        data = reader.next_minibatch(minibatch_size, input_map=input_map)
        if not data:
            break
        n = data[labels].num_samples
        errors += evaluator.test_minibatch(data) * n
        samples += n
    evaluator.summarize_test_progress()
    if samples == 0:
        raise ValueError("evaluate: %s holds no sequences" % test_file)
    return errors / samples


def peek(model, data_dir, query='BOS flights from new york to seattle EOS'):
    """Prints the label the model gives each word of a query (words from query.wl, labels from slots.wl)."""
    query_wl = os.path.join(data_dir, 'query.wl')
    slots_wl = os.path.join(data_dir, 'slots.wl')
    if not (os.path.isfile(query_wl) and os.path.isfile(slots_wl)):
        return None
    with open(query_wl) as f:
        word_index = {w.rstrip('\n'): i for i, w in enumerate(f)}
    with open(slots_wl) as f:
        slots = [s.rstrip('\n') for s in f]
    words = query.split()
    unknown = [w for w in words if w not in word_index]
    if unknown:
        raise ValueError("peek: %s not in the vocabulary %s" % (', '.join(unknown), query_wl))
    scores = model.eval({model.arguments[0]: C.Value.one_hot([[word_index[w] for w in words]], VOCAB_SIZE)})
    best = [slots[i] for i in np.argmax(scores[0], axis=-1)]
    for w, s in zip(words, best):
        print("\t%s\t%s" % (w, s))
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('-e', '--epochs', '--max-epochs', dest='epochs', type=int, default=1,
                        help='training epochs of --epoch-size words')
    parser.add_argument('--epoch-size', type=int, default=EPOCH_SIZE, help='words per epoch (36000)')
    parser.add_argument('--minibatch-size', type=int, default=MINIBATCH_SIZE, help='words per minibatch (70)')
    parser.add_argument('--max-minibatches', type=int, default=None, help='stop after this many minibatches')
    parser.add_argument('--bidirectional', action='store_true', help='a forward and a backward LSTM, spliced')
    parser.add_argument('--batch-norm', action='store_true',
                        help="batch normalization after the embedding and the recurrence (CNTK's test variant)")
    parser.add_argument('--data-dir', default=None, help='folder of atis.train.ctf and atis.test.ctf')
    parser.add_argument('--save', default=None, help='save the trained model to this file (CNTK v2 format)')
    parser.add_argument('--no-test', action='store_true', help='skip the test-set evaluation')
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args(argv)
    for name in ('epochs', 'epoch_size', 'minibatch_size'):
        if getattr(args, name) <= 0:
            parser.error('--%s must be positive' % name.replace('_', '-'))

    data_dir = find_data_dir(args.data_dir)
    if data_dir is None:
        sys.exit("ATIS data not found (atis.train.ctf, atis.test.ctf): give --data-dir or set ATIS_DIR")
    result = train(os.path.join(data_dir, 'atis.train.ctf'), bidirectional=args.bidirectional,
                   batch_norm=args.batch_norm, epochs=args.epochs,
                   epoch_size=args.epoch_size, minibatch_size=args.minibatch_size,
                   max_minibatches=args.max_minibatches, seed=args.seed)
    if args.save:
        # As CNTK's example: save the model and evaluate the loaded copy.
        result['model'].save(args.save)
        result['model'] = C.Function.load(args.save)
        result['query'] = result['model'].arguments[0]
        print("saved the model to %s" % args.save)
    for i, (s, cpu) in enumerate(zip(result['epoch_seconds'], result['epoch_cpu_seconds'])):
        print("epoch %d: %.1f s (%.1f CPU-seconds)" % (i + 1, s, cpu))
    print("Example query after training:")
    peek(result['model'], data_dir)
    if args.no_test:
        return result
    error = evaluate(os.path.join(data_dir, 'atis.test.ctf'), result['model'], result['query'], result['labels'])
    print("slot-label test error: %.2f%%" % (100 * error))
    result['test_error'] = error
    return result


if __name__ == '__main__':
    main()
