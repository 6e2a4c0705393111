"""Step-by-step recurrent loops: seconds per forward+backward of Recurrence(LSTM(128))
over 40 steps, batch 32 on the step-by-step loop path, forward alone and with backward,
and the storage blocks asked for per minibatch.

    python3 bench/loop_steps.py [--steps 40] [--batch 32] [--hidden 128] [--repeat 20]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'python'))
import cntk as C  # noqa: E402
from cntk.layers import LSTM, Recurrence  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--steps', type=int, default=40)
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--hidden', type=int, default=128)
    ap.add_argument('--input', type=int, default=64)
    ap.add_argument('--repeat', type=int, default=20)
    a = ap.parse_args()
    x = C.sequence.input_variable(a.input)
    z = Recurrence(LSTM(a.hidden))(x)
    loss = C.reduce_sum(C.sequence.reduce_sum(z))
    data = [np.random.RandomState(0).randn(a.steps, a.input).astype(np.float32) for _ in range(a.batch)]
    params = loss.parameters
    requests = getattr(C.cntk_py, 'storage_requests', None)
    for _ in range(3):
        loss.eval({x: data})
        loss.grad({x: data}, wrt=params)
    fwd = []
    f0 = requests() if requests else 0
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        loss.eval({x: data})
        fwd.append(time.perf_counter() - t0)
    f1 = requests() if requests else 0
    times, cpu = [], []
    r0 = requests() if requests else 0
    for _ in range(a.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        loss.grad({x: data}, wrt=params)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    r1 = requests() if requests else 0
    print("Recurrence(LSTM(%d)) T=%d B=%d: forward median %.2f ms (min %.2f)%s"
          % (a.hidden, a.steps, a.batch, 1e3 * np.median(fwd), 1e3 * min(fwd),
             "; %.0f storage requests per minibatch" % ((f1 - f0) / a.repeat) if requests else ""))
    print("Recurrence(LSTM(%d)) T=%d B=%d: forward+backward median %.2f ms (min %.2f)%s"
          % (a.hidden, a.steps, a.batch, 1e3 * np.median(times), 1e3 * min(times),
             "; %.0f storage requests per minibatch" % ((r1 - r0) / a.repeat) if requests else ""))
    print("  forward+backward CPU time median %.2f ms (min %.2f)" % (1e3 * np.median(cpu), 1e3 * min(cpu)))


if __name__ == '__main__':
    main()
