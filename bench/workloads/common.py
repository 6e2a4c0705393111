"""What the suite's workloads share: data sources, initial-value schemes and the training-step
plumbing of each framework.

Every workload trains the same architecture in OpenCNTK, PyTorch and TensorFlow (Keras 3), with
Glorot-uniform weights and zero biases in all three (each framework draws them with its own
generator, except where a workload loads identical NumPy values), the same optimizer settings,
batch size and data. A workload module defines:

  NAME, TITLE          key and one-line description
  BATCH                minibatch size
  MEASURE_STEPS        training steps per measurement
  WARMUP_STEPS         untimed steps before the first measurement
  EPOCH_STEPS          steps of one epoch (to report an epoch time), or None
  make_data()          an object with batch(step) -> tuple of NumPy arrays, the same in every framework
  OpenCNTK, PyTorch, TensorFlow
                       classes built from the data, with step(*arrays) -> float loss of the minibatch and
                       `data` (an object with get(step)); batch(step) when the framework's arrays differ
                       from data.get(step) (one_hot_batch: CNTK's one-hot labels)
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCH)
THREADS = 2


# ------------------------------------------------------------------ data

def fashion_mnist():
    """Fashion-MNIST training images (60000, 28, 28) float32 in [0, 1] and int64 labels."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, 'examples', 'python'))
    import fashion_mnist_data
    if not fashion_mnist_data.available():
        raise RuntimeError('Fashion-MNIST not found in %s (apt-get install dataset-fashion-mnist)'
                           % fashion_mnist_data.DATA_DIR)
    return fashion_mnist_data.load('train')


class ArrayData:
    """Minibatches from whole arrays in a fixed shuffled order (NumPy default_rng(seed)), wrapping around."""

    def __init__(self, arrays, batch, seed=1000):
        self.arrays = arrays
        self.batch = batch
        self.n = len(arrays[0])
        self.order = np.random.default_rng(seed).permutation(self.n)

    def get(self, step):
        start = (step * self.batch) % self.n
        idx = self.order[start:start + self.batch]
        if len(idx) < self.batch:
            idx = np.concatenate([idx, self.order[:self.batch - len(idx)]])
        return tuple(np.ascontiguousarray(a[idx]) for a in self.arrays)


def synthetic_images(n, shape, classes, seed=0):
    """n images of `shape` (C, H, W) whose class shifts their mean, so that the task is learnable."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    x = rng.standard_normal((n,) + tuple(shape)).astype(np.float32) * 0.5
    x += (y.astype(np.float32) / classes - 0.5)[:, None, None, None]
    return x, y.astype(np.int64)


def english_text():
    """A real English text from a Debian package: the license texts of base-files
    (/usr/share/common-licenses), present on every Debian system, lower-cased."""
    d = '/usr/share/common-licenses'
    parts = []
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, encoding='utf-8', errors='replace') as f:
                parts.append(f.read())
    if not parts:
        raise RuntimeError('no text found in %s' % d)
    return '\n'.join(parts).lower()


def one_hot_batch(self, step):
    """A framework's minibatch with one-hot labels (CNTK's classification criteria take them): `self.eye`
    is the identity of the class count."""
    x, y = self.data.get(step)
    return x, self.eye[y]


# ------------------------------------------------------------------ initial values

def glorot_uniform(rng, fan_in, fan_out, shape):
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=shape).astype(np.float32)


def torch_glorot(model):
    """Glorot-uniform weights, zero biases: the scheme CNTK's layers and Keras use by default."""
    import torch
    for name, p in model.named_parameters():
        if p.dim() >= 2:
            torch.nn.init.xavier_uniform_(p)
        else:
            torch.nn.init.zeros_(p)


def torch_glorot_lstm(lstm):
    """torch.nn.LSTM keeps the four gates stacked; give each gate's block Glorot-uniform values."""
    import torch
    for name, p in lstm.named_parameters():
        if name.startswith('weight'):
            for block in p.data.chunk(4, 0):
                torch.nn.init.xavier_uniform_(block)
        else:
            torch.nn.init.zeros_(p)


# ------------------------------------------------------------------ framework plumbing

def cntk_trainer(C, model, loss, metric, learner):
    return C.Trainer(model, (loss, metric), [learner])


class CNTKStep:
    """OpenCNTK: a Trainer over the model; step feeds a minibatch and returns its mean loss."""

    def __init__(self, trainer, inputs):
        self.trainer = trainer
        self.inputs = inputs

    def __call__(self, *arrays):
        self.trainer.train_minibatch(dict(zip(self.inputs, arrays)))
        return float(self.trainer.previous_minibatch_loss_average)


class TorchStep:
    """PyTorch: forward, loss, zero_grad(set_to_none), backward, optimizer step."""

    def __init__(self, model, loss_fn, opt, prepare=None):
        import torch
        self.torch = torch
        self.model, self.loss_fn, self.opt = model, loss_fn, opt
        self.prepare = prepare or (lambda *a: tuple(torch.from_numpy(x) for x in a))
        model.train()

    def __call__(self, *arrays):
        *xs, y = self.prepare(*arrays)
        out = self.model(*xs)
        loss = self.loss_fn(out, y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return float(loss.item())


class TFStep:
    """TensorFlow: a tf.function step with GradientTape over a Keras model and optimizer."""

    def __init__(self, model, loss_fn, opt):
        import tensorflow as tf

        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                out = model(x, training=True)
                loss = loss_fn(y, out)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        self.step = step

    def __call__(self, x, y):
        return float(self.step(x, y))


def tf_setup():
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    import tensorflow as tf
    try:
        tf.config.threading.set_intra_op_parallelism_threads(THREADS)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:
        pass  # already initialized in this process
    import keras
    keras.utils.set_random_seed(1)
    return tf, keras


def torch_setup():
    import torch
    torch.set_num_threads(THREADS)
    torch.manual_seed(1)
    return torch


def cntk_plain_rmsprop(C, parameters, lr, rho):
    """CNTK's RMSProp adapts a per-element step size within [min, max]; with the range pinned just below 1
    it is the RMSprop of PyTorch and Keras: lr * g / sqrt(mean g^2 + 1e-6). (CNTK requires inc > 1 > dec
    and min < max, so the range is [0.999, 1].) `minibatch_size=IGNORE` applies lr to each minibatch's step as
    it is, as the peers do; without it CNTK divides an adaptive learner's step by the minibatch size."""
    return C.rmsprop(parameters, C.learning_parameter_schedule(lr), gamma=rho, inc=1.0001, dec=0.9999, max=1.0,
                     min=0.999, need_ave_multiplier=False, minibatch_size=C.learners.IGNORE)
