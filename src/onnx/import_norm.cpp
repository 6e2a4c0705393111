// ONNX's normalizations read as the engine's: BatchNormalization (inference form: the
// statistics given become the running statistics), LRN and InstanceNormalization.
#include "onnx/import_batch.h"

namespace cntk::onnx_io {

namespace {

// The running statistics as Constants (the engine updates them itself; they are no
// parameters to learn), where the file gives them as initializers.
Variable statistic(ImportContext& c, size_t i) {
  if (auto v = c.constant_input(i)) return Variable::constant(*v, c.node().input(int(i)));
  return c.input(i);
}

}  // namespace

void register_import_norm() {
  register_onnx_import("BatchNormalization", [](ImportContext& c) {
    for (int k = 1; k < c.node().output_size(); ++k)
      if (!c.node().output(k).empty()) c.fail("the training outputs (running mean and variance) are not supported");
    if (c.opset() >= 14 && c.attr_int("training_mode", 0) != 0) c.fail("training_mode 1 is not supported");
    // Before opset 9, spatial=0 normalizes per element of the sample; from 9 on always per channel.
    const bool spatial = c.opset() >= 9 || c.attr_int("spatial", 1) != 0;
    Variable scale = c.input(1), bias = c.input(2), mean = statistic(c, 3), var = statistic(c, 4);
    // A positive count: the given statistics hold (the engine ignores a zero count's).
    Variable count = Variable::constant(NDArrayView::scalar(scale.dtype(), 1.0), "");
    Dictionary a{{"spatial", spatial}, {"epsilon", double(c.attr_float("epsilon", 1e-5f))}};
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
