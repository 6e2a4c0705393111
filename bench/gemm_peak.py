"""oneDNN's float32 GEMM peak on this machine: the yardstick of the suite's GEMM-bound rows.

    python3 bench/gemm_peak.py            # prints JSON: GFLOP/s per size and the peak

It times `dnnl_sgemm` of the oneDNN library OpenCNTK links (found in this process after `import cntk`)
on square row-major products, C = A B with n = 1024 and 2048, under the process's OpenMP settings (the suite
runs it pinned to its CPUs with its thread count and wait policy, as a worker). Each size runs a warm-up call,
then REPS timed calls; a size's rate is its median call, the peak the best size's rate.
"""
import ctypes
import json
import os
import sys
import time

SIZES = (1024, 2048)
REPS = 7


def onednn_library():
    """The oneDNN shared library OpenCNTK's extension loaded into this process."""
    import cntk  # noqa: F401: loads the extension, and with it the oneDNN it links
    with open('/proc/self/maps') as f:
        for line in f:
            path = line.split()[-1]
            if os.path.basename(path).startswith('libdnnl.so'):
                return path
    raise RuntimeError('no libdnnl.so is loaded after `import cntk`')


def sgemm_rates(sizes=SIZES, reps=REPS, library=None):
    """{n: GFLOP/s of dnnl_sgemm on n x n x n, the median of `reps` calls}."""
    import numpy as np
    lib = ctypes.CDLL(library or onednn_library())
    f = lib.dnnl_sgemm
    dim, fp = ctypes.c_int64, ctypes.POINTER(ctypes.c_float)
    f.argtypes = [ctypes.c_char, ctypes.c_char, dim, dim, dim, ctypes.c_float, fp, dim, fp, dim, ctypes.c_float,
                  fp, dim]
    f.restype = ctypes.c_int
    rates = {}
    for n in sizes:
        rng = np.random.default_rng(n)
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        c = np.zeros((n, n), dtype=np.float32)
        pa, pb, pc = (m.ctypes.data_as(fp) for m in (a, b, c))

        def call():
            status = f(b'N', b'N', n, n, n, 1.0, pa, n, pb, n, 0.0, pc, n)
            if status != 0:
                raise RuntimeError('dnnl_sgemm returned status %d' % status)

        call()  # warm-up: threads started, pages touched
        if not np.allclose(c[:4, :4], a[:4] @ b[:, :4], rtol=1e-3, atol=1e-2):
            raise RuntimeError('dnnl_sgemm computed a wrong product for n = %d' % n)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        rates[n] = 2.0 * n ** 3 / sorted(times)[len(times) // 2] / 1e9
    return rates


def measure(sizes=SIZES, reps=REPS):
    """The report's entry: the library, the rate per size and the peak (GFLOP/s)."""
    lib = onednn_library()
    rates = sgemm_rates(sizes, reps, lib)
    return {'library': lib, 'gflops_by_n': {str(n): r for n, r in rates.items()}, 'peak_gflops': max(rates.values()),
            'reps': reps, 'omp_num_threads': os.environ.get('OMP_NUM_THREADS'),
            'omp_wait_policy': os.environ.get('OMP_WAIT_POLICY')}


if __name__ == '__main__':
    cpus = sorted(os.sched_getaffinity(0))
    threads = int(os.environ.get('OMP_NUM_THREADS', len(cpus)))
    os.sched_setaffinity(0, cpus[:threads])
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else REPS
    print(json.dumps(dict(measure(reps=reps), pinned_cpus=cpus[:threads])))
