// The CPU's two backends (kernels/backend.h). Both run the same kernels in this folder;
// the oneDNN one lets them take their primitive paths and the planner keep values in
// oneDNN's layouts, the reference one keeps every type on the own loops.
#include "kernels/backend.h"

#include <cstring>

#include "cntk/switches.h"
#include "kernels/cpu/dnnl_value.h"

namespace cntk::kernels {

namespace {

class OneDnnBackend final : public Backend {
 public:
  const char* name() const override { return "onednn"; }
  bool uses_primitives() const override { return true; }
  bool keeps_layouts() const override { return dnnl_layouts_enabled(); }
  bool fuses_convolutions() const override { return conv_fusion_enabled(); }
  bool fuses_recurrences() const override { return rnn_fusion_enabled(); }
  NDArrayView to_plain(const LayoutValue& v) const override { return dnnl_to_plain(v); }
  std::shared_ptr<const LayoutValue> add(const LayoutValue& a, const LayoutValue& b) const override {
    return dnnl_add(a, b);
  }
};

class ReferenceBackend final : public Backend {
 public:
  const char* name() const override { return "reference"; }
  bool uses_primitives() const override { return false; }
  bool keeps_layouts() const override { return false; }
  bool fuses_convolutions() const override { return false; }
  bool fuses_recurrences() const override { return false; }
  // It makes no LayoutValue; one made before a switch of backends (a plan compiled under
  // oneDNN and still running) is oneDNN's to read.
  NDArrayView to_plain(const LayoutValue& v) const override { return dnnl_to_plain(v); }
  std::shared_ptr<const LayoutValue> add(const LayoutValue& a, const LayoutValue& b) const override {
    return dnnl_add(a, b);
  }
};

}  // namespace

Backend& cpu_backend() {
  static OneDnnBackend onednn;
  static ReferenceBackend reference;
  return std::strcmp(backend_name(), "reference") == 0 ? static_cast<Backend&>(reference) : onednn;
}

Backend& backend_for(const DeviceDescriptor& device) {
  if (device.type() != DeviceKind::CPU) throw Error("no backend for device " + device.str());
  return cpu_backend();
}

bool primitives_enabled() { return cpu_backend().uses_primitives(); }

}  // namespace cntk::kernels
