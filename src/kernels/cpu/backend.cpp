// The CPU's two backends (kernels/backend.h). Both run the same kernels in this folder;
// the oneDNN one lets them take their primitive paths and the planner keep values in
// oneDNN's layouts, the reference one keeps every type on the own loops.
#include "kernels/backend.h"

#include <cstring>

#include "cntk/switches.h"
#include "kernels/cpu/dnnl_context.h"
#include "kernels/cpu/dnnl_value.h"

namespace cntk::kernels {

namespace {

// The layout protocol over oneDNN memories (DnnlValue). Both CPU backends read such
// values: the reference backend makes none, but a pass begun under oneDNN may still hold
// some after a switch of backends.
class DnnlLayouts : public Backend {
 public:
  NDArrayView to_plain(const LayoutValue& v) const override { return dnnl_to_plain(v); }
  std::shared_ptr<const LayoutValue> add(const LayoutValue& a, const LayoutValue& b) const override {
    return dnnl_add(a, b);
  }
  std::vector<int64_t> layout_dims(const LayoutValue& v) const override {
    const dnnl::memory::dims d = mem_of(v).get_desc().dims();
    return std::vector<int64_t>(d.begin(), d.end());
  }
  std::shared_ptr<LayoutValue> concat_channels(const std::vector<ChannelPart>& parts) const override {
    std::vector<dnnl::memory> srcs;
    for (const ChannelPart& p : parts)
      srcs.push_back(p.kept
                         ? mem_of(*p.kept)
                         : dnnl::memory(dnnl_plain_desc(p.dims), dnnl_engine(), const_cast<void*>(p.plain.raw_data())));
    return dnnl_concat(srcs);
  }
  std::shared_ptr<LayoutValue> channel_slice(const LayoutValue& v, int64_t offset, int64_t count,
                                             const LayoutValue& like) const override {
    dnnl::memory out;
    if (!dnnl_channel_slice(v, offset, count, mem_of(like).get_desc(), nullptr, out)) return nullptr;
    return dnnl_value(out);
  }
  bool channel_slice(const LayoutValue& v, int64_t offset, int64_t count, const std::vector<int64_t>& dims,
                     NDArrayView& out) const override {
    dnnl::memory m;
    return dnnl_channel_slice(v, offset, count, dnnl_plain_desc(dims), out.raw_data(), m);
  }
};

class OneDnnBackend final : public DnnlLayouts {
 public:
  const char* name() const override { return "onednn"; }
  bool uses_primitives() const override { return true; }
  bool keeps_layouts() const override { return dnnl_layouts_enabled(); }
  bool fuses_convolutions() const override { return conv_fusion_enabled(); }
  bool fuses_recurrences() const override { return rnn_fusion_enabled(); }
};

class ReferenceBackend final : public DnnlLayouts {
 public:
  const char* name() const override { return "reference"; }
  bool uses_primitives() const override { return false; }
  bool keeps_layouts() const override { return false; }
  bool fuses_convolutions() const override { return false; }
  bool fuses_recurrences() const override { return false; }
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
