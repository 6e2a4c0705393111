// ONNX's normalizations read as the engine's: BatchNormalization (inference form: the
// statistics given become the running statistics) and LRN as the engine's ops;
// BatchNormalization's training form, InstanceNormalization, LayerNormalization,
// GroupNormalization and MeanVarianceNormalization as compositions of reductions and
// elementwise ops (the engine has no single op for them).
#include <algorithm>
#include <cmath>
#include <limits>

#include "onnx/import_axes.h"
#include "onnx/import_batch.h"

namespace cntk::onnx_io {

namespace {

// The running statistics as Constants (the engine updates them itself; they are no
// parameters to learn), where the file gives them as initializers.
Variable statistic(ImportContext& c, size_t i) {
  if (auto v = c.constant_input(i)) return Variable::constant(*v, c.node().input(int(i)));
  return c.input(i);
}

Variable out(const FunctionPtr& f) { return f->output(); }
Variable scalar(const Variable& like, double v) { return Variable::constant(NDArrayView::scalar(like.dtype(), v), ""); }
Variable cast_to(ImportContext& c, const Variable& x, DataType to) {
  return x.dtype() == to ? x : out(c.primitive("Cast", {x}, Dictionary{{"newDataType", int64_t(to)}}));
}

// The mean of x over the engine's static `axes`, kept as axes of size 1.
Variable mean_over(ImportContext& c, const Variable& x, const std::vector<int64_t>& axes) {
  return out(c.primitive(
      "ReduceElements", {x},
      {{"reductionOpName", std::string("Mean")}, {"reductionKeepDimensions", true}, {"axisVec", axis_list(axes)}}));
}

// The mean over the static `axes` (kept as axes of size 1), x - mean, and the variance (the
// mean of its square).
struct Moments {
  Variable mean, centered, variance;
};
Moments moments(ImportContext& c, const Variable& x, const std::vector<int64_t>& axes) {
  Variable mean = mean_over(c, x, axes);
  Variable d = out(c.primitive("Minus", {x, mean}));
  return {mean, d, mean_over(c, out(c.primitive("ElementTimes", {d, d})), axes)};
}

// sqrt(variance + epsilon).
Variable std_dev(ImportContext& c, const Variable& var, double epsilon) {
  return out(c.primitive("Sqrt", {out(c.primitive("Plus", {var, scalar(var, epsilon)}))}));
}

// (x - mean) / sqrt(variance + epsilon) over the static `axes`.
Variable normalize(ImportContext& c, const Variable& x, const std::vector<int64_t>& axes, double epsilon) {
  Moments m = moments(c, x, axes);
  return out(c.primitive("ElementDivide", {m.centered, std_dev(c, m.variance, epsilon)}));
}

// The engine's static axes of input 0 from ONNX axis `from` to the last.
std::vector<int64_t> axes_from(ImportContext& c, int64_t from) {
  const int64_t first = static_axis_of(c, 0, from), rank = int64_t(c.input(0).shape().rank());
  std::vector<int64_t> axes;
  for (int64_t a = first; a < rank; ++a) axes.push_back(a);
  return axes;
}

// The first of `outs` that the node has (its optional outputs are trailing).
std::vector<Variable> first_outputs(ImportContext& c, std::vector<Variable> outs) {
  outs.resize(std::min(outs.size(), size_t(c.node().output_size())));
  return outs;
}

// A per-channel vector [C] as [C, 1, ...] with `ones` axes of 1: it broadcasts against the
// channel axis followed by `ones` (spatial) axes.
Variable per_channel(ImportContext& c, const Variable& v, size_t ones) {
  NDShape s = NDShape{NDShape::kInferredDimension}.concat(NDShape(std::vector<int64_t>(ones, 1)));
  return out(c.primitive("Reshape", {v}, {{"newShape", s}}));
}

// BatchNormalization with training_mode=1 (opset 14 on), as ONNX computes the node: x
// normalized with the batch's own statistics over every axis but the channel axis (1), the
// variance biased; the running mean and variance outputs keep `momentum` of the inputs'
// and take the rest from the batch's. Composed of reductions, so that the gradient flows
// through the statistics as batch normalization's does in training.
std::vector<Variable> batch_norm_training(ImportContext& c) {
  Variable x = c.input(0);
  if (c.input_dyn(0) > 0) c.fail("training_mode=1 over an input with a batch or sequence axis is not supported");
  const int64_t rank = int64_t(x.shape().rank());
  if (rank < 2) c.fail("the input needs a batch and a channel axis");
  std::vector<int64_t> axes{0};
  for (int64_t a = 2; a < rank; ++a) axes.push_back(a);
  Moments m = moments(c, x, axes);
  const double momentum = c.attr_float("momentum", 0.9f);
  Variable sd = std_dev(c, m.variance, c.attr_float("epsilon", 1e-5f));
  auto channel = [&](const Variable& v) { return per_channel(c, v, size_t(rank - 2)); };
  Variable y = out(c.primitive("ElementDivide", {m.centered, sd}));
  y = out(c.primitive("Plus", {out(c.primitive("ElementTimes", {y, channel(c.input(1))})), channel(c.input(2))}));
  auto running = [&](size_t i, const Variable& batch) {
    Variable flat = out(c.primitive("Reshape", {batch}, {{"newShape", NDShape{NDShape::kInferredDimension}}}));
    Variable kept = out(c.primitive("ElementTimes", {c.input(i), scalar(x, momentum)}));
    return out(c.primitive("Plus", {kept, out(c.primitive("ElementTimes", {flat, scalar(x, 1 - momentum)}))}));
  };
  return first_outputs(c, {y, running(3, m.mean), running(4, m.variance)});
}

}  // namespace

void register_import_norm() {
  // Per sample and channel over the spatial axes of [N, C, D...]; scale and B per channel.
  register_onnx_import("InstanceNormalization", [](ImportContext& c) {
    const int64_t rank = c.input_dyn(0) + int64_t(c.input(0).shape().rank());
    if (rank < 3) c.fail("the input needs a batch, a channel and a spatial axis");
    Variable y = normalize(c, c.input(0), axes_from(c, 2), c.attr_float("epsilon", 1e-5f));
    auto channel = [&](size_t i) { return per_channel(c, c.input(i), size_t(rank - 2)); };
    y = out(c.primitive("ElementTimes", {y, channel(1)}));
    return std::vector<Variable>{out(c.primitive("Plus", {y, channel(2)}))};
  });
  // Over the axes from `axis` on; scale and B broadcast to those axes. Outputs Y and, where
  // asked for, Mean and InvStdDev with the reduced axes kept as 1s. stash_type 1 (the
  // default) computes the statistics in float32 and casts the normalized value back.
  register_onnx_import(
      "LayerNormalization",
      [](ImportContext& c) {
        Variable x = c.input(0);
        const DataType dt = x.dtype();
        const bool stash = c.attr_int("stash_type", 1) == 1 && dt != DataType::Float;
        if (stash) x = cast_to(c, x, DataType::Float);
        const auto axes = axes_from(c, c.attr_int("axis", -1));
        Moments m = moments(c, x, axes);
        Variable sd = std_dev(c, m.variance, c.attr_float("epsilon", 1e-5f));
        Variable inv = out(c.primitive("ElementDivide", {scalar(x, 1), sd}));
        Variable y = cast_to(c, out(c.primitive("ElementTimes", {m.centered, inv})), dt);
        y = out(c.primitive("ElementTimes", {y, c.input(1)}));
        if (c.has_input(2)) y = out(c.primitive("Plus", {y, c.input(2)}));
        return first_outputs(c, {y, m.mean, inv});
      },
      17);
  // Over groups of channels: [N, C, D...] as [N, G, C/G, D...], normalized over the axes
  // after G, and back. From opset 21 scale and B are per channel (stash_type as in
  // LayerNormalization); opset 18's are per group.
  register_onnx_import(
      "GroupNormalization",
      [](ImportContext& c) {
        Variable x = c.input(0);
        const DataType dt = x.dtype();
        const bool stash = c.opset() >= 21 && c.attr_int("stash_type", 1) == 1 && dt != DataType::Float;
        if (stash) x = cast_to(c, x, DataType::Float);
        const int64_t ch = static_axis_of(c, 0, 1), groups = c.attr_int("num_groups");
        std::vector<int64_t> d = x.shape().dims();
        if (int64_t(d.size()) < ch + 1) c.fail("the input needs a batch and a channel axis");
        if (groups < 1 || d[size_t(ch)] < 0 || d[size_t(ch)] % groups)
          c.fail("num_groups " + std::to_string(groups) + " does not divide the channels of " + x.shape().str());
        std::vector<int64_t> grouped(d.begin(), d.begin() + ch);
        grouped.push_back(groups);
        grouped.push_back(d[size_t(ch)] / groups);
        grouped.insert(grouped.end(), d.begin() + ch + 1, d.end());
        // A free dimension (at most one) is inferred by the reshapes.
        auto reshaped = [&](const Variable& v, std::vector<int64_t> dims) {
          int free = 0;
          for (int64_t& k : dims)
            if (k < 0 && free++ == 0) k = NDShape::kInferredDimension;
          if (free > 1) c.fail("an input with several free dimensions is not supported");
          return out(c.primitive("Reshape", {v}, {{"newShape", NDShape(dims)}}));
        };
        Variable g = reshaped(x, grouped);
        std::vector<int64_t> axes;
        for (int64_t a = ch + 1; a < int64_t(grouped.size()); ++a) axes.push_back(a);
        Variable y = normalize(c, g, axes, c.attr_float("epsilon", 1e-5f));
        // scale and B as [n, 1, ...] against the axes from the channels' (or groups') on.
        const size_t trailing = d.size() - size_t(ch) - 1;
        auto affine = [&](Variable v, size_t ones) {
          v = out(c.primitive("ElementTimes", {v, per_channel(c, c.input(1), ones)}));
          return out(c.primitive("Plus", {v, per_channel(c, c.input(2), ones)}));
        };
        if (c.opset() < 21) y = affine(y, trailing + 1);
        y = cast_to(c, reshaped(y, d), dt);
        if (c.opset() >= 21) y = affine(y, trailing);
        return std::vector<Variable>{y};
      },
      18);
  // (x - mean) / (standard deviation + 1e-9) over `axes` (ONNX's function body).
  register_onnx_import("MeanVarianceNormalization", [](ImportContext& c) {
    std::vector<int64_t> axes;
    for (int64_t a : c.attr_ints("axes", std::vector<int64_t>{0, 2, 3})) axes.push_back(static_axis_of(c, 0, a));
    Moments m = moments(c, c.input(0), axes);
    Variable sd = out(c.primitive("Plus", {out(c.primitive("Sqrt", {m.variance})), scalar(m.centered, 1e-9)}));
    return std::vector<Variable>{out(c.primitive("ElementDivide", {m.centered, sd}))};
  });
  register_onnx_import("BatchNormalization", [](ImportContext& c) {
    if (c.opset() >= 14 && c.attr_int("training_mode", 0) != 0) return batch_norm_training(c);
    for (int k = 1; k < c.node().output_size(); ++k)
      if (!c.node().output(k).empty())
        c.fail(
            "the training outputs (running mean and variance) are supported with training_mode=1 (opset 14 on) only");
    // Before opset 9, spatial=0 normalizes per element of the sample; from 9 on always per channel.
    const bool spatial = c.opset() >= 9 || c.attr_int("spatial", 1) != 0;
    Variable scale = c.input(1), bias = c.input(2), mean = statistic(c, 3), var = statistic(c, 4);
    // A positive count: the given statistics hold (the engine ignores a zero count's).
    Variable count = Variable::constant(NDArrayView::scalar(scale.dtype(), 1.0), "");
    Dictionary a{{"spatial", spatial}, {"epsilon", double(c.attr_float("epsilon", 1e-5f))}};
    // Trained, ONNX's running statistics keep `momentum` of themselves per minibatch; the
    // engine keeps exp(-N / T) for N samples. Where the file fixes N, T = -N / ln(momentum)
    // gives ONNX's update; otherwise CNTK's default time constant holds (docs/onnx.md).
    const Variable& x0 = c.input(0);
    const double momentum = c.attr_float("momentum", 0.9f);
    if (x0.dynamic_axes().empty() && x0.shape().rank() > 0 && x0.shape()[0] > 0 && momentum >= 0 && momentum <= 1)
      a["normalizationTimeConstant"] = momentum == 0   ? 0.0
                                       : momentum == 1 ? std::numeric_limits<double>::infinity()
                                                       : -double(x0.shape()[0]) / std::log(momentum);
    Variable y = over_batch(c, 0, [&](const Variable& x) {
      if (!spatial) {
        // One statistic per element of the sample: the parameters have the sample's shape.
        auto reshape = [&](const Variable& v) {
          return c.primitive("Reshape", {v}, {{"newShape", NDShape{x.shape().total_size()}}})->output();
        };
        return c
            .primitive("BatchNormalization", {x, reshape(scale), reshape(bias), reshape(mean), reshape(var), count}, a)
            ->output();
      }
      return c.primitive("BatchNormalization", {x, scale, bias, mean, var, count}, a)->output();
    });
    return std::vector<Variable>{y};
  });
  // CNTK's LRN divides by (bias + alpha / (2 r + 1) * sum)^beta over 2 r + 1 channels, as
  // ONNX's over `size` of them where size is odd.
  register_onnx_import("LRN", [](ImportContext& c) {
    int64_t size = c.attr_int("size");
    if (size < 1 || size % 2 == 0) c.fail("LRN with an even size is not supported (the engine's window is symmetric)");
    Dictionary a{{"depthRadius", (size - 1) / 2},
                 {"bias", double(c.attr_float("bias", 1.0f))},
                 {"alpha", double(c.attr_float("alpha", 1e-4f))},
                 {"beta", double(c.attr_float("beta", 0.75f))}};
    Variable y = over_batch(
        c, 0, [&](const Variable& x) { return c.primitive("LocalResponseNormalization", {x}, a)->output(); });
    return std::vector<Variable>{y};
  });
}

}  // namespace cntk::onnx_io
