// A value kept in a oneDNN memory layout between plan steps. A oneDNN convolution
// picks its own layouts (blocked ones such as nChw16c); consecutive steps that all run
// on oneDNN (convolution, fused convolution, pooling, relu) hand each other the value
// in that layout instead of reordering it to CNTK's plain row-major layout and back.
// The plan decides which slots stay in a oneDNN layout (exec/fusion.h); any other
// reader gets the value made plain once (DnnlValue -> NDArrayView, one reorder).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "cntk/tensor.h"
#include "kernels/backend.h"

namespace cntk {

// The oneDNN backend's LayoutValue (the layout protocol: kernels/backend.h).
struct DnnlValue : LayoutValue {
  // The bytes, in mem.get_desc()'s layout (owned by the memory object). Its dims are the
  // kernel's view of the value, e.g. [N, C, H, W] with the dynamic axes folded into N.
  dnnl::memory mem;
};

}  // namespace cntk

namespace cntk::kernels {

// The oneDNN memory of a LayoutValue: on the CPU only the oneDNN backend makes them.
inline const dnnl::memory& mem_of(const LayoutValue& v) { return static_cast<const DnnlValue&>(v).mem; }
// A new value over m (its shape left to the caller where not given).
inline std::shared_ptr<DnnlValue> dnnl_value(dnnl::memory m, NDShape shape = {}) {
  auto v = std::make_shared<DnnlValue>();
  v->mem = std::move(m);
  v->shape = std::move(shape);
  return v;
}

// The value as a plain row-major tensor of v.shape (one reorder, counted).
NDArrayView dnnl_to_plain(const LayoutValue& v);

// The plain row-major desc of float32 dims.
dnnl::memory::desc dnnl_plain_desc(const dnnl::memory::dims& dims);

// `m` in the layout `want`: m itself, or a reordered copy (counted).
dnnl::memory dnnl_in_layout(const dnnl::memory& m, const dnnl::memory::desc& want, bool weights = false);
// A plain float32 tensor (contiguous, dims' element count) as a memory of `want`'s layout
// (reordered when that is not plain; `plain` must outlive the result when it is).
dnnl::memory dnnl_plain_in_layout(const NDArrayView& plain, const dnnl::memory::desc& want);
// A backward primitive's output gradient in the layout `want`: the one kept in a oneDNN layout
// (`kept`, reordered if its layout differs) or else `plain`, made dense float32 into `keep`, which
// must outlive the result (the memory may alias it).
dnnl::memory dnnl_grad_in_layout(const LayoutValue* kept, const NDArrayView& plain, const dnnl::memory::desc& want,
                                 NDArrayView& keep);

// a + b in a's layout (b reordered into it when its layout differs).
std::shared_ptr<LayoutValue> dnnl_add(const LayoutValue& a, const LayoutValue& b);

// Concatenation along axis 1 (channels) of float32 memories of dims [N, C_i, rest...]
// (each in any layout): the result in the layout oneDNN picks for it.
std::shared_ptr<LayoutValue> dnnl_concat(const std::vector<dnnl::memory>& srcs);
// Channels [offset, offset + count) (axis 1) of v into a new memory of layout `want` (over
// `buffer` where given, else allocated). False where oneDNN cannot take that part of v's
// layout (a blocked channel axis split inside a block).
bool dnnl_channel_slice(const LayoutValue& v, int64_t offset, int64_t count, const dnnl::memory::desc& want,
                        void* buffer, dnnl::memory& out);

// A string naming a memory desc's dims and layout, for primitive cache keys.
std::string dnnl_desc_key(const dnnl::memory::desc& md);

// Reorders of activations and gradients between a plain and a oneDNN layout (in either
// direction, inside kernels or between steps) and of weights, counted since the start:
// tests check that a chain of oneDNN steps does none between its steps.
size_t dnnl_reorders();
size_t dnnl_weight_reorders();
void count_dnnl_reorder(bool weights);

}  // namespace cntk::kernels
