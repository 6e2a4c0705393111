// Conversions between Python objects and the engine's shapes and Dictionaries,
// shared by the binding files.
#pragma once
#include <nanobind/nanobind.h>

#include "cntk/dictionary.h"

namespace cntk::bindings {

NDShape to_shape(const nanobind::handle& h);
nanobind::tuple from_shape(const NDShape& s);
// Python values -> DictValue: None, bool, int, float, str, Axis, NDArrayView, dict, list/tuple, NumPy scalars.
DictValue to_dict_value(const nanobind::handle& h);
Dictionary to_dictionary(const nanobind::handle& h);
nanobind::object from_dict_value(const DictValue& v);
nanobind::dict from_dictionary(const Dictionary& d);

}  // namespace cntk::bindings
