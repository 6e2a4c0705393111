// Op family: nn. Softmax, LogSoftmax and Hardmax (normalizations along axes),
// TopK, Cast, ConstantOp (zeros_like/ones_like), EyeLikeOp and Assign.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/softmax.h"
#include "ops/eager.h"
#include "ops/op.h"
#include "onnx/export.h"

namespace cntk {
namespace {

// ------------------------------------------------------------ axis spans

// The axes a softmax-like op normalizes over: one static axis, all static axes,
// or the batch axis.
struct Span {
  enum Kind { Static, AllStatic, Batch } kind = AllStatic;
  int index = 0;  // static axis, not normalized
};

Span span_of(const Axis& a) {
  switch (a.kind()) {
    case Axis::Kind::Static: return {Span::Static, a.static_index()};
    case Axis::Kind::AllStatic: return {Span::AllStatic, 0};
    case Axis::Kind::Dynamic:
      if (a.is_batch()) return {Span::Batch, 0};
      throw ValueError("axis '" + a.name() + "' is a sequence axis");
    default: throw ValueError("axis '" + a.name() + "' is not supported here");
  }
}

// Checks the span against the operand at graph construction.
void check_span(InferContext& ctx, bool allow_batch) {
  Span s;
  try {
    s = span_of(ctx.attr_value("axis").as_axis());
  } catch (const ValueError& e) {
    ctx.fail(std::string(e.what()) + "; only static axes" + (allow_batch ? " and the batch axis" : "") +
             " are supported");
  }
  int r = int(ctx.shape(0).rank());
  if (s.kind == Span::Static) {
    if (s.index < -r || s.index >= r)
      ctx.fail("axis " + std::to_string(s.index) + " is out of range for an operand of rank " + std::to_string(r));
  } else if (s.kind == Span::Batch) {
    if (!allow_batch) ctx.fail("the batch axis is not supported; only static axes are");
    bool has_batch = false, has_seq = false;
    for (auto& a : ctx.input(0).dynamic_axes()) {
      has_batch = has_batch || a.is_batch();
      has_seq = has_seq || a.is_sequence();
    }
    if (!has_batch) ctx.fail("the operand has no batch axis");
    if (has_seq) ctx.fail("normalizing over the batch axis of a sequence is not supported");
  }
}

// The runtime axes [begin, end) of input 0 that a span covers.
kernels::SoftmaxDims runtime_dims(const ComputeContext& ctx, Span s) {
  const NDShape& shape = ctx.inputs[0].shape();
  size_t nd = size_t(ctx.in_dyn[0]), sr = shape.rank() - nd;
  size_t b = nd, e = nd + sr;
  if (s.kind == Span::Static) {
    b = nd + size_t(s.index < 0 ? s.index + int(sr) : s.index);
    e = b + 1;
  } else if (s.kind == Span::Batch) {
    b = 0;
    for (size_t k = 0; k < nd; ++k)
      if (ctx.in_axes[0][k].is_batch()) b = k;
    e = b + 1;
  }
  return kernels::softmax_dims(shape, b, e);
}

// `axis`: the axis the op normalizes over by default.
void register_softmax(const char* name, int op_type, Axis axis, bool log, bool allow_batch) {
  OpDef d;
  d.name = name;
  d.op_type = op_type;
  d.inputs = {{"x"}};
  d.attrs = {{"axis", AttrType::Axis, std::move(axis), AxisOrder::NumPy}};
  d.infer = [allow_batch](InferContext& ctx) {
    ctx.expect_inputs(1);
    check_span(ctx, allow_batch);
    return ctx.one(ctx.shape(0));
  };
  d.forward = [log](ComputeContext& ctx) {
    Span s = span_of(ctx.attr_value("axis").as_axis());
    return std::vector<NDArrayView>{kernels::softmax(ctx.inputs[0], runtime_dims(ctx, s), log)};
  };
  d.backward = [log](ComputeContext& ctx, size_t) {
    Span s = span_of(ctx.attr_value("axis").as_axis());
    return kernels::softmax_backward(ctx.outputs[0], ctx.grad_outputs[0], runtime_dims(ctx, s), log);
  };
  register_op(std::move(d));
}

void register_hardmax() {
  // Over the whole sample (all static axes), as CNTK's Hardmax; the first maximum wins.
  OpDef d;
  d.name = "Hardmax";
  d.op_type = 11;
  d.inputs = {{"x", Gradient::Zero}};
  d.classes = kSameShape;
  d.infer = infer_same_shape;
  d.forward = [](ComputeContext& ctx) {
    return std::vector<NDArrayView>{kernels::hardmax(ctx.inputs[0], runtime_dims(ctx, Span{Span::AllStatic, 0}))};
  };
  d.gradient = Gradient::Zero;  // CNTK's Hardmax passes no gradient
  register_op(std::move(d));
}

// ------------------------------------------------------------------ TopK

int64_t topk_k(const Dictionary& a) { return op_attr_int("TopK", a, "numItems"); }

Axis topk_axis(const Dictionary& a) { return schema_attr(find_op("TopK"), "TopK", a, "axis").as_axis(); }

void register_topk() {
  OpDef d;
  d.name = "TopK";
  d.op_type = 87;
  d.inputs = {{"x"}};
  d.attrs = {{"numItems", AttrType::Int, 1}, {"axis", AttrType::Axis, Axis(-1), AxisOrder::NumPy}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    int64_t k = topk_k(ctx.attrs());
    if (k < 1) ctx.fail("k must be at least 1, got " + std::to_string(k));
    Axis ax = topk_axis(ctx.attrs());
    if (!ax.is_static()) ctx.fail("only a single static axis is supported, not '" + ax.name() + "'");
    NDShape out = ctx.shape(0);
    int r = int(out.rank());
    if (r == 0) {
      if (k != 1) ctx.fail("cannot get k=" + std::to_string(k) + " > 1 items from a scalar");
    } else {
      int i = ax.static_index();
      if (i < -r || i >= r)
        ctx.fail("axis " + std::to_string(i) + " is out of range for an operand of rank " + std::to_string(r));
      if (i < 0) i += r;
      if (out[i] >= 0 && k > out[i])
        ctx.fail("k=" + std::to_string(k) + " exceeds the " + std::to_string(out[i]) + " elements along axis " +
                 std::to_string(ax.static_index()));
      out[i] = k;
    }
    auto outs = ctx.one(out);
    OutputInfo indices = outs[0];  // the indices, as floats
    outs.push_back(indices);
    return outs;
  };
  d.forward = [](ComputeContext& ctx) {
    NDArrayView x = ctx.inputs[0].to_dense().contiguous();
    int64_t k = topk_k(ctx.attr());
    size_t nd = size_t(ctx.in_dyn[0]), sr = x.rank() - nd;
    kernels::SoftmaxDims dm;
    std::vector<int64_t> out_dims(x.shape().dims());
    if (sr == 0) {
      dm = kernels::softmax_dims(x.shape(), x.rank(), x.rank());
    } else {
      int i = topk_axis(ctx.attr()).static_index();
      size_t a = nd + size_t(i < 0 ? i + int(sr) : i);
      dm = kernels::softmax_dims(x.shape(), a, a + 1);
      if (k > dm.R)
        throw ValueError("TopK: k=" + std::to_string(k) + " exceeds the " + std::to_string(dm.R) +
                         " elements along the axis");
      out_dims[a] = k;
    }
    NDShape os(out_dims);
    NDArrayView vals(x.dtype(), os), idx(x.dtype(), os);
    CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
      const T* xp = x.data<T>();
      T *vp = vals.data<T>(), *ip = idx.data<T>();
      const int64_t R = dm.R, Q = dm.Q;
      std::vector<int64_t> order(R);
      for (int64_t p = 0; p < dm.P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          const T* xc = xp + p * R * Q + q;
          std::iota(order.begin(), order.end(), 0);
          // Largest first, NaN last; among equal values the lower index first.
          std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
            T va = xc[a * Q], vb = xc[b * Q];
            bool na = std::isnan(va), nb = std::isnan(vb);
            if (na || nb) return na == nb ? a < b : nb;
            return va > vb || (va == vb && a < b);
          });
          for (int64_t j = 0; j < k; ++j) {
            vp[p * k * Q + j * Q + q] = xc[order[j] * Q];
            ip[p * k * Q + j * Q + q] = T(order[j]);
          }
        }
    });
    return std::vector<NDArrayView>{vals, idx};
  };
  // The gradient of the values goes back to the positions they came from.
  d.backward = [](ComputeContext& ctx, size_t) {
    const NDArrayView& x = ctx.inputs[0];
    NDArrayView g = ctx.grad_outputs[0].to_dense().contiguous(), idx = ctx.outputs[1].to_dense().contiguous();
    NDArrayView dx = NDArrayView::zeros(x.dtype(), x.shape());
    size_t nd = size_t(ctx.in_dyn[0]), sr = x.rank() - nd;
    kernels::SoftmaxDims dm;
    if (sr == 0) {
      dm = kernels::softmax_dims(x.shape(), x.rank(), x.rank());
    } else {
      int i = topk_axis(ctx.attr()).static_index();
      size_t a = nd + size_t(i < 0 ? i + int(sr) : i);
      dm = kernels::softmax_dims(x.shape(), a, a + 1);
    }
    int64_t k = topk_k(ctx.attr());
    CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
      const T *gp = g.data<T>(), *ip = idx.data<T>();
      T* dp = dx.data<T>();
      const int64_t R = dm.R, Q = dm.Q;
      for (int64_t p = 0; p < dm.P; ++p)
        for (int64_t j = 0; j < k; ++j)
          for (int64_t q = 0; q < Q; ++q) {
            int64_t o = p * k * Q + j * Q + q;
            dp[p * R * Q + int64_t(ip[o]) * Q + q] += gp[o];
          }
    });
    return dx;
  };
  register_op(std::move(d));
}

// ------------------------------------------------- Cast, ConstantOp, EyeLikeOp

DataType cast_target(const Dictionary& a) { return static_cast<DataType>(op_attr_int("Cast", a, "newDataType")); }

void register_cast() {
  OpDef d;
  d.name = "Cast";
  d.op_type = 91;
  d.inputs = {{"x"}};
  d.attrs = {{"newDataType", AttrType::Int, int64_t(DataType::Float)}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    DataType t = cast_target(ctx.attrs());
    if (t != DataType::Float && t != DataType::Double && t != DataType::Float16)
      ctx.fail_type("cannot cast to data type code " + std::to_string(int(t)) + " (use float32, float64 or float16)");
    auto out = ctx.one(ctx.shape(0));
    out[0].dtype = t;
    return out;
  };
  d.forward = [](ComputeContext& ctx) {
    return std::vector<NDArrayView>{ctx.inputs[0].to_dense().cast(cast_target(ctx.attr()))};
  };
  d.backward = [](ComputeContext& ctx, size_t) { return ctx.grad_outputs[0].to_dense().cast(ctx.inputs[0].dtype()); };
  register_op(std::move(d));
}

void register_constant_like() {
  // zeros_like / ones_like: the operand's shape, type and dynamic axes, filled with `fillValue`.
  OpDef d;
  d.name = "ConstantOp";
  d.op_type = 89;
  d.inputs = {{"x", Gradient::Zero}};
  d.attrs = {{"fillValue", AttrType::Double, 0.0}};
  d.classes = kSameShape;
  d.infer = infer_same_shape;
  d.forward = [](ComputeContext& ctx) {
    const NDArrayView& x = ctx.inputs[0];
    return std::vector<NDArrayView>{NDArrayView::full(x.dtype(), x.shape(), ctx.attr_double("fillValue"))};
  };
  d.gradient = Gradient::Zero;
  register_op(std::move(d));
}

void register_eye_like() {
  OpDef d;
  d.name = "EyeLikeOp";
  d.op_type = 92;
  d.inputs = {{"x", Gradient::Zero}};
  d.attrs = {{"OutputSparse", AttrType::Bool, true}};
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(1);
    const auto& dyn = ctx.input(0).dynamic_axes();
    if (dyn.size() + ctx.shape(0).rank() != 2)
      ctx.fail("the operand must have exactly 2 axes counting dynamic and static axes; it has " +
               std::to_string(dyn.size()) + " dynamic and " + std::to_string(ctx.shape(0).rank()) + " static");
    for (auto& a : dyn)
      if (a.is_sequence()) ctx.fail("the operand must not have a sequence axis");
    auto out = ctx.one(ctx.shape(0));
    out[0].is_sparse = ctx.attr_bool("OutputSparse");
    return out;
  };
  d.forward = [](ComputeContext& ctx) {
    const NDArrayView& x = ctx.inputs[0];
    NDArrayView y = NDArrayView::zeros(x.dtype(), x.shape());
    int64_t rows = x.shape()[0], cols = x.shape()[1];
    CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
      T* p = y.data<T>();
      for (int64_t i = 0; i < std::min(rows, cols); ++i) p[i * cols + i] = 1;
    });
    return std::vector<NDArrayView>{y};
  };
  d.gradient = Gradient::Zero;
  register_op(std::move(d));
}

// ---------------------------------------------------------------- Assign

// Assign(ref, input): outputs input and writes it into the parameter or constant
// `ref` once the pass is over (after forward when inferring, after backward when
// training), so every use of ref in the pass sees its old value, as in CNTK.
void register_assign() {
  OpDef d;
  d.name = "Assign";
  d.op_type = 73;
  d.inputs = {{"ref", Gradient::None}, {"value"}};  // the ref is written, not read
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    if (!ctx.input(0).dynamic_axes().empty() || !ctx.input(1).dynamic_axes().empty())
      ctx.fail("neither operand may have dynamic axes");
    if (!(ctx.input(0).is_parameter() || ctx.input(0).is_constant()))
      ctx.fail("the ref operand must be a Parameter or a Constant");
    const NDShape &ref = ctx.shape(0), &in = ctx.shape(1);
    if (ref != in) {
      if (ref.is_known() && in.is_known()) ctx.fail("ref and input must have the same shape (no broadcasting)");
      if (!ref.is_known() && in.is_known()) ctx.fill_inferred(0, in);
    }
    return ctx.one(in);
  };
  d.forward = [](ComputeContext& ctx) {
    NDArrayView y = ctx.inputs[1].to_dense().copy();
    Variable ref = ctx.fn->direct_inputs()[0];
    if (ctx.deferred) {
      NDArrayView v = y.dtype() == ref.dtype() ? y.copy() : y.cast(ref.dtype());
      ctx.deferred->push_back([ref, v]() mutable {
        if (v.shape() != ref.shape())
          throw ValueError("Assign: the new value of shape " + v.shape().str() + " does not fit " + ref.str());
        // A fresh buffer: views of the old value held elsewhere stay valid.
        ref.impl()->value = v;
        ++ref.impl()->value_version;
      });
    }
    return std::vector<NDArrayView>{y};
  };
  d.backward = [](ComputeContext& ctx, size_t i) {
    if (i == 0) return eager::zeros_like(ctx.inputs[0]);
    return ctx.grad_outputs[0];
  };
  register_op(std::move(d));
}

// ------------------------------------------------------------- ONNX forms

// An op over the whole sample (ONNX's coerced-to-2-D form, which opset 13 dropped): the
// old form directly, else over the sample flattened and reshaped back.
void whole_sample_onnx(onnx_io::ExportContext& c, const std::string& op) {
  const int64_t dyn = c.input_dyn(0);
  if (c.opset() < 13 || c.input_var(0).shape().rank() == 1) {
    c.node1(op, {c.input(0)}, {onnx_io::Attr("axis", dyn)}, c.output(0));
    return;
  }
  std::string flat = c.node1("Flatten", {c.input(0)}, {onnx_io::Attr("axis", dyn)});
  std::string y = c.node1(op, {flat}, {onnx_io::Attr("axis", int64_t(1))});
  c.node1("Reshape", {y, c.node1("Shape", {c.input(0)})}, {}, c.output(0));
}

// Softmax/LogSoftmax over one static axis: from opset 13 ONNX's axis; before, the coerced
// form is that axis only when it is the last one, so another axis is moved there and back.
void softmax_onnx(onnx_io::ExportContext& c, const std::string& op) {
  Span s = span_of(c.attr_value("axis").as_axis());
  if (s.kind == Span::Batch) c.unsupported("normalizing over the batch axis");
  if (s.kind == Span::AllStatic) return whole_sample_onnx(c, op);
  const int64_t dyn = c.input_dyn(0), r = int64_t(c.input_var(0).shape().rank());
  const int64_t axis = dyn + (s.index < 0 ? s.index + r : s.index), last = dyn + r - 1;
  if (c.opset() >= 13 || axis == last) {
    c.node1(op, {c.input(0)}, {onnx_io::Attr("axis", axis)}, c.output(0));
    return;
  }
  std::vector<int64_t> perm(size_t(last + 1));
  for (int64_t i = 0; i <= last; ++i) perm[size_t(i)] = i;
  std::swap(perm[size_t(axis)], perm[size_t(last)]);  // its own inverse
  std::string t = c.node1("Transpose", {c.input(0)}, {onnx_io::Attr("perm", perm)});
  std::string y = c.node1(op, {t}, {onnx_io::Attr("axis", last)});
  c.node1("Transpose", {y}, {onnx_io::Attr("perm", perm)}, c.output(0));
}

// TopK: ONNX's TopK over the axis counted after the dynamic dimensions (largest first, the
// lower index first among equals, as the engine); its int64 indices cast to the engine's
// float indices. A scalar operand (k = 1) is itself with index 0.
void topk_onnx(onnx_io::ExportContext& c) {
  const auto& x = c.input_var(0);
  const int64_t r = int64_t(x.shape().rank()), k = c.attr_int("numItems");
  const auto to = int64_t(onnx_io::elem_type_of(x.dtype()));
  if (r == 0) {
    c.node1("Identity", {c.input(0)}, {}, c.output(0));
    c.node1("Sub", {c.input(0), c.input(0)}, {}, c.output(1));
    return;
  }
  int64_t a = topk_axis(c.function().attributes()).static_index();
  if (a < 0) a += r;
  const int64_t axis = c.input_dyn(0) + a;
  const std::vector<std::string> outs = {c.output(0), c.fresh_name(c.output(1) + "_int64")};
  if (c.opset() >= 10)
    c.node("TopK", {c.input(0), c.constant_i64({k})}, {onnx_io::Attr("axis", axis)}, outs, 2);
  else
    c.node("TopK", {c.input(0)}, {onnx_io::Attr("axis", axis), onnx_io::Attr("k", k)}, outs, 2);
  c.node1("Cast", {outs[1]}, {onnx_io::Attr("to", to)}, c.output(1));
}

void register_nn_onnx() {
  // Cast: ONNX's Cast to the target's float type.
  set_onnx_export("Cast", [](onnx_io::ExportContext& c) {
    const auto to = onnx_io::elem_type_of(static_cast<DataType>(c.attr_int("newDataType")));
    c.node1("Cast", {c.input(0)}, {onnx_io::Attr("to", int64_t(to))}, c.output(0));
  });
  // zeros_like / ones_like: ConstantOfShape over the operand's runtime shape (batch and
  // sequence dimensions included), the fill value in the operand's type, as CNTK 2.7 wrote.
  set_onnx_export("ConstantOp", [](onnx_io::ExportContext& c) {
    const DataType t = c.input_var(0).dtype();
    const NDArrayView fill = NDArrayView::full(t, NDShape({1}), c.attr_double("fillValue"));
    c.node1("ConstantOfShape", {c.node1("Shape", {c.input(0)})}, {onnx_io::Attr("value", fill)}, c.output(0));
  });
  // eye_like: the operand has two axes counting its dynamic ones, so its ONNX tensor is 2-D.
  set_onnx_export("EyeLikeOp", [](onnx_io::ExportContext& c) {
    if (c.attr_bool("OutputSparse")) c.unsupported("a sparse output (ONNX tensors are dense)");
    c.node1("EyeLike", {c.input(0)}, {}, c.output(0));
  });
  set_onnx_export("TopK", topk_onnx);
  set_onnx_export("Softmax", [](onnx_io::ExportContext& c) { softmax_onnx(c, "Softmax"); });
  set_onnx_export("LogSoftmax", [](onnx_io::ExportContext& c) { softmax_onnx(c, "LogSoftmax"); });
  set_onnx_export("Hardmax", [](onnx_io::ExportContext& c) { whole_sample_onnx(c, "Hardmax"); });
  // The activations with attributes (registered with the elementwise ops) and their ONNX names.
  set_onnx_export("ELU", [](onnx_io::ExportContext& c) {
    c.node1("Elu", {c.input(0)}, {onnx_io::Attr("alpha", c.attr_double("alpha"))}, c.output(0));
  });
  set_onnx_export("LeakyReLU", [](onnx_io::ExportContext& c) {
    c.node1("LeakyRelu", {c.input(0)}, {onnx_io::Attr("alpha", c.attr_double("alpha"))}, c.output(0));
  });
  set_onnx_export("SELU", [](onnx_io::ExportContext& c) {
    c.node1("Selu", {c.input(0)},
            {onnx_io::Attr("alpha", c.attr_double("alpha")), onnx_io::Attr("gamma", c.attr_double("gamma"))},
            c.output(0));
  });
  set_onnx_export("HardSigmoid", [](onnx_io::ExportContext& c) {
    c.node1("HardSigmoid", {c.input(0)},
            {onnx_io::Attr("alpha", c.attr_double("alpha")), onnx_io::Attr("beta", c.attr_double("beta"))},
            c.output(0));
  });
}

}  // namespace

void register_nn_ops() {
  // Softmax without an axis normalizes over the whole sample (CNTK's SoftmaxNode);
  // LogSoftmax without one over the last static axis (CNTK's LogSoftmax(x) = Axis(0)).
  register_softmax("Softmax", 10, Axis::all_static_axes(), false, true);
  register_softmax("LogSoftmax", 51, Axis(-1), true, true);
  register_hardmax();
  register_topk();
  register_cast();
  register_constant_like();
  register_eye_like();
  register_assign();
  register_nn_onnx();
}

}  // namespace cntk
