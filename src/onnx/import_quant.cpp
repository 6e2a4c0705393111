// ONNX's integer ops over the engine's float32 integers (as CNTK computed them): BitShift,
// BitwiseAnd/Or/Xor/Not, QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear. Values
// stay exact while they fit float32's 24-bit mantissa; the quantized types (2 to 16 bits)
// always do. The float8 formats and float4e2m1 are held as float32 too: quantizing to them
// rounds to their values.
#include <algorithm>
#include <cmath>
#include <limits>

#include "onnx/import_axes.h"
#include "onnx/import_float.h"

namespace cntk::onnx_io {

namespace {

using ::onnx::TensorProto;
using Vars = std::vector<Variable>;

Variable out(const FunctionPtr& f) { return f->output(); }
Variable f32(ImportContext& c, double v, const char* what) {
  return Variable::constant(NDShape{}, DataType::Float, v, c.name() + "/" + what);
}
Variable cast(ImportContext& c, const Variable& x, DataType to) {
  return x.dtype() == to ? x : out(c.primitive("Cast", {x}, Dictionary{{"newDataType", int64_t(to)}}));
}
Variable op2(ImportContext& c, const char* op, const Variable& a, const Variable& b) {
  return out(c.primitive(op, {a, b}));
}
Variable reshape(ImportContext& c, const Variable& x, std::vector<int64_t> dims) {
  return out(c.primitive("Reshape", {x}, Dictionary{{"newShape", NDShape(std::move(dims))}}));
}

// Round half to even (NumPy's rint), from Floor.
Variable rint(ImportContext& c, const Variable& v) {
  Variable f = out(c.primitive("Floor", {v}));
  Variable d = op2(c, "Minus", v, f);
  Variable half = f32(c, 0.5, "half"), two = f32(c, 2, "two");
  Variable odd =
      op2(c, "Minus", f, op2(c, "ElementTimes", two, out(c.primitive("Floor", {op2(c, "ElementDivide", f, two)}))));
  Variable up = op2(c, "Plus", op2(c, "Greater", d, half), op2(c, "ElementTimes", op2(c, "Equal", d, half), odd));
  return op2(c, "Plus", f, up);
}

bool is_narrow_float(int32_t t) {
  return t == TensorProto::FLOAT8E4M3FN || t == TensorProto::FLOAT8E4M3FNUZ || t == TensorProto::FLOAT8E5M2 ||
         t == TensorProto::FLOAT8E5M2FNUZ || t == TensorProto::FLOAT4E2M1;
}

struct Range {
  double lo, hi;
};
Range range_of(ImportContext& c, int32_t t) {
  switch (t) {
    case TensorProto::UINT8: return {0, 255};
    case TensorProto::INT8: return {-128, 127};
    case TensorProto::UINT16: return {0, 65535};
    case TensorProto::INT16: return {-32768, 32767};
    case TensorProto::INT32: return {-2147483648.0, 2147483647.0};
    case TensorProto::UINT4: return {0, 15};
    case TensorProto::INT4: return {-8, 7};
    case TensorProto::UINT2: return {0, 3};
    case TensorProto::INT2: return {-2, 1};
    default:
      c.fail("quantizing to " + TensorProto::DataType_Name(TensorProto::DataType(t)) +
             " is not supported (2- to 32-bit integers, the float8 formats and float4e2m1 are)");
  }
}

Variable clip(ImportContext& c, const Variable& v, Range r) {
  return out(c.primitive("Clip", {v, f32(c, r.lo, "lo"), f32(c, r.hi, "hi")}));
}

// x (input 0) and the scale/zero point inputs brought to shapes that broadcast together:
// a scalar as it is; a 1-D tensor along `axis`; blocks of `block_size` along `axis` (x split
// into [.., blocks, block_size, ..] and each parameter given an axis of 1 after its blocks).
struct Aligned {
  Variable x;
  std::vector<Variable> params;
  std::vector<int64_t> x_dims;  // x's shape before blocking ({} where unchanged)
};
Aligned align(ImportContext& c, std::vector<Variable> params) {
  Variable x = c.input(0);
  if (c.input_dyn(0) > 0) c.fail("inputs with dynamic axes (sequence, batch) are not supported");
  const auto d = x.shape().dims();
  const int64_t rank = int64_t(d.size());
  const int64_t block = c.attr_int("block_size", 0);
  int64_t axis = c.attr_int("axis", 1);
  Aligned a{x, {}, {}};
  const bool scalar = params[0].shape().total_size() == 1 && (params[0].shape().rank() <= 1) && block == 0;
  if (!scalar) {
    if (axis < -rank || axis >= rank) c.fail("axis is out of range");
    if (axis < 0) axis += rank;
  }
  if (block > 0) {
    const int64_t n = d[size_t(axis)];
    if (n % block) c.fail("block_size must divide the quantized axis");
    std::vector<int64_t> xd = d;
    xd[size_t(axis)] = n / block;
    xd.insert(xd.begin() + axis + 1, block);
    a.x = reshape(c, x, xd);
    a.x_dims = d;
    for (auto& p : params) {
      if (!p.defined()) continue;
      std::vector<int64_t> pd = p.shape().dims();
      if (int64_t(pd.size()) != rank || pd[size_t(axis)] != n / block)
        c.fail("a blocked scale or zero point must have the input's rank and one entry per block");
      pd.insert(pd.begin() + axis + 1, 1);
      p = reshape(c, p, pd);
    }
  } else if (!scalar) {
    for (auto& p : params) {
      if (!p.defined()) continue;
      if (p.shape().rank() != 1 || p.shape()[0] != d[size_t(axis)])
        c.fail("a per-axis scale or zero point must be 1-D along axis");
      std::vector<int64_t> pd(size_t(rank - axis), 1);
      pd[0] = d[size_t(axis)];
      p = reshape(c, p, pd);
    }
  }
  a.params = std::move(params);
  return a;
}

Vars quantize(ImportContext& c) {
  const bool has_zp = c.has_input(2);
  int32_t t = has_zp ? c.input_elem_type(2) : int32_t(c.attr_int("output_dtype", 0));
  if (t == 0) t = TensorProto::UINT8;
  const bool to_float = is_narrow_float(t);
  const Range r = to_float ? Range{0, 0} : range_of(c, t);
  Aligned a = align(c, {c.input(1), has_zp ? c.input(2) : Variable()});
  Variable x = cast(c, a.x, DataType::Float), scale = cast(c, a.params[0], DataType::Float);
  Variable y = op2(c, "ElementDivide", x, scale);
  if (to_float) {  // x / scale + zero point, rounded to the type's values (saturating by default)
    if (has_zp) y = op2(c, "Plus", y, a.params[1]);
    y = *cast_to_narrow_float(c, y, t, c.attr_int("saturate", 1) != 0);
  } else {
    y = rint(c, y);
    if (has_zp) y = op2(c, "Plus", y, a.params[1]);
    y = clip(c, y, r);
  }
  if (!a.x_dims.empty()) y = reshape(c, y, a.x_dims);
  c.set_output_elem_type(0, t);
  return {y};
}

Vars dequantize(ImportContext& c) {
  const int32_t t = c.input_elem_type(0);
  const bool ok = t == TensorProto::UINT8 || t == TensorProto::INT8 || t == TensorProto::UINT16 ||
                  t == TensorProto::INT16 || t == TensorProto::INT32 || t == TensorProto::UINT4 ||
                  t == TensorProto::INT4 || t == TensorProto::UINT2 || t == TensorProto::INT2 || is_narrow_float(t);
  if (!ok)
    c.fail("dequantizing " + TensorProto::DataType_Name(TensorProto::DataType(t)) +
           " is not supported (2- to 32-bit integers, the float8 formats and float4e2m1 are)");
  Aligned a = align(c, {c.input(1), c.has_input(2) ? c.input(2) : Variable()});
  Variable x = a.x;
  if (a.params[1].defined()) x = op2(c, "Minus", x, a.params[1]);
  const DataType dt = a.params[0].dtype();
  Variable y = op2(c, "ElementTimes", cast(c, x, dt), a.params[0]);
  if (!a.x_dims.empty()) y = reshape(c, y, a.x_dims);
  return {y};
}

// uint8 quantization of x over its own range (widened to hold 0): y, scale, zero point.
Vars dynamic_quantize(ImportContext& c) {
  Variable x = cast(c, c.input(0), DataType::Float);
  if (c.input_dyn(0) > 0) c.fail("inputs with dynamic axes (sequence, batch) are not supported");
  auto all = [&](const char* op) {
    return out(c.primitive("ReduceElements", {x},
                           Dictionary{{"reductionOpName", std::string(op)},
                                      {"reductionKeepDimensions", false},
                                      {"axis", Axis::all_static_axes()}}));
  };
  Variable zero = f32(c, 0, "zero");
  const double inf = std::numeric_limits<double>::infinity();
  Variable lo = clip(c, all("Min"), {-inf, 0}), hi = clip(c, all("Max"), {0, inf});
  Variable scale = op2(c, "ElementDivide", op2(c, "Minus", hi, lo), f32(c, 255, "qmax"));
  Variable zp = clip(c, rint(c, op2(c, "ElementDivide", out(c.primitive("Negate", {lo})), scale)), {0, 255});
  Variable y = clip(c, op2(c, "Plus", rint(c, op2(c, "ElementDivide", x, scale)), zp), {0, 255});
  c.set_output_elem_type(0, TensorProto::UINT8);
  c.set_output_elem_type(2, TensorProto::UINT8);
  return {y, scale, zp};
}

int bits_of(ImportContext& c, int32_t t) {
  switch (t) {
    case TensorProto::UINT8:
    case TensorProto::INT8: return 8;
    case TensorProto::UINT16:
    case TensorProto::INT16: return 16;
    case TensorProto::UINT32:
    case TensorProto::INT32: return 32;
    case TensorProto::UINT64:
    case TensorProto::INT64: return 64;
    default: c.fail("integer inputs are needed");
  }
}

// Shifts as products and floored quotients by 2^b; shifts below 0 or of the type's width and
// more give 0 (and -1 for negative values shifted right), as ONNX's reference; left shifts
// wrap around the type's width.
Vars bit_shift(ImportContext& c) {
  const int32_t t = c.input_elem_type(0);
  const int bits = bits_of(c, t);
  const bool is_signed =
      t == TensorProto::INT8 || t == TensorProto::INT16 || t == TensorProto::INT32 || t == TensorProto::INT64;
  Variable a = cast(c, c.input(0), DataType::Float), b = cast(c, c.input(1), DataType::Float);
  Variable zero = f32(c, 0, "zero");
  Variable p = op2(c, "Pow", f32(c, 2, "two"), b);
  Variable valid = op2(c, "ElementTimes", op2(c, "GreaterEqual", b, zero), op2(c, "Less", b, f32(c, bits, "bits")));
  const std::string dir = c.attr_string("direction");
  Variable y, other;
  if (dir == "RIGHT") {
    y = out(c.primitive("Floor", {op2(c, "ElementDivide", a, p)}));
    other = is_signed ? out(c.primitive("Negate", {op2(c, "Less", a, zero)})) : zero;
  } else if (dir == "LEFT") {
    y = op2(c, "ElementTimes", a, p);
    // Modulo 2^bits, into [-2^(bits-1), 2^(bits-1)) for signed types, where the product leaves
    // the type's range (computed only there: adding 2^31 to a small value would lose it).
    const double m = std::ldexp(1.0, bits), shift = is_signed ? std::ldexp(1.0, bits - 1) : 0.0;
    Variable s = op2(c, "Plus", y, f32(c, shift, "offset"));
    Variable mv = f32(c, m, "modulus");
    s = op2(c, "Minus", s, op2(c, "ElementTimes", mv, out(c.primitive("Floor", {op2(c, "ElementDivide", s, mv)}))));
    Variable wrapped = op2(c, "Minus", s, f32(c, shift, "offset"));
    Variable inside = op2(c, "ElementTimes", op2(c, "GreaterEqual", y, f32(c, -shift, "lo")),
                          op2(c, "Less", y, f32(c, m - shift, "hi")));
    y = out(c.primitive("Select", {inside, y, wrapped}));
    other = zero;
  } else {
    c.fail("direction must be LEFT or RIGHT");
  }
  c.set_output_elem_type(0, t);
  return {out(c.primitive("Select", {valid, y, other}))};
}

bool signed_int(int32_t t) {
  return t == TensorProto::INT8 || t == TensorProto::INT16 || t == TensorProto::INT32 || t == TensorProto::INT64;
}

// BitwiseAnd/Or/Xor bit by bit: bit k of v is floor(v / 2^k) - 2 floor(v / 2^(k+1)), two's
// complement for negative v (floors round down). 8- and 16-bit types are exact; wider ones
// while the values fit float32's 24 bits (bits above 24 repeat the sign bit, and so does the
// result's, which weighs -2^24 there).
Vars bitwise(ImportContext& c, const std::string& which) {
  const int32_t t = c.input_elem_type(0);
  const bool is_signed = signed_int(t);
  const int width = bits_of(c, t), n = std::min(width, is_signed ? 25 : 24);
  Variable a = cast(c, c.input(0), DataType::Float), b = cast(c, c.input(1), DataType::Float);
  auto floors = [&](const Variable& v) {
    std::vector<Variable> f{out(c.primitive("Floor", {v}))};
    for (int k = 1; k <= n; ++k)
      f.push_back(out(c.primitive("Floor", {op2(c, "ElementTimes", v, f32(c, std::ldexp(1.0, -k), "scale"))})));
    return f;
  };
  const auto fa = floors(a), fb = floors(b);
  Variable two = f32(c, 2, "two"), y;
  for (int k = 0; k < n; ++k) {
    Variable ak = op2(c, "Minus", fa[size_t(k)], op2(c, "ElementTimes", two, fa[size_t(k) + 1]));
    Variable bk = op2(c, "Minus", fb[size_t(k)], op2(c, "ElementTimes", two, fb[size_t(k) + 1]));
    Variable both = op2(c, "ElementTimes", ak, bk), r;
    if (which == "And")
      r = both;
    else if (which == "Or")
      r = op2(c, "Minus", op2(c, "Plus", ak, bk), both);
    else
      r = op2(c, "Minus", op2(c, "Plus", ak, bk), op2(c, "ElementTimes", two, both));
    const bool sign_bit = is_signed && k == n - 1;
    Variable term = op2(c, "ElementTimes", r, f32(c, (sign_bit ? -1 : 1) * std::ldexp(1.0, k), "weight"));
    y = y.defined() ? op2(c, "Plus", y, term) : term;
  }
  c.set_output_elem_type(0, t);
  return {y};
}

// ~x = -x - 1 (two's complement), 2^width - 1 - x unsigned (exact to 24 bits).
Vars bitwise_not(ImportContext& c) {
  const int32_t t = c.input_elem_type(0);
  const int width = bits_of(c, t);
  Variable x = cast(c, c.input(0), DataType::Float);
  const double top = signed_int(t) ? -1.0 : std::ldexp(1.0, width) - 1;
  c.set_output_elem_type(0, t);
  return {op2(c, "Minus", f32(c, top, "top"), x)};
}

// A node of another op type over values a rule computed, with the outer node's attributes:
// lets QLinearMatMul, ConvInteger and QLinearConv reuse MatMul's and Conv's rules (their
// broadcasting, padding, strides and groups) on the zero-point-corrected operands.
// v as [n, 1, ...] of rank `block_rank` where it is 1-D with n > 1 entries (and block_rank > 1).
Variable per_leading(ImportContext& c, const Variable& v, size_t block_rank) {
  if (block_rank < 2 || v.shape().rank() != 1 || v.shape()[0] <= 1) return v;
  std::vector<int64_t> d(block_rank, 1);
  d[0] = v.shape()[0];
  return reshape(c, v, d);
}

class InnerNode final : public ImportContext {
 public:
  InnerNode(ImportContext& outer, const std::string& op_type, Vars inputs) : outer_(outer), inputs_(std::move(inputs)) {
    node_.set_op_type(op_type);
    node_.set_name(outer.name());
    for (size_t i = 0; i < inputs_.size(); ++i) node_.add_input(inputs_[i].defined() ? "in" + std::to_string(i) : "");
    node_.add_output(outer.node().output(0));
    *node_.mutable_attribute() = outer.node().attribute();
  }
  const ::onnx::NodeProto& node() const override { return node_; }
  int opset() const override { return outer_.opset(); }
  std::string name() const override { return outer_.name(); }
  Variable input(size_t i) override { return inputs_.at(i); }
  int32_t input_elem_type(size_t) override { return TensorProto::FLOAT; }
  std::optional<NDArrayView> constant_input(size_t) override { return std::nullopt; }
  std::optional<std::vector<int64_t>> constant_input_i64(size_t) override { return std::nullopt; }
  NDArrayView tensor_value(const TensorProto& t) override { return outer_.tensor_value(t); }
  void set_output_elem_type(size_t, int32_t) override {}
  std::vector<Variable> read_subgraph(const ::onnx::GraphProto&, const std::vector<Variable>&) override {
    fail("has no subgraphs");
  }

  Variable run() {
    const ImportFn* rule = find_onnx_import(node_.op_type(), opset());
    if (!rule) outer_.fail("the reader has no rule for " + node_.op_type());
    return (*rule)(*this).at(0);
  }

 private:
  ImportContext& outer_;
  Vars inputs_;
  ::onnx::NodeProto node_;
};

// Input i as float32 less its zero point (input zp, where given). A 1-D zero point of more
// than one entry applies along the leading axis of a trailing block of `block_rank` axes (a
// matrix's rows: 2; a kernel's output channels: its rank): reshaped to [n, 1, ...]; with
// block_rank 0 it broadcasts from the right as it is.
Variable less_zero_point(ImportContext& c, size_t i, size_t zp, size_t block_rank) {
  Variable x = cast(c, c.input(i), DataType::Float);
  if (!c.has_input(zp)) return x;
  return op2(c, "Minus", x, per_leading(c, cast(c, c.input(zp), DataType::Float), block_rank));
}

// An integer result r of a product requantized: rint(r * scale + zero point) clipped to the
// output type's range (that of y_zero_point's type, else of `fallback_type`).
Variable requantize(ImportContext& c, const Variable& r, const Variable& scale, size_t y_zp, int32_t fallback_type) {
  Variable y = op2(c, "ElementTimes", r, scale);
  int32_t t = fallback_type;
  if (c.has_input(y_zp)) {
    y = op2(c, "Plus", y, cast(c, c.input(y_zp), DataType::Float));
    t = c.input_elem_type(y_zp);
  }
  c.set_output_elem_type(0, t);
  return clip(c, rint(c, y), range_of(c, t));
}

Variable scale_of(ImportContext& c, size_t i) { return cast(c, c.input(i), DataType::Float); }

// (a - a_zero_point) @ (b - b_zero_point) * a_scale * b_scale / y_scale + y_zero_point.
Vars qlinear_matmul(ImportContext& c) {
  // a's scale and zero point per row ([M] of [.., M, K]), b's per column (broadcast as they are).
  Variable a = less_zero_point(c, 0, 2, 2), b = less_zero_point(c, 3, 5, 0);
  Variable r = InnerNode(c, "MatMul", {a, b}).run();
  Variable scale = op2(c, "ElementDivide", op2(c, "ElementTimes", per_leading(c, scale_of(c, 1), 2), scale_of(c, 4)),
                       scale_of(c, 6));
  return {requantize(c, r, scale, 7, c.input_elem_type(0))};
}

// Conv over the operands less their zero points (the kernel's per output channel), in int32.
Vars conv_integer(ImportContext& c) {
  Variable x = less_zero_point(c, 0, 2, 0), w = less_zero_point(c, 1, 3, c.input(1).shape().rank());
  c.set_output_elem_type(0, TensorProto::INT32);
  return {InnerNode(c, "Conv", {x, w}).run()};
}

// Conv over the operands less their zero points (and the int32 bias B), requantized with
// x_scale * w_scale / y_scale (w_scale per output channel where 1-D).
Vars qlinear_conv(ImportContext& c) {
  Variable x = less_zero_point(c, 0, 2, 0), w = less_zero_point(c, 3, 5, c.input(3).shape().rank());
  Vars ins{x, w};
  if (c.has_input(8)) ins.push_back(cast(c, c.input(8), DataType::Float));
  Variable r = InnerNode(c, "Conv", ins).run();
  // A per-channel w_scale [M] against the result's [M, spatial...] (N being the batch axis or free).
  Variable ws = per_leading(c, scale_of(c, 4), w.shape().rank() - 1);
  Variable scale = op2(c, "ElementDivide", op2(c, "ElementTimes", scale_of(c, 1), ws), scale_of(c, 6));
  return {requantize(c, r, scale, 7, c.input_elem_type(0))};
}

}  // namespace

void register_import_quant() {
  for (const char* op : {"And", "Or", "Xor"})
    register_onnx_import(
        std::string("Bitwise") + op, [op](ImportContext& c) { return bitwise(c, op); }, 18);
  register_onnx_import("BitwiseNot", bitwise_not, 18);
  register_onnx_import("QuantizeLinear", quantize, 10);
  register_onnx_import("DequantizeLinear", dequantize, 10);
  register_onnx_import("DynamicQuantizeLinear", dynamic_quantize, 11);
  register_onnx_import("BitShift", bit_shift, 11);
  register_onnx_import("QLinearMatMul", qlinear_matmul, 10);
  register_onnx_import("ConvInteger", conv_integer, 10);
  register_onnx_import("QLinearConv", qlinear_conv, 10);
}

}  // namespace cntk::onnx_io
