// Model files (CNTK v2 format): save/load of functions and dictionaries.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include "cntk/legacy_model.h"
#include "cntk/serialize.h"
#include "cntk/trainer.h"
#include "convert.h"

namespace nb = nanobind;
using namespace cntk;

namespace {
std::string bytes_of(const nb::handle& h) {
  if (nb::isinstance<nb::bytes>(h)) {
    nb::bytes b = nb::borrow<nb::bytes>(h);
    return std::string(b.c_str(), b.size());
  }
  nb::bytes b = nb::bytes(nb::steal(PyBytes_FromObject(h.ptr())));
  if (!b.is_valid()) throw nb::python_error();
  return std::string(b.c_str(), b.size());
}
}  // namespace

void bind_serialize(nb::module_& m) {
  m.def("save_model", [](const FunctionPtr& f, const std::string& path) {
    std::string bytes = save_function_to_bytes(f);
    nb::gil_scoped_release release;
    write_file_atomically(path, bytes);
  });
  m.def("save_model_to_bytes", [](const FunctionPtr& f) {
    std::string s = save_function_to_bytes(f);
    return nb::bytes(s.data(), s.size());
  });
  m.def("load_model", [](const std::string& path) { return load_function(path); });
  m.def("load_model_from_bytes", [](const nb::handle& b) { return load_function_from_bytes(bytes_of(b)); });
  m.def("restore_function_values", &restore_function_values);
  // CNTK v1 model files (.dnn): loading goes through load_model, which recognises them.
  m.def("save_as_legacy_model", [](const FunctionPtr& f, const std::string& path) { save_as_legacy_model(f, path); });
  m.def("dump_legacy_model",
        [](const nb::handle& b, const std::string& source) { return dump_legacy_model(bytes_of(b), source); });
  m.def("load_dictionary", [](const std::string& path) { return bindings::from_dictionary(load_dictionary(path)); });
  m.def("dictionary_from_bytes",
        [](const nb::handle& b) { return bindings::from_dictionary(dictionary_from_bytes(bytes_of(b))); });
  m.def("save_dictionary",
        [](const nb::dict& d, const std::string& path) { save_dictionary(bindings::to_dictionary(d), path); });
  m.def("save_dictionary_value",
        [](const nb::handle& v, const std::string& path) { save_dictionary_value(bindings::to_dict_value(v), path); });
  m.def("dictionary_value_bytes", [](const nb::handle& v) {
    std::string s = dictionary_value_to_bytes(bindings::to_dict_value(v));
    return nb::bytes(s.data(), s.size());
  });
  m.def("load_dictionary_value",
        [](const std::string& path) { return bindings::from_dict_value(load_dictionary_value(path)); });
  m.def("save_trainer_checkpoint", [](const Trainer& t, const std::string& path, const nb::dict& external_state) {
    save_trainer_checkpoint(t, path, bindings::to_dictionary(external_state));
  });
  m.def("restore_trainer_checkpoint", [](Trainer& t, const std::string& path) {
    return bindings::from_dictionary(restore_trainer_checkpoint(t, path));
  });
  m.def("dictionary_to_bytes", [](const nb::dict& d) {
    std::string s = dictionary_to_bytes(bindings::to_dictionary(d));
    return nb::bytes(s.data(), s.size());
  });
}
