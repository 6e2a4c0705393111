// ONNX model files (include/cntk/onnx.h): save and load, and the reader's op types.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "cntk/onnx.h"

namespace nb = nanobind;
using namespace cntk;

void bind_onnx(nb::module_& m) {
  m.attr("onnx_default_opset") = kOnnxDefaultOpset;
  m.attr("onnx_min_export_opset") = kOnnxMinExportOpset;
  m.attr("onnx_max_opset") = kOnnxMaxOpset;
  m.def(
      "save_onnx",
      [](const FunctionPtr& f, const std::string& path, int opset, bool external_data) {
        save_onnx(f, path, OnnxExportOptions{opset, external_data});
      },
      nb::arg("f"), nb::arg("path"), nb::arg("opset") = kOnnxDefaultOpset, nb::arg("external_data") = false);
  m.def(
      "save_onnx_to_bytes",
      [](const FunctionPtr& f, int opset) {
        std::string s = save_onnx_to_bytes(f, OnnxExportOptions{opset, false});
        return nb::bytes(s.data(), s.size());
      },
      nb::arg("f"), nb::arg("opset") = kOnnxDefaultOpset);
  m.def("load_onnx", [](const std::string& path) { return load_onnx(path); });
  m.def(
      "load_onnx_from_bytes",
      [](const nb::bytes& b, const std::string& base_dir) {
        return load_onnx_from_bytes(std::string(b.c_str(), b.size()), "<bytes>", base_dir);
      },
      nb::arg("data"), nb::arg("base_dir") = ".");
  m.def("onnx_import_op_types", [] { return onnx_import_op_types(); });
}
