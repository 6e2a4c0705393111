"""GoogLeNet (Inception v1, without the auxiliary classifiers and LRN, as in convnet-benchmarks) at
batch 16, 224x224x3: one forward+backward and an SGD update per step, on synthetic data."""
import numpy as np

from .common import one_hot_batch, ArrayData, CNTKStep, TFStep, TorchStep, synthetic_images, tf_setup, torch_glorot, torch_setup

NAME = 'googlenet'
TITLE = "GoogLeNet / Inception v1 (convnet-benchmarks), SGD lr 0.01, batch 16, synthetic 224x224x3"
BATCH = 16
EPOCH_STEPS = None
MEASURE_STEPS = 2
WARMUP_STEPS = 2
LR = 0.01
# Inception modules: (#1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5, pool projection); 'pool' = max-pool 3/2.
MODULES = [(64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), 'pool',
           (192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64),
           (112, 144, 288, 32, 64, 64), (256, 160, 320, 32, 128, 128), 'pool',
           (256, 160, 320, 32, 128, 128), (384, 192, 384, 48, 128, 128)]


def make_data():
    x, y = synthetic_images(4 * BATCH, (3, 224, 224), 1000)
    return ArrayData([x, y], BATCH)


class OpenCNTK:
    def __init__(self, data):
        import cntk as C
        from cntk.layers import AveragePooling, Convolution2D, Dense, MaxPooling
        self.data = data
        C.cntk_py.set_fixed_random_seed(1)

        def conv(k, f, s=1):
            return Convolution2D((k, k), f, strides=(s, s), pad=True, activation=C.relu)

        def inception(h, m):
            b1 = conv(1, m[0])(h)
            b3 = conv(3, m[2])(conv(1, m[1])(h))
            b5 = conv(5, m[4])(conv(1, m[3])(h))
            bp = conv(1, m[5])(MaxPooling((3, 3), strides=(1, 1), pad=True)(h))
            return C.splice(b1, b3, b5, bp, axis=0)

        x = C.input_variable((3, 224, 224))
        y = C.input_variable(1000)
        h = conv(7, 64, 2)(x)
        h = MaxPooling((3, 3), strides=(2, 2), pad=True)(h)
        h = conv(3, 192)(conv(1, 64)(h))
        h = MaxPooling((3, 3), strides=(2, 2), pad=True)(h)
        for m in MODULES:
            h = MaxPooling((3, 3), strides=(2, 2), pad=True)(h) if m == 'pool' else inception(h, m)
        h = AveragePooling((7, 7), strides=(1, 1))(h)
        z = Dense(1000)(h)
        loss = C.cross_entropy_with_softmax(z, y)
        learner = C.sgd(z.parameters, C.learning_parameter_schedule(LR))
        self.step = CNTKStep(C.Trainer(z, (loss, C.classification_error(z, y)), [learner]), [x, y])
        self.eye = np.eye(1000, dtype=np.float32)

    batch = one_hot_batch


class PyTorch:
    def __init__(self, data):
        torch = torch_setup()
        nn = torch.nn
        self.data = data

        def conv(c, k, f, s=1):
            return nn.Sequential(nn.Conv2d(c, f, k, stride=s, padding=k // 2), nn.ReLU())

        class Inception(nn.Module):
            def __init__(self, c, m):
                super().__init__()
                self.b1 = conv(c, 1, m[0])
                self.b3 = nn.Sequential(conv(c, 1, m[1]), conv(m[1], 3, m[2]))
                self.b5 = nn.Sequential(conv(c, 1, m[3]), conv(m[3], 5, m[4]))
                self.bp = nn.Sequential(nn.MaxPool2d(3, 1, padding=1), conv(c, 1, m[5]))

            def forward(self, h):
                return torch.cat([self.b1(h), self.b3(h), self.b5(h), self.bp(h)], 1)

        layers = [conv(3, 7, 64, 2), nn.MaxPool2d(3, 2, padding=1), conv(64, 1, 64), conv(64, 3, 192),
                  nn.MaxPool2d(3, 2, padding=1)]
        c = 192
        for m in MODULES:
            if m == 'pool':
                layers.append(nn.MaxPool2d(3, 2, padding=1))
            else:
                layers.append(Inception(c, m))
                c = m[0] + m[2] + m[4] + m[5]
        layers += [nn.AvgPool2d(7), nn.Flatten(), nn.Linear(c, 1000)]
        model = nn.Sequential(*layers)
        torch_glorot(model)
        self.step = TorchStep(model, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=LR))


class TensorFlow:
    def __init__(self, data):
        tf, keras = tf_setup()
        L = keras.layers
        x, y = data.arrays
        self.data = ArrayData([np.ascontiguousarray(x.transpose(0, 2, 3, 1)), y], BATCH)

        def conv(h, k, f, s=1):
            return L.Conv2D(f, k, strides=s, padding='same', activation='relu')(h)

        inp = keras.Input((224, 224, 3))
        h = conv(inp, 7, 64, 2)
        h = L.MaxPooling2D(3, 2, padding='same')(h)
        h = conv(conv(h, 1, 64), 3, 192)
        h = L.MaxPooling2D(3, 2, padding='same')(h)
        for m in MODULES:
            if m == 'pool':
                h = L.MaxPooling2D(3, 2, padding='same')(h)
            else:
                b1 = conv(h, 1, m[0])
                b3 = conv(conv(h, 1, m[1]), 3, m[2])
                b5 = conv(conv(h, 1, m[3]), 5, m[4])
                bp = conv(L.MaxPooling2D(3, 1, padding='same')(h), 1, m[5])
                h = L.Concatenate()([b1, b3, b5, bp])
        h = L.AveragePooling2D(7)(h)
        out = L.Dense(1000)(L.Flatten()(h))
        model = keras.Model(inp, out)
        self.step = TFStep(model, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                           keras.optimizers.SGD(learning_rate=LR))
