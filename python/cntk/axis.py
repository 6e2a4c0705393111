"""Axis: static axes by index (NumPy order) and the dynamic batch and sequence axes."""
from . import _cntk

Axis = _cntk.Axis


def _static_axis_index(self, checked=True):
    if checked and not self.is_static_axis:
        raise ValueError("static_axis_index: %s is not a static axis" % self.name)
    return self.static_index


def _repr(self):
    if self.is_static_axis:  # CNTK's name of a static axis
        return "Axis('staticAxisIdx=%d')" % self.static_index
    return "Axis('%s')" % self.name


def _unknown_dynamic_axes():
    return (Axis.dynamic("UnknownAxes"),)


def _default_input_variable_dynamic_axes():
    # the axes of a sequence input (C.input_variable itself defaults to the batch axis only)
    return (Axis.default_batch_axis(), Axis.default_dynamic_axis())


Axis.static_axis_index = _static_axis_index
Axis.__repr__ = _repr
Axis.unknown_dynamic_axes = staticmethod(_unknown_dynamic_axes)
Axis.default_input_variable_dynamic_axes = staticmethod(_default_input_variable_dynamic_axes)
Axis.is_static_axis = Axis.is_static_axis  # property already
