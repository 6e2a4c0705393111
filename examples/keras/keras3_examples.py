"""The six Keras examples of keras_examples.py written for Keras 3, to run the same models on
Keras 3's TensorFlow and PyTorch backends:

    KERAS_BACKEND=tensorflow build/bench-venv/bin/python examples/keras/keras3_examples.py mnist_mlp --epochs 2

Same layers, initializers (Keras' defaults, the same in both), optimizer, loss, batch size,
and the arrays keras_examples.py makes (its data functions need NumPy only). What Keras 3
spells differently: `Embedding` has no `input_length` (an `Input` gives the length);
Keras 2.3.1's `Adadelta()` means learning rate 1.0 and rho 0.95 (Keras 3's default rate is
0.001), and its `decay=1e-6` is the inverse time decay lr / (1 + 1e-6 * step).
Both Kerases use epsilon 1e-7 and the same update formulas for RMSprop, Adadelta and Adam.

One difference is Keras 3's on TensorFlow, and `adam()` undoes it: there an Embedding's gradient
is a tf.IndexedSlices with one row per occurrence of an id, and the optimizer scatter-adds its
moment updates row by row, so Adam's second moment of a word seen k times in a batch sums k
squares instead of squaring their sum, and the word steps up to sqrt(k) times further than Adam
says (on a synthetic IMDB batch, 5.6 times the learning rate where Adam's first step is at most
the learning rate). Keras 2.3.1 on OpenCNTK and Keras 3 on PyTorch apply Adam to the summed
gradient; with the gradient made dense, Keras 3 on TensorFlow does too (its first step then
equals a NumPy Adam step, as OpenCNTK's does).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras_examples as ke  # noqa: E402


def adam():
    """Keras' Adam with its defaults; on TensorFlow, over dense gradients (the module's docstring says why)."""
    import keras
    if keras.backend.backend() != 'tensorflow':
        return keras.optimizers.Adam()
    import tensorflow as tf

    class DenseGradientAdam(keras.optimizers.Adam):
        def apply(self, grads, trainable_variables=None):
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
            return super().apply(grads, trainable_variables)
    return DenseGradientAdam()


def mnist_mlp(n_train=None, n_test=None):
    import keras
    from keras import layers
    train, test = ke.mnist_data(n_train, n_test)
    model = keras.Sequential([keras.Input((784,)), layers.Dense(512, activation='relu'), layers.Dropout(0.2),
                              layers.Dense(512, activation='relu'), layers.Dropout(0.2),
                              layers.Dense(10, activation='softmax')])
    model.compile(loss='categorical_crossentropy', optimizer=keras.optimizers.RMSprop(learning_rate=0.001),
                  metrics=['accuracy'])
    return model, train, test, 128


def mnist_cnn(n_train=None, n_test=None):
    import keras
    from keras import layers
    train, test = ke.mnist_data(n_train, n_test, images=True)
    model = keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(32, (3, 3), activation='relu'),
                              layers.Conv2D(64, (3, 3), activation='relu'), layers.MaxPooling2D((2, 2)),
                              layers.Dropout(0.25), layers.Flatten(), layers.Dense(128, activation='relu'),
                              layers.Dropout(0.5), layers.Dense(10, activation='softmax')])
    model.compile(loss='categorical_crossentropy', metrics=['accuracy'],
                  optimizer=keras.optimizers.Adadelta(learning_rate=1.0, rho=0.95, epsilon=1e-7))
    return model, train, test, 128


def cifar10_cnn(n_train=50000, n_test=10000):
    import keras
    from keras import layers
    train, test = ke.cifar10_data(n_train, n_test)
    model = keras.Sequential([
        keras.Input((32, 32, 3)),
        layers.Conv2D(32, (3, 3), padding='same'), layers.Activation('relu'),
        layers.Conv2D(32, (3, 3)), layers.Activation('relu'), layers.MaxPooling2D((2, 2)), layers.Dropout(0.25),
        layers.Conv2D(64, (3, 3), padding='same'), layers.Activation('relu'),
        layers.Conv2D(64, (3, 3)), layers.Activation('relu'), layers.MaxPooling2D((2, 2)), layers.Dropout(0.25),
        layers.Flatten(), layers.Dense(512), layers.Activation('relu'), layers.Dropout(0.5), layers.Dense(10),
        layers.Activation('softmax')])
    lr = keras.optimizers.schedules.InverseTimeDecay(0.0001, decay_steps=1, decay_rate=1e-6)
    model.compile(loss='categorical_crossentropy', optimizer=keras.optimizers.RMSprop(learning_rate=lr),
                  metrics=['accuracy'])
    return model, train, test, 32


def imdb_bidirectional_lstm(n_train=25000, n_test=25000, unroll=False):
    import keras
    from keras import layers
    max_features, maxlen = 20000, 100
    train, test = ke.imdb_data(n_train, n_test, max_features, maxlen)
    model = keras.Sequential([keras.Input((maxlen,), dtype='int32'), layers.Embedding(max_features, 128),
                              layers.Bidirectional(layers.LSTM(64, unroll=unroll)), layers.Dropout(0.5),
                              layers.Dense(1, activation='sigmoid')])
    model.compile(adam(), 'binary_crossentropy', metrics=['accuracy'])
    return model, train, test, 32


def imdb_fasttext(n_train=25000, n_test=25000):
    import keras
    from keras import layers
    max_features, maxlen = 20000, 400
    train, test = ke.imdb_data(n_train, n_test, max_features, maxlen)
    model = keras.Sequential([keras.Input((maxlen,), dtype='int32'), layers.Embedding(max_features, 50),
                              layers.GlobalAveragePooling1D(), layers.Dense(1, activation='sigmoid')])
    model.compile(loss='binary_crossentropy', optimizer=adam(), metrics=['accuracy'])
    return model, train, test, 32


def lstm_text_generation(max_chars=None, text_path=ke.DEFAULT_TEXT, unroll=False):
    import keras
    from keras import layers
    train, test = ke.text_data(max_chars, text_path)
    _, maxlen, chars = train[0].shape
    model = keras.Sequential([keras.Input((maxlen, chars)), layers.LSTM(128, unroll=unroll),
                              layers.Dense(chars, activation='softmax')])
    model.compile(loss='categorical_crossentropy', optimizer=keras.optimizers.RMSprop(learning_rate=0.01))
    return model, train, test, 128


EXAMPLES = {f.__name__: f for f in (mnist_mlp, mnist_cnn, cifar10_cnn, imdb_bidirectional_lstm,
                                    imdb_fasttext, lstm_text_generation)}


def train(name, epochs, verbose=0, seed=None, weights=None, **data_args):
    """keras_examples.train over these models."""
    return ke.train(name, epochs, verbose=verbose, seed=seed, weights=weights, examples=EXAMPLES, **data_args)


def main(argv=None):
    return ke.main(argv, examples=EXAMPLES, doc=__doc__)


if __name__ == '__main__':
    sys.exit(main())
