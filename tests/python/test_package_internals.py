"""Package internals CNTK scripts rely on: Axis printing, sanitize helpers, one-hot skip,
the interactive graph debugger."""
import io
import warnings

import numpy as np
import pytest

import cntk as C
from cntk.internal import sanitize_input, sanitize_permutation


def test_axis_printing_and_default_input_axes():
    assert str(C.Axis(2)) == "Axis('staticAxisIdx=2')"
    assert str(C.Axis(-1)) == "Axis('staticAxisIdx=-1')"
    assert C.Axis.default_input_variable_dynamic_axes() == (C.Axis.default_batch_axis(),
                                                           C.Axis.default_dynamic_axis())
    assert C.input_variable(2).dynamic_axes == (C.Axis.default_batch_axis(),)


def test_sanitize_input_uses_fallback_dtype():
    c = sanitize_input([[1, 2]], np.float64)
    assert c.dtype == np.float64 and c.shape == (1, 2)
    assert sanitize_input(np.float32([1]), np.float32).dtype == np.float32


def test_sanitize_permutation_converts_to_reversed_axes():
    x = [10, 11, 12, 13]
    for p in ([3, 0, 2, 1], [1, 0, 2, 3], [0, 1, 2, 3]):
        q = sanitize_permutation(p)
        assert list(reversed([x[i] for i in p])) == [list(reversed(x))[i] for i in q]
    assert sanitize_permutation([-1, 0]) == [1, 0]
    with pytest.raises(ValueError):
        sanitize_permutation([0, 0])


def test_one_hot_skip_gives_zero_sample():
    v = C.Value.one_hot([[0, C.Value.ONE_HOT_SKIP, 2]], 3)
    i = C.sequence.input_variable(3)
    out = (i * 1).eval({i: v})
    assert np.array_equal(out[0], [[1, 0, 0], [0, 0, 0], [0, 0, 1]])


def test_non_contiguous_sequences_warn():
    i = C.sequence.input_variable((2, 2))
    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    with pytest.warns(RuntimeWarning):
        v = C.Value.create(i, [a.T])
    assert np.array_equal(v.asarray()[0, 0], a.T)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        C.Value.create(i, [a])


class _Lines(object):
    def __init__(self, lines):
        self.lines = list(lines)

    def readline(self):
        return self.lines.pop(0) if self.lines else 'c'


def test_debug_model_steps_through_forward_nodes():
    from cntk.debugging.debug import debug_model, _DebugNode
    x = C.input_variable(2, name='x')
    p = C.parameter(shape=(2, 2), init=1, name='p')
    z = C.times(x, p, name='z')
    out = io.StringIO()
    dz = debug_model(z, _Lines(['n', 'p', 'n', 'n']), out)
    data = np.float32([[1, 2]])
    assert np.allclose(dz.eval({dz.arguments[0]: data}), z.eval({x: data}))
    text = out.getvalue()
    assert 'forward' in text and text.count(_DebugNode.PROMPT_FORWARD) == 4
    assert "z: Times(" in text and "Parameter('p'" in text and "Input('x'" in text
    assert 'Input with shape' in text  # the 'p' command
    # the input is used up: the next stop reads 'c', which runs on to the end for good
    before = text.count(_DebugNode.PROMPT_FORWARD)
    dz.eval({dz.arguments[0]: data})
    dz.eval({dz.arguments[0]: data})
    assert out.getvalue().count(_DebugNode.PROMPT_FORWARD) == before + 1


def test_test_utils_helpers(monkeypatch):
    import cntk.tests.test_utils as tu
    monkeypatch.setenv('TEST_DEVICE', 'cpu')
    tu.set_device_from_pytest_env()
    assert C.device.use_default_device().type() == C.device.DeviceKind.CPU
    csr = tu._to_csr([[[1, 0], [0, 2]]])
    assert csr.shape == (2, 2) and csr.nnz == 2
    v = C.Value.one_hot([[2, 0]], 3)
    assert np.array_equal(tu._to_dense(v, is_sequence=True)[0], [[0, 0, 1], [1, 0, 0]])
    assert tu.PRECISION_TO_TYPE == {'float': np.float32, 'double': np.float64}


def test_typemap_walks_containers():
    from cntk.internal.swig_helper import typemap
    p = C.parameter((1, 2), init=5)

    @typemap
    def make():
        return 'x', [p], {p: p}
    s, l, d = make()
    assert s == 'x' and l[0] is p and d[p] is p


def test_arrays_without_leading_dynamic_axes_evaluate_as_cntk():
    s = C.sequence.input_variable(2)
    f = C.sequence.reduce_sum(s)
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert C.asvalue(s, a).shape == (3, 2)  # kept as given
    np.testing.assert_allclose(f.eval({s: a}), [[6, 9]])  # one sequence of length 3
    np.testing.assert_allclose(f.eval({s: a[0]}), [[0, 1]])  # one sample
    x = C.input_variable(2)
    v = C.asvalue(x, [a[0], a[1]])
    assert v.shape == (2, 1, 2)  # list entries are sequences of one sample
    np.testing.assert_allclose((x * 2).eval({x: v}), 2 * a[:2])
    xs = C.input_variable(3, is_sparse=True)
    import scipy.sparse as sp
    m = [sp.csr_matrix(np.float32([[1, 0, 2]])), sp.csr_matrix(np.float32([[0, 3, 0]]))]
    np.testing.assert_allclose(C.times(xs, np.eye(3, dtype=np.float32)).eval({xs: m}), [[1, 0, 2], [0, 3, 0]])
    with pytest.raises(ValueError):
        C.asvalue(C.input_variable(3, is_sparse=True, dynamic_axes=[]), m)


def test_depth_first_search_enters_blocks_by_depth():
    from cntk.layers import Sequential, Dense
    x = C.input_variable(3, name='x')
    z = Sequential([Dense(4), Dense(2)])(x)
    assert z.root_function.op_name == 'Dense'  # no Combine on top of a composition
    dfs = C.logging.graph.depth_first_search
    top = dfs(z, lambda n: True, depth=0)
    assert [str(n).split('(')[0] for n in top if isinstance(n, C.Function)] == ['Dense', 'Dense']
    inner = dfs(z, lambda n: True, depth=-1)
    ops = [n.op_name for n in inner if isinstance(n, C.Function)]
    assert ops.count('Times') == 2 and ops.count('Plus') == 2
    # the placeholders standing for a block's arguments are left out
    assert not any(isinstance(n, C.Variable) and n.is_placeholder for n in inner)
    assert len([n for n in inner if isinstance(n, C.Variable) and n.is_parameter]) == 4


def test_plot_lists_nodes_from_the_leaves_up():
    x = C.input_variable(2, name='x')
    z = C.times(C.plus(x, 1, name='a'), np.eye(2, dtype=np.float32), name='b')
    dot = C.logging.graph.plot(z)
    assert dot.find('Plus') < dot.find('Times')
    assert C.layers.BlockFunction is C.ops.functions.BlockFunction


def test_sequential_members_are_found_by_name():
    from cntk.layers import Sequential, Dense
    m = Sequential([Dense(3, init=1, name='first'), Dense(2, init=2, name='second')])
    m.update_signature((2,))
    assert m.is_composite
    np.testing.assert_array_equal(m.first.W.value, np.ones((2, 3)))
    np.testing.assert_array_equal(m.second.W.value, 2 * np.ones((3, 2)))


def test_trace_level_is_its_own_setting():
    from cntk.logging import TraceLevel, set_trace_level, get_trace_level
    import subprocess
    import sys
    # The default, in a fresh interpreter (other tests here change the setting).
    out = subprocess.check_output([sys.executable, '-c', 'import cntk; print(cntk.logging.get_trace_level())'])
    assert out.decode().strip() == str(TraceLevel.Warning)
    level = C.cntk_py.get_computation_network_trace_level()
    set_trace_level(TraceLevel.Info.value)
    assert get_trace_level() is TraceLevel.Info
    assert C.cntk_py.get_computation_network_trace_level() == level
    set_trace_level(TraceLevel.Warning)
