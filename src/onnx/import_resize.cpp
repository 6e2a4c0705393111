// ONNX Resize and Upsample. Every interpolation ONNX defines (nearest, linear, cubic) is
// separable: each resized axis is a product with a constant [in, out] weight matrix, worked
// out here from the scales/sizes, the coordinate transformation and the rounding mode the
// node names (known while reading); antialias widens the linear or cubic kernel by the
// inverse scale when downsampling. The engine runs them as Times, so the resize is
// differentiable and runs on any device the engine does.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "onnx/import.h"

namespace cntk::onnx_io {

namespace {

using Vars = std::vector<Variable>;
Variable out(const FunctionPtr& f) { return f->output(); }

struct Mode {
  std::string mode = "nearest", transform = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false;
  // Downsampling with the kernel widened by 1 / scale (a low-pass filter), as ONNX's reference.
  bool antialias = false;
};

// Where output position x falls in the input of length `in_len`. As in ONNX's reference, the
// output length in the formulas is the unrounded in_len * scale.
double source_coordinate(const Mode& m, double x, double scale, int64_t in_len, int64_t out_len, double roi_start,
                         double roi_end) {
  const std::string& t = m.transform;
  const double out_f = scale * double(in_len);
  if (t == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (t == "half_pixel_symmetric") {
    const double adjust = double(out_len) / out_f;
    const double center = double(in_len) / 2;
    return center * (1 - adjust) + (x + 0.5) / scale - 0.5;
  }
  if (t == "pytorch_half_pixel") return out_f > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (t == "align_corners") return out_f == 1 ? 0.0 : x * double(in_len - 1) / (out_f - 1);
  if (t == "asymmetric") return x / scale;
  // tf_crop_and_resize
  if (out_f > 1) return roi_start * double(in_len - 1) + x * (roi_end - roi_start) * double(in_len - 1) / (out_f - 1);
  return 0.5 * (roi_start + roi_end) * double(in_len - 1);
}

// Keys' cubic kernel with coefficient a at distance x.
double keys(double a, double x) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Antialiased linear or cubic weights: the kernel stretched by 1 / scale when downsampling,
// over the neighbours it then reaches, normalized to sum to one.
std::vector<double> antialias_coefficients(const Mode& m, double ratio, double scale) {
  scale = std::min(scale, 1.0);
  const double reach = m.mode == "linear" ? 1 : 2;
  const int64_t start = int64_t(std::floor(-reach / scale) + 1), end = 2 - start;
  std::vector<double> c;
  double sum = 0;
  for (int64_t i = start; i < end; ++i) {
    const double x = scale * (double(i) - ratio);
    c.push_back(m.mode == "linear" ? std::clamp(1 - std::abs(x), 0.0, 1.0) : keys(m.cubic_a, x));
    sum += c.back();
  }
  for (double& v : c) v /= sum;
  return c;
}

// The interpolation weights of the neighbours around a fractional position `ratio` in (0, 1].
std::vector<double> coefficients(const Mode& m, double ratio, bool integral, double scale) {
  if (m.antialias && m.mode != "nearest") return antialias_coefficients(m, ratio, scale);
  if (m.mode == "nearest") {
    if (integral) return {0, 1};
    const std::string& n = m.nearest;
    if (n == "round_prefer_floor") return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (n == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (n == "floor") return {1, 0};
    return {0, 1};  // ceil
  }
  if (m.mode == "linear") return {1 - ratio, ratio};
  // cubic (Keys' kernel with coefficient A)
  const double a = m.cubic_a, r = ratio, s = 1 - ratio;
  return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a, ((a + 2) * r - (a + 3)) * r * r + 1,
          ((a + 2) * s - (a + 3)) * s * s + 1, ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
}

// The [in_len, out_len] weights of one axis (column o: the input mix for output o) and, for
// positions outside the input under tf_crop_and_resize, the extrapolated outputs.
std::vector<double> axis_weights(const Mode& m, double scale, int64_t in_len, int64_t out_len, double roi_start,
                                 double roi_end, std::vector<bool>& extrapolated) {
  std::vector<double> w(size_t(in_len * out_len), 0.0);
  extrapolated.assign(size_t(out_len), false);
  for (int64_t o = 0; o < out_len; ++o) {
    const double x = source_coordinate(m, double(o), scale, in_len, out_len, roi_start, roi_end);
    if (m.transform == "tf_crop_and_resize" && (x < 0 || x > double(in_len - 1))) {
      extrapolated[size_t(o)] = true;
      continue;
    }
    const double xf = std::floor(x);
    const bool integral = xf == x;
    std::vector<double> c = coefficients(m, integral ? 1.0 : x - xf, integral, scale);
    const int64_t n = int64_t(c.size());
    // The n input positions nearest to x (ties to the lower), as ONNX's reference picks them.
    std::vector<int64_t> cand;
    for (int64_t k = int64_t(xf) - n; k <= int64_t(xf) + n + 1; ++k) cand.push_back(k);
    std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) {
      const double dp = std::abs(x - double(p)), dq = std::abs(x - double(q));
      return dp != dq ? dp < dq : p < q;
    });
    cand.resize(size_t(n));
    std::sort(cand.begin(), cand.end());
    if (m.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (cand[size_t(k)] < 0 || cand[size_t(k)] >= in_len) c[size_t(k)] = 0;
        sum += c[size_t(k)];
      }
      if (sum != 0)
        for (double& v : c) v /= sum;
    }
    // Beyond the edges the input repeats its edge values.
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = std::clamp<int64_t>(cand[size_t(k)], 0, in_len - 1);
      w[size_t(i * out_len + o)] += c[size_t(k)];
    }
  }
  return w;
}

NDArrayView view_of(const std::vector<double>& v, const NDShape& shape, DataType dt) {
  NDArrayView a(DataType::Double, shape);
  std::copy(v.begin(), v.end(), a.data<double>());
  return a.cast(dt);
}

// Resizes static axis `axis` of x by the weight matrix w [in, out].
Variable resize_axis(ImportContext& c, Variable x, int64_t axis, const std::vector<double>& w, int64_t in_len,
                     int64_t out_len, const std::vector<bool>& extrapolated) {
  const int64_t rank = int64_t(x.shape().rank());
  const bool last = axis == rank - 1;
  auto swap = [&](const Variable& v) {
    return out(
        c.primitive("TransposeAxes", {v}, Dictionary{{"axis1", Axis(int(axis))}, {"axis2", Axis(int(rank - 1))}}));
  };
  Variable y = last ? x : swap(x);
  Variable wc = Variable::constant(view_of(w, NDShape({in_len, out_len}), x.dtype()), c.name() + "/weights");
  y = out(c.primitive("Times", {y, wc}));
  if (std::any_of(extrapolated.begin(), extrapolated.end(), [](bool b) { return b; })) {
    std::vector<double> add(size_t(out_len), 0.0);
    double value = c.attr_float("extrapolation_value", 0.f);
    for (int64_t o = 0; o < out_len; ++o)
      if (extrapolated[size_t(o)]) add[size_t(o)] = value;
    y = out(
        c.primitive("Plus", {y, Variable::constant(view_of(add, NDShape({out_len}), x.dtype()), c.name() + "/fill")}));
  }
  return last ? y : swap(y);
}

Vars resize(ImportContext& c, const std::optional<std::vector<float>>& attr_scales, size_t scales_in, size_t sizes_in,
            size_t roi_in) {
  Variable x = c.input(0);
  const int dyn = c.input_dyn(0);
  const std::vector<int64_t> dims = x.shape().dims();
  const int64_t rank = int64_t(dims.size()) + dyn;
  Mode m;
  m.mode = c.attr_string("mode", "nearest");
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic") c.fail("mode '" + m.mode + "' is not supported");
  if (c.opset() >= 11) {
    m.transform = c.attr_string("coordinate_transformation_mode", "half_pixel");
    m.nearest = c.attr_string("nearest_mode", "round_prefer_floor");
    m.cubic_a = c.attr_float("cubic_coeff_a", -0.75f);
    m.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
  } else {
    // Upsample and Resize-10: asymmetric coordinates, nearest rounds down.
    m.transform = "asymmetric";
    m.nearest = "floor";
  }
  m.antialias = c.opset() >= 18 && c.attr_int("antialias", 0) != 0;
  static const char* known[] = {"half_pixel",    "half_pixel_symmetric", "pytorch_half_pixel",
                                "align_corners", "asymmetric",           "tf_crop_and_resize"};
  if (std::find(std::begin(known), std::end(known), m.transform) == std::end(known))
    c.fail("coordinate_transformation_mode '" + m.transform + "' is not supported");

  std::vector<int64_t> axes = c.attr_ints("axes", std::vector<int64_t>{});
  if (axes.empty()) {
    axes.resize(size_t(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) c.fail("axis " + std::to_string(a) + " is out of range");
    if (a < 0) a += rank;
  }
  std::vector<double> scales(axes.size(), 1.0);
  std::vector<int64_t> sizes(axes.size(), -1);
  auto in_len = [&](size_t k) { return axes[k] < dyn ? -1 : dims[size_t(axes[k] - dyn)]; };
  auto known_floats = [&](size_t i) -> std::optional<std::vector<double>> {
    if (!c.has_input(i)) return std::nullopt;
    auto v = c.constant_input(i);
    if (!v) c.fail("input " + std::to_string(i) + " must be known while reading");
    NDArrayView d = v->cast(DataType::Double).contiguous();
    if (d.numel() == 0) return std::nullopt;
    return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
  };
  std::optional<std::vector<double>> sc =
      attr_scales ? std::optional(std::vector<double>(attr_scales->begin(), attr_scales->end()))
                  : known_floats(scales_in);
  std::optional<std::vector<double>> sz = sizes_in ? known_floats(sizes_in) : std::nullopt;
  if (!sc && !sz) c.fail("one of scales and sizes is required");
  if ((sc ? sc->size() : sz->size()) != axes.size()) c.fail("scales/sizes must hold one value per resized axis");
  if (sc) {
    scales = *sc;
    for (size_t k = 0; k < axes.size(); ++k) sizes[k] = int64_t(std::floor(double(in_len(k)) * scales[k]));
  } else {
    const std::string policy = c.attr_string("keep_aspect_ratio_policy", "stretch");
    for (size_t k = 0; k < axes.size(); ++k) scales[k] = (*sz)[k] / double(in_len(k));
    if (policy != "stretch") {
      double s = policy == "not_larger" ? *std::min_element(scales.begin(), scales.end())
                                        : *std::max_element(scales.begin(), scales.end());
      for (size_t k = 0; k < axes.size(); ++k) {
        scales[k] = s;
        sizes[k] = int64_t(std::round(s * double(in_len(k))));
      }
    } else {
      for (size_t k = 0; k < axes.size(); ++k) sizes[k] = int64_t((*sz)[k]);
    }
  }
  std::vector<double> roi;
  if (m.transform == "tf_crop_and_resize") {
    auto r = known_floats(roi_in);
    if (!r || r->size() != 2 * axes.size()) c.fail("tf_crop_and_resize needs a roi with two values per resized axis");
    roi = *r;
  }
  Variable y = x;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t L = in_len(k), O = sizes[k];
    const bool crop = !roi.empty();
    if (!crop && L == O && scales[k] == 1.0) continue;
    if (L < 0) c.fail("a resized axis must have a known length (dynamic or free axes are not resized)");
    if (O <= 0) c.fail("a resized axis must keep a positive length");
    std::vector<bool> extrapolated;
    const auto w = axis_weights(m, scales[k], L, O, crop ? roi[k] : 0, crop ? roi[k + axes.size()] : 1, extrapolated);
    y = resize_axis(c, y, axes[k] - dyn, w, L, O, extrapolated);
  }
  return {y};
}

}  // namespace

void register_import_resize() {
  register_onnx_import("Upsample", [](ImportContext& c) {
    return resize(c, c.attr_floats("scales"), 0, 0, 0);  // opset 7: scales attribute
  });
  register_onnx_import(
      "Upsample", [](ImportContext& c) { return resize(c, std::nullopt, 1, 0, 0); }, 9);
  register_onnx_import(
      "Resize", [](ImportContext& c) { return resize(c, std::nullopt, 1, 0, 0); }, 10);
  register_onnx_import(
      "Resize", [](ImportContext& c) { return resize(c, std::nullopt, 2, 3, 1); }, 11);
}

}  // namespace cntk::onnx_io
