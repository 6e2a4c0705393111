// ONNX ops over the values of floats that the engine has no primitive for, composed exactly
// from its elementwise ops: Round (half to even), IsInf, IsNaN, Celu, Shrink, Swish, SwiGLU,
// LpNormalization, and the rounding of a float32 value to the grid of a narrower float format
// (bfloat16, the float8 formats, float4e2m1) that Cast to those types computes. The engine holds those
// types' values as float32 (each is a subset of it); the declared ONNX type travels as the
// output's element type.
#include "onnx/import_float.h"

#include <cmath>
#include <limits>

#include "onnx/import_axes.h"

namespace cntk::onnx_io {

namespace {

using ::onnx::TensorProto;
using Vars = std::vector<Variable>;

Variable out(const FunctionPtr& f) { return f->output(); }

struct Ops {
  ImportContext& c;
  DataType dt;
  Variable k(double v) const { return Variable::constant(NDShape{}, dt, v, c.name() + "/const"); }
  Variable op(const char* name, std::vector<Variable> in) const { return out(c.primitive(name, std::move(in))); }
  Variable add(const Variable& a, const Variable& b) const { return op("Plus", {a, b}); }
  Variable sub(const Variable& a, const Variable& b) const { return op("Minus", {a, b}); }
  Variable mul(const Variable& a, const Variable& b) const { return op("ElementTimes", {a, b}); }
  Variable sel(const Variable& cond, const Variable& a, const Variable& b) const { return op("Select", {cond, a, b}); }
  Variable lt(const Variable& a, const Variable& b) const { return op("Less", {a, b}); }
  Variable gt(const Variable& a, const Variable& b) const { return op("Greater", {a, b}); }
  Variable eq(const Variable& a, const Variable& b) const { return op("Equal", {a, b}); }
};

// x in float32 (float16 widened; float64 kept).
Variable widened(ImportContext& c, const Variable& x) {
  if (x.dtype() != DataType::Float16) return x;
  return out(c.primitive("Cast", {x}, Dictionary{{"newDataType", int64_t(DataType::Float)}}));
}

// x rounded to the nearest integer, ties to even. floor(x) and x - floor(x) are exact in
// binary floats, so is the parity test r - 2 floor(r / 2); infinities and NaN pass through.
Variable round_half_even(const Ops& o, const Variable& x) {
  Variable r = o.op("Floor", {x});
  Variable d = o.sub(x, r);
  Variable odd = o.eq(o.sub(r, o.mul(o.k(2), o.op("Floor", {o.mul(r, o.k(0.5))}))), o.k(1));
  Variable up = o.add(o.gt(d, o.k(0.5)), o.mul(o.eq(d, o.k(0.5)), odd));
  return o.add(r, up);
}

// x rounded (to nearest, ties to even) to the values of a binary float format with `mant`
// fraction bits and smallest normal exponent `emin`, with no upper bound on the exponent (the
// caller handles overflow; x must be finite or NaN). The exponent of |x| is estimated from its
// logarithm and corrected by one either way against exact powers of two, so the quantum
// q = 2^(e - mant) is exact and |x| / q, its rounding and the product are exact too.
Variable round_to_grid(const Ops& o, const Variable& x, int mant, int emin) {
  Variable a = o.op("Abs", {x});
  Variable two = o.k(2), low = o.k(std::ldexp(1.0, emin));
  Variable est = o.sel(o.lt(a, low), low, a);  // no log of 0 or of subnormals
  Variable e = o.op("Floor", {o.mul(ieee_log(o.c, est), o.k(1.0 / std::log(2.0)))});
  Variable p = o.op("Pow", {two, e});
  e = o.sel(o.gt(p, est), o.sub(e, o.k(1)), o.sel(o.op("LessEqual", {o.mul(two, p), est}), o.add(e, o.k(1)), e));
  e = o.sel(o.lt(e, o.k(emin)), o.k(emin), e);
  Variable q = o.op("Pow", {two, o.sub(e, o.k(mant))});
  Variable r = o.mul(round_half_even(o, o.op("ElementDivide", {a, q})), q);
  return o.sel(o.lt(x, o.k(0)), o.op("Negate", {r}), r);
}

struct FloatFormat {
  int mant, emin;
  double max;
  bool has_inf;  // overflow without saturation: inf where the format has it, else NaN
};

std::optional<FloatFormat> format_of(int32_t t) {
  switch (t) {
    case TensorProto::BFLOAT16: return FloatFormat{7, -126, 0, true};  // max: float32's range
    case TensorProto::FLOAT8E4M3FN: return FloatFormat{3, -6, 448, false};
    case TensorProto::FLOAT8E4M3FNUZ: return FloatFormat{3, -7, 240, false};
    case TensorProto::FLOAT8E5M2: return FloatFormat{2, -14, 57344, true};
    case TensorProto::FLOAT8E5M2FNUZ: return FloatFormat{2, -15, 57344, false};
    case TensorProto::FLOAT4E2M1: return FloatFormat{1, 0, 6, false};
    default: return std::nullopt;
  }
}

Vars round_op(ImportContext& c) {
  const Variable in = c.input(0);
  Variable x = widened(c, in);
  Variable y = round_half_even(Ops{c, x.dtype()}, x);
  // Integers of float16's range are float16 values: the narrowing is exact.
  if (y.dtype() != in.dtype()) y = out(c.primitive("Cast", {y}, Dictionary{{"newDataType", int64_t(in.dtype())}}));
  return {y};
}

Vars is_inf(ImportContext& c) {
  Variable x = c.input(0);
  Ops o{c, x.dtype()};
  const double inf = std::numeric_limits<double>::infinity();
  const bool pos = c.attr_int("detect_positive", 1) != 0, neg = c.attr_int("detect_negative", 1) != 0;
  c.set_output_elem_type(0, TensorProto::BOOL);
  Variable y = o.mul(o.eq(x, o.k(inf)), o.k(pos ? 1 : 0));
  return {o.add(y, o.mul(o.eq(x, o.k(-inf)), o.k(neg ? 1 : 0)))};
}

Vars is_nan(ImportContext& c) {
  Variable x = c.input(0);
  c.set_output_elem_type(0, TensorProto::BOOL);
  return {out(c.primitive("NotEqual", {x, x}))};
}

// celu(x) = max(0, x) + min(0, alpha (exp(x / alpha) - 1)).
Vars celu(ImportContext& c) {
  Variable x = c.input(0);
  Ops o{c, x.dtype()};
  Variable alpha = o.k(c.attr_float("alpha", 1.0f));
  Variable neg = o.mul(alpha, o.sub(o.op("Exp", {o.op("ElementDivide", {x, alpha})}), o.k(1)));
  return {o.sel(o.gt(x, o.k(0)), x, neg)};
}

// shrink(x) = x + bias below -lambd, x - bias above lambd, 0 between.
Vars shrink(ImportContext& c) {
  Variable x = c.input(0);
  Ops o{c, x.dtype()};
  const double lambd = c.attr_float("lambd", 0.5f), bias = c.attr_float("bias", 0.0f);
  Variable zero = o.mul(x, o.k(0));
  Variable y = o.sel(o.gt(x, o.k(lambd)), o.sub(x, o.k(bias)), zero);
  return {o.sel(o.lt(x, o.k(-lambd)), o.add(x, o.k(bias)), y)};
}

// swish(x) = x sigmoid(alpha x).
Variable swish_of(ImportContext& c, const Variable& x) {
  Ops o{c, x.dtype()};
  return o.mul(x, o.op("StableSigmoid", {o.mul(o.k(c.attr_float("alpha", 1.0f)), x)}));
}
Vars swish(ImportContext& c) { return {swish_of(c, c.input(0))}; }

// swiglu(a, b) = swish(a) b, over inputs of one shape.
Vars swiglu(ImportContext& c) {
  Variable a = c.input(0), b = c.input(1);
  if (a.shape() != b.shape() || c.input_dyn(0) != c.input_dyn(1)) c.fail("A and B must have the same shape");
  return {out(c.primitive("ElementTimes", {swish_of(c, a), b}))};
}

// x divided by its L1 or L2 norm along `axis`.
Vars lp_normalization(ImportContext& c) {
  Variable x = c.input(0);
  Ops o{c, x.dtype()};
  const int64_t p = c.attr_int("p", 2);
  if (p != 1 && p != 2) c.fail("p = " + std::to_string(p) + " is not supported (1 and 2 are)");
  const int64_t axis = static_axis_of(c, 0, c.attr_int("axis", -1));
  Variable v = p == 1 ? o.op("Abs", {x}) : o.mul(x, x);
  Variable n = out(c.primitive(
      "ReduceElements", {v},
      Dictionary{
          {"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", true}, {"axisVec", axis_list({axis})}}));
  if (p == 2) n = o.op("Sqrt", {n});
  // A zero norm gives 0 (not 0/0), as ONNX's reference.
  Variable safe = o.sel(o.eq(n, o.k(0)), o.k(1), n);
  return {o.op("ElementDivide", {x, safe})};
}

}  // namespace

std::optional<Variable> cast_to_narrow_float(ImportContext& c, const Variable& input, int32_t to, bool saturate) {
  auto f = format_of(to);
  if (!f) return std::nullopt;
  Variable x = widened(c, input);
  Ops o{c, x.dtype()};
  const double inf = std::numeric_limits<double>::infinity();
  if (to == TensorProto::BFLOAT16) {
    // float32's range: infinities kept, values near FLT_MAX round up to inf as in bfloat16.
    const double big = std::numeric_limits<float>::max();
    Variable xc = o.sel(o.gt(x, o.k(big)), o.k(big), o.sel(o.lt(x, o.k(-big)), o.k(-big), x));
    Variable r = round_to_grid(o, xc, f->mant, f->emin);
    return o.sel(o.eq(x, o.k(inf)), x, o.sel(o.eq(x, o.k(-inf)), x, r));
  }
  // float4 always saturates (ONNX's saturate attribute is for the float8 types).
  if (to == TensorProto::FLOAT4E2M1) saturate = true;
  // Beyond twice the largest value everything overflows: clamp there first (infinities too),
  // round, then replace what rounded above the largest value.
  const double m2 = 2 * f->max;
  Variable xc = o.sel(o.gt(x, o.k(m2)), o.k(m2), o.sel(o.lt(x, o.k(-m2)), o.k(-m2), x));
  Variable r = round_to_grid(o, xc, f->mant, f->emin);
  Variable over = o.gt(o.op("Abs", {r}), o.k(f->max));
  Variable neg = o.lt(r, o.k(0));
  Variable big = saturate     ? o.sel(neg, o.k(-f->max), o.k(f->max))
                 : f->has_inf ? o.sel(neg, o.k(-inf), o.k(inf))
                              : o.k(std::numeric_limits<double>::quiet_NaN());
  return o.sel(over, big, r);
}

void register_import_float() {
  register_onnx_import("Round", round_op, 11);
  register_onnx_import("IsInf", is_inf, 10);
  register_onnx_import("IsNaN", is_nan, 9);
  register_onnx_import("Celu", celu, 12);
  register_onnx_import("Shrink", shrink, 9);
  register_onnx_import("Swish", swish, 24);
  register_onnx_import("SwiGLU", swiglu, 28);
  register_onnx_import("LpNormalization", lp_normalization);
}

}  // namespace cntk::onnx_io
