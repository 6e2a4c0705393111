// ONNX convolutions and pooling read as the engine's Convolution and Pooling. ONNX's
// kernel [M, C/group, k...] (ConvTranspose: [C, M, k...]) is the engine's kernel as it
// is; an operand with a static N becomes a batch axis around the op (import_batch.h).
// Padding is always explicit (lowerPad/upperPad): ONNX's SAME_* place the odd padding
// cell differently from CNTK's centred auto padding once strides exceed 1. The engine's
// transposed convolution has no groups: a grouped ConvTranspose is one per group.
#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

#include "onnx/import_axes.h"
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
  if (group < 1) c.fail("group must be positive, got " + std::to_string(group));
  auto kernel = c.attr_ints("kernel_shape", spatial_dims(w, n));
  Variable y = over_batch(c, 0, [&](const Variable& x) {
    if (x.shape().rank() != n + 1)
      c.fail("the operand " + x.shape().str() + " does not have " + std::to_string(n) + " spatial axes");
    auto in = spatial_dims(x, n);
    Window win = window_of(c, n, kernel, in);
    const std::string ap = c.attr_string("auto_pad", "NOTSET");
    auto out = transpose ? c.attr_ints("output_shape", std::vector<int64_t>{}) : std::vector<int64_t>{};
    if (out.size() > n) out = {out.end() - long(n), out.end()};
    if (transpose && (ap == "SAME_UPPER" || ap == "SAME_LOWER")) {
      // A transposed SAME window pads so that the output is the input times the stride (or
      // output_shape): the total is what the full transposed output has beyond that.
      auto op = c.attr_ints("output_padding", std::vector<int64_t>(n, 0));
      for (size_t i = 0; i < n; ++i) {
        if (in[i] < 0) c.fail("ConvTranspose over a spatial axis of free size is not supported");
        const int64_t o = out.empty() ? in[i] * win.strides[i] : out[i];
        const int64_t total = win.strides[i] * (in[i] - 1) + op[i] + (kernel[i] - 1) * win.dilations[i] + 1 - o;
        win.lo[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
        win.hi[i] = total - win.lo[i];
      }
    }
    Dictionary a{{"strides", NDShape(win.strides)},
                 {"dilation", NDShape(win.dilations)},
                 {"autoPadding", flags(n + 1, false)},
                 {"lowerPad", NDShape(win.lo)},
                 {"upperPad", NDShape(win.hi)},
                 {"sharing", flags(1, true)},
                 {"groups", transpose ? int64_t(1) : group},
                 {"reductionRank", int64_t(1)},
                 {"transpose", transpose}};
    if (transpose) {
      // The output size ONNX gives (output_shape, or from output_padding), explicit for the engine.
      if (out.empty()) {
        auto op = c.attr_ints("output_padding", std::vector<int64_t>(n, 0));
        out.resize(n);
        for (size_t i = 0; i < n; ++i) {
          if (in[i] < 0) c.fail("ConvTranspose over a spatial axis of free size is not supported");
          out[i] =
              win.strides[i] * (in[i] - 1) + op[i] + (kernel[i] - 1) * win.dilations[i] + 1 - win.lo[i] - win.hi[i];
        }
      }
      a["outputShape"] = NDShape(out);
    }
    if (!transpose || group == 1) return add_bias(c, c.primitive("Convolution", {w, x}, std::move(a))->output(), n);
    // The engine's transposed convolution has no groups: one per group over its channels
    // (X's and the kernel's leading axis), the results concatenated along the channels.
    const int64_t ch = x.shape()[0];
    if (ch < 0 || ch % group != 0 || w.shape()[0] != ch)
      c.fail("ConvTranspose's " + std::to_string(ch) + " channels do not split into " + std::to_string(group) +
             " groups over the kernel " + w.shape().str());
    auto part = [&](const Variable& v, int64_t g) {
      const int64_t k = ch / group;
      return c
          .primitive("Slice", {v},
                     {{"axisVec", axis_list({0})},
                      {"beginIndexVec", int_list({g * k})},
                      {"endIndexVec", int_list({(g + 1) * k})}})
          ->output();
    };
    std::vector<Variable> parts;
    for (int64_t g = 0; g < group; ++g)
      parts.push_back(c.primitive("Convolution", {part(w, g), part(x, g)}, a)->output());
    Variable y = c.primitive("Splice", parts, {{"axis", Axis(0)}})->output();
    return add_bias(c, y, n);
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

// Max (type 0) or average (type 1) pooling with dilations, which the engine's Pooling lacks
// (or with a ceil_mode window it would keep), composed exactly: the operand padded (-inf for max, 0 for average), then
// per spatial axis the window's k cells as k strided slices combined by max or sum; an average divides by the count of
// cells each window covers (padding counted or not), known while reading.
Variable dilated_pool(ImportContext& c, const Variable& x, const Window& win, int64_t type, bool ceil, bool with_pad) {
  const size_t n = win.kernel.size(), r = x.shape().rank(), first = r - n;
  const auto in = spatial_dims(x, n);
  std::vector<int64_t> head(r, 0), foot(r, 0), outs(n), count_dims;
  std::vector<std::vector<double>> counts(n);
  for (size_t i = 0; i < n; ++i) {
    if (in[i] < 0) c.fail("pooling with dilations over a spatial axis of free size is not supported");
    const int64_t k = win.kernel[i], d = win.dilations[i], s = win.strides[i], ke = (k - 1) * d + 1;
    const int64_t span = in[i] + win.lo[i] + win.hi[i] - ke;
    if (k < 1 || d < 1 || s < 1 || span < 0) c.fail("the dilated window does not fit the padded operand");
    int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (o - 1) * s >= in[i] + win.lo[i]) --o;  // the last window must start inside the operand
    outs[i] = o;
    head[first + i] = win.lo[i];
    foot[first + i] = win.hi[i] + std::max<int64_t>(0, (o - 1) * s + ke - (in[i] + win.lo[i] + win.hi[i]));
    const int64_t lo_ok = with_pad ? 0 : win.lo[i],
                  hi_ok = with_pad ? in[i] + win.lo[i] + win.hi[i] : in[i] + win.lo[i];
    for (int64_t j = 0; j < o; ++j) {
      int64_t m = 0;
      for (int64_t t = 0; t < k; ++t) m += (j * s + t * d >= lo_ok && j * s + t * d < hi_ok);
      counts[i].push_back(double(m));
    }
  }
  auto out = [](const FunctionPtr& f) { return f->output(); };
  const bool is_max = type == 0;
  Variable acc = x;
  if (std::any_of(head.begin(), head.end(), [](int64_t v) { return v > 0; }) ||
      std::any_of(foot.begin(), foot.end(), [](int64_t v) { return v > 0; }))
    acc = out(c.primitive("Pad", {x},
                          {{"paddingHead", int_list(head)},
                           {"paddingFoot", int_list(foot)},
                           {"paddingMode", int64_t(0)},
                           {"paddingConstantValue", is_max ? -std::numeric_limits<double>::infinity() : 0.0}}));
  for (size_t i = 0; i < n; ++i) {
    const int64_t d = win.dilations[i], s = win.strides[i], len = (outs[i] - 1) * s + 1;
    Variable sum;
    for (int64_t t = 0; t < win.kernel[i]; ++t) {
      Variable v = out(c.primitive("Slice", {acc},
                                   {{"axisVec", axis_list({int64_t(first + i)})},
                                    {"beginIndexVec", int_list({t * d})},
                                    {"endIndexVec", int_list({t * d + len})},
                                    {"sliceStridesVec", int_list({s})}}));
      if (t == 0)
        sum = v;
      else if (is_max)
        sum = out(c.primitive("Select", {out(c.primitive("Less", {sum, v})), v, sum}));
      else
        sum = out(c.primitive("Plus", {sum, v}));
    }
    acc = sum;
  }
  if (is_max) return acc;
  // The count over the window is the product of the axes' counts: an (outs...) constant.
  NDArrayView cnt(x.dtype() == DataType::Double ? DataType::Double : DataType::Float, NDShape(outs));
  const int64_t total = cnt.numel();
  for (int64_t e = 0; e < total; ++e) {
    double v = 1;
    for (int64_t i = int64_t(n) - 1, rest = e; i >= 0; rest /= outs[size_t(i)], --i)
      v *= counts[size_t(i)][size_t(rest % outs[size_t(i)])];
    if (cnt.dtype() == DataType::Double)
      cnt.data<double>()[e] = v;
    else
      cnt.data<float>()[e] = float(v);
  }
  Variable divisor = Variable::constant(x.dtype() == cnt.dtype() ? cnt : cnt.cast(x.dtype()), c.name() + "/count");
  return out(c.primitive("ElementDivide", {acc, divisor}));
}

// MaxPool with its Indices output, composed over the static [N, C, spatial...] operand: the
// window's taps (row-major) as strided slices of the operand padded with -inf, a running
// maximum keeping the first of equal values, and beside it each tap's flat input position
// (a constant: the (N, C) plane's offset plus the cell's offset, row- or column-major over
// the spatial axes by storage_order), selected where the maximum is.
std::vector<Variable> max_pool_with_indices(ImportContext& c, const Window& win, bool ceil) {
  Variable x = c.input(0);
  if (c.input_dyn(0) > 0) c.fail("MaxPool's Indices output over a batch or sequence axis is not supported");
  const auto dims = x.shape().dims();
  const size_t n = win.kernel.size(), r = dims.size();
  if (r != n + 2) c.fail("the operand " + x.shape().str() + " must be [N, C, spatial...] for the Indices output");
  for (int64_t d : dims)
    if (d < 0) c.fail("MaxPool's Indices output over a free dimension is not supported");
  const bool column_major = c.attr_int("storage_order", 0) != 0;
  std::vector<int64_t> head(r, 0), foot(r, 0), outs(n), cell_stride(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = dims[2 + i], k = win.kernel[i], d = win.dilations[i], s = win.strides[i], ke = (k - 1) * d + 1;
    const int64_t span = in + win.lo[i] + win.hi[i] - ke;
    if (k < 1 || d < 1 || s < 1 || span < 0) c.fail("the window does not fit the padded operand");
    int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (o - 1) * s >= in + win.lo[i]) --o;
    outs[i] = o;
    head[2 + i] = win.lo[i];
    foot[2 + i] = win.hi[i] + std::max<int64_t>(0, (o - 1) * s + ke - (in + win.lo[i] + win.hi[i]));
  }
  int64_t plane = 1;
  for (size_t i = 0; i < n; ++i) plane *= dims[2 + i];
  for (size_t i = 0, acc = 1; i < n; ++i) {
    const size_t a = column_major ? i : n - 1 - i;
    cell_stride[a] = int64_t(acc);
    acc *= size_t(dims[2 + a]);
  }
  auto out = [](const FunctionPtr& f) { return f->output(); };
  Variable padded = x;
  if (std::any_of(head.begin(), head.end(), [](int64_t v) { return v > 0; }) ||
      std::any_of(foot.begin(), foot.end(), [](int64_t v) { return v > 0; }))
    padded = out(c.primitive("Pad", {x},
                             {{"paddingHead", int_list(head)},
                              {"paddingFoot", int_list(foot)},
                              {"paddingMode", int64_t(0)},
                              {"paddingConstantValue", -std::numeric_limits<double>::infinity()}}));
  std::vector<int64_t> out_dims{dims[0], dims[1]}, axes;
  out_dims.insert(out_dims.end(), outs.begin(), outs.end());
  for (size_t i = 0; i < n; ++i) axes.push_back(int64_t(2 + i));
  int64_t taps = 1, cells = dims[0] * dims[1];
  for (size_t i = 0; i < n; ++i) taps *= win.kernel[i], cells *= outs[i];
  Variable best, best_index;
  for (int64_t t = 0; t < taps; ++t) {
    std::vector<int64_t> off(n), begin(n), end(n);
    for (int64_t i = int64_t(n) - 1, rest = t; i >= 0; rest /= win.kernel[size_t(i)], --i)
      off[size_t(i)] = (rest % win.kernel[size_t(i)]) * win.dilations[size_t(i)];
    for (size_t i = 0; i < n; ++i) begin[i] = off[i], end[i] = off[i] + (outs[i] - 1) * win.strides[i] + 1;
    Variable v = out(c.primitive("Slice", {padded},
                                 {{"axisVec", axis_list(axes)},
                                  {"beginIndexVec", int_list(begin)},
                                  {"endIndexVec", int_list(end)},
                                  {"sliceStridesVec", int_list(win.strides)}}));
    NDArrayView idx(DataType::Float, NDShape(out_dims));
    for (int64_t e = 0; e < cells; ++e) {
      int64_t rest = e, pos = 0;
      for (int64_t i = int64_t(n) - 1; i >= 0; --i) {
        const size_t a = size_t(i);
        const int64_t cell = (rest % outs[a]) * win.strides[a] + off[a] - win.lo[a];
        rest /= outs[a];
        pos += std::clamp<int64_t>(cell, 0, dims[2 + a] - 1) * cell_stride[a];  // padding never wins
      }
      idx.data<float>()[e] = float(rest * plane + pos);
    }
    Variable index = Variable::constant(x.dtype() == DataType::Float ? idx : idx.cast(x.dtype()), c.name() + "/index");
    if (t == 0) {
      best = v, best_index = index;
      continue;
    }
    Variable better = out(c.primitive("Less", {best, v}));
    best = out(c.primitive("Select", {better, v, best}));
    best_index = out(c.primitive("Select", {better, index, best_index}));
  }
  c.set_output_elem_type(1, ::onnx::TensorProto::INT64);
  return {best, best_index};
}

// MaxUnpool: each value of X lands in the zero output at its index (a flat position in the
// unpooled [N, C, spatial...] tensor, as MaxPool's Indices give it). The indices are data, so
// the landing is composed: per (N, C) plane a comparison of every index with every output
// cell, and per cell the largest value landing there (cells sharing an index come from
// overlapping MaxPool windows and carry equal values) or zero where none does.
std::vector<Variable> max_unpool(ImportContext& c) {
  Variable x = c.input(0), indices = c.input(1);
  if (c.input_dyn(0) > 0 || c.input_dyn(1) > 0) c.fail("MaxUnpool over a batch or sequence axis is not supported");
  const auto dims = x.shape().dims();
  auto kernel = c.attr_ints("kernel_shape");
  const size_t n = kernel.size();
  if (dims.size() != n + 2 || indices.shape().dims() != dims)
    c.fail("X " + x.shape().str() + " and the indices " + indices.shape().str() + " must be [N, C, spatial...] alike");
  for (int64_t d : dims)
    if (d < 0) c.fail("MaxUnpool over a free dimension is not supported");
  auto strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  auto pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (strides.size() != n || pads.size() != 2 * n) c.fail("strides and pads must cover the spatial axes");
  std::vector<int64_t> unpooled{dims[0], dims[1]};
  int64_t P = 1, Q = 1;
  for (size_t i = 0; i < n; ++i) {
    unpooled.push_back((dims[2 + i] - 1) * strides[i] - pads[i] - pads[n + i] + kernel[i]);
    P *= dims[2 + i], Q *= unpooled.back();
  }
  std::vector<int64_t> shape = unpooled;
  if (c.has_input(2)) {
    auto s = c.constant_input_i64(2);
    if (!s) c.fail("output_shape must be known while reading");
    if (s->size() != shape.size()) c.fail("output_shape must give every axis");
    shape = *s;
  }
  auto out = [](const FunctionPtr& f) { return f->output(); };
  auto reshape = [&](const Variable& v, std::vector<int64_t> d) {
    return out(c.primitive("Reshape", {v}, {{"newShape", NDShape(d)}}));
  };
  auto constant = [&](const NDShape& sh, const std::function<float(int64_t)>& f, const char* what) {
    NDArrayView a(DataType::Float, sh);
    for (int64_t e = 0; e < a.numel(); ++e) a.data<float>()[e] = f(e);
    return Variable::constant(x.dtype() == DataType::Float ? a : a.cast(x.dtype()), c.name() + "/" + what);
  };
  const int64_t N = dims[0], C = dims[1];
  Variable offset = constant(
      NDShape({N, C, 1, 1}), [&](int64_t e) { return float(e * Q); }, "plane");
  Variable local = out(c.primitive("Minus", {reshape(indices, {N, C, P, 1}), offset}));
  Variable cells = constant(
      NDShape({Q}), [](int64_t e) { return float(e); }, "cells");
  Variable hit = out(c.primitive("Equal", {local, cells}));  // [N, C, P, Q]
  Variable lowest =
      Variable::constant(NDShape{}, x.dtype(), -std::numeric_limits<double>::infinity(), c.name() + "/none");
  Variable landed = out(c.primitive("Select", {hit, reshape(x, {N, C, P, 1}), lowest}));
  Dictionary max{{"reductionOpName", std::string("Max")}, {"reductionKeepDimensions", false}, {"axis", Axis(2)}};
  Variable value = out(c.primitive("ReduceElements", {landed}, max));
  Variable any = out(c.primitive("ReduceElements", {hit}, max));
  Variable zero = Variable::constant(NDShape{}, x.dtype(), 0.0, c.name() + "/zero");
  Variable y = reshape(out(c.primitive("Select", {any, value, zero})), unpooled);
  if (shape != unpooled) {
    std::vector<int64_t> foot;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] < unpooled[i]) c.fail("output_shape is smaller than the unpooled shape");
      foot.push_back(shape[i] - unpooled[i]);
    }
    y = out(c.primitive("Pad", {y},
                        {{"paddingHead", int_list(std::vector<int64_t>(shape.size(), 0))},
                         {"paddingFoot", int_list(foot)},
                         {"paddingMode", int64_t(0)},
                         {"paddingConstantValue", 0.0}}));
  }
  return {y};
}

// MaxPool / AveragePool over the window the node gives (LpPool: type -1).
std::vector<Variable> pool(ImportContext& c, int64_t type) {
  auto kernel = c.attr_ints("kernel_shape");
  const size_t n = kernel.size();
  if (c.node().output_size() > 1 && !c.node().output(1).empty()) {
    const Variable& x = c.input(0);
    return max_pool_with_indices(c, window_of(c, n, kernel, spatial_dims(x, n)), c.attr_int("ceil_mode", 0) != 0);
  }
  Variable y = over_batch(c, 0, [&](const Variable& x) {
    if (x.shape().rank() < n) c.fail("the window has more axes than the operand " + x.shape().str());
    Window win = window_of(c, n, kernel, spatial_dims(x, n));
    const bool dilated = std::any_of(win.dilations.begin(), win.dilations.end(), [](int64_t d) { return d != 1; });
    const bool ceil = c.attr_int("ceil_mode", 0) != 0;
    // With ceil_mode ONNX drops a last window that would start in the end padding; the
    // engine's ceilOutDim keeps it, so such windows are composed as well.
    bool drops_last = false;
    const auto in = spatial_dims(x, n);
    for (size_t i = 0; i < n && ceil; ++i) {
      const int64_t s = win.strides[i],
                    span = in[i] + win.lo[i] + win.hi[i] - ((win.kernel[i] - 1) * win.dilations[i] + 1);
      drops_last |= in[i] >= 0 && span >= 0 && s > 0 && ((span + s - 1) / s) * s >= in[i] + win.lo[i];
    }
    if ((dilated || drops_last) && type >= 0)
      return dilated_pool(c, x, win, type, ceil, c.attr_int("count_include_pad", 0) != 0);
    if (type < 0) {
      const int64_t size = std::accumulate(win.kernel.begin(), win.kernel.end(), int64_t(1), std::multiplies<>());
      return lp_pool(c, x, size, [&](const Variable& v) {
        if (dilated) return dilated_pool(c, v, win, 1, ceil, true);
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
  register_onnx_import("MaxUnpool", max_unpool, 9);
}

}  // namespace cntk::onnx_io
