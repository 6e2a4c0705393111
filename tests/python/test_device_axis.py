"""cntk.device and cntk.axis: devices (CPU only, GPU requests fail clearly) and axes."""
import numpy as np
import pytest

import cntk as C
from cntk.axis import Axis
from cntk.device import DeviceDescriptor, DeviceKind


# ------------------------------------------------------------------ devices

def test_cpu_descriptor():
    d = C.cpu()
    assert isinstance(d, DeviceDescriptor)
    assert d.type() == DeviceKind.CPU
    assert d.type() != DeviceKind.GPU
    assert d.type() == C.cntk_py.DeviceKind_CPU
    assert d.id() == 0
    assert str(d) == 'CPU'
    assert d == C.device.cpu()
    assert hash(d) == hash(C.cpu())
    assert d.is_locked() is False


def test_gpu_raises_clearly():
    with pytest.raises(ValueError, match="no GPU"):
        C.gpu(0)
    with pytest.raises(ValueError, match=r"gpu\(3\)"):
        C.device.gpu(3)
    with pytest.raises(ValueError):
        DeviceDescriptor.gpu(0)


def test_all_devices_lists_the_cpu():
    devices = C.all_devices()
    assert devices == [C.cpu()]
    for d in devices:
        assert d.type() in (DeviceKind.CPU, DeviceKind.GPU)


def test_default_device():
    assert C.use_default_device() == C.cpu()
    assert C.try_set_default_device(C.cpu()) is True
    # the CPU takes no device lock (as in CNTK): asking for one fails
    assert C.try_set_default_device(C.cpu(), acquire_device_lock=True) is False
    assert C.use_default_device() == C.cpu()


def test_excluded_devices_are_not_chosen():
    try:
        C.device.set_excluded_devices([C.cpu()])
        assert C.all_devices() == []
        assert C.try_set_default_device(C.cpu()) is False
    finally:
        C.device.set_excluded_devices([])
    assert C.try_set_default_device(C.cpu()) is True


def test_gpu_properties_of_cpu_is_an_error():
    with pytest.raises(ValueError):
        C.device.get_gpu_properties(C.cpu())


def test_device_argument_is_accepted_everywhere():
    x = C.input_variable(2)
    p = C.parameter((2,), init=1.0, device=C.cpu())
    c = C.constant(2.0, shape=(2,), device=C.cpu())
    f = x * c + p
    np.testing.assert_allclose(f.eval({x: [[1, 2]]}, device=C.cpu()), [[3, 5]])
    v = C.NDArrayView.from_dense(np.zeros((2,), np.float32), device=C.cpu())
    assert v.device == C.cpu()
    assert C.Value(np.zeros((1, 2), np.float32), device=C.cpu()).device == C.cpu()


# --------------------------------------------------------------------- axes

def test_static_axis():
    a = Axis(1)
    assert isinstance(a.is_static_axis, bool)
    assert a.is_static_axis
    assert not a.is_dynamic_axis
    assert a.static_axis_index() == 1
    assert a.static_axis_index(checked=False) == 1
    assert Axis(-1).static_axis_index() == -1
    assert a.is_ordered
    assert a == Axis(1)
    assert a != Axis(0)
    assert repr(a) == "Axis('staticAxisIdx=1')"


def test_default_batch_and_sequence_axes():
    b = Axis.default_batch_axis()
    s = Axis.default_dynamic_axis()
    assert isinstance(b, Axis) and isinstance(s, Axis)
    assert b.name == 'defaultBatchAxis'
    assert s.name == 'defaultDynamicAxis'
    assert b.is_batch_axis and not b.is_sequence_axis
    assert s.is_sequence_axis and not s.is_batch_axis
    assert not b.is_static_axis and b.is_dynamic_axis
    # The batch axis has no order among its samples; a sequence axis does.
    assert b.is_ordered is False
    assert s.is_ordered is True
    assert b == Axis.default_batch_axis()
    assert b != s
    assert repr(b) == "Axis('defaultBatchAxis')"


def test_static_axis_index_of_dynamic_axis_raises():
    with pytest.raises(ValueError):
        Axis.default_batch_axis().static_axis_index()
    with pytest.raises(ValueError):
        Axis.all_static_axes().static_axis_index()


def test_all_static_and_all_axes():
    a, b = Axis.all_static_axes(), Axis.all_axes()
    assert a != b
    assert not a.is_dynamic_axis and not b.is_dynamic_axis
    assert a.name and b.name
    x = C.input_variable((2, 3))
    d = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    np.testing.assert_allclose(C.reduce_sum(x, axis=a).eval({x: d}).reshape(2), d.reshape(2, -1).sum(1))
    np.testing.assert_allclose(np.sum(C.reduce_sum(x, axis=b).eval({x: d})), d.sum())


def test_new_unique_dynamic_axis():
    a = Axis.new_unique_dynamic_axis('x')
    b = Axis.new_unique_dynamic_axis('x')
    assert isinstance(a.is_static_axis, bool)
    assert not a.is_static_axis
    assert a.is_dynamic_axis and a.is_sequence_axis
    assert a.is_ordered
    assert a != b
    assert a.name.startswith('x') and b.name.startswith('x') and a.name != b.name
    # A named dynamic axis, as SequenceOver[Axis('words')] uses.
    w = Axis('words')
    assert w.is_dynamic_axis and w.name == 'words'
    assert w == Axis('words')


def test_axis_helpers():
    assert Axis.default_input_variable_dynamic_axes() == (Axis.default_batch_axis(), Axis.default_dynamic_axis())
    unknown = Axis.unknown_dynamic_axes()
    assert len(unknown) == 1 and unknown[0].is_dynamic_axis
    lead = Axis.new_leading_axis()
    assert lead.is_static_axis


def test_axes_of_variables():
    x = C.input_variable(3)
    assert x.dynamic_axes == (Axis.default_batch_axis(),)
    s = C.sequence.input_variable(3)
    assert s.dynamic_axes == (Axis.default_batch_axis(), Axis.default_dynamic_axis())
    w = C.sequence.input_variable(3, sequence_axis=Axis('words'))
    assert w.dynamic_axes[1].name == 'words'
    n = C.input_variable(3, dynamic_axes=[])
    assert n.dynamic_axes == ()
    p = C.parameter((3,))
    assert p.dynamic_axes == ()
    # Outputs take the dynamic axes of their inputs.
    assert (s + p).dynamic_axes == s.dynamic_axes
    assert (x * 2).dynamic_axes == x.dynamic_axes


def test_axes_as_dict_keys():
    d = {Axis.default_batch_axis(): 'b', Axis(0): 's'}
    assert d[Axis.default_batch_axis()] == 'b'
    assert d[Axis(0)] == 's'
