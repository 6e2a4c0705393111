// Op family: movement. Reshape, Slice, Splice, TransposeAxes, Pad, Squeeze, Gather
// and OneHot: ops that move, copy or pick elements without arithmetic.
//
// Shapes are in NumPy order. A shape rule sees static shapes that may hold free (-3)
// or inferred (-1) dimensions; each kernel reruns the same rule on the concrete
// runtime shapes, so free dimensions resolve on every call. Static axis k of an input
// is runtime axis in_dyn + k; the leading dynamic dims pass through untouched.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/backend.h"
#include "kernels/cpu/movement.h"
#include "ops/eager.h"
#include "onnx/export.h"
#include "ops/op.h"
#include "ops/sequence.h"

namespace cntk {
namespace {

using kernels::StridedView;
constexpr int64_t kFree = NDShape::kFreeDimension;
constexpr int64_t kInferred = NDShape::kInferredDimension;

// Reports a bad argument: through the shape rule (naming the op and its input shapes)
// at graph construction, or as a ValueError naming the op at run time.
struct Fail {
  const InferContext* ctx = nullptr;
  std::string op;
  [[noreturn]] void operator()(const std::string& what) const {
    if (ctx) ctx->fail(what);
    throw ValueError(op + ": " + what);
  }
};
Fail at_infer(const InferContext& ctx) { return {&ctx, ctx.op()}; }
Fail at_run(const char* op) { return {nullptr, op}; }

bool has_attr(const Dictionary& a, const char* key) {
  auto it = a.find(key);
  return it != a.end() && !it->second.empty();
}

const DictValue& attr(const Dictionary& a, const char* key, const Fail& fail) {
  if (!has_attr(a, key)) fail(std::string("missing attribute '") + key + "'");
  return a.at(key);
}

std::string str(const std::vector<int64_t>& v) { return NDShape(v).str(); }

// The index of a static axis in a shape of `rank`, negative counting from the end.
size_t static_axis(const Axis& ax, size_t rank, const Fail& fail, const std::string& what = "axis") {
  if (!ax.is_static() || ax.static_index() == Axis::kNewLeading)
    fail(what + " must be a static axis, not '" + ax.name() + "'");
  int i = ax.static_index(), r = int(rank);
  int n = i < 0 ? i + r : i;
  if (n < 0 || n >= r) fail(what + " " + std::to_string(i) + " is out of range for rank " + std::to_string(r));
  return size_t(n);
}

NDShape dyn_part(const NDArrayView& x, int nd) { return x.shape().sub(0, nd); }

// A contiguous copy of a strided view (the view itself when already contiguous),
// through the threaded copy kernel.
NDArrayView compact(const NDArrayView& v) {
  if (v.is_contiguous()) return v;
  NDArrayView out(v.dtype(), v.shape());
  kernels::copy(StridedView::of(out), StridedView::of(v));
  return out;
}

std::vector<int> identity_perm(size_t n) {
  std::vector<int> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = int(i);
  return p;
}

// ------------------------------------------------------------------ Reshape
//
// Replaces the axes [beginAxis, endAxis) by newShape; one dimension of newShape may be
// -1 (or 0, as CNTK's documentation allows) and is inferred from the element count.
// Axis::new_leading_axis() as either bound means the end of the shape, as in CNTK.

size_t reshape_bound(const Dictionary& a, const char* key, const char* what, size_t rank, size_t def,
                     const Fail& fail) {
  if (!has_attr(a, key)) return def;
  const Axis& ax = a.at(key).as_axis();
  if (!ax.is_static()) fail(std::string(what) + " must be a static axis, not '" + ax.name() + "'");
  int i = ax.static_index(), r = int(rank);
  if (i == Axis::kNewLeading) return rank;
  int n = i < 0 ? i + r : i;
  if (n < 0 || n > r)
    fail(std::string(what) + " " + std::to_string(i) + " is out of range for rank " + std::to_string(r));
  return size_t(n);
}

NDShape reshape_shape(const NDShape& in, const Dictionary& a, const Fail& fail) {
  size_t r = in.rank();
  size_t b = reshape_bound(a, "beginAxis", "begin_axis", r, 0, fail);
  size_t e = reshape_bound(a, "endAxis", "end_axis", r, r, fail);
  if (b > e) fail("begin_axis (" + std::to_string(b) + ") comes after end_axis (" + std::to_string(e) + ")");
  std::vector<int64_t> rep = attr(a, "newShape", fail).as_int_list();
  int inferred = -1;
  std::vector<size_t> free;  // free dimensions: known once the operand's are
  int64_t target = 1;
  for (size_t k = 0; k < rep.size(); ++k) {
    if (rep[k] == kInferred || rep[k] == 0) {
      if (inferred >= 0) fail("the shape " + str(rep) + " has more than one inferred dimension");
      inferred = int(k);
    } else if (rep[k] == kFree) {
      free.push_back(k);
    } else if (rep[k] < 0) {
      fail("the shape " + str(rep) + " has an invalid dimension " + std::to_string(rep[k]));
    } else {
      target *= rep[k];
    }
  }
  NDShape sub = in.sub(b, e);
  if (sub.is_known() && !free.empty()) {
    // CNTK took a free dimension in the new shape (Keras' CNTK backend writes one
    // for a dimension known only at run time); once the operand's shape is known it
    // is the dimension left to infer.
    if (free.size() + (inferred >= 0) > 1)
      fail("the shape " + str(rep) + " has more than one dimension to infer from " + sub.str());
    inferred = int(free[0]);
  }
  if (sub.is_known()) {
    int64_t total = sub.total_size();
    if (inferred >= 0) {
      if (target == 0 || total % target != 0)
        fail("cannot reshape " + sub.str() + " (" + std::to_string(total) + " elements) into " + str(rep));
      rep[inferred] = total / target;
    } else if (total != target) {
      fail("cannot reshape " + sub.str() + " (" + std::to_string(total) + " elements) into " + str(rep) + " (" +
           std::to_string(target) + " elements)");
    }
  } else if (inferred >= 0) {
    rep[inferred] = sub.has_inferred() ? kInferred : kFree;
  }
  return in.sub(0, b).concat(NDShape(rep)).concat(in.sub(e));
}

void register_reshape() {
  OpDef d;
  d.name = "Reshape";
  d.op_type = 16;
  d.inputs = {{"x"}};
  d.attrs = {{"newShape", AttrType::Shape},
             {"beginAxis", AttrType::Axis, {}, AxisOrder::NumPy},
             {"endAxis", AttrType::Axis, {}, AxisOrder::NumPy}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    return std::vector<OutputInfo>{
        {reshape_shape(ctx.shape(0), ctx.attrs(), at_infer(ctx)), ctx.dtype(0), ctx.input(0).dynamic_axes()}};
  };
  d.forward = [](ComputeContext& ctx) {
    NDArrayView x = ctx.inputs[0].to_dense();
    NDShape out = reshape_shape(ctx.static_shape(0), ctx.attr(), at_run("Reshape"));
    return std::vector<NDArrayView>{x.reshape(dyn_part(x, ctx.in_dyn[0]).concat(out))};
  };
  d.backward = [](ComputeContext& ctx, size_t) { return ctx.grad_outputs[0].reshape(ctx.inputs[0].shape()); };
  register_op(std::move(d));
}

// -------------------------------------------------------------------- Slice
//
// CNTK's index rules: a negative begin counts from the end, an end <= 0 counts from
// the end (0 is the end itself), the range must hold at least one element, and a
// negative stride walks [begin, end) backwards from end - 1. Several axes apply in turn.

struct SliceStep {
  size_t axis;
  int64_t begin, end, stride;  // concrete, in range
};

// Output shape of Slice; `steps` receives the resolved ranges (all of them once the
// shape is concrete, as at run time).
NDShape slice_shape(const NDShape& in, const Dictionary& a, const Fail& fail, std::vector<SliceStep>* steps) {
  std::vector<Axis> axes;
  std::vector<int64_t> begin, end, stride;
  if (has_attr(a, "axisVec")) {
    axes = a.at("axisVec").as_axis_list();
    begin = attr(a, "beginIndexVec", fail).as_int_list();
    end = attr(a, "endIndexVec", fail).as_int_list();
    stride =
        has_attr(a, "sliceStridesVec") ? a.at("sliceStridesVec").as_int_list() : std::vector<int64_t>(axes.size(), 1);
  } else {
    axes = {attr(a, "axis", fail).as_axis()};
    begin = {attr(a, "beginIndex", fail).as_int()};
    end = {attr(a, "endIndex", fail).as_int()};
    stride = {op_attr_int("Slice", a, "sliceStrides")};
  }
  if (axes.empty() || begin.size() != axes.size() || end.size() != axes.size() || stride.size() != axes.size())
    fail("axis, begin_index, end_index and strides must have the same length (got " + std::to_string(axes.size()) +
         ", " + std::to_string(begin.size()) + ", " + std::to_string(end.size()) + ", " +
         std::to_string(stride.size()) + ")");
  std::vector<int64_t> dims = in.dims();
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i].is_dynamic())
      fail("slicing along the dynamic axis '" + axes[i].name() + "' is not supported; use cntk.sequence.slice");
    size_t k = static_axis(axes[i], dims.size(), fail);
    int64_t b = begin[i], e = end[i], s = stride[i], n = dims[k];
    if (s == 0) fail("the stride must not be 0");
    int64_t step = s < 0 ? -s : s;
    if (n < 0) {  // free or inferred: only an absolute range fixes the size
      if (b >= 0 && e > 0) {
        if (e <= b) fail("the index range [" + std::to_string(b) + ", " + std::to_string(e) + ") is empty");
        dims[k] = (e - b + step - 1) / step;
      }
      if (steps) steps->push_back({k, b, e, s});  // as given: the ONNX writer reads them
      continue;
    }
    int64_t rb = b >= 0 ? b : b + n, re = e > 0 ? e : e + n;
    if (rb < 0 || re > n || rb >= re)
      fail("the index range [" + std::to_string(b) + ", " + std::to_string(e) + "), interpreted as [" +
           std::to_string(rb) + ", " + std::to_string(re) + "), is invalid for axis " + std::to_string(k) +
           " of size " + std::to_string(n));
    dims[k] = (re - rb + step - 1) / step;
    if (steps) steps->push_back({k, rb, re, s});
  }
  return NDShape(dims);
}

void register_slice() {
  OpDef d;
  d.name = "Slice";
  d.op_type = 14;
  d.inputs = {{"x"}};
  d.attrs = {{"axis", AttrType::Axis, {}, AxisOrder::NumPy},
             {"beginIndex", AttrType::Int},
             {"endIndex", AttrType::Int},
             {"sliceStrides", AttrType::Int, 1},
             {"axisVec", AttrType::AxisList, {}, AxisOrder::NumPy},
             {"beginIndexVec", AttrType::IntList},
             {"endIndexVec", AttrType::IntList},
             {"sliceStridesVec", AttrType::IntList}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    return std::vector<OutputInfo>{
        {slice_shape(ctx.shape(0), ctx.attrs(), at_infer(ctx), nullptr), ctx.dtype(0), ctx.input(0).dynamic_axes()}};
  };
  d.forward = [](ComputeContext& ctx) {
    NDArrayView x = ctx.inputs[0].to_dense();
    std::vector<SliceStep> steps;
    slice_shape(ctx.static_shape(0), ctx.attr(), at_run("Slice"), &steps);
    StridedView v = StridedView::of(x);
    for (auto& s : steps) v = v.narrow(ctx.in_dyn[0] + s.axis, s.begin, s.end, s.stride);
    NDArrayView y(x.dtype(), NDShape(v.dims));
    kernels::copy(StridedView::of(y), v);
    return std::vector<NDArrayView>{y};
  };
  d.backward = [](ComputeContext& ctx, size_t) {
    std::vector<SliceStep> steps;
    slice_shape(ctx.static_shape(0), ctx.attr(), at_run("Slice"), &steps);
    const NDArrayView& g = ctx.grad_outputs[0];
    NDArrayView dx = NDArrayView::zeros(g.dtype(), ctx.inputs[0].shape());
    StridedView v = StridedView::of(dx);
    for (auto& s : steps) v = v.narrow(ctx.in_dyn[0] + s.axis, s.begin, s.end, s.stride);
    kernels::copy(v, StridedView::of(g));
    return dx;
  };
  register_op(std::move(d));
}

// ------------------------------------------------------------------- Splice
//
// Concatenation along one static axis. Inputs are left-padded with 1s to a common
// rank; outside the splice axis a dimension of 1 broadcasts. A negative axis beyond
// the inputs' rank, or Axis::new_leading_axis(), adds leading axes (stacking).

struct SpliceGeometry {
  size_t rank = 0, axis = 0;
};

SpliceGeometry splice_geometry(size_t max_rank, const Dictionary& a, const Fail& fail) {
  Axis ax = schema_attr(find_op("Splice"), "Splice", a, "axis").as_axis();
  if (!ax.is_static()) fail("splicing along the dynamic axis '" + ax.name() + "' is not supported");
  int i = ax.static_index();
  if (i == Axis::kNewLeading) return {max_rank + 1, 0};
  if (i >= 0) {
    if (size_t(i) >= max_rank)
      fail("axis " + std::to_string(i) + " is out of range for inputs of rank " + std::to_string(max_rank));
    return {max_rank, size_t(i)};
  }
  size_t r = std::max<size_t>(max_rank, size_t(-int64_t(i)));
  return {r, size_t(int64_t(r) + i)};
}

NDShape splice_shape(const std::vector<NDShape>& shapes, const Dictionary& a, const Fail& fail) {
  size_t max_rank = 0;
  for (auto& s : shapes) max_rank = std::max(max_rank, s.rank());
  SpliceGeometry g = splice_geometry(max_rank, a, fail);
  std::vector<int64_t> out(g.rank, 1);
  out[g.axis] = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const NDShape& s = shapes[i];
    size_t pad = g.rank - s.rank();
    for (size_t k = 0; k < g.rank; ++k) {
      int64_t d = k < pad ? 1 : s[k - pad], &o = out[k];
      if (k == g.axis) {
        if (d == kInferred || o == kInferred)
          o = kInferred;
        else if (d == kFree || o == kFree)
          o = kFree;
        else
          o += d;
      } else if (d == o || d == 1) {
        continue;
      } else if (o == 1) {
        o = d;  // a known, free or inferred dimension broadcasts over 1
      } else if (d == kInferred || d == kFree) {
        continue;
      } else if (o == kInferred || o == kFree) {
        o = d;
      } else {
        fail("input " + std::to_string(i) + " has dimension " + std::to_string(d) + " on axis " + std::to_string(k) +
             " where the others have " + std::to_string(o) + " (only the splice axis may differ)");
      }
    }
  }
  return NDShape(out);
}

std::vector<NDShape> static_shapes(const ComputeContext& ctx) {
  std::vector<NDShape> s;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) s.push_back(ctx.static_shape(i));
  return s;
}

// The runtime layout of a Splice: the output shape and each input's extent on the axis.
struct SpliceRun {
  size_t axis = 0;  // runtime axis
  NDShape out;
  std::vector<int64_t> offset, extent;
  std::vector<NDArrayView> aligned;
};

SpliceRun splice_run(const ComputeContext& ctx) {
  Fail fail = at_run("Splice");
  std::vector<NDShape> shapes = static_shapes(ctx);
  NDShape out_static = splice_shape(shapes, ctx.attr(), fail);
  size_t rank = out_static.rank(), nd = size_t(ctx.out_dyn);
  SpliceRun r;
  size_t max_rank = 0;
  for (auto& s : shapes) max_rank = std::max(max_rank, s.rank());
  r.axis = nd + splice_geometry(max_rank, ctx.attr(), fail).axis;
  std::vector<int64_t> dyn(nd, 1);
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    r.aligned.push_back(ctx.aligned(i, rank));
    for (size_t k = 0; k < nd; ++k) {
      int64_t d = r.aligned[i].shape()[k];
      if (d != 1 && dyn[k] != 1 && d != dyn[k])
        fail("inputs have different sizes (" + std::to_string(d) + " and " + std::to_string(dyn[k]) +
             ") on the dynamic axis '" + ctx.out_axes[k].name() + "'");
      dyn[k] = std::max(dyn[k], d);
    }
  }
  r.out = NDShape(dyn).concat(out_static);
  int64_t off = 0;
  for (auto& x : r.aligned) {
    r.offset.push_back(off);
    r.extent.push_back(x.shape()[r.axis]);
    off += x.shape()[r.axis];
  }
  return r;
}

DataType widest_dtype(const std::vector<NDArrayView>& xs) {
  for (auto& x : xs)
    if (x.dtype() == DataType::Double) return DataType::Double;
  return xs.empty() ? DataType::Float : xs[0].dtype();
}

// Splices along the channel axis (the first static axis) of float32 inputs of equal
// shapes elsewhere, some of them in backend layouts (GoogLeNet's inception blocks), run as
// the backend's concatenation. Each input is seen as [N, C_i, rest...], N the dynamic axes' product.
struct ChannelSplice {
  std::vector<int64_t> dyn, rest;  // the output's dynamic dims and the static dims after the channels
  std::vector<int64_t> channels;   // per input
  int64_t batch = 1;
  std::vector<int64_t> dims(size_t i) const {
    std::vector<int64_t> d{batch, channels[i]};
    d.insert(d.end(), rest.begin(), rest.end());
    return d;
  }
};

bool channel_splice(const ComputeContext& ctx, ChannelSplice& cs) {
  if (ctx.layout_inputs.empty()) return false;
  bool any_layout = false;
  size_t max_rank = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    max_rank = std::max(max_rank, ctx.input_shape(i).rank() - size_t(ctx.in_dyn[i]));
  Fail fail = at_run("Splice");
  if (splice_geometry(max_rank, ctx.attr(), fail).axis != 0 || max_rank < 2) return false;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const LayoutValue* v = ctx.layout_input(i);
    if (!v && (!ctx.inputs[i].defined() || ctx.inputs[i].dtype() != DataType::Float || ctx.inputs[i].is_sparse()))
      return false;
    any_layout = any_layout || v;
    NDShape shape = ctx.input_shape(i);
    if (ctx.in_dyn[i] != ctx.out_dyn || shape.rank() != size_t(ctx.out_dyn) + max_rank) return false;
    std::vector<int64_t> dyn(shape.dims().begin(), shape.dims().begin() + ctx.out_dyn);
    std::vector<int64_t> rest(shape.dims().begin() + ctx.out_dyn + 1, shape.dims().end());
    if (i == 0) {
      cs.dyn = dyn, cs.rest = rest;
    } else if (dyn != cs.dyn || rest != cs.rest) {
      return false;
    }
    cs.channels.push_back(shape[size_t(ctx.out_dyn)]);
  }
  if (!any_layout) return false;
  cs.batch = 1;
  for (auto d : cs.dyn) cs.batch *= d;
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    if (const LayoutValue* v = ctx.layout_input(i); v && kernels::layout_dims(*v) != cs.dims(i)) return false;
  return true;
}

NDShape channel_splice_shape(const ChannelSplice& cs) {
  int64_t c = 0;
  for (auto x : cs.channels) c += x;
  std::vector<int64_t> d = cs.dyn;
  d.push_back(c);
  d.insert(d.end(), cs.rest.begin(), cs.rest.end());
  return NDShape(d);
}

void register_splice() {
  OpDef d;
  d.name = "Splice";
  d.op_type = 43;
  d.inputs = {{"operands", Gradient::Rule, true}};
  d.attrs = {{"axis", AttrType::Axis, Axis(-1), AxisOrder::NumPy}};
  d.infer = [](InferContext& ctx) {
    if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
    std::vector<NDShape> shapes;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) shapes.push_back(ctx.shape(i));
    return ctx.one(splice_shape(shapes, ctx.attrs(), at_infer(ctx)));
  };
  d.backend_layouts = true;
  d.forward = [](ComputeContext& ctx) {
    ChannelSplice cs;
    if (channel_splice(ctx, cs)) {
      std::vector<kernels::ChannelPart> parts(ctx.inputs.size());
      for (size_t i = 0; i < ctx.inputs.size(); ++i) {
        parts[i].kept = ctx.layout_input(i);
        if (!parts[i].kept) parts[i].plain = ctx.inputs[i].contiguous();
        parts[i].dims = cs.dims(i);
      }
      auto y = kernels::cpu_backend().concat_channels(parts);
      y->shape = channel_splice_shape(cs);
      if (ctx.may_keep_layout_output(0)) {
        ctx.layout_outputs[0] = std::move(y);
        return std::vector<NDArrayView>{NDArrayView()};
      }
      return std::vector<NDArrayView>{kernels::to_plain(*y)};
    }
    for (size_t i = 0; i < ctx.inputs.size(); ++i) ctx.input(i);
    DataType dt = widest_dtype(ctx.inputs);
    for (auto& x : ctx.inputs) x = x.to_dense().cast(dt);
    SpliceRun r = splice_run(ctx);
    NDArrayView y(dt, r.out);
    StridedView out = StridedView::of(y);
    for (size_t i = 0; i < r.aligned.size(); ++i) {
      NDShape part = r.out;
      part[r.axis] = r.extent[i];
      NDArrayView src = r.aligned[i].broadcast_to(part);
      kernels::copy(out.narrow(r.axis, r.offset[i], r.offset[i] + r.extent[i]), StridedView::of(src));
    }
    return std::vector<NDArrayView>{y};
  };
  d.backward = [](ComputeContext& ctx, size_t i) {
    ChannelSplice cs;
    if (const LayoutValue* gb = ctx.layout_grad_output(0); gb && channel_splice(ctx, cs)) {
      // The input's part of the output gradient, taken from its backend layout.
      int64_t offset = 0;
      for (size_t k = 0; k < i; ++k) offset += cs.channels[k];
      const LayoutValue* v = ctx.layout_input(i);
      if (ctx.may_keep_layout_grad(i) && v) {
        if (auto dx = kernels::cpu_backend().channel_slice(*gb, offset, cs.channels[i], *v)) {
          dx->shape = ctx.input_shape(i);
          ctx.layout_grad = std::move(dx);
          return NDArrayView();
        }
      }
      NDArrayView dx(DataType::Float, ctx.input_shape(i));
      if (kernels::cpu_backend().channel_slice(*gb, offset, cs.channels[i], cs.dims(i), dx)) return dx;
    }
    if (channel_splice(ctx, cs)) {
      // A plain part of the output gradient; the inputs, some in oneDNN layouts, need not be made plain.
      int64_t offset = 0;
      for (size_t k = 0; k < i; ++k) offset += cs.channels[k];
      const size_t axis = size_t(ctx.out_dyn);
      return compact(ctx.grad_output(0).slice(axis, offset, offset + cs.channels[i])).reshape(ctx.input_shape(i));
    }
    for (size_t k = 0; k < ctx.inputs.size(); ++k) ctx.input(k);
    SpliceRun r = splice_run(ctx);
    NDArrayView g = compact(ctx.grad_output(0).slice(r.axis, r.offset[i], r.offset[i] + r.extent[i]));
    NDArrayView dx = ctx.reduce_to_input(i, g);
    return dx.dtype() == ctx.inputs[i].dtype() ? dx : dx.cast(ctx.inputs[i].dtype());
  };
  register_op(std::move(d));
}

// ------------------------------------------------------------ TransposeAxes
//
// Either a permutation (axisVec; a permutation of n axes reorders the last n axes, as
// CNTK's does) or a swap of two axes (axis1, axis2).

std::vector<int> transpose_perm(size_t rank, const Dictionary& a, const Fail& fail) {
  std::vector<int> perm = identity_perm(rank);
  if (has_attr(a, "axisVec")) {
    std::vector<Axis> p = a.at("axisVec").as_axis_list();
    size_t n = p.size();
    if (n > rank)
      fail("the permutation has " + std::to_string(n) + " axes but the operand has rank " + std::to_string(rank));
    std::vector<bool> seen(n, false);
    for (size_t i = 0; i < n; ++i) {
      size_t k = static_axis(p[i], n, fail, "permutation element");
      if (seen[k]) fail("the permutation repeats axis " + std::to_string(k));
      seen[k] = true;
      perm[rank - n + i] = int(rank - n + k);
    }
    return perm;
  }
  size_t a1 = static_axis(attr(a, "axis1", fail).as_axis(), rank, fail, "axis1");
  size_t a2 = static_axis(attr(a, "axis2", fail).as_axis(), rank, fail, "axis2");
  std::swap(perm[a1], perm[a2]);
  return perm;
}

// The runtime permutation: dynamic dims stay in front.
std::vector<int> runtime_perm(int nd, const std::vector<int>& perm) {
  std::vector<int> p = identity_perm(size_t(nd));
  for (int k : perm) p.push_back(nd + k);
  return p;
}

void register_transpose() {
  OpDef d;
  d.name = "TransposeAxes";
  d.op_type = 12;
  d.inputs = {{"x"}};
  d.attrs = {{"axis1", AttrType::Axis, {}, AxisOrder::NumPy},
             {"axis2", AttrType::Axis, {}, AxisOrder::NumPy},
             {"axisVec", AttrType::AxisList, {}, AxisOrder::NumPy}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    const NDShape& s = ctx.shape(0);
    std::vector<int> perm = transpose_perm(s.rank(), ctx.attrs(), at_infer(ctx));
    std::vector<int64_t> out;
    for (int k : perm) out.push_back(s[size_t(k)]);
    return std::vector<OutputInfo>{{NDShape(out), ctx.dtype(0), ctx.input(0).dynamic_axes()}};
  };
  d.forward = [](ComputeContext& ctx) {
    std::vector<int> perm = transpose_perm(ctx.static_shape(0).rank(), ctx.attr(), at_run("TransposeAxes"));
    return std::vector<NDArrayView>{compact(ctx.inputs[0].to_dense().permute(runtime_perm(ctx.in_dyn[0], perm)))};
  };
  d.backward = [](ComputeContext& ctx, size_t) {
    std::vector<int> perm = transpose_perm(ctx.static_shape(0).rank(), ctx.attr(), at_run("TransposeAxes"));
    std::vector<int> inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int(i);
    return compact(ctx.grad_outputs[0].permute(runtime_perm(ctx.in_dyn[0], inv)));
  };
  register_op(std::move(d));
}

// ---------------------------------------------------------------------- Pad
//
// paddingHead/paddingFoot give the cells added before/after each static axis.
// Modes (CNTK's PaddingMode): 0 constant, 1 reflect (mirror without repeating the
// edge), 2 symmetric (mirror repeating the edge), as NumPy's pad modes of those names.

enum PadMode { kConstantPad = 0, kReflectPad = 1, kSymmetricPad = 2 };

struct PadSpec {
  std::vector<int64_t> head, foot;
  int mode = kConstantPad;
  double value = 0;
};

PadSpec pad_spec(const NDShape& in, const Dictionary& a, const Fail& fail, NDShape* out) {
  PadSpec p;
  p.head = attr(a, "paddingHead", fail).as_int_list();
  p.foot = attr(a, "paddingFoot", fail).as_int_list();
  p.mode = int(op_attr_int("Pad", a, "paddingMode"));
  p.value = op_attr_double("Pad", a, "paddingConstantValue");
  if (p.mode < kConstantPad || p.mode > kSymmetricPad)
    fail("unknown padding mode " + std::to_string(p.mode) + " (use CONSTANT_PAD, REFLECT_PAD or SYMMETRIC_PAD)");
  if (p.head.size() != in.rank() || p.foot.size() != in.rank())
    fail("the pattern has " + std::to_string(p.head.size()) + " entries but the operand has rank " +
         std::to_string(in.rank()));
  std::vector<int64_t> dims = in.dims();
  for (size_t k = 0; k < in.rank(); ++k) {
    int64_t h = p.head[k], f = p.foot[k], n = in[k];
    if (h < 0 || f < 0) fail("padding sizes must not be negative (axis " + std::to_string(k) + ")");
    if (n < 0) continue;
    if (p.mode == kReflectPad && (h > n - 1 || f > n - 1))
      fail("REFLECT_PAD pads at most size - 1 = " + std::to_string(n - 1) + " cells on axis " + std::to_string(k));
    if (p.mode == kSymmetricPad && (h > n || f > n))
      fail("SYMMETRIC_PAD pads at most size = " + std::to_string(n) + " cells on axis " + std::to_string(k));
    dims[k] = n + h + f;
  }
  if (out) *out = NDShape(dims);
  return p;
}

// The input cell that output cell j (of an axis of n cells padded by h in front) mirrors.
int64_t mirror(int64_t j, int64_t h, int64_t n, int mode) {
  int64_t i = j - h;
  if (i < 0) return mode == kReflectPad ? -i : -i - 1;
  if (i >= n) return mode == kReflectPad ? 2 * (n - 1) - i : 2 * n - 1 - i;
  return i;
}

std::vector<NDArrayView> pad_forward(ComputeContext& ctx) {
  NDArrayView x = ctx.inputs[0].to_dense();
  NDShape out_static;
  PadSpec p = pad_spec(ctx.static_shape(0), ctx.attr(), at_run("Pad"), &out_static);
  size_t nd = size_t(ctx.in_dyn[0]), rank = out_static.rank();
  NDShape dyn = dyn_part(x, ctx.in_dyn[0]);
  if (p.mode == kConstantPad) {
    NDArrayView y = NDArrayView::full(x.dtype(), dyn.concat(out_static), p.value);
    StridedView center = StridedView::of(y);
    for (size_t k = 0; k < rank; ++k) center = center.narrow(nd + k, p.head[k], p.head[k] + x.shape()[nd + k]);
    kernels::copy(center, StridedView::of(x));
    return {y};
  }
  // Mirror modes pad one axis after another (NumPy's order): the center first, then
  // each padding plane copied from the plane it mirrors.
  NDArrayView cur = x;
  for (size_t k = 0; k < rank; ++k) {
    int64_t h = p.head[k], f = p.foot[k], n = cur.shape()[nd + k];
    if (h == 0 && f == 0) continue;
    NDShape s = cur.shape();
    s[nd + k] = n + h + f;
    NDArrayView y(cur.dtype(), s);
    StridedView yv = StridedView::of(y);
    kernels::copy(yv.narrow(nd + k, h, h + n), StridedView::of(cur));
    for (int64_t j = 0; j < n + h + f; ++j) {
      if (j >= h && j < h + n) continue;
      int64_t src = h + mirror(j, h, n, p.mode);
      kernels::copy(yv.narrow(nd + k, j, j + 1), yv.narrow(nd + k, src, src + 1));
    }
    cur = y;
  }
  return {cur.contiguous()};
}

NDArrayView pad_backward(ComputeContext& ctx, size_t) {
  NDShape out_static;
  PadSpec p = pad_spec(ctx.static_shape(0), ctx.attr(), at_run("Pad"), &out_static);
  size_t nd = size_t(ctx.in_dyn[0]), rank = out_static.rank();
  const NDShape& in = ctx.inputs[0].shape();
  NDArrayView g = ctx.grad_outputs[0];
  if (p.mode == kConstantPad) {
    StridedView center = StridedView::of(g);
    for (size_t k = 0; k < rank; ++k) center = center.narrow(nd + k, p.head[k], p.head[k] + in[nd + k]);
    NDArrayView dx(g.dtype(), in);
    kernels::copy(StridedView::of(dx), center);
    return dx;
  }
  // Undo the axes in reverse order: keep the center, add each padding plane onto its source.
  for (size_t k = rank; k-- > 0;) {
    int64_t h = p.head[k], f = p.foot[k], n = in[nd + k];
    if (h == 0 && f == 0) continue;
    NDShape s = g.shape();
    s[nd + k] = n;
    NDArrayView dx(g.dtype(), s);
    StridedView gv = StridedView::of(g), dv = StridedView::of(dx);
    kernels::copy(dv, gv.narrow(nd + k, h, h + n));
    for (int64_t j = 0; j < n + h + f; ++j) {
      if (j >= h && j < h + n) continue;
      int64_t src = mirror(j, h, n, p.mode);
      kernels::accumulate(dv.narrow(nd + k, src, src + 1), gv.narrow(nd + k, j, j + 1));
    }
    g = dx;
  }
  return g;
}

void register_pad() {
  OpDef d;
  d.name = "Pad";
  d.op_type = 83;
  d.inputs = {{"x"}};
  d.attrs = {{"paddingHead", AttrType::IntList, {}, AxisOrder::NumPy},
             {"paddingFoot", AttrType::IntList, {}, AxisOrder::NumPy},
             {"paddingMode", AttrType::Int, int64_t(kConstantPad)},
             {"paddingConstantValue", AttrType::Double, 0.0}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    NDShape out;
    pad_spec(ctx.shape(0), ctx.attrs(), at_infer(ctx), &out);
    return std::vector<OutputInfo>{{out, ctx.dtype(0), ctx.input(0).dynamic_axes()}};
  };
  d.forward = pad_forward;
  d.backward = pad_backward;
  register_op(std::move(d));
}

// ------------------------------------------------------------------ Squeeze
//
// Drops the listed axes (axisVec), each of which must have size 1, or without the
// attribute every axis of size 1.

std::vector<bool> squeezed_axes(const NDShape& in, const Dictionary& a, const Fail& fail) {
  std::vector<bool> drop(in.rank(), false);
  if (!has_attr(a, "axisVec")) {
    for (size_t k = 0; k < in.rank(); ++k) drop[k] = in[k] == 1;
    return drop;
  }
  for (auto& ax : a.at("axisVec").as_axis_list()) {
    size_t k = static_axis(ax, in.rank(), fail);
    if (in[k] != 1)
      fail("cannot squeeze axis " + std::to_string(k) + " of size " + std::to_string(in[k]) + " (it must be 1)");
    drop[k] = true;
  }
  return drop;
}

NDShape without(const NDShape& s, const std::vector<bool>& drop) {
  std::vector<int64_t> out;
  for (size_t k = 0; k < s.rank(); ++k)
    if (!drop[k]) out.push_back(s[k]);
  return NDShape(out);
}

void register_squeeze() {
  OpDef d;
  d.name = "Squeeze";
  d.op_type = 88;
  d.inputs = {{"x"}};
  d.attrs = {{"axisVec", AttrType::AxisList, {}, AxisOrder::NumPy}, {"axis", AttrType::AxisList, {}, AxisOrder::NumPy}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    const NDShape& s = ctx.shape(0);
    return std::vector<OutputInfo>{
        {without(s, squeezed_axes(s, ctx.attrs(), at_infer(ctx))), ctx.dtype(0), ctx.input(0).dynamic_axes()}};
  };
  d.forward = [](ComputeContext& ctx) {
    // The axes come from the graph's shape, so a free dimension that happens to be 1
    // in this minibatch is kept.
    NDShape graph_shape = ctx.fn ? ctx.fn->direct_inputs()[0].shape() : ctx.static_shape(0);
    std::vector<bool> drop = squeezed_axes(graph_shape, ctx.attr(), at_run("Squeeze"));
    NDArrayView x = ctx.inputs[0].to_dense();
    return std::vector<NDArrayView>{x.reshape(dyn_part(x, ctx.in_dyn[0]).concat(without(ctx.static_shape(0), drop)))};
  };
  d.backward = [](ComputeContext& ctx, size_t) { return ctx.grad_outputs[0].reshape(ctx.inputs[0].shape()); };
  register_op(std::move(d));
}

// ------------------------------------------------------------------- Gather
//
// Inputs (CNTK's order): indices, reference. Without an axis, rows of the reference
// along its first axis: output = indices.shape + reference.shape[1:]. With a static
// axis a != 0 CNTK swaps axes 0 and a of the reference, gathers, and swaps axes 0 and
// a of the result; that is kept (for 1-D indices it equals numpy.take(ref, idx, a)).
// No gradient flows to the indices.

struct GatherGeometry {
  size_t axis = 0;
  NDShape swapped;  // the reference with axes 0 and `axis` exchanged
};

NDShape swap_axes(const NDShape& s, size_t a, size_t b) {
  NDShape out = s;
  std::swap(out[a], out[b]);
  return out;
}

GatherGeometry gather_geometry(const NDShape& ref, const NDShape& idx, const Dictionary& a, const Fail& fail,
                               NDShape* out) {
  if (ref.rank() == 0) fail("the reference must have at least one axis");
  GatherGeometry g;
  g.axis = static_axis(schema_attr(find_op("Gather"), "Gather", a, "axis").as_axis(), ref.rank(), fail);
  g.swapped = swap_axes(ref, 0, g.axis);
  NDShape gathered = idx.concat(g.swapped.sub(1));
  if (g.axis >= gathered.rank()) fail("axis " + std::to_string(g.axis) + " needs indices of rank at least 1");
  if (out) *out = swap_axes(gathered, 0, g.axis);
  return g;
}

// The indices of idx as rows; a sequence's padding steps (`lengths`) read row 0, so
// whatever padding holds (NaN in checked mode) never counts as an index.
std::vector<int64_t> read_indices(const NDArrayView& idx, const std::vector<int64_t>& lengths, int64_t limit,
                                  const char* op) {
  NDArrayView x = idx.to_dense().cast(DataType::Double).contiguous();
  if (!lengths.empty()) {
    if (x.same_storage(idx)) x = x.copy();  // never write the caller's indices
    set_padding(x, lengths, 0.0);
  }
  const double* p = x.data<double>();
  std::vector<int64_t> out(size_t(x.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    double v = p[i];
    if (!(v >= 0 && v < double(limit)))
      throw ValueError(std::string(op) + ": index " + std::to_string(v) + " is out of range for an axis of size " +
                       std::to_string(limit));
    out[i] = int64_t(v);  // CNTK truncates
  }
  return out;
}

std::vector<int> swap_perm(size_t rank, size_t a, size_t b) {
  std::vector<int> p = identity_perm(rank);
  std::swap(p[a], p[b]);
  return p;
}

void register_gather() {
  OpDef d;
  d.name = "Gather";
  d.op_type = 74;
  d.inputs = {{"indices", Gradient::Zero}, {"reference"}};
  d.attrs = {{"axis", AttrType::Axis, Axis(0), AxisOrder::NumPy}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    if (!ctx.input(1).dynamic_axes().empty()) ctx.fail("the reference (second input) must not have dynamic axes");
    NDShape out;
    gather_geometry(ctx.shape(1), ctx.shape(0), ctx.attrs(), at_infer(ctx), &out);
    return std::vector<OutputInfo>{{out, ctx.dtype(1), ctx.input(0).dynamic_axes()}};
  };
  d.forward = [](ComputeContext& ctx) {
    const NDArrayView& idx = ctx.inputs[0];
    NDArrayView ref = ctx.inputs[1].to_dense();
    GatherGeometry g = gather_geometry(ref.shape(), ctx.static_shape(0), ctx.attr(), at_run("Gather"), nullptr);
    NDArrayView table = compact(ref.permute(swap_perm(ref.rank(), 0, g.axis)));
    std::vector<int64_t> rows = read_indices(idx, ctx.in_lengths[0], table.shape()[0], "Gather");
    NDArrayView y(table.dtype(), idx.shape().concat(table.shape().sub(1)));
    kernels::gather_rows(table, rows, y);
    if (g.axis == 0) return std::vector<NDArrayView>{y};
    size_t nd = size_t(ctx.in_dyn[0]);
    return std::vector<NDArrayView>{compact(y.permute(swap_perm(y.rank(), nd, nd + g.axis)))};
  };
  d.backward = [](ComputeContext& ctx, size_t i) -> NDArrayView {
    if (i == 0) return {};  // indices: no gradient
    const NDArrayView& idx = ctx.inputs[0];
    const NDArrayView& ref = ctx.inputs[1];
    GatherGeometry g = gather_geometry(ref.shape(), ctx.static_shape(0), ctx.attr(), at_run("Gather"), nullptr);
    size_t nd = size_t(ctx.in_dyn[0]);
    NDArrayView go = ctx.grad_outputs[0];
    if (g.axis != 0) go = go.permute(swap_perm(go.rank(), nd, nd + g.axis));
    go = compact(go);
    std::vector<int64_t> rows = read_indices(idx, ctx.in_lengths[0], g.swapped[0], "Gather");
    NDArrayView table = NDArrayView::zeros(go.dtype(), g.swapped);
    kernels::scatter_add_rows(table, rows, go);
    if (g.axis == 0) return table;
    return compact(table.permute(swap_perm(table.rank(), 0, g.axis)));
  };
  register_op(std::move(d));
}

// ------------------------------------------------------------------- OneHot
//
// A new axis of numClass cells at onehotAxis (counted in the output's rank; -1 is a new
// last axis); cell v is 1 where the input holds v. Values outside [0, numClass) give all
// zeros, as in CNTK. The output is dense; oneHotOutputSparse is recorded only.

size_t one_hot_axis(size_t rank, const Dictionary& a, const Fail& fail) {
  Axis ax = schema_attr(find_op("OneHot"), "OneHot", a, "onehotAxis").as_axis();
  return static_axis(ax, rank + 1, fail);
}

void register_one_hot() {
  OpDef d;
  d.name = "OneHot";
  d.op_type = 68;
  d.inputs = {{"x", Gradient::Zero}};
  d.attrs = {{"numClass", AttrType::Int},
             {"oneHotOutputSparse", AttrType::Bool, false},
             {"onehotAxis", AttrType::Axis, Axis(-1), AxisOrder::NumPy}};
  d.gradient = Gradient::Zero;
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    Fail fail = at_infer(ctx);
    int64_t n = attr(ctx.attrs(), "numClass", fail).as_int();
    if (n <= 0) fail("num_classes must be positive, not " + std::to_string(n));
    const NDShape& s = ctx.shape(0);
    size_t k = one_hot_axis(s.rank(), ctx.attrs(), fail);
    return std::vector<OutputInfo>{
        {s.sub(0, k).concat(NDShape{n}).concat(s.sub(k)), ctx.dtype(0), ctx.input(0).dynamic_axes()}};
  };
  d.forward = [](ComputeContext& ctx) {
    NDArrayView x = ctx.inputs[0].to_dense().contiguous();
    int64_t n = ctx.attr().at("numClass").as_int();
    size_t k = size_t(ctx.in_dyn[0]) + one_hot_axis(ctx.static_shape(0).rank(), ctx.attr(), at_run("OneHot"));
    const NDShape& s = x.shape();
    int64_t inner = s.sub(k).total_size(), outer = s.sub(0, k).total_size();
    NDArrayView y = NDArrayView::zeros(x.dtype(), s.sub(0, k).concat(NDShape{n}).concat(s.sub(k)));
    CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          T v = px[o * inner + i];
          if (v >= 0 && v < T(n)) py[(o * n + int64_t(v)) * inner + i] = T(1);
        }
    });
    return std::vector<NDArrayView>{y};
  };
  register_op(std::move(d));
}

// ----------------------------------------------------------------- ONNX forms
//
// An ONNX tensor is the runtime layout [dynamic dims.., static shape]: an engine static
// axis k is ONNX axis input_dyn + k.

using onnx_io::Attr;
using onnx_io::ExportContext;

Fail at_export(const ExportContext& c) { return {nullptr, "ONNX export: " + c.function().op_name()}; }

// The output's shape for ONNX's Reshape: 0 keeps each dynamic dim, a free dim is -1.
std::string output_shape_constant(ExportContext& c) {
  std::vector<int64_t> d(size_t(c.output_dyn(0)), 0);
  bool free = false;
  for (int64_t x : c.output_var(0).shape().dims()) {
    if (x == 0) c.unsupported("a reshape to a dimension of size 0");
    if (x < 0 && free) c.unsupported("a reshape to several free dimensions");
    free = free || x < 0;
    d.push_back(x < 0 ? -1 : x);
  }
  return c.constant_i64(d);
}
void export_reshape(ExportContext& c) { c.node1("Reshape", {c.input(0), output_shape_constant(c)}, {}, c.output(0)); }

void export_slice(ExportContext& c) {
  std::vector<SliceStep> steps;
  const NDShape in = c.input_var(0).shape();
  slice_shape(in, c.function().attributes(), at_export(c), &steps);
  if (steps.empty() && !in.is_known()) c.unsupported("slicing a free dimension");
  const int64_t nd = c.input_dyn(0);
  std::vector<int64_t> starts, ends, axes, strides;
  for (const SliceStep& s : steps) {
    axes.push_back(nd + int64_t(s.axis));
    strides.push_back(s.stride);
    if (in[s.axis] < 0) {  // a free dimension: the indices as given (negative from the end, end 0: to the end)
      if (s.stride != 1) c.unsupported("slicing a free dimension with a stride other than 1");
      starts.push_back(s.begin), ends.push_back(s.end == 0 ? std::numeric_limits<int64_t>::max() : s.end);
    } else if (s.stride > 0) {
      starts.push_back(s.begin), ends.push_back(s.end);
    } else {  // backwards from end - 1 down to begin
      starts.push_back(s.end - 1);
      ends.push_back(s.begin > 0 ? s.begin - 1 : std::numeric_limits<int64_t>::min());
    }
  }
  if (c.opset() < 10) {
    for (int64_t st : strides)
      if (st != 1) c.unsupported("a slice with strides before opset 10");
    c.node1("Slice", {c.input(0)}, {Attr("starts", starts), Attr("ends", ends), Attr("axes", axes)}, c.output(0));
    return;
  }
  c.node1("Slice",
          {c.input(0), c.constant_i64(starts), c.constant_i64(ends), c.constant_i64(axes), c.constant_i64(strides)}, {},
          c.output(0));
}

// Inputs are left-padded with 1s to the output's rank. ONNX's Concat broadcasts nothing: where
// inputs broadcast (dynamic axes one lacks, or a 1 against a size), each is added to a zero of
// the output's shape but 1 on the splice axis, made of the inputs' first slices times 0.
void export_splice(ExportContext& c) {
  const NDShape out = c.output_var(0).shape();
  const int64_t nd = c.output_dyn(0), R = int64_t(out.rank());
  SpliceGeometry g = splice_geometry(out.rank(), c.function().attributes(), at_export(c));
  std::vector<std::string> ins;
  bool broadcast = false;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    const NDShape s = c.input_var(i).shape();
    const size_t pad = out.rank() - s.rank();
    broadcast = broadcast || c.input_dyn(i) != nd;
    for (size_t k = 0; k < out.rank(); ++k)
      broadcast = broadcast || (k != g.axis && (k < pad ? 1 : s[k - pad]) != out[k]);
    std::vector<int64_t> lead;
    for (size_t k = 0; k < pad; ++k) lead.push_back(c.input_dyn(i) + int64_t(k));
    ins.push_back(c.unsqueeze(c.input(i), lead));
  }
  const int64_t axis = int64_t(g.axis) - R;  // from the end: the same for every input
  if (broadcast) {
    const DataType t = c.output_var(0).dtype();
    std::string zero;
    for (const std::string& x : ins) {
      std::string first = c.opset() < 10
                              ? c.node1("Slice", {x},
                                        {Attr("starts", std::vector<int64_t>{0}), Attr("ends", std::vector<int64_t>{1}),
                                         Attr("axes", std::vector<int64_t>{axis})})
                              : c.node1("Slice", {x, c.constant_i64({0}), c.constant_i64({1}), c.constant_i64({axis})});
      std::string z = c.node1("Mul", {first, c.constant_f(0, t)});
      zero = zero.empty() ? z : c.node1("Add", {zero, z});
    }
    for (std::string& x : ins) x = c.node1("Add", {x, zero});
  }
  c.node1("Concat", ins, {Attr("axis", nd + int64_t(g.axis))}, c.output(0));
}

void export_transpose(ExportContext& c) {
  std::vector<int> perm = transpose_perm(c.input_var(0).shape().rank(), c.function().attributes(), at_export(c));
  std::vector<int64_t> p;
  for (int k : runtime_perm(c.input_dyn(0), perm)) p.push_back(k);
  c.node1("Transpose", {c.input(0)}, {Attr("perm", p)}, c.output(0));
}

void export_pad(ExportContext& c) {
  PadSpec p = pad_spec(c.input_var(0).shape(), c.function().attributes(), at_export(c), nullptr);
  if (p.mode == kSymmetricPad) {  // ONNX has no such mode: reversed edge slices concatenated
    if (c.opset() < 10) c.unsupported("SYMMETRIC_PAD before opset 10 (reversing slices takes steps)");
    const NDShape in = c.input_var(0).shape();
    std::string x = c.input(0);
    auto reversed = [&](int64_t ax, int64_t from, int64_t to) {  // elements from..to (to < from), backwards
      return c.node1("Slice",
                     {x, c.constant_i64({from}), c.constant_i64({to >= 0 ? to : std::numeric_limits<int64_t>::min()}),
                      c.constant_i64({ax}), c.constant_i64({-1})});
    };
    for (size_t k = 0; k < in.rank(); ++k) {
      const int64_t h = p.head[k], f = p.foot[k], n = in[k], ax = c.input_dyn(0) + int64_t(k);
      if (!h && !f) continue;
      if (n < 0) c.unsupported("SYMMETRIC_PAD of a free dimension");
      std::vector<std::string> parts;
      if (h) parts.push_back(reversed(ax, h - 1, -1));
      parts.push_back(x);
      if (f) parts.push_back(reversed(ax, n - 1, n - f - 1));
      x = c.node1("Concat", parts, {Attr("axis", ax)});
    }
    c.node1("Identity", {x}, {}, c.output(0));
    return;
  }
  std::vector<int64_t> pads(size_t(c.input_dyn(0)), 0);
  pads.insert(pads.end(), p.head.begin(), p.head.end());
  pads.insert(pads.end(), size_t(c.input_dyn(0)), 0);
  pads.insert(pads.end(), p.foot.begin(), p.foot.end());
  const std::string mode = p.mode == kReflectPad ? "reflect" : "constant";
  if (c.opset() < 11) {
    c.node1("Pad", {c.input(0)}, {Attr("mode", mode), Attr("pads", pads), Attr("value", p.value)}, c.output(0));
    return;
  }
  std::vector<std::string> ins{c.input(0), c.constant_i64(pads)};
  if (p.mode == kConstantPad) ins.push_back(c.constant_f(p.value, c.input_var(0).dtype()));
  c.node1("Pad", ins, {Attr("mode", mode)}, c.output(0));
}

// Inputs: indices (any float type in the engine), reference. Along axis a != 0, CNTK's
// definition: swap axes 0 and a of the reference, gather rows, swap the result's axes 0 and a.
void export_gather(ExportContext& c) {
  const Variable& idx = c.input_var(0);
  const size_t r = c.input_var(1).shape().rank();
  GatherGeometry g =
      gather_geometry(c.input_var(1).shape(), idx.shape(), c.function().attributes(), at_export(c), nullptr);
  std::string i64 = c.node1("Cast", {c.input(0)}, {Attr("to", int64_t(onnx_io::ElemType::Int64))});
  if (g.axis == 0) {
    c.node1("Gather", {c.input(1), i64}, {Attr("axis", int64_t(0))}, c.output(0));
    return;
  }
  auto perm64 = [](const std::vector<int>& p) { return std::vector<int64_t>(p.begin(), p.end()); };
  std::string ref = c.node1("Transpose", {c.input(1)}, {Attr("perm", perm64(swap_perm(r, 0, g.axis)))});
  std::string y = c.node1("Gather", {ref, i64}, {Attr("axis", int64_t(0))});
  const int nd = c.output_dyn(0);
  std::vector<int> back = identity_perm(size_t(nd) + c.output_var(0).shape().rank());
  std::swap(back[size_t(nd)], back[size_t(nd) + g.axis]);
  c.node1("Transpose", {y}, {Attr("perm", perm64(back))}, c.output(0));
}

// Squeeze as ONNX's Squeeze of the dropped axes: unlike a Reshape it keeps any number of
// free dimensions (a read recurrence's output squeezes its direction axis over the free
// Sequence dimension).
void export_squeeze(ExportContext& c) {
  const std::vector<bool> drop = squeezed_axes(c.input_var(0).shape(), c.function().attributes(), at_export(c));
  std::vector<int64_t> axes;
  for (size_t k = 0; k < drop.size(); ++k)
    if (drop[k]) axes.push_back(int64_t(c.input_dyn(0)) + int64_t(k));
  if (axes.empty())
    c.node1("Identity", {c.input(0)}, {}, c.output(0));
  else if (c.opset() >= 13)
    c.node1("Squeeze", {c.input(0), c.constant_i64(axes)}, {}, c.output(0));
  else
    c.node1("Squeeze", {c.input(0)}, {Attr("axes", axes)}, c.output(0));
}

void export_one_hot(ExportContext& c) {
  const Dictionary& a = c.function().attributes();
  const size_t k = one_hot_axis(c.input_var(0).shape().rank(), a, at_export(c));
  const int64_t n = a.at("numClass").as_int();
  std::string i64 = c.node1("Cast", {c.input(0)}, {Attr("to", int64_t(onnx_io::ElemType::Int64))});
  const DataType t = c.output_var(0).dtype();
  NDArrayView values = NDArrayView::zeros(t, NDShape{2});  // off, on
  CNTK_DISPATCH_FLOAT(t, T, [&] { values.data<T>()[1] = T(1); });
  c.node1("OneHot", {i64, c.constant_i64({n}, true), c.constant(values)},
          {Attr("axis", int64_t(c.input_dyn(0)) + int64_t(k))}, c.output(0));
}

void register_movement_onnx() {
  set_onnx_export("Reshape", export_reshape);
  set_onnx_export("Squeeze", export_squeeze);
  set_onnx_export("Slice", export_slice);
  set_onnx_export("Splice", export_splice);
  set_onnx_export("TransposeAxes", export_transpose);
  set_onnx_export("Pad", export_pad);
  set_onnx_export("Gather", export_gather);
  set_onnx_export("OneHot", export_one_hot);
}

}  // namespace

void register_movement_ops() {
  register_reshape();
  register_slice();
  register_splice();
  register_transpose();
  register_pad();
  register_squeeze();
  register_gather();
  register_one_hot();
  register_movement_onnx();
}

}  // namespace cntk
