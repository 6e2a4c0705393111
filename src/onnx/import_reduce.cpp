// ONNX reductions read as the engine's ReduceElements over static axes (ONNX axes less the
// input's dynamic dims); the norms and sums of squares compose a reduction with elementwise ops.
#include "onnx/import_axes.h"

namespace cntk::onnx_io {

namespace {

using Vars = std::vector<Variable>;

Variable out(const FunctionPtr& f) { return f->output(); }

// Reduces x (input 0 of the node, or computed from it) with the engine's reduction `op`.
Variable reduce(ImportContext& c, const Variable& x, const std::string& op, int axes_input_since) {
  std::vector<int64_t> axes = axes_of(c, axes_input_since, 1);
  const bool keep = c.attr_int("keepdims", 1) != 0;
  if (axes.empty() && c.opset() >= axes_input_since && c.attr_int("noop_with_empty_axes", 0) != 0) return x;
  Dictionary a{{"reductionOpName", op}, {"reductionKeepDimensions", keep}};
  if (axes.empty()) {
    if (c.input_dyn(0) > 0) c.fail("reducing over all axes of an input with dynamic axes");
    a["axis"] = Axis::all_static_axes();
  } else {
    std::vector<int64_t> s;
    for (int64_t ax : axes) s.push_back(static_axis_of(c, 0, ax));
    a["axisVec"] = axis_list(s);
  }
  return out(c.primitive("ReduceElements", {x}, std::move(a)));
}

}  // namespace

void register_import_reduce() {
  struct R {
    const char *onnx, *op, *pre, *post;
    bool square;
  };
  for (const R& r : {R{"ReduceSum", "Sum", "", "", false}, R{"ReduceMean", "Mean", "", "", false},
                     R{"ReduceMax", "Max", "", "", false}, R{"ReduceMin", "Min", "", "", false},
                     R{"ReduceProd", "Prod", "", "", false}, R{"ReduceLogSumExp", "LogSum", "", "", false},
                     R{"ReduceLogSum", "Sum", "", "Log", false}, R{"ReduceL1", "Sum", "Abs", "", false},
                     R{"ReduceL2", "Sum", "", "Sqrt", true}, R{"ReduceSumSquare", "Sum", "", "", true}}) {
    // Axes: an attribute, then an input (ReduceSum from opset 13, the others from 18).
    const int since = std::string(r.onnx) == "ReduceSum" ? 13 : 18;
    ImportFn fn = [r, since](ImportContext& c) {
      Variable x = c.input(0);
      if (*r.pre) x = out(c.primitive(r.pre, {x}));
      if (r.square) x = out(c.primitive("ElementTimes", {x, x}));
      Variable y = reduce(c, x, r.op, since);
      if (std::string(r.post) == "Log")
        y = ieee_log(c, y);  // log 0 = -inf over an empty set
      else if (*r.post)
        y = out(c.primitive(r.post, {y}));
      // Booleans: the max (min) of an empty set is false (true), not -inf (inf).
      if (c.input_elem_type(0) == ::onnx::TensorProto::BOOL &&
          (r.op == std::string("Max") || r.op == std::string("Min")))
        y = out(c.primitive("Greater", {y, Variable::constant(NDShape{}, y.dtype(), 0.0, c.name() + "/zero")}));
      return keep_type(c, 0, Vars{y});
    };
    register_onnx_import(r.onnx, fn);
  }
  for (auto [onnx, op] : {std::pair{"ArgMax", "Argmax"}, {"ArgMin", "Argmin"}})
    register_onnx_import(onnx, [op = std::string(op)](ImportContext& c) {
      const int64_t axis = static_axis_of(c, 0, c.attr_int("axis", 0));
      Dictionary a{{"reductionOpName", op},
                   {"reductionKeepDimensions", c.attr_int("keepdims", 1) != 0},
                   {"axis", Axis(int(axis))}};
      c.set_output_elem_type(0, ::onnx::TensorProto::INT64);
      Variable x = c.input(0);
      const bool last = c.attr_int("select_last_index", 0) != 0;
      if (!last) return Vars{out(c.primitive("ReduceElements", {x}, std::move(a)))};
      // The last extreme: the first of the reversed axis, counted from its end.
      const int64_t n = x.shape()[size_t(axis)];
      if (n < 0) c.fail("select_last_index over a free dimension");
      Variable rev = out(c.primitive(
          "Slice", {x}, {{"axis", Axis(int(axis))}, {"beginIndex", 0}, {"endIndex", 0}, {"sliceStrides", -1}}));
      Variable i = out(c.primitive("ReduceElements", {rev}, std::move(a)));
      Variable top = Variable::constant(NDShape{}, i.dtype(), double(n - 1), c.name() + "/last");
      return Vars{out(c.primitive("Minus", {top, i}))};
    });
}

}  // namespace cntk::onnx_io
