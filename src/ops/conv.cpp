// Op family: convolution and pooling. Convolution (also transposed), Pooling,
// Unpooling and ROIPooling, with CNTK 2.7's attributes and geometry, and
// ConvolutionSequenceShape (the output lengths of a convolution over the sequence axis).
//
// Shapes are in NumPy order: an operand is (C, M1..Mn) (or (M1..Mn) with
// reductionRank 0) and a kernel (O, C/groups, m1..mn). Per-axis attributes
// (strides, autoPadding, ...) are right-aligned to the operand's axes; a list
// shorter than the kernel repeats its first value to the left, as CNTK repeats the
// last value of its column-major list. CNTK's auto padding centres the kernel: the
// first window is centred at extra/2, where extra is the input left over by the
// strided output positions, so an even kernel (or odd leftover) pads one more at
// the end than at the start.
#include <cmath>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/eltwise.h"
#include "kernels/backend.h"
#include "kernels/cpu/elementwise.h"
#include "ops/conv_fused.h"
#include "ops/op.h"
#include "onnx/export_batch.h"
#include "cntk/ops.h"

namespace cntk {
namespace {

// ------------------------------------------------------------ attributes

std::vector<int64_t> ints_attr(const Dictionary& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end() || it->second.empty()) return {};
  if (it->second.is<int64_t>()) return {it->second.as_int()};
  return it->second.as_int_list();
}

std::vector<int64_t> bools_attr(const Dictionary& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end() || it->second.empty()) return {};
  if (it->second.is<bool>()) return {int64_t(it->second.as_bool())};
  std::vector<int64_t> out;
  for (auto& v : it->second.as_list()) out.push_back(v.is<bool>() ? int64_t(v.as_bool()) : v.as_int() != 0);
  return out;
}

// Per-axis settings are NumPy-order lists (an int or bool alone stands for every axis);
// CNTK files hold the int ones as shapes (AttrType::Shape) and the bool ones as lists in its
// own order.
AttrSpec per_axis(const char* key, AttrType t) { return {key, t, {}, AxisOrder::NumPy}; }

// Convolution's attributes; ConvolutionSequenceShape reads the same.
std::vector<AttrSpec> convolution_attrs() {
  return {per_axis("strides", AttrType::Shape),         per_axis("dilation", AttrType::Shape),
          per_axis("sharing", AttrType::BoolList),      per_axis("autoPadding", AttrType::BoolList),
          per_axis("lowerPad", AttrType::Shape),        per_axis("upperPad", AttrType::Shape),
          per_axis("outputShape", AttrType::Shape),     per_axis("kernelShape", AttrType::Shape),
          {"transpose", AttrType::Bool, false},         {"sequential", AttrType::Bool, false},
          {"reductionRank", AttrType::Int, 1},          {"groups", AttrType::Int, 1},
          {"maxTempMemSizeInSamples", AttrType::Int, 0}};
}
// Pooling's and unpooling's; `window` names the window's key.
std::vector<AttrSpec> pooling_attrs(const char* window) {
  return {per_axis(window, AttrType::Shape),           per_axis("strides", AttrType::Shape),
          per_axis("autoPadding", AttrType::BoolList), per_axis("lowerPad", AttrType::Shape),
          per_axis("upperPad", AttrType::Shape),       {"poolingType", AttrType::Int, 0},
          {"ceilOutDim", AttrType::Bool, false},       {"includePad", AttrType::Bool, false}};
}

// CNTK's expansion of a per-axis list to `rank` axes (NumPy order): right-aligned,
// the first value repeated leftwards up to `fill` axes, `def` beyond.
std::vector<int64_t> expand(const std::vector<int64_t>& v, size_t fill, size_t rank, int64_t def,
                            const std::string& what) {
  if (v.size() > rank)
    throw ValueError(what + " has " + std::to_string(v.size()) + " values, more than the operand's " +
                     std::to_string(rank) + " axes");
  std::vector<int64_t> out(rank, def);
  if (v.empty()) return out;
  size_t off = rank - v.size();
  for (size_t i = 0; i < v.size(); ++i) out[off + i] = v[i];
  size_t fill_from = rank - std::min(rank, std::max(fill, v.size()));
  for (size_t i = fill_from; i < off; ++i) out[i] = v[0];
  return out;
}

std::vector<int64_t> tail(const std::vector<int64_t>& v, size_t n) { return {v.end() - long(n), v.end()}; }

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

// ---------------------------------------------------------------- geometry

struct AxisGeometry {
  int64_t out = 0, pad_lo = 0, pad_hi = 0;
};

// One axis of CNTK's ConvolveGeometry: output size and paddings.
AxisGeometry axis_geometry(int64_t in, int64_t k, int64_t s, int64_t d, bool autopad, int64_t lo, int64_t hi,
                           bool ceil_out) {
  AxisGeometry g;
  int64_t ke = (k - 1) * d + 1;
  int64_t padded = autopad ? in + ke - 1 : in + lo + hi;
  if (padded < ke) return g;  // out = 0: the kernel does not fit
  int64_t num = padded - ke;
  g.out = (ceil_out ? (num + s - 1) / s : num / s) + 1;
  if (autopad) {
    int64_t cells = (g.out - 1) * s + 1, extra = in - cells, center = extra / 2;  // truncation, as CNTK
    g.pad_lo = (ke - 1) / 2 - center;
    g.pad_hi = (g.out - 1) * s + ke - in - g.pad_lo;
  } else {
    g.pad_lo = lo;
    g.pad_hi = hi;
  }
  return g;
}

void check_positive(const std::vector<int64_t>& v, const std::string& what, int64_t min) {
  for (auto x : v)
    if (x < min) throw ValueError(what + " must be at least " + std::to_string(min) + ", got " + list_str(v));
}

struct ConvSetup {
  kernels::ConvDims dims;  // batch left at 1; for a transposed convolution, the forward one it transposes
  NDShape out_static;
  bool transpose = false;
};

// The geometry of Convolution from its attributes and the static shapes of the kernel
// W and the operand X. Throws ValueError (or NotImplementedError) with the reason.
ConvSetup conv_setup(const Dictionary& a, const NDShape& W, const NDShape& X) {
  ConvSetup cs;
  const std::string op = "Convolution";
  int64_t rr = op_attr_int(op, a, "reductionRank"), groups = op_attr_int(op, a, "groups");
  cs.transpose = op_attr_bool(op, a, "transpose");
  if (rr != 0 && rr != 1) throw ValueError("reduction_rank must be 0 or 1, got " + std::to_string(rr));
  if (groups < 1) throw ValueError("groups must be positive, got " + std::to_string(groups));
  if (cs.transpose && groups != 1) throw ValueError("a transposed convolution has no groups");
  if (op_attr_bool(op, a, "sequential"))
    throw NotImplementedError("convolution over the sequence axis (sequential=True) is not supported");
  if (int64_t(X.rank()) - rr < 1)
    throw ValueError("the operand " + X.str() + " has no spatial axis to convolve over (reduction_rank " +
                     std::to_string(rr) + ")");
  const size_t n = X.rank() - size_t(rr);
  const int64_t C = rr ? X[0] : 1;
  // Kernel: (O, C/groups, k...) | (C, k...) with one output map | (O, k...) when reduction_rank is 0.
  // Transposed: (C, O, k...) | (C, k...) | (O, k...). With reduction_rank 0, CNTK also takes a
  // kernel of the spatial axes alone, (k...): one output map, kept as an axis of size 1.
  bool full = W.rank() == n + 2 && rr == 1;
  bool bare = W.rank() == n && rr == 0;
  if (!(full || bare || W.rank() == n + 1))
    throw ValueError("the kernel " + W.str() + " must have rank " + std::to_string(n + 1 + size_t(rr)) +
                     " (output channels, " + (rr ? "input channels, " : "") + "then " + std::to_string(n) +
                     " spatial axes) for an operand " + X.str());
  std::vector<int64_t> k = tail(W.dims(), n);
  check_positive(k, "the kernel's spatial dimensions", 1);
  int64_t O = 1, Cw = 1;
  if (!cs.transpose) {
    if (full)
      O = W[0], Cw = W[1];
    else if (rr)
      Cw = W[0];
    else if (!bare)
      O = W[0];
    if (C >= 0 && Cw * groups != C)
      throw ValueError("the kernel's input channels (" + std::to_string(Cw) + ") times groups (" +
                       std::to_string(groups) + ") must equal the operand's channels (" + std::to_string(C) +
                       ", its first axis; reduction_rank=0 convolves an operand without a channel axis)");
    if (O % groups)
      throw ValueError("the output channels (" + std::to_string(O) + ") must be divisible by groups (" +
                       std::to_string(groups) + ")");
  } else {
    if (full)
      Cw = W[0], O = W[1];
    else if (rr)
      Cw = W[0];
    else if (!bare)
      O = W[0];
    if (C >= 0 && Cw != C)
      throw ValueError("the kernel's first axis (" + std::to_string(Cw) + ") must equal the operand's channels (" +
                       std::to_string(C) + ")");
  }
  const size_t r = X.rank();
  auto strides = tail(expand(ints_attr(a, "strides"), r, r, 1, "strides"), n);
  auto dil = tail(expand(ints_attr(a, "dilation"), r, r, 1, "dilation"), n);
  auto sharing = tail(expand(bools_attr(a, "sharing"), r, r, 1, "sharing"), n);
  auto autopad_v = bools_attr(a, "autoPadding");
  if (autopad_v.empty()) autopad_v = {1};
  auto autopad = tail(expand(autopad_v, r, r, 0, "auto_padding"), n);
  auto lower = tail(expand(ints_attr(a, "lowerPad"), r, r, 0, "lower_pad"), n);
  auto upper = tail(expand(ints_attr(a, "upperPad"), r, r, 0, "upper_pad"), n);
  check_positive(strides, "strides", 1);
  check_positive(dil, "dilation", 1);
  check_positive(lower, "lower_pad", 0);
  check_positive(upper, "upper_pad", 0);

  std::vector<int64_t> in = tail(X.dims(), n), conv_in(n), conv_out(n), lo(n), hi(n);
  if (!cs.transpose) {
    conv_in = in;
  } else {
    // The transposed output is the input of the forward convolution that maps it to X.
    std::vector<int64_t> given = ints_attr(a, "outputShape");
    if (given.size() == 1 && given[0] == 0) given.clear();
    if (!given.empty()) {
      if (given.size() == n + 1) {
        if (given[0] != O)
          throw ValueError("output_shape " + list_str(given) + " must have " + std::to_string(O) +
                           " channels, the kernel's output maps");
        given.erase(given.begin());
      }
      if (given.size() != n)
        throw ValueError("output_shape " + list_str(given) + " must give the " + std::to_string(n) +
                         " spatial dimensions (or the channels and them)");
      conv_in = given;
    } else {
      for (size_t i = 0; i < n; ++i) {
        int64_t ke = (k[i] - 1) * dil[i] + 1;
        conv_in[i] = in[i] < 0 ? in[i]
                               : (autopad[i] ? (in[i] - 1) * strides[i] + 1
                                             : (in[i] - 1) * strides[i] + ke - lower[i] - upper[i]);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (conv_in[i] < 0) {  // free dimension: known only from the data
      conv_out[i] = conv_in[i];
      continue;
    }
    AxisGeometry g = axis_geometry(conv_in[i], k[i], strides[i], dil[i], autopad[i], lower[i], upper[i], false);
    if (g.out < 1)
      throw ValueError("the kernel " + list_str(k) + (dil[i] > 1 ? " dilated by " + list_str(dil) : "") +
                       " does not fit the " + (cs.transpose ? "output " : "input ") + list_str(conv_in) +
                       " along spatial axis " + std::to_string(i));
    conv_out[i] = g.out, lo[i] = g.pad_lo, hi[i] = g.pad_hi;
    // CNTK 2.7 refuses this too: its Convolution layer raises, and its convolution node
    // wants a weight of (filter shape) x (input channels) x (output maps), while a
    // kernel per output position needs that many times more. Where the axis has one
    // output position, or on the channel axis, the flag changes nothing.
    if (!sharing[i] && g.out != 1)
      throw NotImplementedError("sharing=False along spatial axis " + std::to_string(i) +
                                " (a separate kernel for "
                                "each of its " +
                                std::to_string(g.out) +
                                " output positions) is not supported; "
                                "CNTK 2.7 does not support it either (its weight is one kernel per output map)");
  }
  if (cs.transpose)
    for (size_t i = 0; i < n; ++i)
      if (in[i] >= 0 && conv_out[i] >= 0 && conv_out[i] != in[i])
        throw ValueError("the output shape " + list_str(conv_in) + " does not convolve back to the operand's " +
                         list_str(in) + " with these strides and paddings");
  auto& d = cs.dims;
  d.groups = groups;
  d.in_channels = cs.transpose ? O : C;
  d.out_channels = cs.transpose ? C : O;
  d.win.in = conv_in;
  d.win.out = cs.transpose ? in : conv_out;
  d.win.kernel = k;
  d.win.stride = strides;
  d.win.dilation = dil;
  d.win.pad_lo = lo;
  d.win.pad_hi = hi;
  std::vector<int64_t> os{O};
  const auto& sp = cs.transpose ? conv_in : conv_out;
  os.insert(os.end(), sp.begin(), sp.end());
  cs.out_static = NDShape(os);
  return cs;
}

// Batch count (product of the leading dynamic dims) of runtime input i.
int64_t batch_of(const ComputeContext& ctx, size_t i) {
  int64_t b = 1;
  const NDShape shape = ctx.input_shape(i);
  for (int k = 0; k < ctx.in_dyn[i]; ++k) b *= shape[k];
  return b;
}

std::vector<int64_t> dyn_dims(const ComputeContext& ctx, size_t i) {
  const auto s = ctx.input_shape(i).dims();
  return {s.begin(), s.begin() + ctx.in_dyn[i]};
}

NDShape with_dyn(const std::vector<int64_t>& dyn, const NDShape& s) { return NDShape(dyn).concat(s); }

NDShape flat4(int64_t a, int64_t b, const std::vector<int64_t>& rest) {
  std::vector<int64_t> d{a, b};
  d.insert(d.end(), rest.begin(), rest.end());
  return NDShape(d);
}

ConvSetup runtime_conv(const ComputeContext& ctx) {
  ConvSetup cs = conv_setup(ctx.attr(), ctx.static_shape(0), ctx.static_shape(1));
  cs.dims.batch = batch_of(ctx, 1);
  return cs;
}

// The operand of a (non-transposed) convolution in a oneDNN layout, where it came in one
// that the oneDNN path can read as [N, C, in...]; null otherwise.
const LayoutValue* layout_operand(const ComputeContext& ctx, const kernels::ConvDims& dd, size_t i) {
  const LayoutValue* xb = ctx.layout_input(i);
  if (!xb || !kernels::conv_runs_on_primitives(dd, DataType::Float)) return nullptr;
  std::vector<int64_t> dims{dd.batch, dd.in_channels};
  dims.insert(dims.end(), dd.win.in.begin(), dd.win.in.end());
  return kernels::layout_dims(*xb) == dims ? xb : nullptr;
}

// A plain operand the convolution reordered into its layout becomes the operand's value in
// that layout, for the other readers of the same value (GoogLeNet's inception inputs feed
// several convolutions): the executor keeps it beside the plain one for the pass.
void share_made_source(ComputeContext& ctx, kernels::ConvLayoutIO& io) {
  if (!io.made || ctx.layout_inputs.size() < 2 || ctx.layout_inputs[1]) return;
  io.made->shape = ctx.input_shape(1);
  ctx.layout_inputs[1] = std::move(io.made);
}

// A oneDNN-layout result of a convolution as the step's output (k = 0).
std::vector<NDArrayView> kept_output(ComputeContext& ctx, std::shared_ptr<LayoutValue> y, const NDShape& shape) {
  y->shape = shape;
  ctx.layout_outputs[0] = std::move(y);
  return std::vector<NDArrayView>{NDArrayView()};
}

std::vector<NDArrayView> convolution_forward(ComputeContext& ctx) {
  ConvSetup cs = runtime_conv(ctx);
  const auto& dd = cs.dims;
  NDArrayView w = ctx.input(0).to_dense().contiguous();
  const NDShape out_shape = with_dyn(dyn_dims(ctx, 1), cs.out_static);
  if (!cs.transpose && w.dtype() == DataType::Float) {
    const LayoutValue* xb = layout_operand(ctx, dd, 1);
    const bool on_prims = kernels::conv_runs_on_primitives(dd, DataType::Float) &&
                          (ctx.layout_input(1) || ctx.inputs[1].dtype() == DataType::Float);
    const bool keep = ctx.may_keep_layout_output(0) && on_prims;
    if (on_prims && !ctx.layout_inputs.empty()) {
      kernels::ConvLayoutIO io{xb, nullptr, keep, nullptr, nullptr};
      auto reuse = ctx.training ? kernels::make_conv_reuse() : nullptr;
      NDArrayView x =
          xb ? NDArrayView() : ctx.input(1).to_dense().contiguous().reshape(flat4(dd.batch, dd.in_channels, dd.win.in));
      NDArrayView y = kernels::conv_forward(
          x, w.reshape(flat4(dd.out_channels, dd.in_channels / dd.groups, dd.win.kernel)), dd, reuse.get(), &io);
      ctx.state = reuse;
      share_made_source(ctx, io);
      if (keep) return kept_output(ctx, io.out, out_shape);
      return std::vector<NDArrayView>{y.reshape(out_shape)};
    }
  }
  NDArrayView x = ctx.input(1).to_dense().contiguous();
  DataType t = (x.dtype() == DataType::Double || w.dtype() == DataType::Double) ? DataType::Double : x.dtype();
  if (w.dtype() != t) w = w.cast(t);
  if (x.dtype() != t) x = x.cast(t);
  NDArrayView y;
  if (!cs.transpose) {
    x = x.reshape(flat4(dd.batch, dd.in_channels, dd.win.in));
    auto reuse = ctx.training ? kernels::make_conv_reuse() : nullptr;  // the backward passes reuse its reorders
    y = kernels::conv_forward(x, w.reshape(flat4(dd.out_channels, dd.in_channels / dd.groups, dd.win.kernel)), dd,
                              reuse.get());
    ctx.state = reuse;
  } else {
    x = x.reshape(flat4(dd.batch, dd.out_channels, dd.win.out));
    y = kernels::conv_backward_data(x, w.reshape(flat4(dd.out_channels, dd.in_channels, dd.win.kernel)), dd);
  }
  return std::vector<NDArrayView>{y.reshape(out_shape)};
}

// The gradients of a (non-transposed) convolution with its output gradient, its operand or
// its operand's gradient in oneDNN layouts. `dbias` (fused convolutions, i = 0): the bias
// gradient from the same pass. Undefined (ctx.layout_grad set for a kept one) or computed.
NDArrayView convolution_backward_layouts(ComputeContext& ctx, size_t i, const ConvSetup& cs, NDArrayView* dbias,
                                         bool& done) {
  const auto& dd = cs.dims;
  done = false;
  const LayoutValue* gb = ctx.layout_grad_output(0);
  if (cs.transpose || !kernels::conv_runs_on_primitives(dd, DataType::Float)) return {};
  if (!gb && !dbias && !(i == 1 && ctx.may_keep_layout_grad(1))) return {};
  if (gb) {
    std::vector<int64_t> gdims{dd.batch, dd.out_channels};
    gdims.insert(gdims.end(), dd.win.out.begin(), dd.win.out.end());
    if (kernels::layout_dims(*gb) != gdims) return {};
  }
  auto* reuse = static_cast<kernels::ConvReuse*>(ctx.state.get());
  NDArrayView g =
      gb ? NDArrayView()
         : ctx.grad_outputs[0].to_dense().contiguous().reshape(flat4(dd.batch, dd.out_channels, dd.win.out));
  if (g.defined() && g.dtype() != DataType::Float) return {};
  done = true;
  kernels::ConvLayoutIO io;
  if (i == 0) {
    const bool held_source = reuse && kernels::conv_reuse_has_source(*reuse);
    NDArrayView x;
    const LayoutValue* xb = nullptr;
    if (!held_source) {
      xb = layout_operand(ctx, dd, 1);
      if (!xb) x = ctx.input(1).to_dense().contiguous().reshape(flat4(dd.batch, dd.in_channels, dd.win.in));
      if (x.defined() && x.dtype() != DataType::Float) x = x.cast(DataType::Float);
    }
    io.in = xb;
    io.in_b = gb;
    NDArrayView r = kernels::conv_backward_weights(x, g, dd, reuse, &io, dbias);
    if (reuse) kernels::release_source(*reuse);
    if (r.dtype() != ctx.inputs[0].dtype()) r = r.cast(ctx.inputs[0].dtype());
    return r.reshape(ctx.input_shape(0));
  }
  NDArrayView w = ctx.input(0).to_dense().contiguous();
  io.in = gb;
  io.keep_out = ctx.may_keep_layout_grad(1);
  NDArrayView r = kernels::conv_backward_data(
      g, w.reshape(flat4(dd.out_channels, dd.in_channels / dd.groups, dd.win.kernel)), dd, reuse, &io);
  if (reuse) kernels::release_output_gradient(*reuse);
  if (io.keep_out) {
    io.out->shape = ctx.input_shape(1);
    ctx.layout_grad = io.out;
    return NDArrayView();
  }
  return r.reshape(ctx.input_shape(1));
}

NDArrayView convolution_backward(ComputeContext& ctx, size_t i) {
  ConvSetup cs = runtime_conv(ctx);
  bool done = false;
  NDArrayView lr = convolution_backward_layouts(ctx, i, cs, nullptr, done);
  if (done) return lr;
  const auto& dd = cs.dims;
  auto* reuse = static_cast<kernels::ConvReuse*>(ctx.state.get());  // from the forward, when training
  // The weight gradient reads the forward's source from `reuse` where it holds it, so an
  // operand in a oneDNN layout need not be made plain.
  const bool held_source = !cs.transpose && i == 0 && reuse && kernels::conv_reuse_has_source(*reuse);
  NDArrayView x = held_source ? NDArrayView() : ctx.input(1).to_dense().contiguous();
  NDArrayView w = ctx.input(0).to_dense().contiguous();
  NDArrayView g = ctx.grad_output(0).to_dense().contiguous();
  DataType t = g.dtype();
  if (w.dtype() != t) w = w.cast(t);
  if (x.defined() && x.dtype() != t) x = x.cast(t);
  NDShape wk = flat4(dd.out_channels, dd.in_channels / dd.groups, dd.win.kernel);
  NDArrayView r;
  if (!cs.transpose) {
    NDArrayView x4 = x.defined() ? x.reshape(flat4(dd.batch, dd.in_channels, dd.win.in)) : x;
    NDArrayView g4 = g.reshape(flat4(dd.batch, dd.out_channels, dd.win.out));
    if (i == 0) {
      r = kernels::conv_backward_weights(x4, g4, dd, reuse);
      if (reuse) kernels::release_source(*reuse);
    } else {
      r = kernels::conv_backward_data(g4, w.reshape(wk), dd, reuse);
      if (reuse) kernels::release_output_gradient(*reuse);
    }
  } else {
    // y = conv_backward_data(x, w): its gradients are the forward convolution of the
    // output gradient (for x) and the weight gradient with the roles of x and y swapped.
    NDArrayView x4 = x.reshape(flat4(dd.batch, dd.out_channels, dd.win.out));
    NDArrayView g4 = g.reshape(flat4(dd.batch, dd.in_channels, dd.win.in));
    r = i == 0 ? kernels::conv_backward_weights(g4, x4, dd) : kernels::conv_forward(g4, w.reshape(wk), dd);
  }
  const DataType in_type =
      i == 0 ? ctx.inputs[0].dtype() : (ctx.inputs[1].defined() ? ctx.inputs[1].dtype() : DataType::Float);
  if (r.dtype() != in_type) r = r.cast(in_type);
  return r.reshape(ctx.input_shape(i));
}

void register_convolution() {
  OpDef d;
  d.name = "Convolution";
  d.op_type = 33;
  d.inputs = {{"kernel"}, {"operand"}};
  d.attrs = convolution_attrs();
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    if (!ctx.input(0).dynamic_axes().empty()) ctx.fail("the kernel must not have dynamic axes");
    if (ctx.input(0).is_sparse() || ctx.input(1).is_sparse()) ctx.fail("sparse operands are not supported");
    NDShape W = ctx.shape(0), X = ctx.shape(1);
    // The layers leave the kernel's input-channel axis to be inferred from the operand.
    if (W.has_inferred()) {
      int64_t rr = ctx.attr_int("reductionRank"), groups = ctx.attr_int("groups");
      bool transpose = ctx.attr_bool("transpose");
      std::vector<int64_t> w = W.dims();
      size_t ci = transpose ? 0 : 1;
      if (rr == 1 && W.rank() == X.rank() + 1 && X.rank() >= 1 && X[0] >= 0 && w[ci] == NDShape::kInferredDimension &&
          groups >= 1) {
        w[ci] = transpose ? X[0] : X[0] / groups;
        ctx.fill_inferred(0, NDShape(w));
        W = ctx.shape(0);
      }
      if (W.has_inferred()) ctx.fail("cannot infer the kernel's dimensions " + W.str());
    }
    ConvSetup cs;
    try {
      cs = conv_setup(ctx.attrs(), W, X);
    } catch (const NotImplementedError&) {
      throw;
    } catch (const Error& e) {
      ctx.fail(e.what());
    }
    return ctx.one(cs.out_static);
  };
  d.forward = convolution_forward;
  d.backward = convolution_backward;
  d.backend_layouts = true;
  register_op(std::move(d));
}

// ------------------------------------------------------------------ pooling

struct PoolSetup {
  kernels::PoolDims dims;  // batch left at 1
  NDShape out_static;
};

// Pooling geometry over all axes of X; leading axes the window leaves alone fold into
// the channel count. `window_key` names the window attribute (pooling or unpooling).
PoolSetup pool_setup(const Dictionary& a, const NDShape& X, const std::string& window_key) {
  PoolSetup ps;
  auto window = ints_attr(a, window_key);
  // An empty window is global pooling (CNTK's unknown kernel shape): every axis but the first.
  if (window.empty()) window = X.rank() > 1 ? tail(X.dims(), X.rank() - 1) : std::vector<int64_t>{1};
  const size_t r = X.rank(), wr = window.size();
  if (wr > r) throw ValueError("the pooling window " + list_str(window) + " has more axes than the operand " + X.str());
  auto win = expand(window, wr, r, 1, "the pooling window");
  auto strides = expand(ints_attr(a, "strides"), wr, r, 1, "strides");
  auto autopad = expand(bools_attr(a, "autoPadding"), wr, r, 0, "auto_padding");
  auto lower = expand(ints_attr(a, "lowerPad"), wr, r, 0, "lower_pad");
  auto upper = expand(ints_attr(a, "upperPad"), wr, r, 0, "upper_pad");
  check_positive(win, "the pooling window", 1);
  check_positive(strides, "strides", 1);
  check_positive(lower, "lower_pad", 0);
  check_positive(upper, "upper_pad", 0);
  // Pooling and Unpooling declare these alike.
  bool ceil_out = op_attr_bool("Pooling", a, "ceilOutDim");
  int64_t type = op_attr_int("Pooling", a, "poolingType");
  if (type != 0 && type != 1) throw ValueError("pooling_type must be MAX_POOLING (0) or AVG_POOLING (1)");
  auto& d = ps.dims;
  d.kind = type == 0 ? kernels::PoolKind::Max : kernels::PoolKind::Average;
  d.include_pad = op_attr_bool("Pooling", a, "includePad");
  std::vector<int64_t> out(r);
  size_t lead = 0;  // leading axes that are copied through: part of the channels
  bool leading = true;
  for (size_t i = 0; i < r; ++i) {
    if (X[i] < 0) {  // free dimension: the output's is free too; the kernel sees the data's sizes
      out[i] = X[i];
      leading = false;
      continue;
    }
    AxisGeometry g = axis_geometry(X[i], win[i], strides[i], 1, autopad[i], lower[i], upper[i], ceil_out);
    if (g.out < 1)
      throw ValueError("the pooling window " + list_str(win) + " does not fit the operand " + X.str() + " along axis " +
                       std::to_string(i));
    out[i] = g.out;
    if (leading && win[i] == 1 && strides[i] == 1 && g.pad_lo == 0 && g.pad_hi == 0) {
      d.channels *= X[i];
      ++lead;
      continue;
    }
    leading = false;
    d.win.in.push_back(X[i]);
    d.win.out.push_back(g.out);
    d.win.kernel.push_back(win[i]);
    d.win.stride.push_back(strides[i]);
    d.win.dilation.push_back(1);
    d.win.pad_lo.push_back(g.pad_lo);
    d.win.pad_hi.push_back(g.pad_hi);
  }
  ps.out_static = NDShape(out);
  return ps;
}

PoolSetup checked_pool_setup(InferContext& ctx, const NDShape& X, const std::string& key) {
  try {
    return pool_setup(ctx.attrs(), X, key);
  } catch (const NotImplementedError&) {
    throw;
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
}

NDShape pool_flat(const PoolSetup& ps, bool out) {
  return flat4(ps.dims.batch, ps.dims.channels, out ? ps.dims.win.out : ps.dims.win.in);
}

void register_pooling() {
  OpDef d;
  d.name = "Pooling";
  d.op_type = 17;
  d.inputs = {{"operand"}};
  d.attrs = pooling_attrs("poolingWindowShape");
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    if (ctx.input(0).is_sparse()) ctx.fail("a sparse operand is not supported");
    return ctx.one(checked_pool_setup(ctx, ctx.shape(0), "poolingWindowShape").out_static);
  };
  d.backend_layouts = true;
  d.forward = [](ComputeContext& ctx) {
    PoolSetup ps = pool_setup(ctx.attr(), ctx.static_shape(0), "poolingWindowShape");
    ps.dims.batch = batch_of(ctx, 0);
    const NDShape out_shape = with_dyn(dyn_dims(ctx, 0), ps.out_static);
    // A training step's max pooling keeps oneDNN's argmax for the backward pass.
    auto saved = ctx.training && ps.dims.kind == kernels::PoolKind::Max ? kernels::make_pool_saved() : nullptr;
    ctx.state = saved;
    if (const LayoutValue* xb = ctx.layout_input(0);
        xb && (ctx.may_keep_layout_output(0) || !ctx.inputs[0].defined())) {
      NDArrayView y;
      std::shared_ptr<LayoutValue> yb;
      const bool keep = ctx.may_keep_layout_output(0);
      if (kernels::pool_forward_layout(*xb, ps.dims, keep, y, yb, saved.get())) {
        if (keep) {
          yb->shape = out_shape;
          ctx.layout_outputs[0] = std::move(yb);
          return std::vector<NDArrayView>{NDArrayView()};
        }
        return std::vector<NDArrayView>{y.reshape(out_shape)};
      }
    }
    NDArrayView y =
        kernels::pool_forward(ctx.input(0).to_dense().contiguous().reshape(pool_flat(ps, false)), ps.dims, saved.get());
    return std::vector<NDArrayView>{y.reshape(out_shape)};
  };
  d.backward = [](ComputeContext& ctx, size_t) {
    PoolSetup ps = pool_setup(ctx.attr(), ctx.static_shape(0), "poolingWindowShape");
    ps.dims.batch = batch_of(ctx, 0);
    const auto* saved = static_cast<const kernels::PoolSaved*>(ctx.state.get());
    const LayoutValue* xb = ctx.layout_input(0);
    if (xb && (ctx.may_keep_layout_grad(0) || ctx.layout_grad_output(0) || !ctx.inputs[0].defined())) {
      NDArrayView dx;
      std::shared_ptr<LayoutValue> dxb;
      const bool keep = ctx.may_keep_layout_grad(0);
      const LayoutValue* gb = ctx.layout_grad_output(0);
      NDArrayView g = gb ? NDArrayView() : ctx.grad_outputs[0];
      if (kernels::pool_backward_layout(*xb, gb, g, ps.dims, keep, dx, dxb, saved)) {
        if (!keep) return dx.reshape(ctx.input_shape(0));
        dxb->shape = ctx.input_shape(0);
        ctx.layout_grad = std::move(dxb);
        return NDArrayView();
      }
    }
    NDArrayView x = ctx.input(0).to_dense().contiguous().reshape(pool_flat(ps, false));
    NDArrayView g = ctx.grad_output(0).to_dense().contiguous().reshape(pool_flat(ps, true));
    return kernels::pool_backward(x, g, ps.dims, saved).reshape(ctx.input_shape(0));
  };
  register_op(std::move(d));
}

// Unpooling(operand, pooling_input): the output has pooling_input's shape.
void register_unpooling() {
  OpDef d;
  d.name = "Unpooling";
  d.op_type = 58;
  d.inputs = {{"operand"}, {"pooling_input", Gradient::Zero}};
  d.attrs = pooling_attrs("unpoolingWindowShape");
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    if (ctx.attr_int("poolingType") != 0) ctx.fail("only MAX_UNPOOLING is supported, as in CNTK");
    PoolSetup ps = checked_pool_setup(ctx, ctx.shape(1), "unpoolingWindowShape");
    if (ps.out_static != ctx.shape(0))
      ctx.fail("pooling the pooling input " + ctx.shape(1).str() + " with this window gives " + ps.out_static.str() +
               ", not the operand's shape " + ctx.shape(0).str());
    if (ctx.input(0).dynamic_axes().size() != ctx.input(1).dynamic_axes().size())
      ctx.fail("the operand and the pooling input must have the same dynamic axes");
    return ctx.one(ctx.shape(1));
  };
  d.forward = [](ComputeContext& ctx) {
    PoolSetup ps = pool_setup(ctx.attr(), ctx.static_shape(1), "unpoolingWindowShape");
    ps.dims.batch = batch_of(ctx, 1);
    NDArrayView x = ctx.inputs[0].to_dense().contiguous();
    NDArrayView pin = ctx.inputs[1].to_dense().contiguous();
    if (pin.dtype() != x.dtype()) pin = pin.cast(x.dtype());
    if (x.numel() != ps.dims.batch * ps.dims.channels * ps.dims.win.out_size())
      throw ShapeError("Unpooling: the operand " + x.shape().str() + " does not match the pooling input " +
                       pin.shape().str());
    NDArrayView y =
        kernels::max_unpool_forward(x.reshape(pool_flat(ps, true)), pin.reshape(pool_flat(ps, false)), ps.dims);
    return std::vector<NDArrayView>{y.reshape(with_dyn(dyn_dims(ctx, 1), ctx.static_shape(1)))};
  };
  d.backward = [](ComputeContext& ctx, size_t i) {
    const NDArrayView& in = ctx.inputs[i];
    // The pooling input only selects positions: piecewise constant, no gradient.
    if (i == 1) return NDArrayView::zeros(in.dtype(), in.shape());
    PoolSetup ps = pool_setup(ctx.attr(), ctx.static_shape(1), "unpoolingWindowShape");
    ps.dims.batch = batch_of(ctx, 1);
    NDArrayView g = ctx.grad_outputs[0].to_dense().contiguous().reshape(pool_flat(ps, false));
    NDArrayView pin = ctx.inputs[1].to_dense().contiguous();
    if (pin.dtype() != g.dtype()) pin = pin.cast(g.dtype());
    NDArrayView r = kernels::max_unpool_backward(g, pin.reshape(pool_flat(ps, false)), ps.dims);
    if (r.dtype() != in.dtype()) r = r.cast(in.dtype());
    return r.reshape(in.shape());
  };
  register_op(std::move(d));
}

// ------------------------------------------------------------- ROIPooling

struct RoiSetup {
  int64_t ph = 1, pw = 1;
  double scale = 1;
};

RoiSetup roi_setup(const Dictionary& a) {
  RoiSetup rs;
  auto shape = ints_attr(a, "roiOutputShape");
  if (shape.size() != 2)
    throw ValueError("roi_output_shape must have two dimensions (height, width), got " + list_str(shape));
  check_positive(shape, "roi_output_shape", 1);
  rs.ph = shape[0], rs.pw = shape[1];
  rs.scale = op_attr_double("ROIPooling", a, "spatialScale");
  if (!(rs.scale > 0) || !std::isfinite(rs.scale))
    throw ValueError("spatial_scale must be positive, got " + std::to_string(rs.scale));
  if (op_attr_int("ROIPooling", a, "poolingType") != 0) throw ValueError("ROI pooling supports only MAX_POOLING");
  return rs;
}

void register_roipooling() {
  OpDef d;
  d.name = "ROIPooling";
  d.op_type = 47;
  d.inputs = {{"operand"}, {"rois", Gradient::Zero}};
  d.attrs = {per_axis("roiOutputShape", AttrType::Shape),
             {"spatialScale", AttrType::Double, 1.0},
             {"poolingType", AttrType::Int, 0}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    RoiSetup rs;
    try {
      rs = roi_setup(ctx.attrs());
    } catch (const Error& e) {
      ctx.fail(e.what());
    }
    const NDShape &X = ctx.shape(0), &R = ctx.shape(1);
    if (X.rank() != 3) ctx.fail("the operand must be a feature map (channels, height, width)");
    if (R.rank() != 2 || R[1] != 4) ctx.fail("rois must have shape (number of ROIs, 4)");
    auto xa = ctx.input(0).dynamic_axes(), ra = ctx.input(1).dynamic_axes();
    if (xa.size() != ra.size()) ctx.fail("the operand and the rois must have the same dynamic axes");
    if (ctx.input(0).is_sparse() || ctx.input(1).is_sparse()) ctx.fail("sparse operands are not supported");
    return ctx.one(NDShape{R[0], X[0], rs.ph, rs.pw});
  };
  d.forward = [](ComputeContext& ctx) {
    RoiSetup rs = roi_setup(ctx.attr());
    int64_t N = batch_of(ctx, 0);
    NDShape X = ctx.static_shape(0), R = ctx.static_shape(1);
    NDArrayView x = ctx.inputs[0].to_dense().contiguous().reshape(NDShape{N, X[0], X[1], X[2]});
    NDArrayView rois = ctx.inputs[1].to_dense().contiguous();
    if (rois.numel() != N * R[0] * 4)
      throw ShapeError("ROIPooling: rois " + rois.shape().str() + " do not match the feature maps " +
                       ctx.inputs[0].shape().str());
    NDArrayView y = kernels::roi_pool_forward(x, rois.reshape(NDShape{N, R[0], 4}), rs.ph, rs.pw, rs.scale);
    return std::vector<NDArrayView>{y.reshape(with_dyn(dyn_dims(ctx, 0), NDShape{R[0], X[0], rs.ph, rs.pw}))};
  };
  d.backward = [](ComputeContext& ctx, size_t i) {
    const NDArrayView& in = ctx.inputs[i];
    // The ROI coordinates are rounded to pixels: piecewise constant, no gradient.
    if (i == 1) return NDArrayView::zeros(in.dtype(), in.shape());
    RoiSetup rs = roi_setup(ctx.attr());
    int64_t N = batch_of(ctx, 0);
    NDShape X = ctx.static_shape(0), R = ctx.static_shape(1);
    NDArrayView x = in.to_dense().contiguous().reshape(NDShape{N, X[0], X[1], X[2]});
    NDArrayView rois = ctx.inputs[1].to_dense().contiguous().reshape(NDShape{N, R[0], 4});
    NDArrayView g = ctx.grad_outputs[0].to_dense().contiguous();
    if (g.dtype() != x.dtype()) g = g.cast(x.dtype());
    g = g.reshape(NDShape{N, R[0], X[0], rs.ph, rs.pw});
    return kernels::roi_pool_backward(x, rois, g, rs.ph, rs.pw, rs.scale).reshape(in.shape());
  };
  register_op(std::move(d));
}

}  // namespace

// ------------------------------------------------------- fused convolution

namespace {

// The backend's activation of a fused step. The fused step keeps only the activation's
// output, so its gradient is taken from it (backward_from_output).
kernels::Eltwise eltwise_of(FusedActivation a) {
  switch (a) {
    case FusedActivation::ReLU: return kernels::Eltwise::Relu;
    case FusedActivation::Sigmoid: return kernels::Eltwise::Logistic;
    case FusedActivation::Tanh: return kernels::Eltwise::Tanh;
    case FusedActivation::ELU: return kernels::Eltwise::Elu;
    case FusedActivation::None: break;
  }
  return kernels::Eltwise::None;
}

// A context for one of the original steps, over the fused step's context.
ComputeContext part_context(const ComputeContext& outer, const FusedPart& part, std::vector<NDArrayView> inputs) {
  ComputeContext c;
  c.fn = part.fn;
  c.attrs = &part.fn->attributes();
  c.training = outer.training;
  c.deferred = outer.deferred;
  c.inputs = std::move(inputs);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    c.in_dyn.push_back(int(part.in_axes[i].size()));
    c.in_axes.push_back(part.in_axes[i]);
    // Only the operand X (input 1 of the fused step) and what is computed from it carry sequences.
    c.in_lengths.push_back(part.in_axes[i].size() == 2 ? outer.in_lengths[1] : std::vector<int64_t>());
  }
  c.out_axes = outer.out_axes;
  c.out_dyn = outer.out_dyn;
  return c;
}

std::vector<NDArrayView> fused_forward(const FusedConvSpec& sp, ComputeContext& ctx) {
  const NDArrayView& w = ctx.input(0);
  if (sp.has_bias) ctx.input(2);
  bool all_float = w.dtype() == DataType::Float && (ctx.layout_input(1) || ctx.inputs[1].dtype() == DataType::Float) &&
                   (!sp.has_bias || ctx.inputs[2].dtype() == DataType::Float);
  ConvSetup cs = runtime_conv(ctx);
  if (all_float && !cs.transpose) {
    const auto& dd = cs.dims;
    const LayoutValue* xb = layout_operand(ctx, dd, 1);
    const bool keep = ctx.may_keep_layout_output(0) && kernels::conv_runs_on_primitives(dd, DataType::Float);
    kernels::ConvLayoutIO io{xb, nullptr, keep, nullptr, nullptr};
    NDArrayView bias;
    if (sp.has_bias) {
      bias = ctx.inputs[2].to_dense().contiguous();
      if (bias.numel() == 1 && dd.out_channels > 1)  // one bias for every channel
        bias = NDArrayView::full(DataType::Float, NDShape{dd.out_channels}, double(bias.data<float>()[0]));
      bias = bias.reshape(NDShape{bias.numel()});
    }
    kernels::ConvPostOps post{sp.has_bias, eltwise_of(sp.activation), float(sp.alpha)};
    NDArrayView x4 =
        xb ? NDArrayView() : ctx.input(1).to_dense().contiguous().reshape(flat4(dd.batch, dd.in_channels, dd.win.in));
    NDArrayView w4 =
        w.to_dense().contiguous().reshape(flat4(dd.out_channels, dd.in_channels / dd.groups, dd.win.kernel));
    auto reuse = ctx.training ? kernels::make_conv_reuse() : nullptr;  // the backward passes reuse its reorders
    NDArrayView y =
        kernels::conv_forward_fused(x4, w4, bias, post, dd, reuse.get(), ctx.layout_inputs.empty() ? nullptr : &io);
    const NDShape out_shape = with_dyn(dyn_dims(ctx, 1), cs.out_static);
    if (y.defined() || io.out) share_made_source(ctx, io);
    if (keep && io.out) {
      ctx.state = reuse;
      return kept_output(ctx, io.out, out_shape);
    }
    if (y.defined()) {
      ctx.state = reuse;
      return {y.reshape(out_shape)};
    }
  }
  // oneDNN cannot run it: the original ops, one after the other.
  ComputeContext c = part_context(ctx, sp.conv, {w, ctx.input(1)});
  NDArrayView v = sp.conv.op->forward(c)[0];
  ctx.state = c.state;
  if (sp.has_bias) {
    std::vector<NDArrayView> ins(2);
    ins[sp.bias_side] = ctx.inputs[2];
    ins[1 - sp.bias_side] = v;
    ComputeContext cp = part_context(ctx, sp.plus, std::move(ins));
    v = sp.plus.op->forward(cp)[0];
  }
  if (sp.activation != FusedActivation::None) {
    ComputeContext ca = part_context(ctx, sp.act, {v});
    v = sp.act.op->forward(ca)[0];
  }
  return {v};
}

// The gradient with respect to the activation's input, from its output y.
NDArrayView pre_activation_gradient(const FusedConvSpec& sp, ComputeContext& ctx) {
  const NDArrayView& g = ctx.grad_outputs[0];
  const FusedActivation a = sp.activation;
  if (a == FusedActivation::None) return g;
  const NDArrayView& y = ctx.output(0);
  if (y.dtype() == DataType::Float && g.dtype() == DataType::Float) {
    NDArrayView dz = kernels::eltwise_backward(eltwise_of(a), true, float(sp.alpha), y, g);
    if (dz.defined()) return dz;
  }
  const double alpha = sp.alpha;
  return CNTK_DISPATCH_FLOAT(y.dtype(), T, [&] {
    return kernels::apply<T, 2>(y.dtype(), {&y, &g}, [a, alpha](T yv, T gv) {
      switch (a) {
        case FusedActivation::ReLU: return yv > 0 ? gv : T(0);
        case FusedActivation::Sigmoid: return T(gv * yv * (1 - yv));
        case FusedActivation::Tanh: return T(gv * (1 - yv * yv));
        case FusedActivation::ELU: return yv > 0 ? gv : T(gv * (yv + T(alpha)));
        case FusedActivation::None: break;
      }
      return gv;
    });
  });
}

// What the gradient calls of one fused step share: the pre-activation gradient (plain or
// in a oneDNN layout) and the bias gradient where the weight gradient's pass computed it.
struct FusedGrads {
  NDArrayView dz;
  std::shared_ptr<const LayoutValue> dzb;
  NDArrayView db;
};

NDArrayView fused_backward(const FusedConvSpec& sp, ComputeContext& ctx, size_t i) {
  if (!ctx.scratch) {
    auto fg = std::make_shared<FusedGrads>();
    const LayoutValue* gb = ctx.layout_grad_output(0);
    if (sp.activation == FusedActivation::None) {
      if (gb) fg->dzb = ctx.layout_grad_outputs[0];
    } else if (const LayoutValue* yb = ctx.layout_output(0)) {
      // The output in a oneDNN layout: the activation's gradient stays in it.
      fg->dzb = kernels::eltwise_backward_layout(eltwise_of(sp.activation), true, float(sp.alpha), *yb, gb,
                                                 ctx.grad_outputs[0]);
    }
    if (!fg->dzb) fg->dz = pre_activation_gradient(sp, ctx);
    ctx.scratch = fg;
  }
  FusedGrads& fg = *static_cast<FusedGrads*>(ctx.scratch.get());
  if (i == ctx.inputs.size())  // the fused-away intermediates' gradient (see conv_fused.h)
    return fg.dzb ? kernels::to_plain(*fg.dzb) : fg.dz;
  if (i == 2) {  // the bias: summed over batch and positions, as Plus does
    const NDShape bias_shape = ctx.input(2).shape();
    if (fg.db.defined() && fg.db.numel() == bias_shape.total_size()) return fg.db.reshape(bias_shape);
    return ctx.reduce_to_input(2, fg.dzb ? kernels::to_plain(*fg.dzb) : fg.dz);
  }
  ComputeContext c = part_context(ctx, sp.conv, {ctx.inputs[0], ctx.inputs[1]});
  c.state = ctx.state;
  // The convolution's gradient rule reads the operand in whichever layout the fused step has it.
  c.layout_inputs = {ctx.layout_inputs.size() > 0 ? ctx.layout_inputs[0] : nullptr,
                     ctx.layout_inputs.size() > 1 ? ctx.layout_inputs[1] : nullptr};
  c.make_plain = ctx.make_plain;
  c.outputs = {NDArrayView()};
  c.grad_outputs = {fg.dzb ? NDArrayView() : fg.dz};
  c.layout_grad_outputs = {fg.dzb};
  c.layout_grad_ok = {false, ctx.may_keep_layout_grad(1)};
  NDArrayView r;
  if (i == 0 && fg.dzb && sp.has_bias && ctx.grad_wanted.size() > 2 && ctx.grad_wanted[2]) {
    // The weight gradient's pass computes the bias gradient too (from dz in its oneDNN
    // layout, which the plain sum would first have to reorder).
    bool done = false;
    r = convolution_backward_layouts(c, 0, runtime_conv(c), &fg.db, done);
    if (done) return r;
  }
  r = sp.conv.op->backward(c, i);
  if (c.layout_grad) ctx.layout_grad = std::move(c.layout_grad);
  return r;
}

}  // namespace

FusedActivation fusable_activation(const Function& f) {
  const std::string& name = f.op_name();
  if (name == "ReLU") return FusedActivation::ReLU;
  if (name == "StableSigmoid") return FusedActivation::Sigmoid;
  if (name == "Tanh") return FusedActivation::Tanh;
  // From the output, ELU's gradient is known only where alpha keeps the sign of x.
  if (name == "ELU" && schema_attr_double(f, "alpha") >= 0) return FusedActivation::ELU;
  return FusedActivation::None;
}

OpDef fused_convolution_op(const FusedConvSpec& spec) {
  OpDef d;
  d.name = "Convolution";
  if (spec.has_bias) d.name += "+" + spec.plus.fn->op_name();
  if (spec.activation != FusedActivation::None) d.name += "+" + spec.act.fn->op_name();
  d.infer = [](InferContext& ctx) -> std::vector<OutputInfo> {
    throw Error("'" + ctx.op() + "' is a plan step: its shapes are those of the steps it replaces");
  };
  d.backend_layouts = true;
  d.forward = [spec](ComputeContext& ctx) { return fused_forward(spec, ctx); };
  d.backward = [spec](ComputeContext& ctx, size_t i) { return fused_backward(spec, ctx, i); };
  return d;
}

namespace {

// ------------------------------------------------ ConvolutionSequenceShape
//
// The lengths of the sequences a convolution over the sequence axis gives (CNTK 2.7's
// ConvolutionSequenceShape, which convolution(sequential=True) feeds to ToSequence).
// Inputs: the kernel W and the operand X, a sequence; the attributes are the
// convolution's. The sequence axis is the convolution's first spatial axis of the
// unpacked operand (C, T, M...) ((T, M...) with reduction_rank 0). A sequence of L steps
// gives floor((L + pads - dilated kernel) / stride) + 1 steps, pads being the dilated
// kernel - 1 with auto padding (so ceil(L / stride)) and lower + upper pad without;
// never fewer than 0. The result, one number per sequence, has the batch axis only.

struct SequenceAxisGeometry {
  int64_t kernel = 1, stride = 1, dilation = 1, lower = 0, upper = 0;
  bool autopad = true;
};

SequenceAxisGeometry sequence_axis_geometry(const Dictionary& a, const NDShape& W, const NDShape& X) {
  const int64_t rr = op_attr_int("ConvolutionSequenceShape", a, "reductionRank");
  if (rr != 0 && rr != 1) throw ValueError("reduction_rank must be 0 or 1, got " + std::to_string(rr));
  const size_t r = X.rank() + 1;  // the unpacked operand
  if (int64_t(r) - rr < 1) throw ValueError("the operand " + X.str() + " has no channel axis");
  const size_t n = r - size_t(rr), at = size_t(rr);
  if (W.rank() < n + 1)
    throw ValueError("the kernel " + W.str() + " has no spatial axis for the sequence axis of an operand " + X.str());
  SequenceAxisGeometry g;
  g.kernel = W[W.rank() - n];
  g.stride = expand(ints_attr(a, "strides"), r, r, 1, "strides")[at];
  g.dilation = expand(ints_attr(a, "dilation"), r, r, 1, "dilation")[at];
  auto autopad = bools_attr(a, "autoPadding");
  if (autopad.empty()) autopad = {1};
  g.autopad = expand(autopad, r, r, 0, "auto_padding")[at] != 0;
  g.lower = expand(ints_attr(a, "lowerPad"), r, r, 0, "lower_pad")[at];
  g.upper = expand(ints_attr(a, "upperPad"), r, r, 0, "upper_pad")[at];
  if (g.kernel < 1 || g.stride < 1 || g.dilation < 1 || g.lower < 0 || g.upper < 0)
    throw ValueError(
        "the sequence axis needs a known kernel extent, positive stride and dilation and "
        "non-negative pads");
  return g;
}

int64_t sequence_output_length(const SequenceAxisGeometry& g, int64_t steps) {
  const int64_t span = (g.kernel - 1) * g.dilation + 1;
  const int64_t room = steps + (g.autopad ? span - 1 : g.lower + g.upper) - span;
  return room < 0 ? 0 : room / g.stride + 1;
}

void register_convolution_sequence_shape() {
  OpDef d;
  d.name = "ConvolutionSequenceShape";
  d.op_type = 97;
  d.inputs = {{"kernel", Gradient::Zero}, {"operand", Gradient::Zero}};
  d.attrs = convolution_attrs();
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    const auto& axes = ctx.input(1).dynamic_axes();
    std::vector<Axis> batch;
    for (auto& ax : axes)
      if (!ax.is_sequence()) batch.push_back(ax);
    if (batch.size() + 1 != axes.size()) ctx.fail("the operand must be a sequence");
    try {
      sequence_axis_geometry(ctx.attrs(), ctx.shape(0), ctx.shape(1));
    } catch (const Error& e) {
      ctx.fail(e.what());
    }
    return std::vector<OutputInfo>{{NDShape{1}, ctx.dtype(1), batch}};
  };
  d.forward = [](ComputeContext& ctx) {
    SequenceAxisGeometry g = sequence_axis_geometry(ctx.attr(), ctx.static_shape(0), ctx.static_shape(1));
    const NDArrayView& x = ctx.inputs[1];  // [T, B, ...]
    const int64_t T = x.shape()[0], B = x.shape()[1];
    const auto& lens = ctx.in_lengths[1];
    NDArrayView out = NDArrayView::zeros(DataType::Double, NDShape{B, 1});
    double* p = out.data<double>();
    for (int64_t b = 0; b < B; ++b) p[b] = double(sequence_output_length(g, lens.empty() ? T : lens[size_t(b)]));
    return std::vector<NDArrayView>{out.cast(x.dtype())};
  };
  d.gradient = Gradient::Zero;  // integer-valued, as CNTK's node propagates nothing
  register_op(std::move(d));
}

// ------------------------------------------------------------- ONNX forms

// The explicit pads of a window: ONNX's [begin..., end...].
std::vector<int64_t> onnx_pads(const kernels::Window& w) {
  std::vector<int64_t> p = w.pad_lo;
  p.insert(p.end(), w.pad_hi.begin(), w.pad_hi.end());
  return p;
}

// Convolution -> Conv / ConvTranspose. The engine's kernel (O, C/groups, k...) (transposed:
// (C, O, k...)) is ONNX's W as it is; its geometry (centred auto padding included) is
// written as explicit pads.
void convolution_onnx(onnx_io::ExportContext& c) {
  using onnx_io::Attr;
  const Dictionary& a = c.function().attributes();
  const NDShape W = c.input_var(0).shape(), X = c.input_var(1).shape();
  if (c.attr_int("reductionRank") != 1) c.unsupported("convolution with reduction_rank 0");
  if (c.attr_bool("sequential")) c.unsupported("convolution over the sequence axis");
  // A kernel (C, k...) makes one output map: ONNX's W gets that map's axis of size 1.
  const bool one_map = W.rank() == X.rank();
  if (W.rank() != X.rank() + 1 && !one_map) c.unsupported("a kernel of rank " + std::to_string(W.rank()));
  ConvSetup cs = conv_setup(a, W, X);
  const auto& w = cs.dims.win;
  for (auto d : cs.transpose ? w.out : w.in)
    if (d < 0) c.unsupported("convolution over spatial axes of free size");
  std::vector<Attr> attrs{Attr("kernel_shape", w.kernel), Attr("strides", w.stride), Attr("dilations", w.dilation),
                          Attr("pads", onnx_pads(w))};
  if (!cs.transpose) attrs.emplace_back("group", cs.dims.groups);
  if (cs.transpose) {
    // The engine's output size may exceed what the pads give: the rest is output_padding.
    std::vector<int64_t> op(w.in.size());
    for (size_t i = 0; i < op.size(); ++i)
      op[i] =
          w.in[i] - ((w.out[i] - 1) * w.stride[i] + (w.kernel[i] - 1) * w.dilation[i] + 1 - w.pad_lo[i] - w.pad_hi[i]);
    attrs.emplace_back("output_padding", op);
  }
  const std::string kernel = one_map ? c.unsqueeze(c.input(0), {cs.transpose ? 1 : 0}) : c.input(0);
  onnx_io::over_batch_export(c, 1, [&](const std::string& x, const std::string& out) {
    return c.node1(cs.transpose ? "ConvTranspose" : "Conv", {x, kernel}, attrs, out);
  });
}

// Pooling -> MaxPool / AveragePool (GlobalMax/AveragePool for CNTK's global pooling). Axes
// the window leaves alone before the pooled ones are channels; the engine's geometry is
// written as explicit pads.
void pooling_onnx(onnx_io::ExportContext& c) {
  using onnx_io::Attr;
  const Dictionary& a = c.function().attributes();
  const NDShape X = c.input_var(0).shape();
  PoolSetup ps = pool_setup(a, X, "poolingWindowShape");
  const auto& w = ps.dims.win;
  const bool max = ps.dims.kind == kernels::PoolKind::Max;
  if (X.rank() < 2 || ps.dims.channels != X[0] || w.in.size() != X.rank() - 1)
    c.unsupported("pooling other than over every axis but the first (the channels)");
  const bool global = ints_attr(a, "poolingWindowShape").empty();
  std::vector<Attr> attrs;
  if (!global) {
    attrs = {Attr("kernel_shape", w.kernel), Attr("strides", w.stride), Attr("pads", onnx_pads(w))};
    if (!max) attrs.emplace_back("count_include_pad", int64_t(ps.dims.include_pad));
    if (c.opset() >= 10)
      attrs.emplace_back("ceil_mode", int64_t(c.attr_bool("ceilOutDim")));
    else if (c.attr_bool("ceilOutDim"))
      c.unsupported("ceil_out_dim below opset 10");
  }
  const char* op = global ? (max ? "GlobalMaxPool" : "GlobalAveragePool") : (max ? "MaxPool" : "AveragePool");
  onnx_io::over_batch_export(
      c, 0, [&](const std::string& x, const std::string& out) { return c.node1(op, {x}, attrs, out); });
}

}  // namespace

void register_conv_ops() {
  register_convolution_sequence_shape();
  register_convolution();
  register_pooling();
  register_unpooling();
  register_roipooling();
  set_onnx_export("Convolution", convolution_onnx);
  set_onnx_export("Pooling", pooling_onnx);
}

namespace ops {

FunctionPtr sequential_convolution(const Variable& kernel, const Variable& operand, Dictionary attrs,
                                   const std::string& name) {
  const auto& axes = operand.dynamic_axes();
  const bool pending = std::any_of(axes.begin(), axes.end(), [](const Axis& a) { return a.name() == "UnknownAxes"; });
  if (!pending && axes.size() != 2)
    throw ValueError("convolution: sequential=True needs an operand with a sequence axis, but " + operand.str() +
                     " has " + std::to_string(axes.size()) + " dynamic axes");
  auto op = [](const std::string& op_name, std::vector<Variable> in, Dictionary a, const std::string& n = "") {
    return Function::primitive(op_name, std::move(in), std::move(a), n)->output();
  };
  attrs["sequential"] = false;  // the Convolution below sees the sequence axis as a static one
  // The sequences zero-padded to the longest: (T, C, M...), or (T, M...) without a channel axis.
  Variable unpacked = op("UnpackSequence", {operand}, {{"paddingValue", 0.0}, {"suppressMaskOutput", true}});
  auto swap01 = [&](const Variable& v) { return op("TransposeAxes", {v}, {{"axis1", Axis(0)}, {"axis2", Axis(1)}}); };
  const auto rr = attrs.find("reductionRank");
  if (rr == attrs.end() || rr->second.as_int() != 0) unpacked = swap01(unpacked);  // (C, T, M...)
  Variable y = swap01(op("Convolution", {kernel, unpacked}, attrs, name));         // (T', O, M'...)
  Dictionary shape_attrs = attrs;
  shape_attrs["sequential"] = true;
  Variable lengths =
      op("ConvolutionSequenceShape", {kernel, operand}, shape_attrs, name.empty() ? "" : name + "_sequence_shape");
  // Each sequence cut back to its own output length, on a new sequence axis.
  return Function::composite(
      Function::primitive("ToSequence", {y, op("StopGradient", {lengths}, {})},
                          {{"sequenceAxisNamePrefix", std::string("ConvOverSequenceAxis_")}}, ""),
      "");
}

}  // namespace ops

}  // namespace cntk
