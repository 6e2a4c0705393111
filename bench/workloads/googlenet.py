"""GoogLeNet (Inception v1, without the auxiliary classifiers and LRN, as in convnet-benchmarks) at
batch 16, 224x224x3: one forward+backward and an SGD update per step, on synthetic data."""
import numpy as np

from .common import (ArrayData, CNTKStep, Params, TFStep, TorchStep, cntk_conv, cntk_dense, cntk_setup,
                     keras_conv_values, keras_dense_values, one_hot_batch, synthetic_images, tf_setup, torch_conv,
                     torch_dense, torch_setup)

NAME = 'googlenet'
TITLE = "GoogLeNet / Inception v1 (convnet-benchmarks), SGD lr 0.01, batch 16, synthetic 224x224x3"
BATCH = 16
EPOCH_STEPS = None
MEASURE_STEPS = 2
WARMUP_STEPS = 2
BF16 = True  # the bfloat16 columns (products and convolutions carry the step)
OPTIMIZER = ('sgd', dict(lr=0.01))
# Inception modules: (#1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5, pool projection); 'pool' = max-pool 3/2.
MODULES = [(64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), 'pool',
           (192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64),
           (112, 144, 288, 32, 64, 64), (256, 160, 320, 32, 128, 128), 'pool',
           (256, 160, 320, 32, 128, 128), (384, 192, 384, 48, 128, 128)]
STEM = [('s0', 3, 64, 7, 2), ('s1', 64, 64, 1, 1), ('s2', 64, 192, 3, 1)]  # (name, in, out, kernel, stride)
# An inception module's convolutions: (suffix, input: 'x' or another suffix, index of #filters, kernel)
BRANCHES = [('b1', 'x', 0, 1), ('b3r', 'x', 1, 1), ('b3', 'b3r', 2, 3), ('b5r', 'x', 3, 1), ('b5', 'b5r', 4, 5),
            ('bp', 'pool', 5, 1)]


def inception_modules():
    """(name, input channels, module) for each inception module, and the channels out of the last one."""
    out, c = [], 192
    for i, m in enumerate(MODULES):
        if m != 'pool':
            out.append(('m%d' % i, c, m))
            c = m[0] + m[2] + m[4] + m[5]
    return out, c


def make_data():
    x, y = synthetic_images(4 * BATCH, (3, 224, 224), 1000)
    return ArrayData([x, y], BATCH)


def make_params(data):
    P = Params()
    for name, c_in, c_out, k, _ in STEM:
        P.conv(name, c_in, c_out, k)
    mods, c = inception_modules()
    for name, c_in, m in mods:
        chans = {'x': c_in, 'pool': c_in}
        for suffix, src, idx, k in BRANCHES:
            P.conv(name + suffix, chans[src], m[idx], k)
            chans[suffix] = m[idx]
    P.dense('fc', c, 1000)
    return P


def build(P, conv, pool, concat, head):
    """The network over framework-specific pieces: conv(name, stride)(h), pool(stride)(h) (max 3x3, same
    padding), concat(list), head(h) (average pool 7x7, dense)."""
    def net(h):
        for name, _, _, _, s in STEM:
            h = conv(name, s)(h)
            if name != 's1':
                h = pool(2)(h)
        mods = iter(inception_modules()[0])
        for m in MODULES:
            if m == 'pool':
                h = pool(2)(h)
                continue
            name, _, _ = next(mods)
            t = {'x': h, 'pool': pool(1)(h)}
            for suffix, src, _, _ in BRANCHES:
                t[suffix] = conv(name + suffix, 1)(t[src])
            h = concat([t['b1'], t['b3'], t['b5'], t['bp']])
        return head(h)
    return net


class OpenCNTK:
    def __init__(self, data, P=None, dropout=True, config=None):
        P = make_params(data) if P is None else P  # bench/distributed.py and dnnl_layouts.py build it alone
        C = cntk_setup()
        from cntk.layers import AveragePooling, MaxPooling
        self.data = data
        c = inception_modules()[1]
        net = build(P, lambda name, s: cntk_conv(C, P, name, stride=s, pad=True, activation=C.relu),
                    lambda s: MaxPooling((3, 3), strides=(s, s), pad=True),
                    lambda hs: C.splice(*hs, axis=0),
                    lambda h: cntk_dense(C, P, 'fc', in_shape=(c, 1, 1))(AveragePooling((7, 7), strides=(1, 1))(h)))
        x = C.input_variable((3, 224, 224))
        y = C.input_variable(1000)
        z = net(x)
        self.step = CNTKStep(C, z, C.cross_entropy_with_softmax(z, y), C.classification_error(z, y), [x, y], OPTIMIZER)
        self.eye = np.eye(1000, dtype=np.float32)

    batch = one_hot_batch


class PyTorch:
    def __init__(self, data, P, dropout=True, config=None):
        torch = torch_setup()
        nn = torch.nn
        self.data = data
        modules = nn.ModuleDict()

        def conv(name, s):  # made on the first call, the same module after
            if name not in modules:
                k = P[name + '.W'].shape[-1]
                modules[name] = nn.Sequential(torch_conv(torch, P, name, stride=s, padding=k // 2), nn.ReLU())
            return modules[name]

        fc = torch_dense(torch, P, 'fc')
        net = build(P, conv, lambda s: (lambda h: nn.functional.max_pool2d(h, 3, s, 1)), lambda hs: torch.cat(hs, 1),
                    lambda h: fc(torch.flatten(nn.functional.avg_pool2d(h, 7), 1)))
        with torch.no_grad():
            net(torch.zeros(1, 3, 224, 224))  # makes the modules

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.convs, self.fc = modules, fc

            def forward(self, x):
                return net(x)

        self.step = TorchStep(torch, Net(), nn.CrossEntropyLoss(), OPTIMIZER, config or {}, conv=True)


class TensorFlow:
    def __init__(self, data, P, dropout=True, config=None):
        tf, keras = tf_setup()
        L = keras.layers
        x, y = data.arrays
        self.data = ArrayData([np.ascontiguousarray(x.transpose(0, 2, 3, 1)), y], BATCH)
        convs = {}

        def conv(name, s):
            convs[name] = L.Conv2D(P[name + '.W'].shape[0], P[name + '.W'].shape[-1], strides=s, padding='same',
                                   activation='relu')
            return convs[name]

        fc = L.Dense(1000)
        net = build(P, conv, lambda s: L.MaxPooling2D(3, s, padding='same'), lambda hs: L.Concatenate()(hs),
                    lambda h: fc(L.Flatten()(L.AveragePooling2D(7)(h))))
        inp = keras.Input((224, 224, 3))
        model = keras.Model(inp, net(inp))
        for name, layer in convs.items():
            layer.set_weights(keras_conv_values(P, name))
        fc.set_weights(keras_dense_values(P, 'fc'))
        self.step = TFStep(tf, keras, model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                           OPTIMIZER, config or {})
