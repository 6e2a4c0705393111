// ONNX convolutions and pooling read as the engine's Convolution and Pooling. ONNX's
// kernel [M, C/group, k...] (ConvTranspose: [C, M, k...]) is the engine's kernel as it
// is; an operand with a static N becomes a batch axis around the op (import_batch.h).
// Padding is always explicit (lowerPad/upperPad): ONNX's SAME_* place the odd padding
// cell differently from CNTK's centred auto padding once strides exceed 1.
#include <functional>
#include <numeric>

#include "onnx/import_batch.h"

namespace cntk::onnx_io {

namespace {

DictValue flags(size_t n, bool v) {
  DictValue::List l(n, DictValue(v));
  return DictValue(std::move(l));
}

struct Window {
  std::vector<int64_t> kernel, strides, dilations, lo, hi;
};

// The window attributes of a node over `n` spatial axes whose input sizes are `in` (the
// operand's static spatial dims; negative where free). Explicit pads for every auto_pad.
Window window_of(ImportContext& c, size_t n, const std::vector<int64_t>& kernel, const std::vector<int64_t>& in) {
  Window w;
  w.kernel = kernel;
  w.strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  w.dilations = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  auto pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (w.kernel.size() != n || w.strides.size() != n || w.dilations.size() != n || pads.size() != 2 * n)
    c.fail("kernel_shape, strides, dilations and pads must cover the " + std::to_string(n) + " spatial axes");
  w.lo.assign(pads.begin(), pads.begin() + long(n));
  w.hi.assign(pads.begin() + long(n), pads.end());
  const std::string ap = c.attr_string("auto_pad", "NOTSET");
  if (ap == "VALID") {
    std::fill(w.lo.begin(), w.lo.end(), 0);
    std::fill(w.hi.begin(), w.hi.end(), 0);
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      if (in[i] < 0) c.fail("auto_pad " + ap + " over a spatial axis of free size is not supported");
      int64_t out = (in[i] + w.strides[i] - 1) / w.strides[i], ke = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + ke - in[i]);
      w.lo[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.hi[i] = total - w.lo[i];
    }
  } else if (ap != "NOTSET") {
    c.fail("unknown auto_pad '" + ap + "'");
  }
  return w;
}

std::vector<int64_t> spatial_dims(const Variable& x, size_t n) {
  auto d = x.shape().dims();
  return {d.end() - long(n), d.end()};
}

// Adds bias B [M] to y (M, spatial...) as the engine broadcasts: B reshaped to (M, 1...).
Variable add_bias(ImportContext& c, Variable y, size_t n) {
  if (!c.has_input(2)) return y;
  Variable b = c.input(2);
  std::vector<int64_t> shape{b.shape().total_size()};
  shape.resize(n + 1, 1);
  b = c.primitive("Reshape", {b}, {{"newShape", NDShape(shape)}})->output();
  return c.primitive("Plus", {y, b})->output();
}

std::vector<Variable> conv(ImportContext& c, bool transpose) {
  Variable w = c.input(1);
  if (w.shape().rank() < 3) c.fail("the kernel " + w.shape().str() + " needs two channel axes and a spatial one");
  const size_t n = w.shape().rank() - 2;
  const int64_t group = c.attr_int("group", 1);
  if (transpose && group != 1) c.fail("ConvTranspose with group > 1 is not supported (the engine's has no groups)");
  auto kernel = c.attr_ints("kernel_shape", spatial_dims(w, n));
  Variable y = over_batch(c, 0, [&](const Variable& x) {
    if (x.shape().rank() != n + 1)
      c.fail("the operand " + x.shape().str() + " does not have " + std::to_string(n) + " spatial axes");
    auto in = spatial_dims(x, n);
    Window win = window_of(c, n, kernel, in);
    Dictionary a{{"strides", NDShape(win.strides)},
                 {"dilation", NDShape(win.dilations)},
                 {"autoPadding", flags(n + 1, false)},
                 {"lowerPad", NDShape(win.lo)},
                 {"upperPad", NDShape(win.hi)},
                 {"sharing", flags(1, true)},
                 {"groups", group},
                 {"reductionRank", int64_t(1)},
                 {"transpose", transpose}};
    if (transpose) {
      // The output size ONNX gives (output_shape, or from output_padding), explicit for the engine.
      auto out = c.attr_ints("output_shape", std::vector<int64_t>{});
      if (!out.empty() && c.attr_string("auto_pad", "NOTSET") != "NOTSET")
        c.fail("ConvTranspose with output_shape and auto_pad is not supported");
      if (out.empty()) {
        auto op = c.attr_ints("output_padding", std::vector<int64_t>(n, 0));
        out.resize(n);
        for (size_t i = 0; i < n; ++i) {
          if (in[i] < 0) c.fail("ConvTranspose over a spatial axis of free size is not supported");
          out[i] =
              win.strides[i] * (in[i] - 1) + op[i] + (kernel[i] - 1) * win.dilations[i] + 1 - win.lo[i] - win.hi[i];
        }
      } else if (out.size() > n) {
        out = {out.end() - long(n), out.end()};
      }
      a["outputShape"] = NDShape(out);
    }
    return add_bias(c, c.primitive("Convolution", {w, x}, std::move(a))->output(), n);
  });
  return {y};
}

// LpPool: (sum over the window of |x|^p)^(1/p), the sum being the average with the padding
// counted times the window's size. `pooled` pools its operand as an average with the padding.
template <class Pooled>
Variable lp_pool(ImportContext& c, const Variable& x, int64_t window_size, Pooled pooled) {
  const int64_t p = c.attr_int("p", 2);
  if (p < 1) c.fail("p must be positive, got " + std::to_string(p));
  auto k = [&](double v) { return Variable::constant(NDArrayView::scalar(x.dtype(), v), ""); };
  auto op = [&](const char* name, const Variable& a, const Variable& b) { return c.primitive(name, {a, b})->output(); };
  Variable y = pooled(op("Pow", c.primitive("Abs", {x})->output(), k(double(p))));
  return op("Pow", op("ElementTimes", y, k(double(window_size))), k(1.0 / double(p)));
}

// MaxPool / AveragePool over the window the node gives (LpPool: type -1).
std::vector<Variable> pool(ImportContext& c, int64_t type) {
  auto kernel = c.attr_ints("kernel_shape");
  const size_t n = kernel.size();
  if (c.node().output_size() > 1 && !c.node().output(1).empty()) c.fail("MaxPool's Indices output is not supported");
  if (c.attr_int("storage_order", 0) != 0) c.fail("storage_order 1 is not supported");
  Variable y = over_batch(c, 0, [&](const Variable& x) {
    if (x.shape().rank() < n) c.fail("the window has more axes than the operand " + x.shape().str());
    Window win = window_of(c, n, kernel, spatial_dims(x, n));
    for (auto d : win.dilations)
      if (d != 1) c.fail("pooling with dilations is not supported");
    if (type < 0) {
      const int64_t size = std::accumulate(win.kernel.begin(), win.kernel.end(), int64_t(1), std::multiplies<>());
      return lp_pool(c, x, size, [&](const Variable& v) {
        Dictionary a{{"poolingType", int64_t(1)},
                     {"poolingWindowShape", NDShape(win.kernel)},
                     {"strides", NDShape(win.strides)},
                     {"autoPadding", flags(n, false)},
                     {"lowerPad", NDShape(win.lo)},
                     {"upperPad", NDShape(win.hi)},
                     {"ceilOutDim", c.attr_int("ceil_mode", 0) != 0},
                     {"includePad", true}};
        return c.primitive("Pooling", {v}, std::move(a))->output();
      });
    }
    Dictionary a{{"poolingType", type},
                 {"poolingWindowShape", NDShape(win.kernel)},
                 {"strides", NDShape(win.strides)},
                 {"autoPadding", flags(n, false)},
                 {"lowerPad", NDShape(win.lo)},
                 {"upperPad", NDShape(win.hi)},
                 {"ceilOutDim", c.attr_int("ceil_mode", 0) != 0},
                 {"includePad", c.attr_int("count_include_pad", 0) != 0}};
    return c.primitive("Pooling", {x}, std::move(a))->output();
  });
  return {y};
}

// Global pooling: the engine's pooling with no window pools every axis but the channels.
ImportFn global_pool(int64_t type) {
  return [type](ImportContext& c) {
    Variable y = over_batch(c, 0, [&](const Variable& x) {
      if (x.shape().rank() < 2) c.fail("the operand " + x.shape().str() + " has no spatial axis");
      auto win = x.shape().dims();
      win.erase(win.begin());
      auto global = [&](const Variable& v, int64_t t) {
        Dictionary a{{"poolingType", t},
                     {"poolingWindowShape", NDShape(win)},
                     {"strides", NDShape{1}},
                     {"autoPadding", flags(1, false)}};
        return c.primitive("Pooling", {v}, std::move(a))->output();
      };
      if (type >= 0) return global(x, type);
      const int64_t size = std::accumulate(win.begin(), win.end(), int64_t(1), std::multiplies<>());
      if (size < 0) c.fail("GlobalLpPool over spatial axes of free size is not supported");
      return lp_pool(c, x, size, [&](const Variable& v) { return global(v, 1); });
    });
    return std::vector<Variable>{y};
  };
}

}  // namespace

void register_import_conv() {
  register_onnx_import("Conv", [](ImportContext& c) { return conv(c, false); });
  register_onnx_import("ConvTranspose", [](ImportContext& c) { return conv(c, true); });
  register_onnx_import("MaxPool", [](ImportContext& c) { return pool(c, 0); });
  register_onnx_import("AveragePool", [](ImportContext& c) { return pool(c, 1); });
  register_onnx_import("GlobalMaxPool", global_pool(0));
  register_onnx_import("GlobalAveragePool", global_pool(1));
  register_onnx_import("LpPool", [](ImportContext& c) { return pool(c, -1); });
  register_onnx_import("GlobalLpPool", global_pool(-1));
}

}  // namespace cntk::onnx_io
