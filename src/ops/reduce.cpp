// Reductions: ReduceElements (sum, mean, max, min, prod, log-sum-exp, argmax,
// argmin) over static axes, all static axes, the batch axis, or the sequence axis.
// Over the sequence axis, padding steps first take the reduction's identity
// (0 for sums, -inf for max, ...) and a mean divides by each sequence's length.
#include <cmath>
#include <map>
#include <limits>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/reduce.h"
#include "onnx/export.h"
#include "ops/eager.h"
#include "ops/op.h"
#include "ops/sequence.h"

namespace cntk {
namespace {

using kernels::ReduceOp;

ReduceOp reduce_op(const std::string& name, const std::string& op_for_errors) {
  if (name == "Sum") return ReduceOp::Sum;
  if (name == "Mean") return ReduceOp::Mean;
  if (name == "Max") return ReduceOp::Max;
  if (name == "Min") return ReduceOp::Min;
  if (name == "Prod") return ReduceOp::Prod;
  if (name == "LogSum") return ReduceOp::LogSum;
  if (name == "Argmax") return ReduceOp::Argmax;
  if (name == "Argmin") return ReduceOp::Argmin;
  throw ValueError(op_for_errors + ": unknown reduction '" + name + "'");
}

std::vector<Axis> reduction_axes(const Dictionary& a) {
  auto it = a.find("axisVec");
  if (it != a.end() && !it->second.empty()) return it->second.as_axis_list();
  return {schema_attr(find_op("ReduceElements"), "ReduceElements", a, "axis").as_axis()};
}

struct ReducePlan {
  std::vector<bool> static_axes;  // over the static shape
  std::vector<Axis> dyn_reduced;  // dynamic axes that disappear
  bool keepdims = true;
};

ReducePlan plan_reduce(const Dictionary& attrs, size_t static_rank, const std::vector<Axis>& dyn,
                       const std::function<void(const std::string&)>& fail) {
  ReducePlan p;
  p.static_axes.assign(static_rank, false);
  p.keepdims = op_attr_bool("ReduceElements", attrs, "reductionKeepDimensions");
  for (auto& ax : reduction_axes(attrs)) {
    switch (ax.kind()) {
      case Axis::Kind::Static: {
        int r = int(static_rank), i = ax.static_index() < 0 ? ax.static_index() + r : ax.static_index();
        if (i < 0 || i >= r) fail("axis " + std::to_string(ax.static_index()) + " is out of range");
        p.static_axes[i] = true;
        break;
      }
      case Axis::Kind::AllStatic: p.static_axes.assign(static_rank, true); break;
      case Axis::Kind::All:
        p.static_axes.assign(static_rank, true);
        p.dyn_reduced = dyn;
        break;
      case Axis::Kind::Dynamic: {
        if (ax == Axis::operand_sequence_axis()) {
          const Axis* seq = nullptr;
          for (auto& a : dyn)
            if (a.is_sequence()) seq = &a;
          if (!seq) fail("the operand has no sequence axis");
          p.dyn_reduced.push_back(*seq);
          break;
        }
        bool found = false;
        for (auto& a : dyn) found = found || a == ax;
        if (!found) fail("the operand has no dynamic axis '" + ax.name() + "'");
        p.dyn_reduced.push_back(ax);
        break;
      }
    }
  }
  bool seq = false, batch = false, has_seq = false;
  for (auto& a : dyn) has_seq = has_seq || a.is_sequence();
  for (auto& a : p.dyn_reduced) (a.is_sequence() ? seq : batch) = true;
  if (batch && has_seq && !seq)
    throw NotImplementedError("reducing over the batch axis of a sequence but not over its sequence axis");
  return p;
}

std::vector<OutputInfo> infer_reduce(InferContext& ctx) {
  ctx.expect_inputs(1);
  const NDShape& s = ctx.shape(0);
  auto p = plan_reduce(ctx.attrs(), s.rank(), ctx.input(0).dynamic_axes(), [&](const std::string& m) { ctx.fail(m); });
  std::string op = ctx.attr_string("reductionOpName");
  reduce_op(op, ctx.op());
  // One axis, or all static axes together (CNTK's argmax without an axis: the index into
  // the flattened sample); not a list of several.
  if ((op == "Argmax" || op == "Argmin") && reduction_axes(ctx.attrs()).size() > 1)
    ctx.fail(op + " reduces one axis (or all static axes), not several");
  std::vector<int64_t> dims;
  for (size_t i = 0; i < s.rank(); ++i) {
    if (!p.static_axes[i])
      dims.push_back(s[i]);
    else if (p.keepdims)
      dims.push_back(1);
  }
  std::vector<Axis> out_dyn;
  for (auto& a : ctx.input(0).dynamic_axes()) {
    bool gone = false;
    for (auto& r : p.dyn_reduced) gone = gone || r == a;
    if (!gone) out_dyn.push_back(a);
  }
  return {{NDShape(dims), ctx.dtype(0), out_dyn}};
}

// Runtime mask over all dims of the input tensor, and the output's runtime shape.
std::vector<bool> runtime_axes(const ComputeContext& ctx, const ReducePlan& p) {
  std::vector<bool> m;
  for (auto& a : ctx.in_axes[0]) {
    bool r = false;
    for (auto& x : p.dyn_reduced) r = r || x == a;
    m.push_back(r);
  }
  for (bool b : p.static_axes) m.push_back(b);
  return m;
}

NDShape output_shape(const ComputeContext& ctx, const ReducePlan& p, const NDShape& kept_shape) {
  // kept_shape: input rank with 1s on reduced axes; drop dyn reduced axes always, static ones unless keepdims.
  std::vector<int64_t> dims;
  int nd = ctx.in_dyn[0];
  auto m = runtime_axes(ctx, p);
  for (size_t i = 0; i < kept_shape.rank(); ++i) {
    if (!m[i])
      dims.push_back(kept_shape[i]);
    else if (int(i) >= nd && p.keepdims)
      dims.push_back(1);
  }
  return NDShape(dims);
}

ReducePlan runtime_plan(const ComputeContext& ctx) {
  std::vector<Axis> dyn(ctx.in_axes[0].rbegin(), ctx.in_axes[0].rend());
  return plan_reduce(ctx.attr(), ctx.inputs[0].rank() - ctx.in_dyn[0], dyn,
                     [](const std::string& m) { throw ValueError("ReduceElements: " + m); });
}

// Whether the runtime tensor's leading (sequence) dim is reduced.
bool reduces_sequence(const ComputeContext& ctx, const std::vector<bool>& m) { return ctx.in_dyn[0] == 2 && m[0]; }

double padding_identity(ReduceOp op) {
  double inf = std::numeric_limits<double>::infinity();
  switch (op) {
    case ReduceOp::Max:
    case ReduceOp::LogSum: return -inf;
    case ReduceOp::Min: return inf;
    case ReduceOp::Prod: return 1.0;
    case ReduceOp::Argmax:
    case ReduceOp::Argmin: throw NotImplementedError("ReduceElements: argmax/argmin over a sequence axis");
    default: return 0.0;
  }
}

// The number of elements each output element of a mean over a sequence averages, laid
// out to broadcast against the kept-dims shape `kept` (1 on reduced axes).
NDArrayView sequence_mean_counts(const ComputeContext& ctx, const std::vector<bool>& m, const NDShape& kept) {
  const NDArrayView& x = ctx.inputs[0];
  int64_t T = x.shape()[0], B = x.shape()[1], stat = 1;
  for (size_t i = 2; i < m.size(); ++i)
    if (m[i]) stat *= x.shape()[i];
  std::vector<int64_t> lens = ctx.in_lengths[0];
  if (lens.empty()) lens.assign(size_t(B), T);
  std::vector<int64_t> dims(kept.rank(), 1);
  dims[1] = m[1] ? 1 : B;
  NDArrayView c(x.dtype(), NDShape(dims));
  int64_t total = 0;
  for (auto l : lens) total += l;
  CNTK_DISPATCH_FLOAT(x.dtype(), V, [&] {
    V* p = c.data<V>();
    for (int64_t b = 0; b < dims[1]; ++b) p[b] = V(stat * (m[1] ? total : lens[size_t(b)]));
  });
  return c;
}

std::vector<NDArrayView> reduce_forward(ComputeContext& ctx) {
  ReducePlan p = runtime_plan(ctx);
  ReduceOp op = reduce_op(ctx.attr_string("reductionOpName"), "ReduceElements");
  auto m = runtime_axes(ctx, p);
  if (!reduces_sequence(ctx, m)) {
    NDArrayView y = kernels::reduce(ctx.inputs[0], m, op);
    return {y.reshape(output_shape(ctx, p, y.shape()))};
  }
  NDArrayView x = fill_padding(ctx.inputs[0], ctx.in_lengths[0], padding_identity(op));
  NDArrayView y = kernels::reduce(x, m, op == ReduceOp::Mean ? ReduceOp::Sum : op);
  if (op == ReduceOp::Mean) y = eager::div(y, sequence_mean_counts(ctx, m, y.shape()));
  return {y.reshape(output_shape(ctx, p, y.shape()))};
}

NDArrayView reduce_backward(ComputeContext& ctx, size_t) {
  ReducePlan p = runtime_plan(ctx);
  std::string name = ctx.attr_string("reductionOpName");
  const NDArrayView& x = ctx.inputs[0];
  auto m = runtime_axes(ctx, p);
  std::vector<int64_t> kept(x.shape().dims());
  int64_t count = 1;
  for (size_t i = 0; i < m.size(); ++i)
    if (m[i]) {
      count *= kept[i];
      kept[i] = 1;
    }
  NDShape ks(kept);
  NDArrayView g = ctx.grad_outputs[0].reshape(ks), y = ctx.outputs[0].reshape(ks);
  bool seq = reduces_sequence(ctx, m);
  NDArrayView xd =
      seq ? fill_padding(x, ctx.in_lengths[0], padding_identity(reduce_op(name, "ReduceElements"))) : x.to_dense();
  if (seq && name == "Mean") g = eager::div(g, sequence_mean_counts(ctx, m, ks));
  NDArrayView grad = CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
    if (name == "Sum" || (seq && name == "Mean"))
      return kernels::apply<T, 2>(x.dtype(), {&xd, &g}, [](T, T gg) { return gg; });
    if (name == "Mean") {
      T inv = T(1) / T(count);
      return kernels::apply<T, 2>(x.dtype(), {&xd, &g}, [inv](T, T gg) { return gg * inv; });
    }
    if (name == "LogSum")
      return kernels::apply<T, 3>(x.dtype(), {&xd, &y, &g}, [](T a, T b, T gg) { return gg * std::exp(a - b); });
    if (name == "Prod")
      return kernels::apply<T, 3>(x.dtype(), {&xd, &y, &g}, [](T a, T b, T gg) { return gg * b / a; });
    // Max/Min: the gradient goes to the elements equal to the extreme (all ties, as CNTK does).
    return kernels::apply<T, 3>(x.dtype(), {&xd, &y, &g}, [](T a, T b, T gg) { return a == b ? gg : T(0); });
  });
  return seq ? fill_padding(grad, ctx.in_lengths[0], 0.0) : grad;
}

// ONNX: Reduce<Op> over the static axes (ONNX axis = dynamic dims + static index); argmax
// and argmin as ArgMax/ArgMin (one axis; all static axes: over the flattened sample), cast
// to the output's float type. Reductions over the dynamic axes have no ONNX form here.
void export_reduce(onnx_io::ExportContext& c) {
  using onnx_io::Attr;
  const Variable& x = c.input_var(0);
  const Dictionary& attrs = c.function().attributes();
  const size_t rank = x.shape().rank();
  ReducePlan p = plan_reduce(attrs, rank, x.dynamic_axes(), [&](const std::string& m) { c.unsupported(m); });
  const int nd = c.input_dyn(0);
  std::vector<int64_t> axes;
  for (size_t d = 0; d < size_t(nd); ++d)  // the dynamic axes reduced: their ONNX dims
    for (const Axis& a : p.dyn_reduced)
      if (a == x.dynamic_axes()[d]) axes.push_back(int64_t(d));
  const bool dyn = !axes.empty();
  for (size_t k = 0; k < rank; ++k)
    if (p.static_axes[k]) axes.push_back(nd + int64_t(k));
  // keepdims as the output's rank says: reducing all static axes drops them even with keepdims.
  // A reduced dynamic axis disappears: reduce keeping dims, then reshape to the output.
  const NDShape out_shape = c.output_var(0).shape();
  const size_t out_rank = out_shape.rank();
  const int64_t keep = dyn || out_rank == rank ? 1 : 0;
  if (!dyn && out_rank != rank && out_rank != rank - axes.size())
    c.unsupported("a reduction whose output rank is " + std::to_string(out_rank));
  if (dyn && (c.output_dyn(0) > 1 || !out_shape.is_known()))
    c.unsupported("a reduction over one dynamic axis of several, or with free dimensions");
  std::string final_out = c.output(0);
  std::string reshape_shape;
  if (dyn) {
    std::vector<int64_t> d(size_t(c.output_dyn(0)), -1);  // the dynamic dim left, if any
    d.insert(d.end(), out_shape.dims().begin(), out_shape.dims().end());
    reshape_shape = c.constant_i64(d);
    final_out = c.fresh_name(c.output(0) + "_kept");
  }
  const std::string op = c.attr_string("reductionOpName");
  if (axes.empty()) {
    c.node1("Identity", {c.input(0)}, {}, c.output(0));
    return;
  }
  if (op == "Argmax" || op == "Argmin") {
    if (dyn) c.unsupported(op + " over a dynamic axis");
    std::string in = c.input(0);
    int64_t axis = axes[0];
    if (axes.size() > 1) {  // all static axes: the index into the flattened sample
      std::vector<int64_t> flat(size_t(nd), 0);
      flat.push_back(-1);
      in = c.node1("Reshape", {in, c.constant_i64(flat)});
      axis = nd;
    }
    std::string idx = c.node1(op == "Argmax" ? "ArgMax" : "ArgMin", {in}, {Attr("axis", axis), Attr("keepdims", keep)});
    const auto to = Attr("to", int64_t(onnx_io::elem_type_of(c.output_var(0).dtype())));
    if (axes.size() == 1) {
      c.node1("Cast", {idx}, {to}, c.output(0));
      return;
    }
    std::vector<int64_t> shape(size_t(nd), 0);
    for (int64_t d : c.output_var(0).shape().dims()) shape.push_back(d);
    c.node1("Reshape", {c.node1("Cast", {idx}, {to}), c.constant_i64(shape)}, {}, c.output(0));
    return;
  }
  static const std::map<std::string, std::string> kOnnx = {{"Sum", "ReduceSum"},   {"Mean", "ReduceMean"},
                                                           {"Max", "ReduceMax"},   {"Min", "ReduceMin"},
                                                           {"Prod", "ReduceProd"}, {"LogSum", "ReduceLogSumExp"}};
  auto it = kOnnx.find(op);
  if (it == kOnnx.end()) c.unsupported("the reduction '" + op + "'");
  // Axes became an input: ReduceSum at opset 13, the others at 18.
  const bool axes_input = c.opset() >= (op == "Sum" ? 13 : 18);
  if (axes_input)
    c.node1(it->second, {c.input(0), c.constant_i64(axes)}, {Attr("keepdims", keep)}, final_out);
  else
    c.node1(it->second, {c.input(0)}, {Attr("axes", axes), Attr("keepdims", keep)}, final_out);
  if (dyn) c.node1("Reshape", {final_out, reshape_shape}, {}, c.output(0));
}

}  // namespace

void register_reduce_ops() {
  OpDef d;
  d.name = "ReduceElements";
  d.op_type = 39;
  d.inputs = {{"x"}};
  d.attrs = {{"axis", AttrType::Axis, Axis::all_static_axes(), AxisOrder::NumPy},
             {"axisVec", AttrType::AxisList, {}, AxisOrder::NumPy},
             {"reductionOpName", AttrType::String, "Sum"},
             {"reductionKeepDimensions", AttrType::Bool, true}};
  d.infer = infer_reduce;
  d.forward = reduce_forward;
  d.backward = [](ComputeContext& ctx, size_t i) -> NDArrayView {
    std::string name = ctx.attr_string("reductionOpName");
    if (name == "Argmax" || name == "Argmin") return eager::zeros_like(ctx.inputs[0]);
    return reduce_backward(ctx, i);
  };
  register_op(std::move(d));
  set_onnx_export("ReduceElements", export_reduce);
}

}  // namespace cntk
