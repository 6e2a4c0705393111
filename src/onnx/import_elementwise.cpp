// ONNX elementwise ops read as the engine's elementwise primitives. ONNX broadcasts
// right-aligned (NumPy), as the engine broadcasts static shapes.
#include <cmath>
#include <limits>
#include <set>

#include "onnx/import_axes.h"
#include "onnx/tensor.h"
#include "ops/op.h"

namespace cntk::onnx_io {

namespace {

ImportFn unary(const std::string& op) {
  return [op](ImportContext& c) { return keep_type(c, 0, {c.primitive(op, {c.input(0)})->output()}); };
}
// The right operand as NumPy broadcasting sees it. Before opset 7, broadcast=1 with an axis
// aligned it from that axis of the left operand on (not from the right): trailing 1s do that.
Variable right_operand(ImportContext& c) {
  Variable b = c.input(1);
  if (c.opset() >= 7 || !c.attr_int("broadcast", 0) || !c.has_attr("axis")) return b;
  const int64_t ra = int64_t(c.input(0).shape().rank()), rb = int64_t(b.shape().rank());
  int64_t axis = c.attr_int("axis");
  if (axis < 0) axis += ra;
  const int64_t trailing = ra - axis - rb;
  if (trailing < 0) c.fail("the broadcast axis leaves too few dimensions for the right operand");
  if (trailing == 0) return b;
  std::vector<int64_t> d = b.shape().dims();
  d.insert(d.end(), size_t(trailing), 1);
  return c.primitive("Reshape", {b}, {{"newShape", NDShape(d)}})->output();
}

ImportFn binary(const std::string& op) {
  return [op](ImportContext& c) {
    // Integer operands give integers (Div truncates them, so it must know).
    return keep_type(c, 0, {c.primitive(op, {c.input(0), right_operand(c)})->output()});
  };
}

// Div: integers divide truncating towards zero (the engine computes them as floats).
std::vector<Variable> divide(ImportContext& c) {
  Variable q = c.primitive("ElementDivide", {c.input(0), right_operand(c)})->output();
  const int32_t t = c.input_elem_type(0);
  if (!is_integer_type(t)) return {q};
  Variable zero = Variable::constant(NDShape{}, q.dtype(), 0.0, c.name() + "/zero");
  Variable down = c.primitive("Floor", {q})->output();
  Variable up =
      c.primitive("Negate", {c.primitive("Floor", {c.primitive("Negate", {q})->output()})->output()})->output();
  c.set_output_elem_type(0, t);
  return {c.primitive("Select", {c.primitive("Less", {q, zero})->output(), up, down})->output()};
}

// Comparisons and logic: the engine's 0/1 floats, declared bool.
ImportFn boolean(const std::string& op, size_t arity) {
  return [op, arity](ImportContext& c) {
    std::vector<Variable> ins;
    for (size_t i = 0; i < arity; ++i) ins.push_back(c.input(i));
    c.set_output_elem_type(0, ::onnx::TensorProto::BOOL);
    return std::vector<Variable>{c.primitive(op, ins)->output()};
  };
}

Variable out(const FunctionPtr& f) { return f->output(); }

// Max/Min/Sum/Mean over any number of broadcasting inputs, pairwise (earlier inputs read first,
// so that the arguments keep the graph's order).
ImportFn variadic(const std::string& which) {
  return [which](ImportContext& c) {
    Variable acc = c.input(0);
    for (size_t i = 1; i < c.num_inputs(); ++i) {
      Variable x = c.input(i);
      if (which == "Max" || which == "Min")
        acc = out(c.primitive("Select", {out(c.primitive(which == "Max" ? "Less" : "Greater", {acc, x})), x, acc}));
      else
        acc = out(c.primitive("Plus", {acc, x}));
    }
    if (which == "Mean" && c.num_inputs() > 1)
      acc = out(c.primitive(
          "ElementTimes",
          {acc, Variable::constant(NDShape{}, acc.dtype(), 1.0 / double(c.num_inputs()), c.name() + "/scale")}));
    if (c.num_inputs() == 1) acc = out(c.primitive("Pass", {acc}));
    return keep_type(c, 0, {acc});
  };
}

// The engine keeps CNTK's guarded forms (sqrt of a negative is 0, log clips its argument at
// 1e-37, 1/0 is 0); ONNX's are IEEE's, so the guarded ranges are selected around them.
Variable scalar_like(ImportContext& c, const Variable& x, double v, const char* what) {
  return Variable::constant(NDShape{}, x.dtype(), v, c.name() + "/" + what);
}
std::vector<Variable> sqrt_ieee(ImportContext& c) {
  Variable x = c.input(0);
  Variable neg = out(c.primitive("Less", {x, scalar_like(c, x, 0.0, "zero")}));
  Variable nan = scalar_like(c, x, std::numeric_limits<double>::quiet_NaN(), "nan");
  return {out(c.primitive("Select", {neg, nan, out(c.primitive("Sqrt", {x}))}))};
}
std::vector<Variable> log_ieee(ImportContext& c) { return {ieee_log(c, c.input(0))}; }
std::vector<Variable> reciprocal_ieee(ImportContext& c) {
  Variable x = c.input(0);
  return {out(c.primitive("ElementDivide", {scalar_like(c, x, 1.0, "one"), x}))};
}

// Clip: bounds as attributes before opset 11, optional scalar inputs from then; absent
// bounds are the type's extremes.
std::vector<Variable> clip(ImportContext& c) {
  Variable x = c.input(0);
  auto bound = [&](size_t i, const char* attr, double def) {
    if (c.opset() < 11)
      return Variable::constant(NDShape{}, x.dtype(), c.attr_float(attr, float(def)), c.name() + "/" + attr);
    if (c.has_input(i)) return c.input(i);
    return Variable::constant(NDShape{}, x.dtype(), def, c.name() + "/" + attr);
  };
  const double inf = std::numeric_limits<double>::infinity();
  return keep_type(c, 0, {out(c.primitive("Clip", {x, bound(1, "min", -inf), bound(2, "max", inf)}))});
}

}  // namespace

Variable ieee_log(ImportContext& c, const Variable& x) {
  Variable zero = scalar_like(c, x, 0.0, "zero");
  Variable y = out(c.primitive("Log", {x}));
  // Below the clip, log(x) = log(x * 2^k) - k log 2 (the scaling is exact); float16 has no
  // values there.
  if (x.dtype() != DataType::Float16) {
    const int k = x.dtype() == DataType::Double ? 1000 : 100;
    Variable scaled = out(c.primitive("ElementTimes", {x, scalar_like(c, x, std::ldexp(1.0, k), "scale")}));
    Variable small =
        out(c.primitive("Minus", {out(c.primitive("Log", {scaled})), scalar_like(c, x, k * std::log(2.0), "shift")}));
    Variable below = out(c.primitive("Less", {x, scalar_like(c, x, 1e-30, "small")}));
    y = out(c.primitive("Select", {below, small, y}));
  }
  Variable is_zero = out(c.primitive("Equal", {x, zero}));
  y = out(c.primitive("Select", {is_zero, scalar_like(c, x, -std::numeric_limits<double>::infinity(), "ninf"), y}));
  Variable neg = out(c.primitive("Less", {x, zero}));
  return out(c.primitive("Select", {neg, scalar_like(c, x, std::numeric_limits<double>::quiet_NaN(), "nan"), y}));
}
void register_import_elementwise() {
  // The ops whose ONNX form is one ONNX op (OpDef::onnx_op, set with the form in src/ops) read
  // back as that op. Rules of the reader's own stand where ONNX's results differ from the
  // engine op's: IEEE's Sqrt, Log and Reciprocal, and Div, which truncates integers.
  const std::set<std::string> own{"Sqrt", "Log", "Reciprocal", "Div"};
  for (const std::string& name : registered_ops()) {
    const OpDef* d = find_op(name);
    if (d->onnx_op.empty() || own.count(d->onnx_op)) continue;
    register_onnx_import(d->onnx_op, d->inputs.size() == 1 ? unary(name) : binary(name));
  }
  register_onnx_import("Div", divide);
  register_onnx_import("Sqrt", sqrt_ieee);
  register_onnx_import("Log", log_ieee);
  register_onnx_import("Reciprocal", reciprocal_ieee);
  // Ops without an engine primitive, composed: ceil(x) = -floor(-x), sign(x) = (x > 0) - (x < 0),
  // acosh(x) = log(x + sqrt(x^2 - 1)).
  register_onnx_import("Ceil", [](ImportContext& c) {
    Variable n = c.primitive("Negate", {c.input(0)})->output();
    return std::vector<Variable>{c.primitive("Negate", {c.primitive("Floor", {n})->output()})->output()};
  });
  register_onnx_import("Sign", [](ImportContext& c) {
    Variable x = c.input(0), zero = Variable::constant(NDShape{}, x.dtype(), 0.0, c.name() + "/zero");
    Variable pos = c.primitive("Greater", {x, zero})->output(), neg = c.primitive("Less", {x, zero})->output();
    return keep_type(c, 0, {c.primitive("Minus", {pos, neg})->output()});
  });
  register_onnx_import("Acosh", [](ImportContext& c) {
    Variable x = c.input(0), one = Variable::constant(NDShape{}, x.dtype(), 1.0, c.name() + "/one");
    Variable sq = c.primitive("Minus", {c.primitive("ElementTimes", {x, x})->output(), one})->output();
    Variable r = c.primitive("Sqrt", {sq})->output();
    Variable y = c.primitive("Log", {c.primitive("Plus", {x, r})->output()})->output();
    // Below 1 acosh is NaN (the engine's guarded sqrt would give a number).
    Variable nan = scalar_like(c, x, std::numeric_limits<double>::quiet_NaN(), "nan");
    return std::vector<Variable>{out(c.primitive("Select", {out(c.primitive("Less", {x, one})), nan, y}))};
  });
  for (auto [onnx, op] : {std::pair{"Equal", "Equal"},
                          {"Less", "Less"},
                          {"LessOrEqual", "LessEqual"},
                          {"Greater", "Greater"},
                          {"GreaterOrEqual", "GreaterEqual"},
                          {"And", "And"},
                          {"Or", "Or"},
                          {"Xor", "Xor"}})
    register_onnx_import(onnx, boolean(op, 2));
  register_onnx_import("Not", boolean("Not", 1));
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) register_onnx_import(op, variadic(op));
  register_onnx_import("Clip", clip);
  register_onnx_import("Identity", [](ImportContext& c) { return std::vector<Variable>{c.input(0)}; });
  // Constant: a tensor (value), a float/int scalar or list (value_float(s), value_int(s)).
  register_onnx_import("Constant", [](ImportContext& c) {
    auto make = [&](NDArrayView v) { return std::vector<Variable>{Variable::constant(std::move(v), c.name())}; };
    auto from = [&](const std::vector<double>& v, bool scalar, int32_t type) {
      NDArrayView t(DataType::Float, scalar ? NDShape{} : NDShape{int64_t(v.size())});
      for (size_t k = 0; k < v.size(); ++k) t.data<float>()[k] = float(v[k]);
      if (type != ::onnx::TensorProto::FLOAT) c.set_output_elem_type(0, type);
      return make(t);
    };
    if (c.has_attr("value")) {
      const auto& t = c.attr_tensor("value");
      if (t.data_type() != ::onnx::TensorProto::FLOAT && t.data_type() != ::onnx::TensorProto::DOUBLE &&
          t.data_type() != ::onnx::TensorProto::FLOAT16)
        c.set_output_elem_type(0, t.data_type());
      return make(c.tensor_value(t));
    }
    if (c.has_attr("value_float")) return from({c.attr_float("value_float")}, true, ::onnx::TensorProto::FLOAT);
    if (c.has_attr("value_int")) return from({double(c.attr_int("value_int"))}, true, ::onnx::TensorProto::INT64);
    if (c.has_attr("value_floats")) {
      auto f = c.attr_floats("value_floats");
      return from(std::vector<double>(f.begin(), f.end()), false, ::onnx::TensorProto::FLOAT);
    }
    if (c.has_attr("value_ints")) {
      auto v = c.attr_ints("value_ints");
      return from(std::vector<double>(v.begin(), v.end()), false, ::onnx::TensorProto::INT64);
    }
    c.fail("only numeric constants (value, value_float(s), value_int(s)) are read; strings and sparse tensors are not");
  });
}

}  // namespace cntk::onnx_io
