// ONNX's softmax family, activations with attributes and Dropout read as the engine's
// primitives (or small compositions of them where the engine has no single op).
#include <cmath>

#include "onnx/import.h"
#include "onnx/import_axes.h"

namespace cntk::onnx_io {

namespace {

Variable scalar(const Variable& like, double v) { return Variable::constant(NDArrayView::scalar(like.dtype(), v), ""); }

std::vector<Variable> one(const FunctionPtr& f) { return {f->output()}; }

// Softmax/LogSoftmax: before opset 13 the input is coerced to 2-D at `axis` (default 1) and
// normalized over everything from there; from 13 on over the one axis (default -1).
ImportFn softmax(const std::string& op, bool coerced) {
  return [op, coerced](ImportContext& c) {
    Variable x = c.input(0);
    const int64_t dyn = c.input_dyn(0), srank = int64_t(x.shape().rank()), rank = dyn + srank;
    int64_t axis = c.attr_int("axis", coerced ? 1 : -1);
    if (axis < -rank || axis >= rank) c.fail("axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    const int64_t s = axis - dyn;  // the static axis
    if (s < 0) c.fail("normalizing over a batch or sequence axis is not supported");
    if (op == "Hardmax") {
      // The engine's Hardmax takes the whole sample; over one axis it is the one-hot of the
      // first maximum's index along it.
      // Over the last axis with only axes of size 1 before it (the writer's flattened form) it
      // is the whole sample's too.
      bool whole = coerced ? s == 0 : s == srank - 1;
      for (int64_t i = 0; i < s && whole && !coerced; ++i) whole = x.shape()[size_t(i)] == 1;
      if (whole) return one(c.primitive("Hardmax", {x}));
      if (coerced && s != srank - 1) c.fail("coerced Hardmax over several axes is not supported");
      const int64_t n = x.shape()[size_t(s)];
      if (n < 0) c.fail("Hardmax over an axis of free size is not supported");
      Variable idx =
          c.primitive(
               "ReduceElements", {x},
               {{"reductionOpName", std::string("Argmax")}, {"reductionKeepDimensions", false}, {"axis", Axis(int(s))}})
              ->output();
      return one(c.primitive("OneHot", {idx}, {{"numClass", n}, {"onehotAxis", Axis(int(s))}}));
    }
    // float16 keeps the engine's Softmax (rounded once), not ONNX's step-by-step reference
    // (float16_softmax): CNTK's own round-trip tests (test_Softmax[float16]) require the
    // written model to read back with the values it had.
    if (!coerced || s == srank - 1) return one(c.primitive(op, {x}, {{"axis", Axis(int(s))}}));
    if (s == 0) return one(c.primitive(op, {x}, {{"axis", Axis::all_static_axes()}}));
    // Axes s.. merged into one, normalized, and split again.
    auto d = x.shape().dims();
    int64_t inner = 1;
    for (int64_t i = s; i < srank; ++i) {
      if (d[size_t(i)] < 0) c.fail("coerced softmax over axes of free size is not supported");
      inner *= d[size_t(i)];
    }
    std::vector<int64_t> flat(d.begin(), d.begin() + s);
    flat.push_back(inner);
    Variable y = c.primitive("Reshape", {x}, {{"newShape", NDShape(flat)}})->output();
    y = c.primitive(op, {y}, {{"axis", Axis(-1)}})->output();
    return one(c.primitive("Reshape", {y}, {{"newShape", x.shape()}}));
  };
}

}  // namespace

Variable float16_softmax(ImportContext& c, const Variable& x, const Axis& axis) {
  auto reduce = [&](const Variable& v, const char* op) {
    return c
        .primitive("ReduceElements", {v},
                   Dictionary{{"reductionOpName", std::string(op)}, {"reductionKeepDimensions", true}, {"axis", axis}})
        ->output();
  };
  Variable e = c.primitive("Exp", {c.primitive("Minus", {x, reduce(x, "Max")})->output()})->output();
  return c.primitive("ElementDivide", {e, reduce(e, "Sum")})->output();
}

namespace {

Variable select(ImportContext& c, const Variable& cond, const Variable& a, const Variable& b) {
  return c.primitive("Select", {cond, a, b})->output();
}

}  // namespace

void register_import_nn() {
  for (auto op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    register_onnx_import(op, softmax(op, true), 1);
    register_onnx_import(op, softmax(op, false), 13);
  }
  register_onnx_import("LeakyRelu", [](ImportContext& c) {
    return one(c.primitive("LeakyReLU", {c.input(0)}, {{"alpha", double(c.attr_float("alpha", 0.01f))}}));
  });
  register_onnx_import("Elu", [](ImportContext& c) {
    return one(c.primitive("ELU", {c.input(0)}, {{"alpha", double(c.attr_float("alpha", 1.0f))}}));
  });
  register_onnx_import("Selu", [](ImportContext& c) {
    return one(c.primitive("SELU", {c.input(0)},
                           {{"alpha", double(c.attr_float("alpha", 1.67326319217681884765625f))},
                            {"gamma", double(c.attr_float("gamma", 1.05070102214813232421875f))}}));
  });
  register_onnx_import("HardSigmoid", [](ImportContext& c) {
    return one(
        c.primitive("HardSigmoid", {c.input(0)},
                    {{"alpha", double(c.attr_float("alpha", 0.2f))}, {"beta", double(c.attr_float("beta", 0.5f))}}));
  });
  // x * HardSigmoid(x) with alpha 1/6, beta 1/2.
  register_onnx_import("HardSwish", [](ImportContext& c) {
    Variable x = c.input(0);
    Variable h = c.primitive("HardSigmoid", {x}, {{"alpha", 1.0 / 6}, {"beta", 0.5}})->output();
    return one(c.primitive("ElementTimes", {x, h}));
  });
  // log(1 + e^x) as LogPlus(0, x), stable for large x.
  register_onnx_import("Softplus", [](ImportContext& c) {
    Variable x = c.input(0);
    return one(c.primitive("LogPlus", {scalar(x, 0), x}));
  });
  register_onnx_import("Softsign", [](ImportContext& c) {
    Variable x = c.input(0);
    Variable d = c.primitive("Plus", {scalar(x, 1), c.primitive("Abs", {x})->output()})->output();
    return one(c.primitive("ElementDivide", {x, d}));
  });
  register_onnx_import("Mish", [](ImportContext& c) {
    Variable x = c.input(0);
    Variable sp = c.primitive("LogPlus", {scalar(x, 0), x})->output();
    return one(c.primitive("ElementTimes", {x, c.primitive("Tanh", {sp})->output()}));
  });
  // PRelu: the slope broadcasts to x one way (NumPy rules from the right, as the engine's
  // static shapes). Before opset 7 a 1-D slope of size C is per channel (axis 1): it becomes
  // (C, 1, ..., 1). Leading 1s of a slope over x's dynamic axes (the batch) are dropped.
  register_onnx_import("PRelu", [](ImportContext& c) {
    Variable x = c.input(0), slope = c.input(1);
    const int64_t srank = int64_t(x.shape().rank()), rank = c.input_dyn(0) + srank;
    std::vector<int64_t> sd = slope.shape().dims();
    if (c.opset() < 7 && sd.size() == 1 && sd[0] != 1 && rank > 2) {
      if (rank - 1 > srank) c.fail("a per-channel slope over a channel axis that is dynamic is not supported");
      sd.resize(size_t(rank - 1), 1);
    }
    while (int64_t(sd.size()) > srank && sd.front() == 1) sd.erase(sd.begin());
    if (int64_t(sd.size()) > srank) c.fail("the slope " + slope.shape().str() + " does not broadcast to the input");
    for (size_t k = 0; k < sd.size(); ++k) {
      const int64_t xd = x.shape()[size_t(srank) - sd.size() + k];
      if (sd[k] != 1 && xd >= 0 && sd[k] != xd)
        c.fail("the slope " + slope.shape().str() + " does not broadcast to the input " + x.shape().str());
    }
    if (sd != slope.shape().dims())
      slope = c.primitive("Reshape", {slope}, Dictionary{{"newShape", NDShape(sd)}})->output();
    Variable neg = c.primitive("Less", {x, scalar(x, 0)})->output();
    return std::vector<Variable>{select(c, neg, c.primitive("ElementTimes", {slope, x})->output(), x)};
  });
  register_onnx_import("ThresholdedRelu", [](ImportContext& c) {
    Variable x = c.input(0);
    Variable above = c.primitive("Greater", {x, scalar(x, c.attr_float("alpha", 1.0f))})->output();
    return std::vector<Variable>{select(c, above, x, scalar(x, 0))};
  });
  // Gelu: 0.5 x (1 + erf(x / sqrt 2)), or with approximate='tanh'
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  register_onnx_import(
      "Gelu",
      [](ImportContext& c) {
        const std::string approximate = c.attr_string("approximate", "none");
        if (approximate != "tanh" && approximate != "none")
          c.fail("approximate='" + approximate + "' is not one of 'none' and 'tanh'");
        Variable x = c.input(0);
        auto op = [&](const char* name, Variable a, Variable b) { return c.primitive(name, {a, b})->output(); };
        Variable half = op("ElementTimes", scalar(x, 0.5), x);
        Variable s;
        if (approximate == "none") {
          s = c.primitive("Erf", {op("ElementTimes", scalar(x, M_SQRT1_2), x)})->output();
        } else {
          Variable cube = op("ElementTimes", x, op("ElementTimes", x, x));
          Variable inner = op("ElementTimes", scalar(x, std::sqrt(2 / M_PI)),
                              op("Plus", x, op("ElementTimes", scalar(x, 0.044715), cube)));
          s = c.primitive("Tanh", {inner})->output();
        }
        return std::vector<Variable>{op("ElementTimes", half, op("Plus", scalar(x, 1), s))};
      },
      20);
  // Dropout. Not training (no training_mode, or a constant false; opsets before 12 read a
  // ratio attribute) it is the engine's Dropout, which trains as dropout and evaluates as the
  // identity. training_mode true makes it drop while evaluating too: a uniform draw of at least
  // the ratio keeps an element, scaled by 1 / (1 - ratio) (the engine's generator, seeded by
  // `seed`; ONNX's reference draws NumPy's). The mask output: all true where nothing drops.
  register_onnx_import("Dropout", [](ImportContext& c) {
    double ratio = c.opset() < 12 ? c.attr_float("ratio", 0.5f) : 0.5;
    if (c.opset() >= 12 && c.has_input(1)) {
      auto r = c.constant_input(1);
      if (!r) c.fail("a ratio computed while running is not supported");
      ratio = r->item();
    }
    bool training = false;
    if (c.opset() >= 12 && c.has_input(2)) {
      auto t = c.constant_input(2);
      if (!t) c.fail("a training_mode computed while running is not supported");
      training = t->item() != 0;
    }
    if (training && (ratio < 0 || ratio >= 1)) c.fail("the ratio must be in [0, 1)");
    const bool wants_mask = c.node().output_size() > 1 && !c.node().output(1).empty();
    if (wants_mask && c.opset() >= 10) c.set_output_elem_type(1, ::onnx::TensorProto::BOOL);
    Variable x = c.input(0);
    if (training && ratio > 0) {
      Dictionary a{{"randomDistributionType", std::string("uniform")},
                   {"randomDistributionArgs", DictValue::List{DictValue(0.0), DictValue(1.0)}}};
      if (c.has_attr("seed")) a["rngSeed"] = c.attr_int("seed");
      Variable u = c.primitive("RandomDistribution", {x}, a)->output();
      Variable mask = c.primitive("GreaterEqual", {u, scalar(x, ratio)})->output();
      Variable kept = c.primitive("ElementTimes", {x, mask})->output();
      Variable y = c.primitive("ElementTimes", {kept, scalar(x, 1 / (1 - ratio))})->output();
      return wants_mask ? std::vector<Variable>{y, mask} : std::vector<Variable>{y};
    }
    Variable y = training ? x : c.primitive("Dropout", {x}, {{"dropoutRate", ratio}})->output();
    if (!wants_mask) return std::vector<Variable>{y};
    return std::vector<Variable>{y, c.primitive("ConstantOp", {x}, {{"fillValue", 1.0}})->output()};
  });
}

}  // namespace cntk::onnx_io
