// Elementwise ops: unary math and activations, binary arithmetic and comparison,
// logic, select and clip. One table entry each: a scalar forward functor and a
// scalar gradient functor (x, y, g) -> dL/dx, both generic over float/double.
#include <cmath>
#include <functional>

#include "kernels/cpu/eltwise.h"
#include "kernels/backend.h"
#include "kernels/cpu/elementwise.h"
#include "ops/eager.h"
#include "onnx/export.h"
#include "ops/op.h"

namespace cntk {
namespace {

using kernels::apply;

// Attribute-dependent scalars for parameterized activations (alpha, beta, ...).
using Params = std::array<double, 2>;
using ParamFn = Params (*)(const ComputeContext&);
Params no_params(const ComputeContext&) { return {0, 0}; }

std::vector<OutputInfo> broadcast_rule(InferContext& ctx) { return ctx.one(broadcast_inputs(ctx)); }

size_t max_static_rank(const ComputeContext& ctx) {
  size_t r = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) r = std::max(r, ctx.inputs[i].rank() - ctx.in_dyn[i]);
  return r;
}

// `prim` names the backend's primitive that computes the same function in float32
// (alpha = the op's first parameter); the functors stay the reference and serve float64
// and the reference backend. With `layouts`, a float32 input in a backend layout stays
// in it (OpDef::backend_layouts).
template <class F, class G>
void unary(const char* name, int op_type, F f, G df, Gradient kind = Gradient::Rule, ParamFn params = no_params,
           kernels::EltwiseKernel prim = {}, bool layouts = false, std::vector<AttrSpec> attrs = {},
           BlockFormFn block = nullptr) {
  OpDef d;
  d.cntk_block = std::move(block);
  d.name = name;
  d.op_type = op_type;
  d.inputs = {{"x", kind}};
  d.attrs = std::move(attrs);
  d.classes = kElementwiseUnary | kSameShape;
  d.infer = infer_same_shape;
  d.gradient = kind;
  d.backend_layouts = layouts;
  d.forward = [f, params, prim](ComputeContext& ctx) {
    Params p = params(ctx);
    if (const LayoutValue* xb = ctx.layout_input(0); xb && ctx.may_keep_layout_output(0)) {
      auto y = kernels::eltwise_forward_layout(prim.f, float(p[0]), *xb);
      if (y) {
        ctx.layout_outputs[0] = std::move(y);
        return std::vector<NDArrayView>{NDArrayView()};
      }
    }
    const NDArrayView& x = ctx.input(0);
    if (prim.f != kernels::Eltwise::None && x.dtype() == DataType::Float) {
      NDArrayView y = kernels::eltwise_forward(prim.f, float(p[0]), x);
      if (y.defined()) return std::vector<NDArrayView>{y};
    }
    return std::vector<NDArrayView>{CNTK_DISPATCH_FLOAT(
        x.dtype(), T, [&] { return apply<T, 1>(x.dtype(), {&x}, [f, p](T v) { return T(f(v, p)); }); })};
  };
  if (kind == Gradient::Rule)
    d.backward = [df, params, prim](ComputeContext& ctx, size_t) {
      Params p = params(ctx);
      // x (or y) in a backend layout: the gradient is computed, and may stay, in that layout.
      const LayoutValue* xyb = prim.backward_from_output ? ctx.layout_output(0) : ctx.layout_input(0);
      const bool xy_plain = prim.backward_from_output ? ctx.outputs[0].defined() : ctx.inputs[0].defined();
      if (xyb && prim.f != kernels::Eltwise::None &&
          (!xy_plain || ctx.layout_grad_output(0) || ctx.may_keep_layout_grad(0))) {
        auto dx =
            kernels::eltwise_backward_layout(prim.f, prim.backward_from_output, float(p[0]), *xyb,
                                             ctx.layout_grad_output(0), ctx.grad_outputs[0], prim.unit_slope_at_zero);
        if (dx) {
          if (!ctx.may_keep_layout_grad(0)) return kernels::to_plain(*dx);
          ctx.layout_grad = std::move(dx);
          return NDArrayView();
        }
      }
      const NDArrayView& g = ctx.grad_output(0);
      if (prim.f != kernels::Eltwise::None && !prim.unit_slope_at_zero && g.dtype() == DataType::Float) {
        const NDArrayView& xy = prim.backward_from_output ? ctx.output(0) : ctx.input(0);
        if (xy.dtype() == DataType::Float) {
          NDArrayView dx = kernels::eltwise_backward(prim.f, prim.backward_from_output, float(p[0]), xy, g);
          if (dx.defined()) return dx;
        }
      }
      const NDArrayView &x = ctx.input(0), &y = ctx.output(0);
      return CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
        return apply<T, 3>(x.dtype(), {&x, &y, &g}, [df, p](T a, T b, T c) { return T(df(a, b, c, p)); });
      });
    };
  register_op(std::move(d));
}

// df returns {dL/da, dL/db} given (a, b, y, g); `which` selects one.
template <class F, class G>
void binary(const char* name, int op_type, F f, G df, Gradient kind = Gradient::Rule,
            GradFn backward_override = nullptr, BlockFormFn block = nullptr) {
  OpDef d;
  d.cntk_block = std::move(block);
  d.name = name;
  d.op_type = op_type;
  d.inputs = {{"left", kind}, {"right", kind}};
  d.classes = kElementwiseBinary;
  d.infer = [](InferContext& ctx) {
    ctx.expect_inputs(2);
    return broadcast_rule(ctx);
  };
  d.gradient = kind;
  d.forward = [f](ComputeContext& ctx) {
    size_t r = max_static_rank(ctx);
    NDArrayView a = ctx.aligned(0, r), b = ctx.aligned(1, r);
    return std::vector<NDArrayView>{CNTK_DISPATCH_FLOAT(a.dtype(), T, [&] {
      return apply<T, 2>(a.dtype(), {&a, &b}, [f](T x, T y) { return T(f(x, y)); });
    })};
  };
  if (kind == Gradient::Rule)
    d.backward = [df](ComputeContext& ctx, size_t which) {
      size_t r = ctx.outputs[0].rank() - ctx.out_dyn;
      NDArrayView a = ctx.aligned(0, r), b = ctx.aligned(1, r);
      const NDArrayView& g = ctx.grad_outputs[0];
      // y is not needed by any binary rule here; a and b suffice.
      // One loop per side with the index fixed at compile time, so the loop vectorizes.
      NDArrayView full = CNTK_DISPATCH_FLOAT(a.dtype(), T, [&] {
        if (which == 0)
          return apply<T, 3>(a.dtype(), {&a, &b, &g}, [df](T x, T y, T gg) { return T(df(x, y, gg)[0]); });
        return apply<T, 3>(a.dtype(), {&a, &b, &g}, [df](T x, T y, T gg) { return T(df(x, y, gg)[1]); });
      });
      return ctx.reduce_to_input(which, full);
    };
  if (backward_override) d.backward = backward_override;
  register_op(std::move(d));
}

template <class F>
void additive(const char* name, int op_type, F f, bool negate_right) {
  binary(
      name, op_type, f,
      [](auto, auto, auto) {
        return std::array<double, 2>{0, 0};
      },
      Gradient::Rule,
      [negate_right](ComputeContext& ctx, size_t which) {
        NDArrayView g = ctx.reduce_to_input(which, ctx.grad_outputs[0]);
        if (!negate_right || which != 1) return g;
        // A sum made here is this rule's own: negate it in place (a loop step then
        // needs no further temporary).
        if (!g.same_storage(ctx.grad_outputs[0]) && g.is_contiguous() && !g.is_sparse() &&
            (g.dtype() == DataType::Float || g.dtype() == DataType::Double)) {
          CNTK_DISPATCH_FLOAT(g.dtype(), T, [&] {
            T* p = g.data<T>();
            for (int64_t k = 0; k < g.numel(); ++k) p[k] = -p[k];
            return 0;
          });
          return g;
        }
        return eager::neg(g);
      });
}

template <class T>
T sgn(T x) {
  return T((x > 0) - (x < 0));
}

// CNTK's clipping of log: log(x) for x < kLogEps is kLogOfLogEps (float32 constants).
constexpr float kLogEps = 1e-37f;
constexpr float kLogOfLogEps = -85.1f;

constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;

// ------------------------------------------ the blocks CNTK builds for composite ops
//
// CNTK composes these ops of primitives inside a block named after the op; the engine
// computes each as one primitive. Saving writes the block (so CNTK loads it), and loading
// such a block gives the primitive back.

FunctionPtr prim(const std::string& op, std::vector<Variable> in) { return Function::primitive(op, std::move(in), {}); }
Variable out(const FunctionPtr& f) { return f->output(); }
Variable scalar(DataType t, double v) { return Variable::constant(NDArrayView::scalar(t, v), ""); }

// The block of f whose composite `body` builds over placeholders shaped like f's inputs.
using BlockBody = std::function<FunctionPtr(const std::vector<Variable>& ph, DataType t, const Function& f)>;
BlockFormFn block_form(BlockBody body) {
  return [body](const Function& f) {
    const auto& ins = f.direct_inputs();
    std::vector<Variable> ph;
    std::vector<std::pair<Variable, Variable>> mapping;
    for (auto& v : ins) {
      ph.push_back(Variable::placeholder(v.shape(), v.dynamic_axes(), ""));
      mapping.push_back({ph.back(), v});
    }
    DataType t = ins.empty() ? DataType::Float : ins[0].dtype();
    return Function::block(Function::composite(body(ph, t, f)), mapping, f.op_name(), f.name());
  };
}

Variable positive(const Variable& v, DataType t) { return out(prim("Greater", {v, scalar(t, 0)})); }

BlockFormFn leaky_relu_block() {
  return block_form([](const std::vector<Variable>& ph, DataType t, const Function& f) {
    auto scaled = out(prim("ElementTimes", {scalar(t, schema_attr_double(f, "alpha")), ph[0]}));
    return prim("Select", {out(prim("Less", {ph[0], scalar(t, 0)})), scaled, ph[0]});
  });
}
BlockFormFn selu_block() {
  return block_form([](const std::vector<Variable>& ph, DataType t, const Function& f) {
    auto elu = out(prim("ElementTimes", {scalar(t, schema_attr_double(f, "alpha")), out(prim("ELU", {ph[0]}))}));
    auto sel = out(prim("Select", {out(prim("Less", {ph[0], scalar(t, 0)})), elu, ph[0]}));
    return prim("ElementTimes", {scalar(t, schema_attr_double(f, "gamma")), sel});
  });
}
BlockFormFn hard_sigmoid_block() {
  return block_form([](const std::vector<Variable>& ph, DataType t, const Function& f) {
    auto r = out(prim("Plus", {out(prim("ElementTimes", {ph[0], scalar(t, schema_attr_double(f, "alpha"))})),
                               scalar(t, schema_attr_double(f, "beta"))}));
    auto one = scalar(t, 1), zero = scalar(t, 0);
    r = out(prim("Select", {out(prim("Less", {r, one})), r, one}));
    return prim("Select", {out(prim("Greater", {r, zero})), r, zero});
  });
}
BlockFormFn and_block() {
  return block_form([](const std::vector<Variable>& ph, DataType t, const Function&) {
    return prim("Greater", {out(prim("ElementTimes", {positive(ph[0], t), positive(ph[1], t)})), scalar(t, 0)});
  });
}
BlockFormFn or_block() {
  return block_form([](const std::vector<Variable>& ph, DataType t, const Function&) {
    return prim("Greater", {out(prim("Plus", {positive(ph[0], t), positive(ph[1], t)})), scalar(t, 0)});
  });
}
BlockFormFn xor_block() {
  return block_form([](const std::vector<Variable>& ph, DataType t, const Function&) {
    return prim("NotEqual", {positive(ph[0], t), positive(ph[1], t)});
  });
}
BlockFormFn not_block() {
  return block_form([](const std::vector<Variable>& ph, DataType t, const Function&) {
    return prim("Plus", {out(prim("Negate", {positive(ph[0], t)})), scalar(t, 1)});
  });
}
BlockFormFn element_divide_block() {
  return block_form([](const std::vector<Variable>& ph, DataType, const Function&) {
    return prim("ElementTimes", {ph[0], out(prim("Reciprocal", {ph[1]}))});
  });
}

void register_unary_ops() {
  using std::exp;
  auto none = [](auto, auto, auto, Params) { return 0.0; };
  unary(
      "Negate", 0, [](auto x, Params) { return -x; }, [](auto, auto, auto g, Params) { return -g; });
  unary(
      "StableSigmoid", 75,
      [](auto x, Params) {
        using T = decltype(x);
        return x >= 0 ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
      },
      [](auto, auto y, auto g, Params) { return g * y * (1 - y); }, Gradient::Rule, no_params,
      {kernels::Eltwise::Logistic, true}, true);
  unary(
      "Tanh", 2, [](auto x, Params) { return std::tanh(x); },
      [](auto, auto y, auto g, Params) { return g * (1 - y * y); }, Gradient::Rule, no_params,
      {kernels::Eltwise::Tanh, true}, true);
  unary(
      "ReLU", 3, [](auto x, Params) { return x > 0 ? x : decltype(x)(0); },
      [](auto x, auto, auto g, Params) { return x > 0 ? g : decltype(g)(0); }, Gradient::Rule, no_params,
      {kernels::Eltwise::Relu, false}, true);
  unary(
      "Exp", 4, [](auto x, Params) { return std::exp(x); }, [](auto, auto y, auto g, Params) { return g * y; },
      Gradient::Rule, no_params, {kernels::Eltwise::Exp, true});
  // CNTK clips log's argument at 1e-37 (giving -85.1 there, for x <= 0 too) and takes
  // the gradient from the output, g * exp(-y), so a clipped entry gets exp(85.1).
  unary(
      "Log", 5,
      [](auto x, Params) {
        using T = decltype(x);
        return x < T(kLogEps) ? T(kLogOfLogEps) : std::log(x);
      },
      [](auto, auto y, auto g, Params) { return g * std::exp(-y); });
  // CNTK's sqrt reads a negative argument as 0.
  unary(
      "Sqrt", 6, [](auto x, Params) { return std::sqrt(x > 0 ? x : decltype(x)(0)); },
      [](auto, auto y, auto g, Params) { return g / (2 * y); });
  unary(
      "Floor", 7, [](auto x, Params) { return std::floor(x); }, none, Gradient::Zero);
  unary(
      "Abs", 8, [](auto x, Params) { return std::abs(x); }, [](auto x, auto, auto g, Params) { return g * sgn(x); });
  // CNTK's reciprocal of 0 is 0 (and so is its gradient there).
  unary(
      "Reciprocal", 9, [](auto x, Params) { return x == 0 ? x : 1 / x; },
      [](auto, auto y, auto g, Params) { return -g * y * y; });
  unary(
      "Sin", 54, [](auto x, Params) { return std::sin(x); },
      [](auto x, auto, auto g, Params) { return g * std::cos(x); });
  unary(
      "Cos", 55, [](auto x, Params) { return std::cos(x); },
      [](auto x, auto, auto g, Params) { return -g * std::sin(x); });
  unary(
      "Tan", 95, [](auto x, Params) { return std::tan(x); },
      [](auto, auto y, auto g, Params) { return g * (1 + y * y); });
  unary(
      "Asin", 81, [](auto x, Params) { return std::asin(x); },
      [](auto x, auto, auto g, Params) { return g / std::sqrt(1 - x * x); });
  unary(
      "Acos", 82, [](auto x, Params) { return std::acos(x); },
      [](auto x, auto, auto g, Params) { return -g / std::sqrt(1 - x * x); });
  unary(
      "Atan", 96, [](auto x, Params) { return std::atan(x); },
      [](auto x, auto, auto g, Params) { return g / (1 + x * x); });
  unary(
      "Sinh", 77, [](auto x, Params) { return std::sinh(x); },
      [](auto x, auto, auto g, Params) { return g * std::cosh(x); });
  unary(
      "Cosh", 78, [](auto x, Params) { return std::cosh(x); },
      [](auto x, auto, auto g, Params) { return g * std::sinh(x); });
  unary(
      "Asinh", 86, [](auto x, Params) { return std::asinh(x); },
      [](auto x, auto, auto g, Params) { return g / std::sqrt(x * x + 1); });
  unary(
      "Atanh", 85, [](auto x, Params) { return std::atanh(x); },
      [](auto x, auto, auto g, Params) { return g / (1 - x * x); });
  // The error function (CNTK has none; ONNX's Erf, the exact Gelu): d/dx = 2/sqrt(pi) exp(-x^2).
  unary(
      "Erf", -1, [](auto x, Params) { return std::erf(x); },
      [](auto x, auto, auto g, Params) { return g * decltype(x)(1.1283791670955126) * std::exp(-x * x); });
  auto alpha = [](const ComputeContext& c) -> Params { return {c.attr_double("alpha"), 0}; };
  unary(
      "ELU", 65, [](auto x, Params p) { return x > 0 ? x : decltype(x)(p[0] * (std::exp(x) - 1)); },
      [](auto x, auto y, auto g, Params p) { return x > 0 ? g : decltype(g)(g * (y + p[0])); }, Gradient::Rule, alpha,
      {kernels::Eltwise::Elu, false}, true, {{"alpha", AttrType::Double, 1.0}});
  auto leaky = [](const ComputeContext& c) -> Params { return {c.attr_double("alpha"), 0}; };
  // CNTK selects the scaled branch where x < 0, so at 0 the gradient is 1 (SELU's and
  // PReLU's likewise); oneDNN's relu backward gives alpha there and is corrected.
  unary(
      "LeakyReLU", -1, [](auto x, Params p) { return x > 0 ? x : decltype(x)(p[0] * x); },
      [](auto x, auto, auto g, Params p) { return x < 0 ? decltype(g)(p[0] * g) : g; }, Gradient::Rule, leaky,
      {kernels::Eltwise::Relu, false, true}, true, {{"alpha", AttrType::Double, 0.01}}, leaky_relu_block());
  auto selu = [](const ComputeContext& c) -> Params { return {c.attr_double("gamma"), c.attr_double("alpha")}; };
  unary(
      "SELU", -1, [](auto x, Params p) { return decltype(x)(p[0] * (x > 0 ? x : p[1] * (std::exp(x) - 1))); },
      [](auto x, auto, auto g, Params p) { return decltype(g)(g * p[0] * (x < 0 ? p[1] * std::exp(x) : 1)); },
      Gradient::Rule, selu, {}, false,
      {{"gamma", AttrType::Double, kSeluScale}, {"alpha", AttrType::Double, kSeluAlpha}}, selu_block());
  auto hs = [](const ComputeContext& c) -> Params { return {c.attr_double("alpha"), c.attr_double("beta")}; };
  unary(
      "HardSigmoid", -1,
      [](auto x, Params p) {
        using T = decltype(x);
        return T(std::max(0.0, std::min(1.0, p[0] * x + p[1])));
      },
      [](auto x, auto, auto g, Params p) {
        double v = p[0] * x + p[1];
        return decltype(g)(v > 0 && v < 1 ? g * p[0] : 0);
      },
      Gradient::Rule, hs, {}, false, {{"alpha", AttrType::Double, 0.2}, {"beta", AttrType::Double, 0.5}},
      hard_sigmoid_block());
  unary(
      "Not", -1, [](auto x, Params) { return decltype(x)(x == 0); }, none, Gradient::Zero, no_params, {}, false, {},
      not_block());
  // Straight-through estimator: sign in forward, identity gradient inside [-1, 1].
  unary(
      "StraightThrough", 94, [](auto x, Params) { return decltype(x)(x >= 0 ? 1 : -1); },
      [](auto x, auto, auto g, Params) { return std::abs(x) <= 1 ? g : decltype(g)(0); });
}

void register_binary_ops() {
  using A2 = std::array<double, 2>;
  // Sums pass the gradient through unchanged (negated for Minus's right side): it is
  // reduced straight to each input's shape, without the generic (a, b, g) map.
  additive(
      "Plus", 19, [](auto a, auto b) { return a + b; }, false);
  additive(
      "Minus", 20, [](auto a, auto b) { return a - b; }, true);
  binary(
      "ElementTimes", 21, [](auto a, auto b) { return a * b; },
      [](auto a, auto b, auto g) {
        return std::array<decltype(g), 2>{g * b, g * a};
      });
  binary(
      "ElementDivide", -1, [](auto a, auto b) { return a / b; },
      [](auto a, auto b, auto g) {
        return std::array<decltype(g), 2>{g / b, -g * a / (b * b)};
      },
      Gradient::Rule, nullptr, element_divide_block());
  binary(
      "Pow", 69, [](auto a, auto b) { return std::pow(a, b); },
      [](auto a, auto b, auto g) {
        double y = std::pow(double(a), double(b));
        return A2{double(g) * double(b) * std::pow(double(a), double(b) - 1),
                  a > 0 ? double(g) * y * std::log(double(a)) : 0.0};
      });
  binary(
      "LogPlus", 52,
      [](auto a, auto b) {
        auto m = std::max(a, b);
        if (std::isinf(m) && m < 0) return m;
        return m + std::log(std::exp(a - m) + std::exp(b - m));
      },
      [](auto a, auto b, auto g) {
        double m = std::max<double>(a, b), ea = std::exp(a - m), eb = std::exp(b - m);
        return A2{g * ea / (ea + eb), g * eb / (ea + eb)};
      });
  auto zero = [](auto, auto, auto) { return A2{0, 0}; };
  binary(
      "Equal", 22, [](auto a, auto b) { return decltype(a)(a == b); }, zero, Gradient::Zero);
  binary(
      "NotEqual", 23, [](auto a, auto b) { return decltype(a)(a != b); }, zero, Gradient::Zero);
  binary(
      "Less", 24, [](auto a, auto b) { return decltype(a)(a < b); }, zero, Gradient::Zero);
  binary(
      "LessEqual", 25, [](auto a, auto b) { return decltype(a)(a <= b); }, zero, Gradient::Zero);
  binary(
      "Greater", 26, [](auto a, auto b) { return decltype(a)(a > b); }, zero, Gradient::Zero);
  binary(
      "GreaterEqual", 27, [](auto a, auto b) { return decltype(a)(a >= b); }, zero, Gradient::Zero);
  binary(
      "And", -1, [](auto a, auto b) { return decltype(a)(a != 0 && b != 0); }, zero, Gradient::Zero, nullptr,
      and_block());
  binary(
      "Or", -1, [](auto a, auto b) { return decltype(a)(a != 0 || b != 0); }, zero, Gradient::Zero, nullptr,
      or_block());
  binary(
      "Xor", -1, [](auto a, auto b) { return decltype(a)((a != 0) != (b != 0)); }, zero, Gradient::Zero, nullptr,
      xor_block());
}

// Select(flag, a, b) = flag != 0 ? a : b; Clip(x, lo, hi).
void register_ternary_ops() {
  auto ternary_infer = [](InferContext& ctx) {
    ctx.expect_inputs(3);
    return broadcast_rule(ctx);
  };
  {
    OpDef d;
    d.name = "Select";
    d.op_type = 42;
    d.inputs = {{"condition", Gradient::Zero}, {"then", Gradient::Rule}, {"else", Gradient::Rule}};
    d.infer = ternary_infer;
    d.forward = [](ComputeContext& ctx) {
      size_t r = max_static_rank(ctx);
      NDArrayView c = ctx.aligned(0, r), a = ctx.aligned(1, r), b = ctx.aligned(2, r);
      return std::vector<NDArrayView>{CNTK_DISPATCH_FLOAT(a.dtype(), T, [&] {
        return apply<T, 3>(a.dtype(), {&c, &a, &b}, [](T f, T x, T y) { return f != 0 ? x : y; });
      })};
    };
    d.backward = [](ComputeContext& ctx, size_t i) {
      if (i == 0) return eager::zeros_like(ctx.inputs[0]);
      size_t r = ctx.outputs[0].rank() - ctx.out_dyn;
      NDArrayView c = ctx.aligned(0, r);
      const NDArrayView& g = ctx.grad_outputs[0];
      bool first = i == 1;
      NDArrayView full = CNTK_DISPATCH_FLOAT(g.dtype(), T, [&] {
        return apply<T, 2>(g.dtype(), {&c, &g}, [first](T f, T gg) { return (f != 0) == first ? gg : T(0); });
      });
      return ctx.reduce_to_input(i, full);
    };
    register_op(std::move(d));
  }
  {
    OpDef d;
    d.name = "Clip";
    d.op_type = 41;
    d.inputs = {{"x", Gradient::Rule}, {"min", Gradient::Zero}, {"max", Gradient::Zero}};
    d.infer = ternary_infer;
    d.forward = [](ComputeContext& ctx) {
      size_t r = max_static_rank(ctx);
      NDArrayView x = ctx.aligned(0, r), lo = ctx.aligned(1, r), hi = ctx.aligned(2, r);
      return std::vector<NDArrayView>{CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
        return apply<T, 3>(x.dtype(), {&x, &lo, &hi}, [](T v, T l, T h) { return std::min(std::max(v, l), h); });
      })};
    };
    d.backward = [](ComputeContext& ctx, size_t i) {
      if (i != 0) return eager::zeros_like(ctx.inputs[i]);
      size_t r = ctx.outputs[0].rank() - ctx.out_dyn;
      NDArrayView x = ctx.aligned(0, r), y = ctx.outputs[0];
      const NDArrayView& g = ctx.grad_outputs[0];
      NDArrayView full = CNTK_DISPATCH_FLOAT(g.dtype(), T, [&] {
        return apply<T, 3>(g.dtype(), {&x, &y, &g}, [](T a, T b, T gg) { return a == b ? gg : T(0); });
      });
      return ctx.reduce_to_input(0, full);
    };
    register_op(std::move(d));
  }
}

}  // namespace

// ------------------------------------------------------------------ ONNX forms
//
// The engine computes comparisons and logic on floats (1 true, 0 false); ONNX's
// comparisons and logic give or take bool, so these forms cast around the ONNX op.

namespace {

using onnx_io::Attr;
using onnx_io::ExportContext;

int64_t onnx_float_type(ExportContext& c) { return int64_t(onnx_io::elem_type_of(c.output_var(0).dtype())); }
std::string to_bool(ExportContext& c, const std::string& x) {
  return c.node1("Cast", {x}, {Attr("to", int64_t(onnx_io::ElemType::Bool))});
}
std::string aligned_rank(ExportContext& c, size_t i) { return c.aligned(i, c.output_var(0).shape().rank()); }

// A boolean ONNX value written as the output (float 0/1).
void write_bool(ExportContext& c, const std::string& b) {
  c.node1("Cast", {b}, {Attr("to", onnx_float_type(c))}, c.output(0));
}

// Comparisons: Equal takes floats from opset 11, LessOrEqual/GreaterOrEqual exist from 12;
// before those, the complement of the strict comparisons.
std::string compare(ExportContext& c, const std::string& op, const std::string& a, const std::string& b) {
  if (op == "Equal" && c.opset() < 11)
    return c.node1("Not", {c.node1("Or", {c.node1("Less", {a, b}), c.node1("Greater", {a, b})})});
  if (op == "NotEqual") return c.node1("Not", {compare(c, "Equal", a, b)});
  if (op == "LessOrEqual" && c.opset() < 12) return c.node1("Not", {c.node1("Greater", {a, b})});
  if (op == "GreaterOrEqual" && c.opset() < 12) return c.node1("Not", {c.node1("Less", {a, b})});
  return c.node1(op, {a, b});
}

void register_comparison_onnx() {
  for (auto [op, onnx] : {std::pair{"Equal", "Equal"},
                          {"NotEqual", "NotEqual"},
                          {"Less", "Less"},
                          {"LessEqual", "LessOrEqual"},
                          {"Greater", "Greater"},
                          {"GreaterEqual", "GreaterOrEqual"}})
    set_onnx_export(op, [onnx = std::string(onnx)](ExportContext& c) {
      write_bool(c, compare(c, onnx, aligned_rank(c, 0), aligned_rank(c, 1)));
    });
  for (const char* op : {"And", "Or", "Xor"})
    set_onnx_export(op, [op = std::string(op)](ExportContext& c) {
      write_bool(c, c.node1(op, {to_bool(c, aligned_rank(c, 0)), to_bool(c, aligned_rank(c, 1))}));
    });
  set_onnx_export("Not", [](ExportContext& c) { write_bool(c, c.node1("Not", {to_bool(c, c.input(0))})); });
}

void register_composite_onnx() {
  // log(exp(a) + exp(b)) = m + log(exp(a - m) + exp(b - m)), m = max(a, b): stable as the kernel.
  set_onnx_export("LogPlus", [](ExportContext& c) {
    std::string a = aligned_rank(c, 0), b = aligned_rank(c, 1), m = c.node1("Max", {a, b});
    std::string s =
        c.node1("Add", {c.node1("Exp", {c.node1("Sub", {a, m})}), c.node1("Exp", {c.node1("Sub", {b, m})})});
    c.node1("Add", {m, c.node1("Log", {s})}, {}, c.output(0));
  });
  set_onnx_export("Select", [](ExportContext& c) {
    c.node1("Where", {to_bool(c, aligned_rank(c, 0)), aligned_rank(c, 1), aligned_rank(c, 2)}, {}, c.output(0));
  });
  // Bounds are tensors that broadcast (ONNX's Clip takes scalars only).
  set_onnx_export("Clip", [](ExportContext& c) {
    c.node1("Min", {c.node1("Max", {aligned_rank(c, 0), aligned_rank(c, 1)}), aligned_rank(c, 2)}, {}, c.output(0));
  });
  // x >= 0 ? 1 : -1
  set_onnx_export("StraightThrough", [](ExportContext& c) {
    DataType t = c.output_var(0).dtype();
    c.node1("Where", {c.node1("Less", {c.input(0), c.constant_f(0, t)}), c.constant_f(-1, t), c.constant_f(1, t)}, {},
            c.output(0));
  });
}

}  // namespace

// ONNX forms of the ops that are one ONNX op each (src/onnx/export.h), then the others.
void register_elementwise_onnx() {
  for (auto [op, onnx] : {std::pair{"Abs", "Abs"},
                          {"Negate", "Neg"},
                          {"ReLU", "Relu"},
                          {"Tanh", "Tanh"},
                          {"StableSigmoid", "Sigmoid"},
                          {"Exp", "Exp"},
                          {"Log", "Log"},
                          {"Sqrt", "Sqrt"},
                          {"Reciprocal", "Reciprocal"},
                          {"Floor", "Floor"},
                          {"Sin", "Sin"},
                          {"Cos", "Cos"},
                          {"Tan", "Tan"},
                          {"Asin", "Asin"},
                          {"Acos", "Acos"},
                          {"Atan", "Atan"},
                          {"Sinh", "Sinh"},
                          {"Cosh", "Cosh"},
                          {"Asinh", "Asinh"},
                          {"Atanh", "Atanh"},
                          {"Erf", "Erf"}})
    set_onnx_export(op, onnx_io::export_as(onnx), onnx);
  for (auto [op, onnx] :
       {std::pair{"Plus", "Add"}, {"Minus", "Sub"}, {"ElementTimes", "Mul"}, {"ElementDivide", "Div"}, {"Pow", "Pow"}})
    set_onnx_export(op, onnx_io::export_broadcast(onnx), onnx);
  register_comparison_onnx();
  register_composite_onnx();
}

void register_elementwise_ops() {
  register_unary_ops();
  register_binary_ops();
  register_ternary_ops();
  register_elementwise_onnx();
}

namespace eager {
namespace {
template <class F>
NDArrayView bin(const NDArrayView& a, const NDArrayView& b, F f) {
  NDArrayView x = a.to_dense(), y = b.to_dense();
  return CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] {
    return apply<T, 2>(x.dtype(), {&x, &y}, [f](T p, T q) { return T(f(p, q)); });
  });
}
template <class F>
NDArrayView un(const NDArrayView& a, F f) {
  NDArrayView x = a.to_dense();
  return CNTK_DISPATCH_FLOAT(x.dtype(), T, [&] { return apply<T, 1>(x.dtype(), {&x}, [f](T p) { return T(f(p)); }); });
}
}  // namespace
NDArrayView add(const NDArrayView& a, const NDArrayView& b) {
  return bin(a, b, [](auto p, auto q) { return p + q; });
}
NDArrayView sub(const NDArrayView& a, const NDArrayView& b) {
  return bin(a, b, [](auto p, auto q) { return p - q; });
}
NDArrayView mul(const NDArrayView& a, const NDArrayView& b) {
  return bin(a, b, [](auto p, auto q) { return p * q; });
}
NDArrayView div(const NDArrayView& a, const NDArrayView& b) {
  return bin(a, b, [](auto p, auto q) { return p / q; });
}
NDArrayView scale(const NDArrayView& a, double s) {
  return un(a, [s](auto p) { return p * s; });
}
NDArrayView neg(const NDArrayView& a) {
  return un(a, [](auto p) { return -p; });
}
NDArrayView exp(const NDArrayView& a) {
  return un(a, [](auto p) { return std::exp(p); });
}
NDArrayView zeros_like(const NDArrayView& a) { return NDArrayView::zeros(a.dtype(), a.shape()); }
void add_to(NDArrayView& a, const NDArrayView& b) {
  NDArrayView y = b.to_dense();
  CNTK_DISPATCH_FLOAT(a.dtype(), T, [&] {
    const NDArrayView& x = a;
    kernels::map<T, 2>(a, {&x, &y}, [](T p, T q) { return p + q; });
  });
}
}  // namespace eager

}  // namespace cntk
