// Convolution and pooling kernels. Tensors are plain row-major [N, C, spatial...]
// (NumPy order: batch, channels, then the spatial axes). float32 convolutions over
// 1 to 3 spatial axes run on oneDNN (primitives cached per shape); float64, more
// spatial axes and paddings oneDNN cannot express run on the reference loops here,
// which define the semantics the oneDNN path is tested against.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cntk/tensor.h"
#include "kernels/cpu/eltwise.h"

namespace cntk {
struct LayoutValue;  // kernels/backend.h
}

namespace cntk::kernels {

// One window sweep over the spatial axes: output position o of axis i reads input
// positions o*stride[i] - pad_lo[i] + j*dilation[i], j < kernel[i]; positions outside
// [0, in[i]) are padding (zero for convolution, skipped by pooling).
struct Window {
  std::vector<int64_t> in, out, kernel, stride, dilation, pad_lo;
  // Upper padding as given (pooling's include_pad counts padded positions below
  // in + pad_hi); the reference loops need only pad_lo.
  std::vector<int64_t> pad_hi;
  size_t rank() const { return in.size(); }
  int64_t in_size() const;
  int64_t out_size() const;
  int64_t kernel_size() const;
  std::string key() const;
};

// Convolution of x [N, C, in...] with w [O, C/groups, kernel...] into y [N, O, out...]
// (cross-correlation, as CNTK computes it).
struct ConvDims {
  int64_t batch = 1, in_channels = 1, out_channels = 1, groups = 1;
  Window win;
};

// What the passes of one convolution share so that each tensor is reordered into
// oneDNN's blocked layout once: the forward's source (for the weight gradient) and the
// output gradient (for both gradients). Entries are used only for the very tensor
// they were made from (held here, so it cannot change identity) and the same layout.
struct ConvReuse;
std::shared_ptr<ConvReuse> make_conv_reuse();
// Drops what `reuse` holds of the source / of the output gradient.
void release_source(ConvReuse& reuse);
void release_output_gradient(ConvReuse& reuse);

// Whether the own-layout passes below can run (float32, a geometry oneDNN can express).
bool conv_runs_on_primitives(const ConvDims& d, DataType t);
// Whether `reuse` holds the forward's source (the weight gradient then needs no x).
bool conv_reuse_has_source(const ConvReuse& reuse);

// Values in oneDNN's own layouts around a forward pass (see dnnl_value.h): the source may
// come in one (`in`, whose dims are [N, C, in...]; x is then not read), and with keep_out
// the output stays in the primitive's layout (`out`, dims [N, O, out...]; the returned
// view is undefined). Only where conv_runs_on_primitives.
// The backward passes take the same: backward data its output gradient as `in` (dims
// [N, O, out...]) and keeps dx (dims [N, C, in...]); backward weights its output
// gradient as `in_b`. A forward that reorders a plain source into its layout hands the
// result back as `made`, for other readers of the same value.
struct ConvLayoutIO {
  const LayoutValue* in = nullptr;
  const LayoutValue* in_b = nullptr;
  bool keep_out = false;
  std::shared_ptr<LayoutValue> out;
  std::shared_ptr<LayoutValue> made;
};

NDArrayView conv_forward(const NDArrayView& x, const NDArrayView& w, const ConvDims& d, ConvReuse* reuse = nullptr,
                         ConvLayoutIO* io = nullptr);

// What a fused convolution does to its result before storing it: adds a per-channel
// bias, then applies an activation.
struct ConvPostOps {
  bool bias = false;
  Eltwise eltwise = Eltwise::None;
  float alpha = 0;
};
// y = act(conv(x, w) + bias) as one oneDNN primitive (bias: O values, or undefined when
// post.bias is false). Returns an undefined view where oneDNN cannot run the convolution
// (float64, a geometry it cannot express): the caller then runs the steps one by one.
NDArrayView conv_forward_fused(const NDArrayView& x, const NDArrayView& w, const NDArrayView& bias,
                               const ConvPostOps& post, const ConvDims& d, ConvReuse* reuse = nullptr,
                               ConvLayoutIO* io = nullptr);

// Number of oneDNN convolution and pooling primitives created so far: primitives are
// cached per shape, so a repeated shape creates none (tests check this).
size_t dnnl_conv_primitives_created();
// Gradient with respect to x: dx [N, C, in...] from dy [N, O, out...].
NDArrayView conv_backward_data(const NDArrayView& dy, const NDArrayView& w, const ConvDims& d,
                               ConvReuse* reuse = nullptr, ConvLayoutIO* io = nullptr);
// Gradient with respect to w, summed over the batch: dw [O, C/groups, kernel...]. x may
// be undefined where `reuse` holds the forward's source (conv_reuse_has_source).
// With dbias, the bias gradient (O values, summed over batch and positions) comes in the
// same pass where oneDNN runs it (left undefined otherwise).
NDArrayView conv_backward_weights(const NDArrayView& x, const NDArrayView& dy, const ConvDims& d,
                                  ConvReuse* reuse = nullptr, ConvLayoutIO* io = nullptr, NDArrayView* dbias = nullptr);

// The same three on the reference loops only (tests compare the two paths).
NDArrayView conv_forward_reference(const NDArrayView& x, const NDArrayView& w, const ConvDims& d);
NDArrayView conv_backward_data_reference(const NDArrayView& dy, const NDArrayView& w, const ConvDims& d);
NDArrayView conv_backward_weights_reference(const NDArrayView& x, const NDArrayView& dy, const ConvDims& d);

// Pooling of x [N, C, in...] into [N, C, out...] (window dilation 1).
enum class PoolKind { Max = 0, Average = 1 };
struct PoolDims {
  int64_t batch = 1, channels = 1;
  Window win;
  PoolKind kind = PoolKind::Max;
  bool include_pad = false;  // average: divide by the window positions inside the padded input
};

// What a training forward pass of max pooling keeps for its backward pass: oneDNN's
// workspace (each window's argmax), which the backward pass would otherwise recompute with
// a second forward pass. Opaque; empty where the own loops ran.
struct PoolSaved;
std::shared_ptr<PoolSaved> make_pool_saved();
// Max pooling workspaces recomputed by a backward pass (none was kept, or in another
// layout), counted since the start: tests check that training steps keep theirs.
size_t max_pool_workspaces_recomputed();

// With `saved` (a training step), max pooling on oneDNN keeps its workspace there.
NDArrayView pool_forward(const NDArrayView& x, const PoolDims& d, PoolSaved* saved = nullptr);
// Pooling of a value in a oneDNN layout (dims [N, C, in...]): the result stays in the
// layout oneDNN picks (yb) with keep_out, else comes plain (y). False where oneDNN cannot
// run it (the caller makes x plain and calls pool_forward).
bool pool_forward_layout(const LayoutValue& x, const PoolDims& d, bool keep_out, NDArrayView& y,
                         std::shared_ptr<LayoutValue>& yb, PoolSaved* saved = nullptr);
// dx of pooling over x in a oneDNN layout, from dy in a oneDNN layout (dyb) or plain (dy):
// kept in x's layout (dxb) with keep_out, else plain (dx). False where oneDNN cannot run it.
// `saved`: the forward pass's; its workspace serves where its layout is the one this pass reads.
bool pool_backward_layout(const LayoutValue& x, const LayoutValue* dyb, const NDArrayView& dy, const PoolDims& d,
                          bool keep_out, NDArrayView& dx, std::shared_ptr<LayoutValue>& dxb,
                          const PoolSaved* saved = nullptr);
// dx from the pooling input x and dy; max pooling routes each gradient to the first
// maximum of its window.
NDArrayView pool_backward(const NDArrayView& x, const NDArrayView& dy, const PoolDims& d,
                          const PoolSaved* saved = nullptr);
// Max unpooling: y has pool_in's shape; each value of x [N, C, out...] goes to the
// position of the first maximum of its window in pool_in, the rest is zero.
NDArrayView max_unpool_forward(const NDArrayView& x, const NDArrayView& pool_in, const PoolDims& d);
// Gradient of max_unpool_forward with respect to x: dy gathered at those positions.
NDArrayView max_unpool_backward(const NDArrayView& dy, const NDArrayView& pool_in, const PoolDims& d);

// Region-of-interest max pooling (Fast R-CNN, Caffe's rounding): x [N, C, H, W],
// rois [N, R, 4] as (x1, y1, x2, y2) in input-image coordinates; y [N, R, C, ph, pw].
NDArrayView roi_pool_forward(const NDArrayView& x, const NDArrayView& rois, int64_t ph, int64_t pw, double scale);
NDArrayView roi_pool_backward(const NDArrayView& x, const NDArrayView& rois, const NDArrayView& dy, int64_t ph,
                              int64_t pw, double scale);

}  // namespace cntk::kernels
