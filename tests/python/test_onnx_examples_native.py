"""The models the C and C++ examples (examples/c, examples/cpp) train, written as ONNX: each passes
onnx.checker's full check and ONNX Runtime computes what OpenCNTK computes (within 1e-5), sequence models
over sequences of different lengths. The examples are the programs CMake builds; run with
CNTK_EXAMPLE_MODEL_DIR set, each saves its trained model there (examples/*/keep_model.h)."""
import glob
import os
import subprocess

import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
TOL = 1e-5


def _programs():
    """Every example's program name: examples/cpp/NAME.cpp builds NAME, examples/c/NAME.c builds c_NAME."""
    cpp = [os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, 'examples', 'cpp', '*.cpp'))]
    c = ['c_' + os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, 'examples', 'c', '*.c'))]
    return sorted(cpp + c)


def _build_dir():
    """CI builds the C++ tree in build/cpp (scripts/test.sh); `make dev` in build/dev. CNTK_BUILD_DIR overrides."""
    candidates = [os.environ.get('CNTK_BUILD_DIR')] if os.environ.get('CNTK_BUILD_DIR') else \
        [os.path.join(ROOT, 'build', d) for d in ('cpp', 'dev')]
    for d in candidates:
        if all(os.access(os.path.join(d, p), os.X_OK) for p in _programs()):
            return d
    return None


@pytest.fixture(scope='module')
def models(tmp_path_factory):
    """Runs every example once with CNTK_EXAMPLE_MODEL_DIR set; gives each program's model path."""
    build = _build_dir()
    if build is None:
        pytest.skip('the example programs are not built (build/cpp as scripts/test.sh builds it, or build/dev)')
    out = tmp_path_factory.mktemp('example_models')
    env = dict(os.environ, CNTK_EXAMPLE_MODEL_DIR=str(out), OMP_WAIT_POLICY='passive')
    for name in _programs():
        scratch = out / ('scratch_' + name)
        scratch.mkdir()
        # The C examples take a scratch folder as their argument, as ctest gives them.
        args = [os.path.join(build, name)] + ([str(scratch)] if name.startswith('c_') else [])
        proc = subprocess.run(args, cwd=str(scratch), env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, '%s failed:\n%s%s' % (name, proc.stdout[-2000:], proc.stderr[-2000:])
        assert (out / (name + '.model')).exists(), \
            '%s saved no model under CNTK_EXAMPLE_MODEL_DIR (a build older than keep_model.h? rebuild %s)' % (name, build)
    return {name: out / (name + '.model') for name in _programs()}


def _data(arg, lengths, rng):
    """Random data for one argument, as (OpenCNTK's value, ONNX Runtime's array). A batch-only input gets a
    batch of 3 samples, a sequence input one batch per length: ONNX's [Sequence, batch, ...] holds
    sequences of one length. A sparse input gets one-hot rows, as the examples feed it."""
    dtype = np.dtype(arg.dtype)
    if len(arg.dynamic_axes) == 1:
        x = rng.uniform(-1, 1, (3,) + arg.shape).astype(dtype)
        return [(x, x)]
    batches = []
    for t in lengths:
        if arg.is_sparse:
            ids = rng.randint(0, arg.shape[0], (2, t))
            dense = np.eye(arg.shape[0], dtype=dtype)[ids]
            cntk_value = C.Value.one_hot(ids.tolist(), arg.shape[0], dtype=dtype)
        else:
            dense = rng.uniform(-1, 1, (2, t) + arg.shape).astype(dtype)
            cntk_value = list(dense)
        batches.append((cntk_value, dense.swapaxes(0, 1)))  # ONNX: sequence axis first
    return batches


@pytest.mark.parametrize('program', _programs())
def test_example_model_in_onnx_runtime(models, program, tmp_path):
    z = C.load_model(str(models[program]))
    (arg,) = z.arguments
    path = str(tmp_path / (program + '.onnx'))
    try:
        z.save(path, format=C.ModelFormat.ONNX)
    except (NotImplementedError, ValueError) as e:
        pytest.fail(str(e).splitlines()[0])
    onnx.checker.check_model(onnx.load(path), full_check=True)
    sess = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    (onnx_input,) = sess.get_inputs()
    (out,) = z.outputs
    for cntk_value, array in _data(arg, lengths=(1, 4, 9), rng=np.random.RandomState(0)):
        want = np.asarray(z.eval({arg: cntk_value}))
        (got,) = sess.run(None, {onnx_input.name: array})
        if len(arg.dynamic_axes) == 2:
            got = got.swapaxes(0, 1)
        assert got.shape == want.shape, (got.shape, want.shape)
        assert got.dtype == np.dtype(out.dtype)
        np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL, err_msg='%s, input %s' % (program, array.shape))
