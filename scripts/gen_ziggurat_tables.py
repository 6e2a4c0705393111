"""Prints the ziggurat tables of src/core/rng.cpp: the 128-layer ziggurat under
f(x) = exp(-x^2 / 2), computed in 60-digit arithmetic and rounded to doubles.

x[1] = r is the start of the tail, chosen so that the layers close at the top
(x[128] = 0); every layer has the area v = r f(r) + the tail's integral; x[0] = v / f(r)
is the width of the base layer, whose rectangle stands in for the tail. y[i] = f(x[i]),
with y[0] = 0 and y[128] = 1.

    python3 scripts/gen_ziggurat_tables.py   (needs mpmath)
"""
import mpmath as mp

mp.mp.dps = 60
LAYERS = 128


def f(x):
    return mp.exp(-x * x / 2)


def f_inv(y):
    return mp.sqrt(-2 * mp.log(y))


def layer_area(r):
    return r * f(r) + mp.sqrt(mp.pi / 2) * mp.erfc(r / mp.sqrt(2))


def xs_for(r):
    v = layer_area(r)
    xs = [v / f(r), r]
    for _ in range(1, LAYERS - 1):
        y = f(xs[-1]) + v / xs[-1]
        if y >= 1:  # r too small: the layers reach the top early
            return xs, y
        xs.append(f_inv(y))
    return xs, f(xs[-1]) + v / xs[-1] - 1  # the miss at the top


r = mp.findroot(lambda r: xs_for(r)[1], (mp.mpf(3.4), mp.mpf(3.5)), solver='anderson')
xs, _ = xs_for(r)
xs.append(mp.mpf(0))
ys = [mp.mpf(0)] + [f(x) for x in xs[1:-1]] + [mp.mpf(1)]


def table(name, values):
    rows = [', '.join('%.17g' % float(v) for v in values[i:i + 4]) for i in range(0, len(values), 4)]
    return 'const double %s[%d] = {\n    %s};' % (name, len(values), ',\n    '.join(rows))


print(table('kZigguratX', xs))
print(table('kZigguratY', ys))
