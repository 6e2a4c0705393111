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
  step_flops()         (GEMM-bound workloads only) FLOPs of one training step's products (training_flops)
  BF16                 True where the suite runs the bfloat16 columns (OpenCNTK's products, convolutions and
                       recurrences carry the step), with BF16_CHECK = (early steps, early tolerance, tolerance)
                       optional
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


# ------------------------------------------------------------------ arithmetic

def training_flops(products):
    """FLOPs of one training step's matrix products and convolutions. `products` lists, per layer, the
    multiply-adds of its forward product and whether its input needs a gradient (false for the layer that reads
    the data): 2 FLOPs per multiply-add forward, as many for the weight gradient, and as many for the input
    gradient where there is one. Bias, activation, pooling and update arithmetic are not counted."""
    return sum(2 * macs * (3 if input_gradient else 2) for macs, input_gradient in products)


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
    limit = np.float32(np.sqrt(6.0 / (fan_in + fan_out)))
    # float32 draws: the fastText table has 60 million values
    return (rng.random(shape, dtype=np.float32) * 2 - 1) * limit


class Params:
    """A workload's initial parameter values, drawn once with NumPy (Glorot-uniform weights, zero biases)
    and loaded into every framework, so that all three start from the same point. Layouts:

      dense      W (in, out), b (out,)            in: the flattened input, (C, H, W) order after a conv
      conv       W (out, in, kh, kw), b (out,)
      embedding  E (vocab, dim)
      lstm       W (4, in, H), U (4, H, H), b (4, H); gates in the order i, f, g (cell input), o
    """

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.values = {}

    def __getitem__(self, key):
        return self.values[key]

    def count(self):
        return int(sum(v.size for v in self.values.values()))

    def dense(self, name, n_in, n_out):
        self.values[name + '.W'] = glorot_uniform(self.rng, n_in, n_out, (n_in, n_out))
        self.values[name + '.b'] = np.zeros(n_out, np.float32)

    def conv(self, name, c_in, c_out, k):
        self.values[name + '.W'] = glorot_uniform(self.rng, c_in * k * k, c_out * k * k, (c_out, c_in, k, k))
        self.values[name + '.b'] = np.zeros(c_out, np.float32)

    def embedding(self, name, vocab, dim):
        self.values[name + '.E'] = glorot_uniform(self.rng, vocab, dim, (vocab, dim))

    def lstm(self, name, n_in, hidden):
        self.values[name + '.W'] = np.stack([glorot_uniform(self.rng, n_in, hidden, (n_in, hidden)) for _ in range(4)])
        self.values[name + '.U'] = np.stack([glorot_uniform(self.rng, hidden, hidden, (hidden, hidden))
                                             for _ in range(4)])
        self.values[name + '.b'] = np.zeros((4, hidden), np.float32)


# OpenCNTK's LSTM stacks its gates as i, g, f, o (python/cntk/layers/recurrent_blocks.py); Params, PyTorch
# and Keras use i, f, g, o.
CNTK_GATES = [0, 2, 1, 3]


def cntk_dense(C, P, name, activation=None, in_shape=None):
    """cntk.layers.Dense with P's values; in_shape: the input's shape when it is not a vector."""
    from cntk.layers import Dense
    W = P[name + '.W']
    if in_shape is not None:
        W = W.reshape(tuple(in_shape) + (W.shape[1],))
    act = {'activation': activation} if activation else {}
    return Dense(W.shape[-1], init=W, init_bias=P[name + '.b'], **act)


def cntk_conv(C, P, name, stride=1, pad=False, activation=None):
    from cntk.layers import Convolution2D
    W = P[name + '.W']
    act = {'activation': activation} if activation else {}
    return Convolution2D(W.shape[2:], W.shape[0], strides=(stride, stride), pad=pad, init=W,
                         init_bias=P[name + '.b'].reshape(-1, 1, 1), **act)


def cntk_embedding(P, name):
    from cntk.layers import Embedding
    E = P[name + '.E']
    return Embedding(E.shape[1], init=E)


def cntk_load_lstm(out, P, name):
    """Sets the LSTM parameters (b, W, H) of `out`, the output of Recurrence(LSTM(...)) over its input."""
    def stacked(a):  # (4, rows, H) -> (rows, 4H) in OpenCNTK's gate order
        return np.concatenate([a[k] for k in CNTK_GATES], axis=-1)
    values = {'W': stacked(P[name + '.W']), 'H': stacked(P[name + '.U']),
              'b': np.concatenate([P[name + '.b'][k] for k in CNTK_GATES])}
    done = set()
    for p in out.parameters:
        if p.name in values and p.shape == values[p.name].shape and p.name not in done:
            p.value = values[p.name]
            done.add(p.name)
    if done != set(values):
        raise RuntimeError('LSTM %s: parameters %s not found' % (name, sorted(set(values) - done)))


def cntk_count(z):
    return int(sum(np.prod(p.shape) for p in z.parameters))


def torch_dense(torch, P, name):
    W, b = P[name + '.W'], P[name + '.b']
    lin = torch.nn.Linear(W.shape[0], W.shape[1])
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(np.ascontiguousarray(W.T)))  # nn.Linear keeps (out, in)
        lin.bias.copy_(torch.from_numpy(b))
    return lin


def torch_conv(torch, P, name, stride=1, padding=0):
    W, b = P[name + '.W'], P[name + '.b']
    conv = torch.nn.Conv2d(W.shape[1], W.shape[0], W.shape[2:], stride=stride, padding=padding)
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(W))
        conv.bias.copy_(torch.from_numpy(b))
    return conv


def torch_embedding(torch, P, name):
    E = P[name + '.E']
    emb = torch.nn.Embedding(*E.shape)
    with torch.no_grad():
        emb.weight.copy_(torch.from_numpy(E))
    return emb


def torch_lstm(torch, P, names):
    """nn.LSTM (batch_first; bidirectional when `names` has two entries: forward, backward) with P's
    per-gate values. PyTorch has two bias vectors per direction: bias_ih takes b, bias_hh stays zero and
    is frozen, so the model has OpenCNTK's and Keras' parameters and no more."""
    W = P[names[0] + '.W']
    lstm = torch.nn.LSTM(W.shape[1], W.shape[2], batch_first=True, bidirectional=len(names) == 2)
    with torch.no_grad():
        for name, suffix in zip(names, ['_l0', '_l0_reverse']):
            for torch_name, key in (('weight_ih', '.W'), ('weight_hh', '.U')):  # (4H, rows), gates stacked
                rows = np.concatenate(P[name + key].transpose(0, 2, 1))
                getattr(lstm, torch_name + suffix).copy_(torch.from_numpy(rows))
            getattr(lstm, 'bias_ih' + suffix).copy_(torch.from_numpy(P[name + '.b'].ravel()))
            bias_hh = getattr(lstm, 'bias_hh' + suffix)
            bias_hh.zero_()
            bias_hh.requires_grad_(False)
    return lstm


def torch_count(model):
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))


def keras_dense_values(P, name, hwc=None):
    """[kernel, bias] of a Keras Dense; hwc=(H, W, C): the input is a flattened NHWC map, whose rows are
    in (H, W, C) order where P's are in (C, H, W) order."""
    W = P[name + '.W']
    if hwc is not None:
        h, w, c = hwc
        W = W.reshape(c, h, w, -1).transpose(1, 2, 0, 3).reshape(h * w * c, -1)
    return [W, P[name + '.b']]


def keras_conv_values(P, name):
    return [P[name + '.W'].transpose(2, 3, 1, 0), P[name + '.b']]  # Keras: (kh, kw, in, out)


def keras_lstm_values(P, name):
    return [np.concatenate(list(P[name + '.W']), axis=1), np.concatenate(list(P[name + '.U']), axis=1),
            P[name + '.b'].ravel()]


# ------------------------------------------------------------------ optimizers
#
# A workload names its optimizer as (kind, settings); each framework builds the same update from it.
# The check (suite.py --check) compares per-step losses, so a mismatch here shows there.
#
#   sgd       w -= lr * g                                            the same form everywhere
#   adadelta  Zeiler's AdaDelta with a learning rate on the step     the same form everywhere
#   adam      w -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)
#             CNTK's and Keras' form; PyTorch puts eps after the bias correction, so its eps is set
#             each step to eps / sqrt(1 - b2^t), which makes its update this one (see bench/README.md)
#   rmsprop   CNTK's RMSProp with its per-element step sizes pinned to [1 - 1e-6, 1]:
#             v = g^2 on the first step, then v = rho v + (1 - rho) g^2; w -= lr * g / sqrt(v + 1e-6)
#             PyTorch's and Keras' RMSprop differ (v starts at 0, eps outside the root), so the peers run
#             this form, written with their own vectorized ops (CNTKRMSprop below)
#
# g is the mean gradient of the minibatch everywhere (OpenCNTK: minibatch_size=IGNORE), except where a
# workload's loss is a sum (atis), which all three then sum.

RMSPROP_FLOOR = 1e-6


def cntk_learner(C, parameters, opt):
    kind, s = opt
    ignore = C.learners.IGNORE
    if kind == 'sgd':
        return C.sgd(parameters, C.learning_parameter_schedule(s['lr']), minibatch_size=ignore)
    if kind == 'adadelta':
        return C.adadelta(parameters, C.learning_parameter_schedule(s['lr']), rho=s['rho'], epsilon=s['eps'],
                          minibatch_size=ignore)
    if kind == 'adam':
        return C.adam(parameters, C.learning_parameter_schedule(s['lr']), momentum=s.get('beta1', 0.9),
                      variance_momentum=s.get('beta2', 0.999), epsilon=s['eps'], minibatch_size=ignore)
    if kind == 'rmsprop':
        # inc/dec must be > 1 / < 1 and min < max: the range [1 - 1e-6, 1] pins the step size.
        return C.rmsprop(parameters, C.learning_parameter_schedule(s['lr']), gamma=s['rho'], inc=1.0001,
                         dec=0.9999, max=1.0, min=1.0 - 1e-6, need_ave_multiplier=False, minibatch_size=ignore)
    raise ValueError('unknown optimizer %r' % kind)


def peer_settings(opt):
    """The peers' optimizer settings. BENCH_PEER_LR_SCALE (for the suite's own test) scales their learning rate,
    a different update that the check must catch."""
    kind, s = opt
    scale = float(os.environ.get('BENCH_PEER_LR_SCALE', '1'))
    return kind, dict(s, lr=s['lr'] * scale)


def torch_optimizer(torch, parameters, opt):
    """The optimizer in PyTorch's fastest form on CPU: fused=True where PyTorch has a fused CPU kernel
    (SGD, Adam), else foreach=True. Returns (optimizer, 'fused'|'foreach'|'custom foreach')."""
    kind, s = peer_settings(opt)
    params = [p for p in parameters if p.requires_grad]
    if kind == 'rmsprop':
        return CNTKRMSprop(torch, params, s['lr'], s['rho']), 'custom foreach'
    if kind == 'adadelta':
        return torch.optim.Adadelta(params, lr=s['lr'], rho=s['rho'], eps=s['eps'], foreach=True), 'foreach'
    make = {'sgd': lambda **kw: torch.optim.SGD(params, lr=s['lr'], **kw),
            'adam': lambda **kw: TorchAdamCNTKEps(torch, params, s, **kw)}[kind]
    try:
        return make(fused=True), 'fused'
    except (RuntimeError, TypeError, ValueError):
        return make(foreach=True), 'foreach'


class TorchAdamCNTKEps:
    """torch.optim.Adam whose eps is set before each step so that its update is CNTK's (see above)."""

    def __init__(self, torch, params, s, **kw):
        self.beta2, self.eps = s.get('beta2', 0.999), s['eps']
        self.opt = torch.optim.Adam(params, lr=s['lr'], betas=(s.get('beta1', 0.9), self.beta2), eps=self.eps, **kw)
        self.t = 0

    def zero_grad(self, set_to_none=True):
        self.opt.zero_grad(set_to_none=set_to_none)

    def step(self):
        self.t += 1
        self.opt.param_groups[0]['eps'] = self.eps / np.sqrt(1.0 - self.beta2 ** self.t)
        self.opt.step()


def CNTKRMSprop(torch, params, lr, rho):
    """CNTK's RMSProp form (see above) as a torch.optim.Optimizer over PyTorch's multi-tensor ops."""

    class _CNTKRMSprop(torch.optim.Optimizer):
        def __init__(self):
            super().__init__(params, dict(lr=lr, rho=rho))

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                ps = [p for p in group['params'] if p.grad is not None]
                gs = [p.grad for p in ps]
                first = 'v' not in self.state[ps[0]]
                if first:
                    for p, g in zip(ps, gs):
                        self.state[p]['v'] = g * g
                vs = [self.state[p]['v'] for p in ps]
                if not first:
                    torch._foreach_mul_(vs, group['rho'])
                    torch._foreach_addcmul_(vs, gs, gs, value=1.0 - group['rho'])
                denom = torch._foreach_add(vs, RMSPROP_FLOOR)
                torch._foreach_sqrt_(denom)
                torch._foreach_addcdiv_(ps, gs, denom, value=-group['lr'])

    return _CNTKRMSprop()


def keras_optimizer(keras, opt):
    kind, s = peer_settings(opt)
    if kind == 'sgd':
        return keras.optimizers.SGD(learning_rate=s['lr'])
    if kind == 'adadelta':
        return keras.optimizers.Adadelta(learning_rate=s['lr'], rho=s['rho'], epsilon=s['eps'])
    if kind == 'adam':
        return keras.optimizers.Adam(learning_rate=s['lr'], beta_1=s.get('beta1', 0.9), beta_2=s.get('beta2', 0.999),
                                     epsilon=s['eps'])
    if kind == 'rmsprop':
        return keras_cntk_rmsprop(keras, s['lr'], s['rho'])
    raise ValueError('unknown optimizer %r' % kind)


def keras_cntk_rmsprop(keras, lr, rho):
    """CNTK's RMSProp form (see above) as a Keras 3 optimizer."""
    ops = keras.ops

    class CNTKRMSprop(keras.optimizers.Optimizer):
        def build(self, var_list):
            if self.built:
                return
            super().build(var_list)
            self._v = [self.add_variable_from_reference(v, 'v') for v in var_list]

        def update_step(self, gradient, variable, learning_rate):
            v = self._v[self._get_variable_index(variable)]
            g2 = ops.square(gradient)
            new_v = ops.where(ops.equal(self.iterations, 0), g2, rho * v + (1.0 - rho) * g2)
            self.assign(v, new_v)
            self.assign_sub(variable, ops.cast(learning_rate, variable.dtype) * gradient
                            / ops.sqrt(new_v + RMSPROP_FLOOR))

    return CNTKRMSprop(learning_rate=lr, name='cntk_rmsprop')


# ------------------------------------------------------------------ framework plumbing
#
# A framework class of a workload is built as Class(data, params, dropout, config): `params` a Params,
# `dropout` False for the equivalence check, `config` the peer's column (see suite.COLUMNS):
#   PyTorch:    {'compile': bool}          torch.compile on the model
#   TensorFlow: {'jit_compile': bool}      XLA on the tf.function step
# It has step(*arrays) -> loss, n_params() and, where its arrays differ from data.get(step), batch(step);
# `info` (a dict) says how it runs (optimizer form, memory format).


class CNTKStep:
    """OpenCNTK: a Trainer over the model; step feeds a minibatch and returns its mean loss."""

    def __init__(self, C, model, loss, metric, inputs, opt):
        self.trainer = C.Trainer(model, (loss, metric), [cntk_learner(C, model.parameters, opt)])
        self.inputs = inputs
        self.count = cntk_count(model)

    def __call__(self, *arrays):
        self.trainer.train_minibatch(dict(zip(self.inputs, arrays)))
        return float(self.trainer.previous_minibatch_loss_average)


class TorchStep:
    """PyTorch: forward, loss, zero_grad(set_to_none), backward, optimizer step. conv: the model and its
    image inputs in channels_last (NHWC) memory format, oneDNN's preferred layout on CPU."""

    def __init__(self, torch, model, loss_fn, opt, config, prepare=None, conv=False):
        self.torch = torch
        self.model, self.loss_fn = model, loss_fn
        self.count = torch_count(model)
        self.opt, form = torch_optimizer(torch, model.parameters(), opt)
        self.info = {'optimizer': form, 'memory_format': 'channels_last' if conv else 'contiguous',
                     'compile': bool(config.get('compile'))}
        self.bf16 = bool(config.get('bf16'))  # forward and loss under torch.autocast('cpu', torch.bfloat16)
        if self.bf16:
            self.info['autocast'] = 'bfloat16'

        if conv:
            model.to(memory_format=torch.channels_last)
        prepare = prepare or (lambda *a: tuple(torch.from_numpy(x) for x in a))
        if conv:
            inner = prepare

            def prepare(*a):
                x, *rest = inner(*a)
                return (x.contiguous(memory_format=torch.channels_last), *rest)
        self.prepare = prepare
        self.forward = torch.compile(model) if config.get('compile') else model
        model.train()

    def __call__(self, *arrays):
        *xs, y = self.prepare(*arrays)
        with self.torch.autocast('cpu', dtype=self.torch.bfloat16, enabled=self.bf16):
            out = self.forward(*xs)
            loss = self.loss_fn(out, y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return float(loss.item())


def tf_function(tf, config, **kw):
    return tf.function(jit_compile=bool(config.get('jit_compile')), **kw)


def tf_apply(tf, optimizer, grads, variables):
    """optimizer.apply_gradients with each embedding gradient (IndexedSlices) summed per row first: Keras 3's
    optimizers square a sparse gradient's slices one by one, so a word seen twice in a minibatch gets a second
    moment of g1^2 + g2^2 instead of (g1 + g2)^2 (ATIS' losses differed from step 1 by up to 10%)."""
    def dedup(g):
        if isinstance(g, tf.IndexedSlices):
            rows, pos = tf.unique(g.indices)
            return tf.IndexedSlices(tf.math.unsorted_segment_sum(g.values, pos, tf.shape(rows)[0]), rows, g.dense_shape)
        return g
    optimizer.apply_gradients(zip([dedup(g) for g in grads], variables))


class TFStep:
    """TensorFlow: a tf.function step (XLA when config['jit_compile']) with GradientTape over a Keras model
    and optimizer."""

    def __init__(self, tf, keras, model, loss_fn, opt, config):
        optimizer = keras_optimizer(keras, opt)
        self.count = int(model.count_params())
        self.info = {'jit_compile': bool(config.get('jit_compile'))}

        @tf_function(tf, config)
        def step(x, y):
            with tf.GradientTape() as tape:
                out = model(x, training=True)
                loss = loss_fn(y, out)
            tf_apply(tf, optimizer, tape.gradient(loss, model.trainable_variables), model.trainable_variables)
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


def cpu_has_bf16():
    """Whether the CPU reports bfloat16 instructions (AVX512_BF16 or AMX-BF16) in /proc/cpuinfo."""
    try:
        with open('/proc/cpuinfo') as f:
            flags = next((line.split(':', 1)[1].split() for line in f if line.startswith('flags')), [])
    except OSError:
        return False
    return 'avx512_bf16' in flags or 'amx_bf16' in flags


def enable_bf16(framework):
    """Puts a worker's framework in its bfloat16 mixed-precision mode, before any model is built: OpenCNTK's
    bfloat16 math (products and convolutions read bfloat16 operands; parameters, gradients, update in float32),
    Keras' mixed_bfloat16 policy (layers compute in bfloat16 over float32 variables). PyTorch's autocast is per
    step (TorchStep, config['bf16'])."""
    if framework == 'OpenCNTK':
        C = cntk_setup()
        if not C.cntk_py.bf16_math_available():
            raise RuntimeError('OpenCNTK: this CPU has no bfloat16 instructions')
        C.cntk_py.set_float32_math('bfloat16')
    elif framework == 'TensorFlow':
        _, keras = tf_setup()
        keras.mixed_precision.set_global_policy('mixed_bfloat16')


def cntk_setup():
    import cntk as C
    C.cntk_py.set_fixed_random_seed(1)
    return C


def maybe(layer, on):
    """`layer` when `on` (dropout in a timed run), else nothing (the equivalence check)."""
    return [layer] if on else []
