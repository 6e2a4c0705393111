// The optimizer steps of ONNX's ai.onnx.preview.training domain (opset 1): Adagrad, Adam and
// Momentum, each a formula over its inputs R (learning rate), T (update count), then the
// tensors to optimize, their gradients and their accumulators, one group per tensor. A node
// updating n tensors returns the n new tensors, then the n new accumulators of each kind.
// The branches on T (bias correction, the first step's coefficient) are Selects over T > 0,
// since T is a graph input of the step.
#include "onnx/import.h"

namespace cntk::onnx_io {

namespace {

using Vars = std::vector<Variable>;

// The shared frame: r and t as float scalars, the op's elementwise helpers, and the
// groups of tensors (inputs 2 + k * n + i for kind k and tensor i).
struct Step {
  ImportContext& c;
  Variable r, t;
  size_t n;

  Step(ImportContext& ctx, size_t kinds) : c(ctx) {
    if (c.num_inputs() < 2 + kinds || (c.num_inputs() - 2) % kinds)
      c.fail("takes R, T and " + std::to_string(kinds) + " inputs per optimized tensor");
    n = (c.num_inputs() - 2) / kinds;
    r = c.input(0);
    t = cast(c.input(1));
  }
  Variable cast(const Variable& x) const {
    return x.dtype() == DataType::Float
               ? x
               : c.primitive("Cast", {x}, Dictionary{{"newDataType", int64_t(DataType::Float)}})->output();
  }
  Variable in(size_t kind, size_t i) const { return cast(c.input(2 + kind * n + i)); }
  Variable k(double v) const { return Variable::constant(NDShape{}, DataType::Float, v, c.name() + "/const"); }
  Variable op(const char* name, const Variable& a, const Variable& b) const {
    return c.primitive(name, {a, b})->output();
  }
  Variable add(const Variable& a, const Variable& b) const { return op("Plus", a, b); }
  Variable sub(const Variable& a, const Variable& b) const { return op("Minus", a, b); }
  Variable mul(const Variable& a, const Variable& b) const { return op("ElementTimes", a, b); }
  Variable div(const Variable& a, const Variable& b) const { return op("ElementDivide", a, b); }
  Variable sqrt(const Variable& a) const { return c.primitive("Sqrt", {a})->output(); }
  // a where T > 0, else b.
  Variable after_first(const Variable& a, const Variable& b) const {
    return c.primitive("Select", {op("Greater", t, k(0)), a, b})->output();
  }
  // The gradient with its L2 regularization term: norm_coefficient * x + g.
  Variable regularized(const Variable& x, const Variable& g) const {
    return add(mul(k(c.attr_float("norm_coefficient", 0.0f)), x), g);
  }
};

Vars adagrad(ImportContext& c) {
  Step s(c, 3);
  const double decay = c.attr_float("decay_factor", 0.0f), eps = c.attr_float("epsilon", 0.0f);
  // r / (1 + t * decay_factor)
  Variable rate = s.div(s.r, s.add(s.k(1), s.mul(s.t, s.k(decay))));
  Vars xs, hs;
  for (size_t i = 0; i < s.n; ++i) {
    Variable x = s.in(0, i), g = s.regularized(x, s.in(1, i));
    Variable h = s.add(s.in(2, i), s.mul(g, g));
    xs.push_back(s.sub(x, s.div(s.mul(rate, g), s.add(s.sqrt(h), s.k(eps)))));
    hs.push_back(h);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

Vars adam(ImportContext& c) {
  Step s(c, 4);
  const double alpha = c.attr_float("alpha", 0.9f), beta = c.attr_float("beta", 0.999f);
  const double eps = c.attr_float("epsilon", 0.0f), post = c.attr_float("norm_coefficient_post", 0.0f);
  // Bias correction from the second step on: r * sqrt(1 - beta^t) / (1 - alpha^t).
  auto power = [&](double base) { return s.op("Pow", s.k(base), s.t); };
  Variable rate =
      s.after_first(s.div(s.mul(s.r, s.sqrt(s.sub(s.k(1), power(beta)))), s.sub(s.k(1), power(alpha))), s.r);
  Vars xs, vs, hs;
  for (size_t i = 0; i < s.n; ++i) {
    Variable x = s.in(0, i), g = s.regularized(x, s.in(1, i));
    Variable v = s.add(s.mul(s.k(alpha), s.in(2, i)), s.mul(s.k(1 - alpha), g));
    Variable h = s.add(s.mul(s.k(beta), s.in(3, i)), s.mul(s.k(1 - beta), s.mul(g, g)));
    Variable step = s.div(v, s.add(s.sqrt(h), s.k(eps)));
    xs.push_back(s.mul(s.k(1 - post), s.sub(x, s.mul(rate, step))));
    vs.push_back(v);
    hs.push_back(h);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

Vars momentum(ImportContext& c) {
  Step s(c, 3);
  const double alpha = c.attr_float("alpha"), beta = c.attr_float("beta");
  const std::string mode = c.attr_string("mode");
  if (mode != "standard" && mode != "nesterov") c.fail("mode must be standard or nesterov, not '" + mode + "'");
  // The gradient's coefficient is 1 at the first step (T = 0), beta after.
  Variable coef = s.after_first(s.k(beta), s.k(1));
  Vars xs, vs;
  for (size_t i = 0; i < s.n; ++i) {
    Variable x = s.in(0, i), g = s.regularized(x, s.in(1, i));
    Variable v = s.add(s.mul(s.k(alpha), s.in(2, i)), s.mul(coef, g));
    Variable dir = mode == "standard" ? v : s.add(g, s.mul(s.k(alpha), v));
    xs.push_back(s.sub(x, s.mul(s.r, dir)));
    vs.push_back(v);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

}  // namespace

void register_import_training() {
  const std::string domain = "ai.onnx.preview.training";
  register_onnx_import("Adagrad", adagrad, 1, domain);
  register_onnx_import("Adam", adam, 1, domain);
  register_onnx_import("Momentum", momentum, 1, domain);
}

}  // namespace cntk::onnx_io
