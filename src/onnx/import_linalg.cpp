// ONNX MatMul and Gemm read as the engine's Times (NumPy order: x [.., k] times W [k, n]).
// A MatMul whose right operand is not one matrix without dynamic axes (batched MatMul, two
// variables) is a broadcast product summed over the contracted axis.
#include "onnx/import_axes.h"

namespace cntk::onnx_io {

namespace {

using Vars = std::vector<Variable>;
Variable out(const FunctionPtr& f) { return f->output(); }

// x with a dimension of 1 inserted at static position k (0 <= k <= rank).
// A reshape of no axes into [1]: free dimensions stay as they are.
Variable insert_axis(ImportContext& c, const Variable& x, size_t k) {
  return out(c.primitive("Reshape", {x},
                         {{"newShape", NDShape({1})}, {"beginAxis", Axis(int(k))}, {"endAxis", Axis(int(k))}}));
}

Vars matmul(ImportContext& c, Variable a, Variable b) {
  const size_t ra = a.shape().rank(), rb = b.shape().rank();
  if (ra == 0 || rb == 0) c.fail("MatMul of a scalar");
  if (b.dynamic_axes().empty() && rb <= 2)  // by one matrix (or vector): Times
    return {out(c.primitive("Times", {a, b}, {{"outputRank", int64_t(rb - 1)}}))};
  // float16 operands multiply and sum in float32, rounded once at the end as Times rounds
  // (float16 products rounded one by one before the sum would differ from it).
  if (a.dtype() == DataType::Float16) {
    auto cast = [&](const Variable& v, DataType t) {
      return out(c.primitive("Cast", {v}, Dictionary{{"newDataType", int64_t(t)}}));
    };
    Vars y = matmul(c, cast(a, DataType::Float), cast(b, DataType::Float));
    return {cast(y[0], DataType::Float16)};
  }
  // a [.., M, K] -> [.., M, K, 1]; b [.., K, N] -> [.., 1, K, N]; sum over K.
  Variable a3 = ra == 1 ? insert_axis(c, a, 0) : a, b3 = rb == 1 ? insert_axis(c, b, 1) : b;
  a3 = insert_axis(c, a3, a3.shape().rank());
  b3 = insert_axis(c, b3, b3.shape().rank() - 2);
  Variable prod = out(c.primitive("ElementTimes", {a3, b3}));
  Variable y = out(c.primitive("ReduceElements", {prod},
                               {{"reductionOpName", "Sum"}, {"reductionKeepDimensions", false}, {"axis", Axis(-2)}}));
  // Drop the axes that stood for vector operands.
  if (ra == 1 || rb == 1) {
    std::vector<int64_t> d = y.shape().dims();
    if (rb == 1) d.pop_back();
    if (ra == 1) d.erase(d.end() - (rb == 1 ? 1 : 2));
    y = out(c.primitive("Reshape", {y}, {{"newShape", NDShape(d)}}));
  }
  return {y};
}

Variable transposed(ImportContext& c, const Variable& m, const char* what) {
  if (!m.dynamic_axes().empty() || m.shape().rank() != 2)
    c.fail(std::string(what) + " must be a matrix without dynamic axes to be transposed");
  return out(c.primitive("TransposeAxes", {m}, {{"axis1", Axis(0)}, {"axis2", Axis(1)}}));
}

// Gemm: alpha * A' B' + beta * C, A' and B' transposed where transA/transB say.
Vars gemm(ImportContext& c) {
  Variable a = c.input(0), b = c.input(1);
  if (c.attr_int("transA", 0)) a = transposed(c, a, "A");
  if (c.attr_int("transB", 0)) b = transposed(c, b, "B");
  Variable y = out(c.primitive("Times", {a, b}));
  const float alpha = c.attr_float("alpha", 1.f), beta = c.attr_float("beta", 1.f);
  auto scaled = [&](const Variable& v, float s) {
    if (s == 1.f) return v;
    return out(c.primitive("ElementTimes", {v, Variable::constant(NDShape{}, v.dtype(), s, c.name() + "/scale")}));
  };
  y = scaled(y, alpha);
  if (c.has_input(2) && beta != 0.f) y = out(c.primitive("Plus", {y, scaled(c.input(2), beta)}));
  return {y};
}

// MatMulInteger: (A - a_zero_point) (B - b_zero_point) as int32; A's zero point is per row
// (its last-but-one axis) where it is a vector.
Vars matmul_integer(ImportContext& c) {
  auto shifted = [&](size_t i, size_t zp, bool per_row) {
    Variable x = c.input(i);
    if (!c.has_input(zp)) return x;
    Variable z = c.input(zp);
    if (per_row && z.shape().rank() == 1) z = insert_axis(c, z, 1);
    return out(c.primitive("Minus", {x, z}));
  };
  Variable a = shifted(0, 2, true), b = shifted(1, 3, false);
  Vars y = matmul(c, a, b);
  c.set_output_elem_type(0, ::onnx::TensorProto::INT32);
  return y;
}

}  // namespace

void register_import_linalg() {
  register_onnx_import("MatMulInteger", matmul_integer);
  register_onnx_import("MatMul", [](ImportContext& c) { return matmul(c, c.input(0), c.input(1)); });
  register_onnx_import("Gemm", gemm);
}

}  // namespace cntk::onnx_io
