// The backend interface: all that the ops, the planner and the executor know of the code
// that runs a kernel. A backend belongs to a device kind; the CPU has two, chosen at run
// time through the switches (cntk/switches.h, set_backend):
//   "onednn"     float32 convolution, pooling, products, activations, softmax,
//                normalization and recurrences on oneDNN's primitives, values kept in
//                oneDNN's own layouts between steps, fused convolution and RNN steps;
//                float64 and what oneDNN cannot express on the own loops (the default);
//   "reference"  the own loops for every type, float32 included: no primitive, no kept
//                layout, no fused step. It defines the semantics the fast paths are tested
//                against, and is the pattern a further backend (CUDA) follows.
// Nothing here names a vendor library: this header is what src/ops, src/graph and
// src/exec include; each backend's code lives in its folder (src/kernels/cpu).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "cntk/device.h"
#include "cntk/tensor.h"

namespace cntk {

// The layout protocol. A backend may hand a value from one plan step to the next in its
// own memory layout (oneDNN's blocked nChw16c, ...), never made plain in between:
// - the planner marks a float32 slot "kept" when its producer and all its readers are
//   ops with OpDef::backend_layouts, outside recurrent loops, and it is not a requested
//   output (exec/fusion.h, when Backend::keeps_layouts());
// - such an op sees the kept inputs (and, in backward, output gradients) as LayoutValues
//   (ComputeContext::layout_input), and may return its output (input gradient) as one
//   where ComputeContext allows it (may_keep_layout_output / may_keep_layout_grad),
//   leaving the plain view undefined;
// - any other reader gets the value made plain once per pass (Backend::to_plain), and
//   gradients of one value in layouts are summed in a layout (Backend::add).
// Each backend derives its own value type from LayoutValue; only its kernels look inside.
struct LayoutValue {
  DataType dtype = DataType::Float;  // float32 only, for now
  NDShape shape;                     // the runtime shape of the plain value it stands for
  virtual ~LayoutValue() = default;
};

namespace kernels {

// A part of a concatenation along the channels (Backend::concat_channels): a value kept
// in a layout, or plain (float32, contiguous, alive during the call), of dims
// [N, C_i, rest...].
struct ChannelPart {
  const LayoutValue* kept = nullptr;
  NDArrayView plain;
  std::vector<int64_t> dims;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // float32 kernels may run on the backend's primitives; false: the own loops run for
  // every type (the kernels ask through primitives_enabled()).
  virtual bool uses_primitives() const = 0;
  // The planner's questions: whether values may stay in this backend's layouts between
  // steps, and whether Convolution -> bias -> activation chains and recurrences
  // (Recurrence(LSTM/GRU/RNNStep), OptimizedRNNStack) run as fused steps.
  virtual bool keeps_layouts() const = 0;
  virtual bool fuses_convolutions() const = 0;
  virtual bool fuses_recurrences() const = 0;
  // The layout protocol's operations on values between steps. The value as a plain
  // row-major tensor of v.shape; a + b in a's layout.
  virtual NDArrayView to_plain(const LayoutValue& v) const = 0;
  virtual std::shared_ptr<const LayoutValue> add(const LayoutValue& a, const LayoutValue& b) const = 0;
  // The dims of the kernel's view of v (e.g. [N, C, H, W], the dynamic axes folded into N).
  virtual std::vector<int64_t> layout_dims(const LayoutValue& v) const = 0;
  // Concatenation along axis 1 (channels): the result in the layout the backend picks for
  // it, its shape left to the caller.
  virtual std::shared_ptr<LayoutValue> concat_channels(const std::vector<ChannelPart>& parts) const = 0;
  // Channels [offset, offset + count) of v: in the layout of `like` (null where the backend
  // cannot take that part of v's layout), or into the plain float32 tensor `out` of dims
  // `dims` (false where it cannot).
  virtual std::shared_ptr<LayoutValue> channel_slice(const LayoutValue& v, int64_t offset, int64_t count,
                                                     const LayoutValue& like) const = 0;
  virtual bool channel_slice(const LayoutValue& v, int64_t offset, int64_t count, const std::vector<int64_t>& dims,
                             NDArrayView& out) const = 0;
};

// The backend of a device: for the CPU, the one the switches select.
Backend& backend_for(const DeviceDescriptor& device);
Backend& cpu_backend();
// Whether the CPU kernels may run on primitives now (cpu_backend().uses_primitives()).
bool primitives_enabled();

// The CPU backend's layout protocol, for the ops' kernels (Backend's operations above).
inline NDArrayView to_plain(const LayoutValue& v) { return cpu_backend().to_plain(v); }
inline std::vector<int64_t> layout_dims(const LayoutValue& v) { return cpu_backend().layout_dims(v); }

}  // namespace kernels
}  // namespace cntk
