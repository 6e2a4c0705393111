"""Devices. OpenCNTK computes on the CPU; `gpu(n)` raises a clear error."""
import enum

from . import _cntk

DeviceDescriptor = _cntk.DeviceDescriptor


class DeviceKind(enum.IntEnum):
    CPU = 0
    GPU = 1


_excluded = []


def cpu():
    """The CPU device."""
    return DeviceDescriptor.cpu()


def gpu(device_id):
    """A GPU device; raises ValueError since no GPU is available to this build."""
    return DeviceDescriptor.gpu(device_id)


def all_devices():
    """All devices this process can compute on."""
    return [d for d in DeviceDescriptor.all_devices() if d not in _excluded]


def use_default_device():
    """The device computations run on by default."""
    return DeviceDescriptor.use_default_device()


def try_set_default_device(new_default_device, acquire_device_lock=False):
    """Makes `new_default_device` the default; True on success."""
    if new_default_device in _excluded:
        return False
    return DeviceDescriptor.try_set_default_device(new_default_device, acquire_device_lock)


def set_excluded_devices(excluded_devices):
    """Devices that the automatic device choice must not pick."""
    _excluded[:] = list(excluded_devices)


def get_gpu_properties(device):
    """Properties of a GPU device; there are no GPUs here."""
    if device.type() != DeviceKind.GPU:
        raise ValueError("get_gpu_properties: %s is not a GPU device" % device)
    raise ValueError("no GPU is available")


def _type(self):
    return DeviceKind(DeviceDescriptor._native_type(self))


DeviceDescriptor._native_type = DeviceDescriptor.type
DeviceDescriptor.type = _type

__all__ = ['DeviceDescriptor', 'DeviceKind', 'all_devices', 'cpu', 'gpu', 'use_default_device',
           'try_set_default_device', 'set_excluded_devices', 'get_gpu_properties']
